//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/clientset/versioned"
	"github.com/phalanx-sched/phalanx/client/informers/externalversions"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// env is one test's world: a namespace of its own, the KWOK nodes it
// added, and a record of the phases its PodGroups went through. Its cleanup
// removes the pods, PodGroups, nodes and the namespace, and waits until
// they are gone, so that the next test starts from an empty cluster.
type env struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	nodes []string

	mu     sync.Mutex
	phases map[string][]v1alpha1.PodGroupPhase // PodGroup name -> distinct phases in order seen
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// newEnv creates the test's namespace and starts recording PodGroup phases.
func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	prefix := "e2e-" + strings.Trim(nonName.ReplaceAllString(strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), "-"), "-") + "-"
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		cancel()
		t.Fatalf("create namespace: %v", err)
	}
	e := &env{t: t, ctx: ctx, ns: ns.Name, phases: map[string][]v1alpha1.PodGroupPhase{}}
	t.Logf("namespace %s", e.ns)
	t.Cleanup(func() {
		cancel()
		e.cleanup()
	})
	e.recordPhases(ctx)
	return e
}

// recordPhases watches the namespace's PodGroups and remembers every phase
// each one shows, so that tests can check a phase that lasted only seconds.
func (e *env) recordPhases(ctx context.Context) {
	f := externalversions.NewSharedInformerFactoryWithOptions(phalanx, 0, externalversions.WithNamespace(e.ns))
	inf := f.Scheduling().V1alpha1().PodGroups().Informer()
	note := func(obj any) {
		pg, ok := obj.(*v1alpha1.PodGroup)
		if !ok || pg.Status.Phase == "" {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		seen := e.phases[pg.Name]
		if len(seen) == 0 || seen[len(seen)-1] != pg.Status.Phase {
			e.phases[pg.Name] = append(seen, pg.Status.Phase)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, obj any) { note(obj) },
	}); err != nil {
		e.t.Fatalf("PodGroup informer: %v", err)
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			e.t.Fatalf("informer %v did not sync", typ)
		}
	}
}

// phaseHistory returns the distinct phases the PodGroup went through.
func (e *env) phaseHistory(pg string) []v1alpha1.PodGroupPhase {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]v1alpha1.PodGroupPhase(nil), e.phases[pg]...)
}

// addNodes creates the nodes and waits until KWOK reports them Ready.
func (e *env) addNodes(b *nodesBuilder) {
	e.t.Helper()
	var names []string
	for _, n := range b.Objs() {
		if _, err := kube.CoreV1().Nodes().Create(e.ctx, n, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("create node %s: %v", n.Name, err)
		}
		e.nodes = append(e.nodes, n.Name)
		names = append(names, n.Name)
	}
	e.eventually(time.Minute, fmt.Sprintf("nodes %s-* are Ready", b.prefix), func(ctx context.Context) error {
		for _, name := range names {
			n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(n) {
				return fmt.Errorf("node %s is not Ready", name)
			}
		}
		return nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// job is a gang created in the test's namespace.
type job struct {
	name string
	size int
	pods []string
}

// create creates the job's PodGroup (if any), then its pods, in the order
// a job operator does.
func (e *env) create(b *jobBuilder) *job {
	e.t.Helper()
	j, err := e.tryCreate(e.ctx, b)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// tryCreate is create for goroutines other than the test's.
func (e *env) tryCreate(ctx context.Context, b *jobBuilder) (*job, error) {
	if pg := b.PodGroup(); pg != nil && b.foreign != nil {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": b.foreign.GroupVersion().String(), "kind": "PodGroup",
			"metadata": map[string]any{"name": pg.Name, "namespace": e.ns},
			"spec":     map[string]any{"minMember": int64(pg.Spec.MinMember)},
		}}
		if _, err := dyn.Resource(*b.foreign).Namespace(e.ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create %s PodGroup %s: %w", b.foreign.Group, pg.Name, err)
		}
	} else if pg != nil {
		pg.Namespace = e.ns
		if _, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create PodGroup %s: %w", pg.Name, err)
		}
	}
	j := &job{name: b.name, size: b.size()}
	for _, p := range b.Pods() {
		p.Namespace = e.ns
		if _, err := kube.CoreV1().Pods(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create pod %s: %w", p.Name, err)
		}
		j.pods = append(j.pods, p.Name)
	}
	return j, nil
}

// createQueue creates a Queue named after the test's namespace (Queues are
// cluster-wide), with the given spec, and deletes it when the test ends.
func (e *env) createQueue(spec v1alpha1.QueueSpec) string { return e.queueNamed("", spec) }

func (e *env) createPod(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	p.Namespace = e.ns
	out, err := kube.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return out
}

// pods lists the job's pods.
func (e *env) pods(ctx context.Context, j *job) ([]corev1.Pod, error) {
	l, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: labelJob + "=" + j.name})
	if err != nil {
		return nil, err
	}
	if len(l.Items) != j.size {
		return nil, fmt.Errorf("job %s has %d pods, want %d", j.name, len(l.Items), j.size)
	}
	return l.Items, nil
}

// deletePods deletes the job's pods at once (grace period 0: there is no
// kubelet to wait for) and waits until they are gone.
func (e *env) deletePods(j *job) {
	e.t.Helper()
	zero := int64(0)
	for _, name := range j.pods {
		err := kube.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			e.t.Fatalf("delete pod %s: %v", name, err)
		}
	}
	e.eventually(time.Minute, "job "+j.name+"'s pods are gone", func(ctx context.Context) error {
		l, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: labelJob + "=" + j.name})
		if err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return fmt.Errorf("%d pods left", len(l.Items))
		}
		return nil
	})
}

// cleanup deletes what the test created and waits until it is gone. It
// reports problems with t.Errorf: a leftover node would skew the next test.
func (e *env) cleanup() {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zero := int64(0)
	now := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if err := kube.CoreV1().Pods(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: delete pods: %v", err)
	}
	if err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: delete PodGroups: %v", err)
	}
	for _, name := range e.nodes {
		if err := kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: delete node %s: %v", name, err)
		}
	}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) > 0 {
			return false, nil
		}
		for _, name := range e.nodes {
			if _, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("cleanup: pods of %s or nodes %v still exist: %v", e.ns, e.nodes, err)
	}
	// There is no namespace controller (no kube-controller-manager): the
	// namespace is empty of pods and PodGroups, so finalize it by hand.
	if err := kube.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{}); err != nil {
		t.Errorf("cleanup: delete namespace %s: %v", e.ns, err)
		return
	}
	ns, err := kube.CoreV1().Namespaces().Get(ctx, e.ns, metav1.GetOptions{})
	if err == nil {
		ns.Spec.Finalizers = nil
		if _, err := kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: finalize namespace %s: %v", e.ns, err)
		}
	}
}

// startScheduler runs a Phalanx scheduler in-process, serving the given
// scheduler names (default phalanx), wired as cmd/phalanx wires it minus
// leader election. It returns once the scheduler is Ready. The returned
// stop cancels it and waits until Run has returned; it is idempotent and
// also runs at the end of the test.
func startScheduler(t *testing.T, names ...string) (stop func()) {
	t.Helper()
	stop, _ = startSchedulerWith(t, restConfig, nil, true, names...)
	return stop
}

// startSchedulerWith is startScheduler with the given client configuration
// (e.g. a ServiceAccount's token) and, when le is not nil, leader election.
// With waitReady false it returns at once (a standby replica never becomes
// Ready); ready reports whether it schedules.
func startSchedulerWith(t *testing.T, base *rest.Config, le *scheduler.LeaderElection, waitReady bool, names ...string) (stop func(), ready func() bool) {
	t.Helper()
	return launchScheduler(t, base, le, waitReady, scheduler.Options{SchedulerNames: names})
}

// startSchedulerOpts is startScheduler with options such as reservations,
// topology levels or the GPU-model label.
func startSchedulerOpts(t *testing.T, opts scheduler.Options) (stop func()) {
	t.Helper()
	stop, _ = launchScheduler(t, restConfig, nil, true, opts)
	return stop
}

// startSchedulerMetrics is startSchedulerOpts, and returns the metrics the
// scheduler exports.
func startSchedulerMetrics(t *testing.T, opts scheduler.Options) *scheduler.Metrics {
	t.Helper()
	m := scheduler.NewMetrics()
	launchSchedulerWith(t, restConfig, nil, true, opts, m)
	return m
}

// launchScheduler does the work of the start functions above. The client
// options (Dynamic) are its own; opts.SchedulerNames defaults to phalanx.
func launchScheduler(t *testing.T, base *rest.Config, le *scheduler.LeaderElection, waitReady bool, opts scheduler.Options) (stop func(), ready func() bool) {
	t.Helper()
	return launchSchedulerWith(t, base, le, waitReady, opts, scheduler.NewMetrics())
}

// electing holds the schedulers run under leader election, by identity,
// for tests that ask one whether it is a standby.
var electing sync.Map

// launchSchedulerWith is launchScheduler exporting into m.
func launchSchedulerWith(t *testing.T, base *rest.Config, le *scheduler.LeaderElection, waitReady bool, opts scheduler.Options,
	m *scheduler.Metrics) (stop func(), ready func() bool) {
	t.Helper()
	if len(opts.SchedulerNames) == 0 {
		opts.SchedulerNames = []string{defaultSchedulerNm}
	}
	names := opts.SchedulerNames
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "phalanx-scheduler-" + names[0] // the field manager of its writes
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kc.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: scheduler.EventComponent})
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Dynamic = dc
	sched, err := scheduler.New(opts, kc, pc, m, recorder)
	if err != nil {
		cancel()
		broadcaster.Shutdown()
		t.Fatalf("scheduler.New: %v", err)
	}
	if le != nil {
		electing.Store(le.Identity, sched)
	}
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if le != nil {
			runErr = sched.RunLeading(ctx, *le)
			return
		}
		runErr = sched.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			broadcaster.Shutdown()
			if runErr != nil {
				t.Errorf("scheduler Run: %v", runErr)
			}
		})
	}
	t.Cleanup(stop)
	if !waitReady {
		return stop, sched.Ready
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("Run returned before Ready: %v", runErr)
		default:
		}
		return sched.Ready(), nil
	})
	if err != nil {
		t.Fatalf("scheduler %v not ready: %v", names, err)
	}
	t.Logf("scheduler serving %v is ready", names)
	return stop, sched.Ready
}
