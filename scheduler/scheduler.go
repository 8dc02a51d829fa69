package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/clientset/versioned"
	"github.com/phalanx-sched/phalanx/core"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
)

// The scheduler's loop, in plain words:
//
// Informers for pods, nodes, PodGroups, Queues, PriorityClasses and the
// claims, volumes and StorageClasses of pods' volumes turn every change
// into a closure sent to the inbox. One goroutine, the loop,
// runs those closures against the Store (its only writer), and after each
// batch of changes, or every CyclePeriod, runs a cycle: it builds a snapshot,
// asks the core for a plan, marks each planned pod as assumed on its node in
// the store, and hands the binds to the binder. Binds run in parallel; their
// results come back to the inbox: a failed bind forgets the assumption, so
// the gang is incomplete in the next snapshot and the core places what it
// lacks, all or nothing. Statuses, pod conditions and Events are computed
// from the same cycle and written only when they change.

// Options configure a Scheduler.
type Options struct {
	// SchedulerNames are the spec.schedulerName values served.
	SchedulerNames []string
	// CyclePeriod is the longest time between cycles; changes trigger
	// cycles sooner, at most one per MinInterval.
	CyclePeriod, MinInterval time.Duration
	// BindWorkers bounds the binds and evictions in flight; StatusWorkers
	// is how many status writes run at once (writer.go).
	BindWorkers, StatusWorkers int
	// GPU is the accelerator resource placement packs on; empty means
	// core.DefaultGPU.
	GPU string
	// ReserveAfter, when > 0, is how long a gang that does not fit waits
	// before nodes are reserved for it as they free up, with backfill by
	// gangs that end before it starts; a Queue's reserveAfterSeconds
	// overrides it for its gangs. Whole seconds; a fraction rounds up.
	ReserveAfter time.Duration
	// ReserveAfterBacklog makes ReserveAfter a floor: a gang also waits as
	// long as the cluster needs to run the work waiting now
	// (core.Config.ReserveAfterBacklog).
	ReserveAfterBacklog bool
	// ReserveAhead is how long before a gang is due nodes may be reserved
	// for it, for a reservation that starts no sooner than it is due; with
	// ReserveAfterBacklog, never before it has waited ReserveAfter
	// (core.Config.ReserveAhead). Whole seconds; a fraction rounds up.
	ReserveAhead time.Duration
	// Reservations is how many waiting gangs may hold reservations at once;
	// 0 means 1.
	Reservations int
	// ReserveByWork is the most a gang's work moves it back in line for a
	// reservation (core.Config.ReserveByWork); 0: by arrival. Whole
	// seconds; a fraction rounds up.
	ReserveByWork time.Duration
	// ShortestFirst orders the gangs of equal priority within a queue by
	// their estimated run time, shortest first; gangs without an estimate
	// come last. Off, they go by creation time.
	ShortestFirst bool
	// Topology lists node label keys from the broadest domain to the
	// narrowest, e.g. topology.kubernetes.io/zone then phalanx.dev/rack:
	// gangs prefer the smallest domain that holds them, and a gang's
	// requiredTopology must be one of them.
	Topology []string
	// GPUModelLabel is the node label a gang's gpuModel is matched on;
	// empty means DefaultGPUModelLabel.
	GPUModelLabel string
	// Preemption turns on preemption within a queue by priority and reclaim
	// across queues by fair share, both gang-aware (core/preempt.go).
	Preemption bool
	// ReclaimAfter is how long a gang waits before it may reclaim from
	// queues over their share; 0: at once. Whole seconds.
	ReclaimAfter time.Duration
	// PreemptMinRuntime and ReclaimMinRuntime are how long a gang runs
	// before it may be preempted within its queue, or reclaimed by another
	// queue; a Queue's preemptMinRuntimeSeconds and reclaimMinRuntimeSeconds
	// override them for its gangs. 0: no minimum. Whole seconds; a
	// fraction rounds up.
	PreemptMinRuntime, ReclaimMinRuntime time.Duration
	// WeighLoss refuses an eviction whose victims lose more GPU time than
	// the preemptor gains by starting before their estimated ends
	// (core.Config.WeighLoss); gangs without a declared estimate are not
	// weighed.
	WeighLoss bool
	// CorrectEstimates multiplies each declared estimate by its queue's
	// factor: the median ratio of run time to declared estimate of those
	// of the queue's latest 50 completed gangs that declared one, once 5
	// have, followed when it moves more than a quarter away
	// (core.EstimateFactor). Reservations, backfill, weighed
	// evictions and the forecast then read the corrected estimate; the
	// backlog also multiplies each queue's declared estimates by its work
	// factor (core.WorkFactor).
	CorrectEstimates bool
	// ReclaimYoungerOnly limits reclaim to gangs that arrived after the
	// reclaiming gang.
	ReclaimYoungerOnly bool
	// PreemptionGracePeriod, when > 0, caps the termination grace period of
	// victims; 0 leaves each pod its own.
	PreemptionGracePeriod time.Duration
	// HoldFailedMember is how long the room of a member that failed or was
	// deleted while its gang ran is kept for its replacement; 0 keeps none.
	// Whole seconds.
	HoldFailedMember time.Duration
	// PartialGangTimeout, when > 0, is how long a gang may hold some
	// members but not its minimum without making progress (partial.go):
	// past it, its bound members are evicted. 0 never evicts them.
	PartialGangTimeout time.Duration
	// StateNamespace, when set, is where the scheduler records what a new
	// leader needs to decide as it would (holds, run times; state.go), in
	// the ConfigMap phalanx-state-<first scheduler name>.
	StateNamespace string
	// Now is the clock; nil means time.Now. Tests inject their own.
	Now func() time.Time
	// Dynamic, if set, is how the scheduler reads its own PodGroups and
	// Queues, one object at a time (decode.go), and the PodGroups of other
	// schedulers' APIs (ForeignPodGroups) that the cluster serves. Without
	// it (narrow unit tests) it uses typed informers, which one object that
	// does not decode keeps from syncing.
	Dynamic dynamic.Interface
	// StatusKube and ElectionKube, if set, are clients with rate limits of
	// their own for the pods' PodScheduled conditions and the state
	// ConfigMap (written by the status writer), and for leader election, as
	// kube-scheduler keeps its Lease apart: then neither takes the binds'
	// share of the API server's rate, and binds never delay a renewal of
	// the Lease. Nil means the kube client passed to New.
	StatusKube, ElectionKube kubernetes.Interface
	// PodEventQPS and PodEventBurst, when PodEventQPS > 0, bound the rate
	// of the Events written about single pods (Scheduled, FailedScheduling,
	// ElasticWaiting), as the kubelet's --event-qps does: past it they are
	// skipped and counted, so that a storm of binds does not write as many
	// Events to the API server as it binds pods. Events about PodGroups,
	// evictions and failed binds are never skipped.
	PodEventQPS   float64
	PodEventBurst int
	// ForecastPeriod, when > 0, is how often the scheduler forecasts when
	// each waiting gang starts and its place in its queue
	// (status.expectedStartTime, status.queuePosition; forecast.go), at
	// most; 0 forecasts nothing. ForecastHorizon is how far ahead it looks;
	// 0 means core.DefaultForecastHorizon.
	ForecastPeriod, ForecastHorizon time.Duration
}

// seconds is d in whole seconds, a fraction rounded up.
func seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// Validate reports the first option that is out of range, named as the
// flag of phalanx scheduler that sets it.
func (o *Options) Validate() error {
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"--reserve-after", o.ReserveAfter},
		{"--reserve-ahead", o.ReserveAhead},
		{"--reserve-by-work", o.ReserveByWork},
		{"--preemption-grace-period", o.PreemptionGracePeriod},
		{"--hold-failed-member", o.HoldFailedMember},
		{"--partial-gang-timeout", o.PartialGangTimeout},
		{"--reclaim-after", o.ReclaimAfter},
		{"--forecast-period", o.ForecastPeriod},
		{"--forecast-horizon", o.ForecastHorizon},
		{"--preempt-min-runtime", o.PreemptMinRuntime},
		{"--reclaim-min-runtime", o.ReclaimMinRuntime},
	} {
		if d.value < 0 {
			return fmt.Errorf("%s %v is negative", d.flag, d.value)
		}
	}
	if o.Reservations < 0 || o.Reservations > core.MaxReservations {
		return fmt.Errorf("--reservations %d is out of range 0 to %d", o.Reservations, core.MaxReservations)
	}
	if o.PodEventQPS < 0 || o.PodEventBurst < 0 {
		return fmt.Errorf("--pod-event-qps %v and --pod-event-burst %d must not be negative", o.PodEventQPS, o.PodEventBurst)
	}
	return nil
}

func (o *Options) defaults() {
	if len(o.SchedulerNames) == 0 {
		o.SchedulerNames = []string{DefaultSchedulerName}
	}
	if o.CyclePeriod <= 0 {
		o.CyclePeriod = time.Second
	}
	if o.MinInterval <= 0 {
		o.MinInterval = 20 * time.Millisecond
	}
	if o.BindWorkers <= 0 {
		o.BindWorkers = 32
	}
	if o.StatusWorkers <= 0 {
		o.StatusWorkers = 8
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.GPU == "" {
		o.GPU = core.DefaultGPU
	}
	if o.GPUModelLabel == "" {
		o.GPUModelLabel = DefaultGPUModelLabel
	}
}

// EventComponent is the source of Phalanx's Events, whatever scheduler names
// it serves: serving "volcano" in Volcano's place, its Events must not pass
// for Volcano's.
const EventComponent = "phalanx"

// Scheduler is Phalanx's Kubernetes adapter: it feeds the core from
// informers and carries out its plans through the API server.
type Scheduler struct {
	opts     Options
	kube     kubernetes.Interface
	client   versioned.Interface
	core     *core.Scheduler
	store    *Store
	metrics  *Metrics
	recorder record.EventRecorder
	// podEvents bounds the rate of Events about single pods (podEvent);
	// nil: no bound.
	podEvents flowcontrol.RateLimiter
	inbox     chan func()
	ready     atomic.Bool
	// electing: RunLeading runs; leading: it holds the Lease (Standby).
	electing, leading atomic.Bool

	// Owned by the loop goroutine.
	lastCycle time.Time
	verdicts  map[string]verdict // gang key -> latest reason it waits
	// published: what each gang's statuses were last computed from
	// (publish).
	published map[string]published
	// queueSeries: the queues, and their resources, whose metrics the
	// latest cycle set (queueMetrics).
	queueSeries map[string]queueSeries
	written     *writeCache

	writer *statusWriter
	// stateName is the state ConfigMap's name ("" records none);
	// lastState what was last handed the writer.
	stateName string
	lastState []byte
	calls     *callQueue
	// apis runs the informers of the APIs read where the cluster serves
	// them (apis.go); foreignStatusSub says, by API group, whether other
	// schedulers' PodGroups have a status subresource.
	apis             *apiWatcher
	foreignStatusSub map[string]bool
	// inqueueSince: when other schedulers' PodGroups without pods were
	// first found admitted, by gang key (awaitingPods).
	inqueueSince map[string]int64
	// phaseTried: the resourceVersion of each PodGroup without a phase
	// that markPending wrote Pending under.
	phaseTried map[foreignKey]string
	inflight   sync.WaitGroup
	// fc: the latest forecast, and whether one runs (forecast.go); owned
	// by the loop goroutine.
	fc forecastState
}

// New builds a scheduler. Nothing runs until Run.
func New(opts Options, kube kubernetes.Interface, client versioned.Interface, metrics *Metrics, recorder record.EventRecorder) (*Scheduler, error) {
	opts.defaults()
	if opts.StatusKube == nil {
		opts.StatusKube = kube
	}
	if opts.ElectionKube == nil {
		opts.ElectionKube = kube
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	reserveAfter := int64(opts.ReserveAfter / time.Second)
	if opts.ReserveAfter%time.Second != 0 {
		reserveAfter++
	}
	c, err := core.New(core.Config{GPU: opts.GPU, ReserveAfter: reserveAfter, Topology: opts.Topology, Preemption: opts.Preemption,
		ReclaimAfter: int64(opts.ReclaimAfter / time.Second), ReclaimYoungerOnly: opts.ReclaimYoungerOnly,
		PreemptMinRuntime: seconds(opts.PreemptMinRuntime), ReclaimMinRuntime: seconds(opts.ReclaimMinRuntime),
		WeighLoss: opts.WeighLoss, ReserveAfterBacklog: opts.ReserveAfterBacklog, ReserveAhead: seconds(opts.ReserveAhead), Reservations: opts.Reservations, ReserveByWork: seconds(opts.ReserveByWork), ShortestFirst: opts.ShortestFirst})
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if metrics == nil {
		metrics = NewMetrics()
	}
	store := NewStore(opts.SchedulerNames)
	// Releases are in the snapshot for reservations and forecasts (and then
	// placement weighs when nodes come free, core/ends.go).
	store.gpuModelLabel, store.reserving, store.now = opts.GPUModelLabel, reserveAfter > 0 || opts.ForecastPeriod > 0, opts.Now
	store.preempting, store.holdFailed = opts.Preemption, int64(opts.HoldFailedMember/time.Second)
	store.correcting = opts.CorrectEstimates
	var state string
	if opts.StateNamespace != "" {
		if state = stateName(opts.SchedulerNames); state == "" {
			return nil, fmt.Errorf("scheduler: scheduler name %q cannot name the state ConfigMap", opts.SchedulerNames[0])
		}
	}
	var podEvents flowcontrol.RateLimiter
	if opts.PodEventQPS > 0 {
		podEvents = flowcontrol.NewTokenBucketRateLimiter(float32(opts.PodEventQPS), max(opts.PodEventBurst, 1))
	}
	return &Scheduler{
		podEvents: podEvents,
		stateName: state,
		opts:      opts, kube: kube, client: client, core: c, metrics: metrics, recorder: recorder,
		store:     store,
		inbox:     make(chan func(), 4096),
		verdicts:  map[string]verdict{},
		published: map[string]published{},
		written:   newWriteCache(),
		writer:    newStatusWriter(),
		calls:     newCallQueue(),

		foreignStatusSub: map[string]bool{},
		inqueueSince:     map[string]int64{},
		phaseTried:       map[foreignKey]string{},
	}, nil
}

// Ready reports whether the informers have synced and cycles are running.
func (s *Scheduler) Ready() bool { return s.ready.Load() }

// Standby reports whether this replica waits, under RunLeading, for the
// Lease another holds: healthy, and ready to take over.
func (s *Scheduler) Standby() bool { return s.electing.Load() && !s.leading.Load() }

// Run starts the informers, waits for their caches, makes sure the default
// Queue exists, and runs the loop until ctx ends. It returns once in-flight
// binds and writes have finished.
func (s *Scheduler) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	synced, err := s.startInformers(ctx)
	if err != nil {
		return err
	}
	for _, ok := range synced {
		if !ok {
			return fmt.Errorf("scheduler: informer caches did not sync")
		}
	}
	if err := s.ensureDefaultQueue(ctx); err != nil {
		logger.Error(err, "Could not create the default queue; gangs that use it wait until it exists")
	}
	s.loadState(ctx)
	s.runWriters(ctx)
	s.runCallers(ctx)
	s.ready.Store(true)
	logger.Info("Scheduler started", "schedulerNames", s.opts.SchedulerNames)
	s.loop(ctx)
	s.ready.Store(false)
	s.inflight.Wait()
	return nil
}

func (s *Scheduler) ensureDefaultQueue(ctx context.Context) error {
	_, err := s.client.SchedulingV1alpha1().Queues().Get(ctx, v1alpha1.DefaultQueue, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultQueue},
		Spec: v1alpha1.QueueSpec{Weight: 1, State: v1alpha1.QueueOpen}}
	_, err = s.client.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// send queues f for the loop; it gives up when ctx ends.
func (s *Scheduler) send(ctx context.Context, f func()) {
	select {
	case s.inbox <- f:
	case <-ctx.Done():
	}
}

func (s *Scheduler) loop(ctx context.Context) {
	ticker := time.NewTicker(s.opts.CyclePeriod)
	defer ticker.Stop()
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	dirty := true
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-s.inbox:
			// A batch made only of the informer's confirmations of our
			// own binds changes nothing a cycle decides from: it waits
			// for the next tick. While tens of thousands of binds land,
			// cycles would otherwise run back to back on the cores the
			// API server needs.
			confirmed := s.store.confirmations
			f()
			if n := 1 + s.drain(); s.store.confirmations-confirmed < n {
				dirty = true
			}
		case <-ticker.C:
			dirty = true
		case <-wake.C:
		}
		if !dirty {
			continue
		}
		if wait := s.opts.MinInterval - s.opts.Now().Sub(s.lastCycle); wait > 0 {
			wake.Reset(wait)
			continue
		}
		s.cycle(ctx)
		dirty = false
	}
}

// drain applies every change already queued, so that one cycle sees them
// all, and returns how many it applied.
func (s *Scheduler) drain() int {
	for n := 0; ; n++ {
		select {
		case f := <-s.inbox:
			f()
		default:
			return n
		}
	}
}

// cycle runs one scheduling cycle and dispatches its outcome.
func (s *Scheduler) cycle(ctx context.Context) {
	start := s.opts.Now()
	s.lastCycle = start
	snap, views := s.store.Snapshot()
	s.createDerivedPodGroups(ctx, views) // PodGroups of gangs derived from workloads (owners.go)
	plan, diag := s.core.RunCycle(snap, start.Unix())
	s.metrics.CycleDuration.Observe(s.opts.Now().Sub(start).Seconds())
	s.metrics.GangsScheduled.Add(float64(len(diag.Scheduled)))

	boundOn := map[string][]string{}
	type comingBind struct {
		b core.Bind
		p *podInfo
	}
	var coming []comingBind // room found for members to come
	for _, b := range plan.Binds {
		v := views[b.Gang]
		p := v.member(b.Member)
		if p == nil {
			if c := v.comingMember(b.Member); c != nil {
				coming = append(coming, comingBind{b, c})
				continue
			}
		}
		if p == nil || !s.store.Assume(p.pod.UID, b.Node) {
			continue
		}
		boundOn[b.Gang] = append(boundOn[b.Gang], b.Node)
		s.bind(ctx, p.pod, b.Node)
	}
	scheduled := map[string]bool{}
	for _, key := range diag.Scheduled {
		scheduled[key] = true
	}
	for gang, nodes := range boundOn {
		s.store.Placed(gang, nodes, scheduled[gang])
	}
	for _, c := range coming {
		if len(boundOn[c.b.Gang]) > 0 { // else no member is placed: nothing waits for it
			v := views[c.b.Gang]
			s.store.comingRoom(c.b.Gang, c.b.Node, c.p.slot(), v.minMember+len(v.coming))
		}
	}
	s.carryOut(ctx, plan, views, start.Unix())
	for _, key := range diag.Scheduled {
		s.store.ForgetRefusal(key)
		delete(s.verdicts, key)
		if v := views[key]; v != nil {
			s.scheduledEvent(v)
			s.metrics.QueueAdmissionWait.WithLabelValues(v.queue).Observe(float64(max(start.Unix()-v.arrival, 0)))
			s.observeStart(key, v.queue, start.Unix())
		}
	}
	byReason := map[string]int{}
	for _, st := range diag.Pending {
		v := views[st.Gang]
		if v == nil {
			continue
		}
		var last *verdict
		if old, ok := s.verdicts[st.Gang]; ok {
			last = &old
		}
		verd := verdictOf(v, st, start.Unix(), last)
		if why := s.store.Refusal(st.Gang); why != "" && st.Reason == core.ReasonUnschedulable {
			verd.message += "; " + why
		}
		if s.opts.PartialGangTimeout > 0 && v.partial() && st.Reason != core.ReasonPreempting {
			verd.message += s.partialDeadline(ctx, v, start)
		}
		byReason[verd.reason]++
		if old, ok := s.verdicts[st.Gang]; !ok || old.reason != verd.reason || old.reserved != verd.reserved {
			// A new Event only when the reason changes; the numbers in the
			// message (what fits, what is short) go to the statuses.
			s.unschedulableEvent(v, verd, start.Unix())
		}
		s.verdicts[st.Gang] = verd
	}
	for key := range s.verdicts {
		if views[key] == nil {
			delete(s.verdicts, key) // the gang is gone
		}
	}
	for key := range s.store.refusals {
		// A refusal may come back after its gang was placed or went.
		if views[key] == nil {
			s.store.ForgetRefusal(key)
		}
	}
	s.metrics.PendingGangs.Reset()
	for reason, n := range byReason {
		s.metrics.PendingGangs.WithLabelValues(reason).Set(float64(n))
	}
	s.publish(ctx, snap, views, metav1.NewTime(start))
	s.saveState()
	if !s.maybeForecast(ctx, snap, start) {
		s.store.Recycle(snap, views)
	}
}
