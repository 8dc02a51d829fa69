package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/clientset/versioned"
	"github.com/phalanx-sched/phalanx/config"
	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

type schedulerFlags struct {
	kubeconfig      string
	names           stringList
	leaderElect     bool
	leaseNamespace  string
	leaseName       string
	leaseDuration   time.Duration
	renewDeadline   time.Duration
	retryPeriod     time.Duration
	address         string
	profiling       bool
	config          string
	podEventQPS     float64
	podEventBurst   int
	qps             float64
	burst           int
	cyclePeriod     time.Duration
	bindWorkers     int
	gpu             string
	reserveAfter    time.Duration
	reservations    int
	reserveByWork   time.Duration
	shortestFirst   bool
	topology        labelKeys
	gpuModelLabel   string
	preemption      bool
	preemptionGrace time.Duration
	holdFailed      time.Duration
	partialTimeout  time.Duration
	reclaimAfter    time.Duration
	reclaimYounger  bool
	preemptMin      time.Duration
	reclaimMin      time.Duration
	weighLoss       bool
	correctEst      bool
	reserveBacklog  bool
	reserveAhead    time.Duration
	forecastPeriod  time.Duration
	forecastHorizon time.Duration
}

// labelKeys is a comma-separated list of node label keys.
type labelKeys []string

func (l *labelKeys) String() string { return strings.Join(*l, ",") }
func (l *labelKeys) Set(v string) error {
	*l = nil
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("%q is not a label key: %s", k, strings.Join(errs, "; "))
		}
		*l = append(*l, k)
	}
	return nil
}

func schedulerFlagSet(f *schedulerFlags, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.config, "config", "",
		"PhalanxConfiguration file (docs/reference.md): its scheduling section, shared with phalanx simulate --config,\n"+
			"and its scheduler section set the flags of the same meaning; flags given here win over it")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; empty means $KUBECONFIG or the in-cluster service account")
	fs.Var(&f.names, "scheduler-name", "a spec.schedulerName to serve; repeatable (default phalanx)")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader through a Lease so that only one replica schedules")
	fs.StringVar(&f.leaseNamespace, "leader-elect-namespace", "kube-system",
		"namespace of the leader election Lease, and of the ConfigMap phalanx-state-<first --scheduler-name> in which\n"+
			"the scheduler records the holds and run times a new leader restores")
	fs.StringVar(&f.leaseName, "leader-elect-name", "phalanx-scheduler", "name of the leader election Lease")
	fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"how long a standby waits after the leader's last renewal before it takes over: the failover time when a\n"+
			"leader dies without releasing the Lease (a leader that stops cleanly releases it at once)")
	fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"how long the leader keeps trying to renew before it stops scheduling; less than the lease duration")
	fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"how often replicas try to acquire or renew the Lease")
	fs.StringVar(&f.address, "address", "127.0.0.1:10280",
		"address of /healthz, /readyz and /metrics; loopback only by default: in a pod, set :10280 so that probes and\n"+
			"Prometheus reach it (deploy/deployment.yaml does). Empty disables it")
	fs.BoolVar(&f.profiling, "profiling", false,
		"also serve Go's profiles (/debug/pprof/: heap, CPU, goroutines) at --address")
	fs.Float64Var(&f.qps, "kube-api-qps", 100,
		"queries per second to the API server, for each of its clients: binds and evictions; pod conditions; Events; the Lease; PodGroups and Queues")
	fs.IntVar(&f.burst, "kube-api-burst", 200, "burst of queries to the API server")
	fs.Float64Var(&f.podEventQPS, "pod-event-qps", 50,
		"Events about single pods (Scheduled, FailedScheduling, ElasticWaiting) per second, as the kubelet's --event-qps:\n"+
			"past it they are skipped and counted in phalanx_pod_events_skipped_total; Events about PodGroups, evictions and\n"+
			"failed binds always go. 0: no limit")
	fs.IntVar(&f.podEventBurst, "pod-event-burst", 100, "burst of Events about single pods")
	fs.DurationVar(&f.cyclePeriod, "cycle-period", time.Second, "longest time between scheduling cycles")
	fs.IntVar(&f.bindWorkers, "bind-workers", 32, "binds in flight at once")
	fs.StringVar(&f.gpu, "gpu-resource", "nvidia.com/gpu", "accelerator resource that placement packs on")
	fs.DurationVar(&f.reserveAfter, "reserve-after", config.DefaultReserveAfter, // as phalanx simulate (TestSharedFlagDefaults)
		"reserve nodes, as they free up, for a gang that has waited this long without fitting; only gangs expected to end\n"+
			"before it starts may use them (backfill). 0 turns reservations off, except in Queues with reserveAfterSeconds")
	fs.BoolVar(&f.reserveBacklog, "reserve-after-backlog", config.DefaultReserveAfterBacklog,
		"--reserve-after is a floor: a gang also waits nine tenths of the time the cluster needs to run the work waiting now (the\n"+
			"waiting gangs' GPUs times their estimates, run on the GPUs free now and those running gangs free as they end;\n"+
			"gangs without an estimate do not count).\n"+
			"Under overload only gangs passed over longer than that drain nodes. false: --reserve-after alone")
	fs.DurationVar(&f.reserveAhead, "reserve-ahead", config.DefaultReserveAhead,
		"reserve nodes for a gang up to this long before it is due (--reserve-after, the backlog), for a reservation\n"+
			"that starts no sooner: until then the nodes take only gangs expected to end by then. 0: only once it is due.\n"+
			"With the backlog, never before the gang has waited --reserve-after")
	fs.IntVar(&f.reservations, "reservations", config.DefaultReservations,
		"how many waiting gangs may hold reservations at once, by priority then longest wait, moved back by work (--reserve-by-work)")
	fs.DurationVar(&f.reserveByWork, "reserve-by-work", config.DefaultReserveByWork,
		"the gangs in line for a reservation go by arrival moved back by eight times the time their work (GPUs times\n"+
			"estimate) would take the whole cluster, by at most this long. 0: by arrival")
	fs.BoolVar(&f.shortestFirst, "shortest-first", true,
		"within a queue and priority, start gangs with a shorter estimated run time first (gangs without an\n"+
			"estimate last); reservations keep long gangs from starving. false: by creation time")
	fs.Var(&f.topology, "topology",
		"comma-separated node label keys, broadest domain first (e.g. topology.kubernetes.io/zone,phalanx.dev/rack):\n"+
			"a gang prefers the smallest domain that holds it; a PodGroup's requiredTopology must name one of them")
	fs.StringVar(&f.gpuModelLabel, "gpu-model-label", scheduler.DefaultGPUModelLabel,
		"node label that names the GPU model, matched against a PodGroup's gpuModel")
	fs.BoolVar(&f.preemption, "preemption", true,
		"evict whole gangs of lower priority in the same queue, or of queues over their fair share (reclaim),\n"+
			"when that lets a waiting gang run; a Queue with reclaimable: false is never reclaimed from")
	fs.DurationVar(&f.reclaimAfter, "reclaim-after", 0,
		"a gang reclaims from queues over their share only once it has waited this long (0: at once)")
	fs.BoolVar(&f.reclaimYounger, "reclaim-younger-only", false,
		"a gang reclaims only from gangs that arrived after it (what younger gangs got ahead of it)")
	fs.DurationVar(&f.preemptMin, "preempt-min-runtime", config.DefaultPreemptMinRuntime,
		"a gang is preempted within its queue only once it has run this long (0: at once); a Queue's\n"+
			"preemptMinRuntimeSeconds overrides it")
	fs.DurationVar(&f.reclaimMin, "reclaim-min-runtime", config.DefaultReclaimMinRuntime,
		"a gang is reclaimed from by another queue only once it has run this long (0: at once); a Queue's\n"+
			"reclaimMinRuntimeSeconds overrides it")
	fs.BoolVar(&f.weighLoss, "weigh-loss", config.DefaultWeighLoss,
		"evict only when the victims lose no more GPU time than the preemptor gains by starting before their\n"+
			"estimated ends (victims of the preemptor's own queue, which its priority preempts, are not weighed;\n"+
			"nor is an eviction with a victim of another queue that has no estimate)")
	fs.BoolVar(&f.correctEst, "correct-estimates", config.DefaultCorrectEstimates,
		"multiply a gang's declared estimate by the median ratio of run time to declared estimate of its queue's\n"+
			"latest 50 completed gangs that declared one (from 5 on; the factor follows the median when it moves more\n"+
			"than a quarter away; when a queue's habits change, the gangs that arrived before keep the factor of their\n"+
			"time); the backlog also multiplies them by those gangs' run times over their corrected\n"+
			"estimates, in sum")
	fs.DurationVar(&f.preemptionGrace, "preemption-grace-period", 0,
		"cap on the termination grace period of evicted pods; 0 leaves each pod its own")
	fs.DurationVar(&f.holdFailed, "hold-failed-member", 5*time.Minute,
		"how long the room of a member that failed or was deleted while its gang ran is kept for its replacement;\n"+
			"0 keeps none")
	fs.DurationVar(&f.partialTimeout, "partial-gang-timeout", 5*time.Minute,
		"a gang that holds some members but not its minimum (left so by a crash mid-bind, or by a lost member) is\n"+
			"completed before other gangs; if the rest still does not fit after this long without progress, its bound\n"+
			"members are evicted so that they hold no room for a gang that cannot run. 0 never evicts them")
	fs.DurationVar(&f.forecastPeriod, "forecast-period", 30*time.Second,
		"how often, at most, to forecast when each waiting gang starts and its place in its queue (PodGroup\n"+
			"status.expectedStartTime and queuePosition), off the scheduling cycle; 0 forecasts nothing")
	fs.DurationVar(&f.forecastHorizon, "forecast-horizon", 7*24*time.Hour,
		"how far ahead the forecast looks: a gang not expected to start within it has no expected start")
	logFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(logFlags)
	fs.Var(logFlags.Lookup("v").Value, "v", "log verbosity (klog level)")
	return fs
}

func schedulerUsage(out io.Writer) {
	fmt.Fprint(out, `Usage: phalanx scheduler [flags]

Runs Phalanx as a secondary Kubernetes scheduler: it serves the pods whose
spec.schedulerName is one of --scheduler-name and places each gang (PodGroup,
or ACK's pod-group labels) all-or-nothing.

A gang's estimated run time (PodGroup spec.estimatedRuntimeSeconds, or the
annotation phalanx.dev/estimated-runtime), else its pods' smallest
activeDeadlineSeconds, else the run times of its queue's recent gangs, tells
reservations when running gangs end and which gangs may backfill.
spec.requiredTopology (phalanx.dev/required-topology) keeps a gang within one
domain of a --topology level; spec.gpuModel (phalanx.dev/gpu-model) keeps it
on nodes whose --gpu-model-label has that value.

Flags:
`)
	var f schedulerFlags
	fs := schedulerFlagSet(&f, out)
	fs.PrintDefaults()
}

func runScheduler(args []string, stdout, stderr io.Writer) int {
	var f schedulerFlags
	fs := schedulerFlagSet(&f, stderr)
	fs.Usage = func() { schedulerUsage(stderr) }
	fs.SetOutput(io.Discard) // the error is printed below, with a hint
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "phalanx scheduler: %s\n", parseHint(fs, err))
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "phalanx scheduler: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	if f.config != "" {
		if err := applyConfig(fs, f.config, "scheduler"); err != nil {
			fmt.Fprintf(stderr, "phalanx scheduler: %v\n", err)
			return 2
		}
	}
	if len(f.names) == 0 {
		f.names = stringList{scheduler.DefaultSchedulerName}
	}
	if errs := validation.IsQualifiedName(f.gpuModelLabel); len(errs) > 0 {
		fmt.Fprintf(stderr, "phalanx scheduler: --gpu-model-label %q is not a label key: %s\n", f.gpuModelLabel, strings.Join(errs, "; "))
		return 2
	}
	// As phalanx simulate (and a configuration file) says: one reservation
	// at least, turned off by --reserve-after 0.
	if f.reservations < 1 || f.reservations > core.MaxReservations {
		fmt.Fprintf(stderr, "phalanx scheduler: --reservations %d: give 1 to %d\n", f.reservations, core.MaxReservations)
		return 2
	}
	if f.qps <= 0 || f.burst < 1 {
		fmt.Fprintf(stderr, "phalanx scheduler: --kube-api-qps %v and --kube-api-burst %d: give more than 0\n", f.qps, f.burst)
		return 2
	}
	if f.bindWorkers < 1 || f.cyclePeriod <= 0 {
		fmt.Fprintf(stderr, "phalanx scheduler: --bind-workers %d and --cycle-period %v: give more than 0\n", f.bindWorkers, f.cyclePeriod)
		return 2
	}
	opts := scheduler.Options{ReserveAfter: f.reserveAfter, PreemptionGracePeriod: f.preemptionGrace,
		HoldFailedMember: f.holdFailed, ReclaimAfter: f.reclaimAfter, Reservations: f.reservations, ReserveByWork: f.reserveByWork,
		PartialGangTimeout: f.partialTimeout, ForecastPeriod: f.forecastPeriod, ForecastHorizon: f.forecastHorizon}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "phalanx scheduler: %v\n", err)
		return 2
	}
	if f.leaderElect && !(f.retryPeriod > 0 && f.retryPeriod < f.renewDeadline && f.renewDeadline < f.leaseDuration) {
		fmt.Fprintf(stderr, "phalanx scheduler: want 0 < --leader-elect-retry-period (%v) < --leader-elect-renew-deadline (%v) < --leader-elect-lease-duration (%v)\n",
			f.retryPeriod, f.renewDeadline, f.leaseDuration)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, f); err != nil {
		// The package's errors start with its name, the command's already.
		fmt.Fprintf(stderr, "phalanx scheduler: %s\n", strings.TrimPrefix(err.Error(), "scheduler: "))
		return 1
	}
	return 0
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// streamingLists turns client-go's WatchListClient on when the API server
// serves streaming lists (the WatchList feature, on by default from
// Kubernetes 1.34), unless the environment decides
// (KUBE_FEATURE_WatchListClient): the informers then get their initial
// state as a stream of watch events, which spares the API server building
// one response of every pod after a restart. Against an older server the
// informers would fall back to list and watch, each with an error in the
// log, so there it stays off.
type streamingLists struct {
	clientfeatures.Gates
	on atomic.Bool
}

func (g *streamingLists) Enabled(f clientfeatures.Feature) bool {
	if _, set := os.LookupEnv("KUBE_FEATURE_" + string(f)); f == clientfeatures.WatchListClient && !set {
		return g.on.Load()
	}
	return g.Gates.Enabled(f)
}

// servesStreamingLists reports whether the API server's version has the
// WatchList feature on by default.
func servesStreamingLists(kube kubernetes.Interface) bool {
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		return false
	}
	major, err1 := strconv.Atoi(strings.TrimRight(v.Major, "+"))
	minor, err2 := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	return err1 == nil && err2 == nil && (major > 1 || major == 1 && minor >= 34)
}

// serve runs the scheduler until ctx ends or, with leader election, until
// leadership is lost.
func serve(ctx context.Context, f schedulerFlags) error {
	logger := klog.FromContext(ctx)
	if soft := setMemoryLimit("/sys/fs/cgroup"); soft > 0 {
		logger.Info("Go's memory limit set to 90% of the container's", "bytes", soft)
	}
	streaming := &streamingLists{Gates: clientfeatures.FeatureGates()}
	clientfeatures.ReplaceFeatureGates(streaming)
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	cfg.UserAgent = "phalanx-scheduler"
	// Kubernetes' own types travel as protobuf, which the API server
	// encodes and Phalanx decodes several times faster than JSON (a
	// restart lists every pod); our CRDs can only be JSON.
	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	streaming.on.Store(servesStreamingLists(kube))
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	// Events go through a client of their own, with its own rate limit, as
	// kube-scheduler's do: one Event per bound pod must not take the binds'
	// share of --kube-api-qps.
	events, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})
	// So do the pods' conditions (with the state ConfigMap) and the Lease.
	status, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	election, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: scheduler.EventComponent})

	metrics := scheduler.NewMetrics()
	sched, err := scheduler.New(scheduler.Options{SchedulerNames: f.names, CyclePeriod: f.cyclePeriod,
		BindWorkers: f.bindWorkers, GPU: f.gpu, Dynamic: dyn, ReserveAfter: f.reserveAfter, Topology: f.topology,
		GPUModelLabel: f.gpuModelLabel, Preemption: f.preemption, PreemptionGracePeriod: f.preemptionGrace,
		HoldFailedMember: f.holdFailed, ReclaimAfter: f.reclaimAfter, ReclaimYoungerOnly: f.reclaimYounger,
		PreemptMinRuntime: f.preemptMin, ReclaimMinRuntime: f.reclaimMin, WeighLoss: f.weighLoss,
		CorrectEstimates:    f.correctEst,
		ReserveAfterBacklog: f.reserveBacklog, ReserveAhead: f.reserveAhead, Reservations: f.reservations, ShortestFirst: f.shortestFirst, PartialGangTimeout: f.partialTimeout,
		ReserveByWork:  f.reserveByWork,
		StateNamespace: f.leaseNamespace, StatusKube: status, ElectionKube: election,
		PodEventQPS: f.podEventQPS, PodEventBurst: f.podEventBurst,
		ForecastPeriod: f.forecastPeriod, ForecastHorizon: f.forecastHorizon}, kube, client, metrics, recorder)
	if err != nil {
		return err
	}
	if f.address != "" {
		ln, err := net.Listen("tcp", f.address)
		if err != nil {
			return fmt.Errorf("listen for health and metrics: %w", err)
		}
		mux := http.NewServeMux()
		healthHandlers(mux, sched)
		mux.Handle("/metrics", metrics.Handler())
		if f.profiling {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "Health and metrics server stopped")
			}
		}()
		defer srv.Close()
		logger.Info("Serving health and metrics", "address", ln.Addr().String())
	}
	if !f.leaderElect {
		return sched.Run(ctx)
	}
	host, _ := os.Hostname()
	return sched.RunLeading(ctx, scheduler.LeaderElection{Namespace: f.leaseNamespace, Name: f.leaseName,
		Identity: host + "_" + string(uuid.NewUUID()), LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline,
		RetryPeriod: f.retryPeriod})
}

// readiness is what the health endpoints ask of the scheduler.
type readiness interface {
	Ready() bool   // the informers have synced and cycles run
	Standby() bool // a replica waiting for the Lease another holds
}

// healthHandlers serves /healthz (the process answers), /readyz (this
// replica is ready: it schedules, or it is a standby waiting to take over,
// so that a Deployment of several replicas rolls out) and /leaderz (this
// replica schedules: it leads, or runs without leader election, and its
// informers have synced).
func healthHandlers(mux *http.ServeMux, r readiness) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case r.Ready():
			fmt.Fprintln(w, "ok")
		case r.Standby():
			fmt.Fprintln(w, "ok: standby, waiting for the Lease")
		default:
			http.Error(w, "not ready: informers syncing", http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/leaderz", func(w http.ResponseWriter, _ *http.Request) {
		if !r.Ready() {
			http.Error(w, "not scheduling: a standby, or informers syncing", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
