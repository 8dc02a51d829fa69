//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// priorityClass creates a PriorityClass named after the test's namespace
// and suffix, and deletes it when the test ends.
func (e *env) priorityClass(suffix string, value int32) string {
	e.t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + suffix}, Value: value}
	if _, err := kube.SchedulingV1().PriorityClasses().Create(e.ctx, pc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create PriorityClass %s: %v", pc.Name, err)
	}
	e.t.Cleanup(func() {
		err := kube.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("cleanup: delete PriorityClass %s: %v", pc.Name, err)
		}
	})
	return pc.Name
}

// queueNamed creates a Queue named after the test's namespace and suffix
// (if any), and deletes it when the test ends.
func (e *env) queueNamed(suffix string, spec v1alpha1.QueueSpec) string {
	e.t.Helper()
	name := e.ns
	if suffix != "" {
		name += "-" + suffix
	}
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if _, err := phalanx.SchedulingV1alpha1().Queues().Create(e.ctx, q, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create queue %s: %v", q.Name, err)
	}
	e.t.Cleanup(func() {
		err := phalanx.SchedulingV1alpha1().Queues().Delete(context.Background(), q.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("cleanup: delete queue %s: %v", q.Name, err)
		}
	})
	return q.Name
}

// gone: none of j's pods exists any more.
func (e *env) gone(j *job) check {
	return func(ctx context.Context) error {
		for _, name := range j.pods {
			_, err := kube.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				return fmt.Errorf("pod %s still exists", name)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	}
}

// recreate creates j's pods again, as a job operator does after its pods
// were evicted; the PodGroup stays.
func (e *env) recreate(b *jobBuilder) *job {
	e.t.Helper()
	j := &job{name: b.name, size: b.size()}
	for _, p := range b.Pods() {
		e.createPod(p)
		j.pods = append(j.pods, p.Name)
	}
	return j
}

func preemptingScheduler(t *testing.T) {
	startSchedulerOpts(t, scheduler.Options{Preemption: true, HoldFailedMember: time.Minute})
}

// TestPreemption: on 2 nodes of 4 GPUs, gang low (2 x 4 GPUs, low priority)
// runs. Gang high (1 x 4 GPUs, high priority) arrives: low is evicted whole,
// never one member alone, and high runs. low's pods, recreated at once as
// an operator would, wait while high runs (no ping-pong), then run.
func TestPreemption(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("pre", 2).GPUs(4))
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1})
	lowPC, highPC := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	preemptingScheduler(t)

	lowJob := gang("low").Members(2).GPUs(4).Queue(queue).PriorityClass(lowPC).RunFor("120s")
	low := e.create(lowJob)
	e.eventually(30*time.Second, "low runs", e.running(low))

	high := e.create(gang("high").Members(1).GPUs(4).Queue(queue).PriorityClass(highPC).RunFor("15s"))
	e.eventually(30*time.Second, "low is evicted whole", e.gone(low))
	e.eventually(10*time.Second, "an Event says why low's pods went",
		e.eventOn("low-worker-0", "Preempted", "for gang", "high", "rule: preemption within a queue"))
	e.eventually(30*time.Second, "high runs", e.started(high))

	low = e.recreate(lowJob)
	e.whileRunning(high, "low, recreated, to wait whole while high runs", e.noneBound(low))
	e.eventually(30*time.Second, "low runs again once high is done", e.running(low))
}

// TestPreemptMinRuntime: as TestPreemption, but low's queue protects its
// gangs for their first 10 seconds (preemptMinRuntimeSeconds): high, which
// arrives at once, waits while low has run less than that, then preempts it.
func TestPreemptMinRuntime(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("minrt", 2).GPUs(4))
	ten := int32(10)
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1, PreemptMinRuntimeSeconds: &ten})
	lowPC, highPC := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	preemptingScheduler(t)

	low := e.create(gang("low").Members(2).GPUs(4).Queue(queue).PriorityClass(lowPC).RunFor("120s"))
	e.eventually(30*time.Second, "low runs", e.running(low))
	// When low started, as the scheduler counts it: its pods' startTime.
	pods, err := e.pods(e.ctx, low)
	if err != nil {
		t.Fatal(err)
	}
	var started time.Time
	for _, p := range pods {
		if st := p.Status.StartTime; st != nil && (started.IsZero() || st.Time.Before(started)) {
			started = st.Time
		}
	}
	if started.IsZero() {
		t.Fatal("low runs, but none of its pods has a startTime")
	}

	high := e.create(gang("high").Members(1).GPUs(4).Queue(queue).PriorityClass(highPC).RunFor("6s"))
	e.consistently(5*time.Second, "low, younger than its queue's minimum run time, to keep running", all(e.running(low), e.noneBound(high)))
	e.eventually(30*time.Second, "low is evicted whole once it has run 10 s", e.gone(low))
	// When it was evicted, as the API server stamped it: the first Preempted
	// Event on its pods. Both clocks are the machine's, whole seconds, so
	// the test's own delays do not count.
	events, err := kube.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "reason=Preempted"})
	if err != nil {
		t.Fatal(err)
	}
	var evicted time.Time
	for _, ev := range events.Items {
		at := ev.FirstTimestamp.Time
		if at.IsZero() {
			at = ev.EventTime.Time
		}
		if slices.Contains(low.pods, ev.InvolvedObject.Name) && !at.IsZero() && (evicted.IsZero() || at.Before(evicted)) {
			evicted = at
		}
	}
	switch ran := evicted.Sub(started); {
	case evicted.IsZero():
		t.Errorf("low is gone, but no Preempted Event names its pods")
	case ran < 9*time.Second: // 10 s, less a second of rounding
		t.Errorf("low was evicted %v after it started (%v, %v), before its minimum run time of 10 s", ran, started, evicted)
	}
	e.eventually(30*time.Second, "high runs", e.started(high))
}

// TestReclaim: queues a and b of equal weight on 2 nodes of 4 GPUs; a runs
// two 4-GPU jobs and is not reclaimable. b's job waits, and says that no
// running gang may be evicted for it. Once a is made
// reclaimable, b takes back its half: exactly one of a's jobs is evicted.
func TestReclaim(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("recl", 2).GPUs(4))
	no := false
	qa := e.queueNamed("a", v1alpha1.QueueSpec{Weight: 1, Reclaimable: &no})
	qb := e.queueNamed("b", v1alpha1.QueueSpec{Weight: 1})
	preemptingScheduler(t)

	a1 := e.create(gang("a1").Members(1).GPUs(4).Queue(qa).RunFor("120s"))
	a2 := e.create(gang("a2").Members(1).GPUs(4).Queue(qa).RunFor("120s"))
	e.eventually(30*time.Second, "a's jobs run", all(e.running(a1), e.running(a2)))

	b1 := e.create(gang("b1").Members(1).GPUs(4).Queue(qb).RunFor("120s"))
	e.eventually(10*time.Second, "b1 says why it waits, and why it evicts nothing",
		e.podGroupCondition("b1", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "0/1 members fit",
			"; no preemption: no running gang may be evicted for it"))
	e.consistently(3*time.Second, "a, not reclaimable, to keep both jobs", all(e.running(a1), e.running(a2), e.noneBound(b1)))

	q, err := phalanx.SchedulingV1alpha1().Queues().Get(e.ctx, qa, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Reclaimable = nil
	if _, err := phalanx.SchedulingV1alpha1().Queues().Update(e.ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, "b1 runs on what it reclaimed", e.started(b1))
	gone1, gone2 := e.gone(a1)(e.ctx) == nil, e.gone(a2)(e.ctx) == nil
	if gone1 == gone2 {
		e.dump()
		t.Fatalf("want exactly one of a's jobs reclaimed; a1 gone %v, a2 gone %v", gone1, gone2)
	}
	victim := "a1-worker-0"
	if gone2 {
		victim = "a2-worker-0"
	}
	e.eventually(10*time.Second, "an Event says the victim was reclaimed",
		e.eventOn(victim, "Preempted", "Reclaimed", "b1", "rule: fair-share reclaim", "more than its deserved share"))
}

// TestHoldForFailedMember is the seed's warning: "if a pod of a running job
// dies, others may take its resources". Gang train (2 x 4 GPUs) runs on 2
// nodes; one member is deleted. A pod that arrives before the replacement
// would take the freed node; Phalanx keeps it for the replacement, which
// lands on the same node.
func TestHoldForFailedMember(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("hold", 2).GPUs(4))
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1})
	preemptingScheduler(t)

	trainJob := gang("train").Members(2).GPUs(4).Queue(queue).RunFor("120s")
	train := e.create(trainJob)
	e.eventually(30*time.Second, "train runs", e.running(train))
	nodes, err := e.nodesOf(e.ctx, train)
	if err != nil {
		t.Fatal(err)
	}
	lost := e.loseMember(train, "train-worker-0")

	greedy := e.create(gang("greedy").Members(1).GPUs(4).Queue(queue).RunFor("5s"))
	e.consistently(3*time.Second, "greedy to leave the held room alone", e.noneBound(greedy))

	replacement := e.replaceMember(trainJob, lost)
	e.eventually(30*time.Second, "the replacement returns to its member's node", e.podOn(replacement.Name, nodes[lost]))
	e.consistently(2*time.Second, "greedy to wait while train runs", e.noneBound(greedy))
}

// loseMember deletes the running member lost of j at once, as a node
// failure would, and waits until it is gone.
func (e *env) loseMember(j *job, lost string) string {
	e.t.Helper()
	zero := int64(0)
	if err := kube.CoreV1().Pods(e.ns).Delete(e.ctx, lost, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		e.t.Fatal(err)
	}
	e.eventually(10*time.Second, lost+" is gone", e.gone(&job{name: j.name, pods: []string{lost}}))
	return lost
}

// replaceMember creates the member lost of the job b builds again, as its
// operator would.
func (e *env) replaceMember(b *jobBuilder, lost string) *corev1.Pod {
	e.t.Helper()
	for _, p := range b.Pods() {
		if p.Name == lost {
			return e.createPod(p)
		}
	}
	e.t.Fatalf("job %s has no member %s", b.name, lost)
	return nil
}

// podOn: the named pod is bound to node.
func (e *env) podOn(pod, node string) check {
	return func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != node {
			return fmt.Errorf("pod %s is on %q, want %s", pod, p.Spec.NodeName, node)
		}
		return nil
	}
}

// TestEvictionRefused: a PodDisruptionBudget protects gang low, so the
// Eviction API refuses to evict it for gang high. Nothing is deleted, low
// keeps running and high waits, saying why; the scheduler asks again only
// after a pause (10 s), and once the budget is gone the eviction goes
// through and high runs.
func TestEvictionRefused(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("pdb", 1).GPUs(4))
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1})
	lowPC, highPC := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	preemptingScheduler(t)

	low := e.create(gang("low").Members(1).GPUs(4).Queue(queue).PriorityClass(lowPC).RunFor("120s"))
	e.eventually(30*time.Second, "low runs", e.running(low))
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "low"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{labelJob: "low"}}}}
	if _, err := kube.PolicyV1().PodDisruptionBudgets(e.ns).Create(e.ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The disruption controller is not running here: say, as it would, that
	// no disruption is allowed.
	pdb, err := kube.PolicyV1().PodDisruptionBudgets(e.ns).Get(e.ctx, "low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := kube.PolicyV1().PodDisruptionBudgets(e.ns).UpdateStatus(e.ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	high := e.create(gang("high").Members(1).GPUs(4).Queue(queue).PriorityClass(highPC).RunFor("5s"))
	e.eventually(30*time.Second, "high says why its victim stays",
		e.podGroupCondition("high", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "the eviction of "+e.ns+"/low-worker-0 was refused", "disruption budget"))
	e.consistently(4*time.Second, "the budget to keep low running and high waiting", all(e.running(low), e.noneBound(high)))

	if err := kube.PolicyV1().PodDisruptionBudgets(e.ns).Delete(e.ctx, "low", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, "low is evicted once the budget is gone", e.gone(low))
	e.eventually(30*time.Second, "high runs", e.started(high))
}
