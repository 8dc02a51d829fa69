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
	}
	m.Registry.MustRegister(m.CycleDuration, m.GangsScheduled, m.PodsBound, m.BindErrors, m.PendingGangs, m.StatusWrites, m.StatusBacklog, m.Evictions,
		m.UnreadableObjects, m.PodEventsSkipped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
