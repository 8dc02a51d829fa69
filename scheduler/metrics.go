package scheduler

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the scheduler's Prometheus metrics, in a registry of their own
// (no package-level state).
type Metrics struct {
	Registry       *prometheus.Registry
	CycleDuration  prometheus.Histogram
	GangsScheduled prometheus.Counter
	PodsBound      prometheus.Counter
	BindErrors     prometheus.Counter
	PendingGangs   *prometheus.GaugeVec
	StatusWrites   *prometheus.CounterVec
	StatusBacklog  prometheus.Gauge
	Evictions      *prometheus.CounterVec
	// UnreadableObjects counts objects skipped because they cannot be
	// read, by kind, once per object and reason (decode.go).
	UnreadableObjects *prometheus.CounterVec
	// PodEventsSkipped counts Events about single pods not written because
	// of Options.PodEventQPS.
	PodEventsSkipped prometheus.Counter
	// ForecastDuration observes how long each forecast of the waiting
	// gangs' starts took (forecast.go).
	ForecastDuration prometheus.Histogram

	// Per queue, after each cycle: gangs waiting for their minimum and
	// gangs at it, and what the queue's bound pods request, by resource
	// (cpu in cores, memory in bytes, others in units).
	QueuePendingGangs, QueueRunningGangs *prometheus.GaugeVec
	QueueAllocated                       *prometheus.GaugeVec
	// QueueDeserved is the queue's fair share (core.Deserved), by resource.
	QueueDeserved *prometheus.GaugeVec
	// QueueAdmissionWait observes, when a gang reaches its minimum in a
	// cycle, how long since it arrived.
	QueueAdmissionWait *prometheus.HistogramVec
	// QueueStartForecastError observes, when a gang reaches its minimum in
	// a cycle, how far that lies from the expected start the first
	// forecast made while it waited gave it: direction late if after it,
	// early if at or before it.
	QueueStartForecastError *prometheus.HistogramVec
	// QueueEvictedPods counts the pods of a queue's gangs evicted for
	// preemption or reclaim (kind), once the eviction is accepted, and
	// QueueGPUSecondsLost the GPU time they had run, thrown away.
	QueueEvictedPods    *prometheus.CounterVec
	QueueGPUSecondsLost *prometheus.CounterVec
	// QueueEstimateFactor is what the queue's declared estimates are
	// multiplied by (history.go), when Options.CorrectEstimates is on.
	QueueEstimateFactor *prometheus.GaugeVec
	// QueueWorkFactor is what the backlog multiplies the queue's
	// estimates by (history.go, core.WorkFactor), and backfill too when it
	// is above 1, when
	// Options.CorrectEstimates is on.
	QueueWorkFactor *prometheus.GaugeVec
	// QueueOverrunFactor is how far past their corrected estimates one in
	// ten of the queue's latest gangs ran, which backfill counts
	// (history.go, core.OverrunFactor), when Options.CorrectEstimates is
	// on.
	QueueOverrunFactor *prometheus.GaugeVec
}

// NewMetrics creates and registers the metrics, with the Go and process
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		CycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "phalanx_cycle_duration_seconds",
			Help:    "Time to build a snapshot and decide one scheduling cycle.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		GangsScheduled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phalanx_gangs_scheduled_total", Help: "Gangs that reached minMember in a cycle."}),
		ForecastDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "phalanx_forecast_duration_seconds",
			Help:    "Time to forecast every waiting gang's start and place in its queue, off the cycle.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		PodsBound: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phalanx_pods_bound_total", Help: "Pods bound through the binding subresource."}),
		BindErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phalanx_bind_errors_total", Help: "Binds the API server refused or that failed."}),
		PendingGangs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phalanx_pending_gangs", Help: "Gangs waiting after the latest cycle, by reason."}, []string{"reason"}),
		StatusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phalanx_status_writes_total", Help: "Status writes by object kind and result."}, []string{"kind", "result"}),
		StatusBacklog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phalanx_status_backlog", Help: "Objects whose newest status waits for a writer, after the latest cycle."}),
		Evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phalanx_evictions_total", Help: "Evictions posted for preemption or reclaim, by kind and result."}, []string{"kind", "result"}),
		UnreadableObjects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phalanx_unreadable_objects_total",
			Help: "Objects the scheduler skipped because it cannot read them, by kind; each object counts once per reason."}, []string{"kind"}),
		PodEventsSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phalanx_pod_events_skipped_total",
			Help: "Events about single pods (Scheduled, FailedScheduling, ElasticWaiting) not written: more came than --pod-event-qps allows."}),
		QueuePendingGangs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phalanx_queue_pending_gangs", Help: "Gangs of the queue waiting for their minimum, after the latest cycle."}, []string{"queue"}),
		QueueRunningGangs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phalanx_queue_running_gangs", Help: "Gangs of the queue at or above their minimum, after the latest cycle."}, []string{"queue"}),
		QueueAllocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phalanx_queue_allocated",
			Help: "What the queue's bound pods request, by resource (cpu in cores, memory in bytes, others in units), after the latest cycle."},
			[]string{"queue", "resource"}),
		QueueDeserved: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phalanx_queue_deserved",
			Help: "The queue's fair share of the schedulable nodes, by resource (units as phalanx_queue_allocated), after the latest cycle."},
			[]string{"queue", "resource"}),
		QueueAdmissionWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "phalanx_queue_admission_wait_seconds",
			Help:    "Time from a gang's arrival to the cycle in which it reached its minimum, by queue.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 18)}, []string{"queue"}),
		QueueStartForecastError: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "phalanx_queue_start_forecast_error_seconds",
			Help: "When a gang reaches its minimum, how far that lies from the expected start the first forecast made while it " +
				"waited gave it (direction late: after it, early: at or before it), by queue.",
			Buckets: prometheus.ExponentialBuckets(60, 2, 14)}, []string{"queue", "direction"}),
		QueueEvictedPods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phalanx_queue_evicted_pods_total",
			Help: "Pods of the queue's gangs evicted for preemption or reclaim (kind), counted when the eviction is accepted."},
			[]string{"queue", "kind"}),
		QueueGPUSecondsLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phalanx_queue_preempted_gpu_seconds_total",
			Help: "GPU time the queue's evicted pods had run when evicted for preemption or reclaim: work thrown away unless they checkpoint."},
			[]string{"queue"}),
		QueueEstimateFactor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phalanx_queue_estimate_factor",
			Help: "What the queue's declared run-time estimates are multiplied by: the median ratio of run time to declared " +
				"estimate of the queue's latest completed gangs that declared one, followed when it moves more than a quarter away " +
				"(1 until 5 have), after the latest cycle."},
			[]string{"queue"}),
		QueueWorkFactor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phalanx_queue_work_factor",
			Help: "What the reservation threshold multiplies the queue's corrected estimates by where it sums them (the backlog), and backfill too when above 1: " +
				"the run times of the same latest completed gangs over their corrected estimates, in sum (1 until 5 have), after the latest cycle."},
			[]string{"queue"}),
		QueueOverrunFactor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phalanx_queue_overrun_factor",
			Help: "Backfill multiplies the queue's corrected estimates by the larger of this and the work factor, when above 1, before it lets a gang use nodes reserved for another: " +
				"the 90th percentile of run time over corrected estimate of the same latest completed gangs, at least 1 (1 until 5 have), after the latest cycle. " +
				"Above e, the backlog takes the GPUs of the queue's running gangs as free now."},
			[]string{"queue"}),
	}
	m.Registry.MustRegister(m.CycleDuration, m.GangsScheduled, m.PodsBound, m.BindErrors, m.PendingGangs, m.StatusWrites, m.StatusBacklog, m.Evictions,
		m.UnreadableObjects, m.PodEventsSkipped, m.ForecastDuration,
		m.QueuePendingGangs, m.QueueRunningGangs, m.QueueAllocated, m.QueueDeserved, m.QueueAdmissionWait, m.QueueStartForecastError, m.QueueEvictedPods, m.QueueGPUSecondsLost,
		m.QueueEstimateFactor, m.QueueWorkFactor, m.QueueOverrunFactor,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
