//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReservationWithBackfill: on 2 nodes of 4 GPUs, job first (4 GPUs,
// estimated 15 s, done in 10 s) runs; gang big (2 x 4 GPUs) cannot fit and,
// past its queue's reserveAfterSeconds of 1, gets both nodes reserved, with
// the end of first's estimate as its expected start. A gang with no estimate
// must then leave the free node alone, while one expected to end long
// before that start uses it (backfill). When first ends, big runs, and only
// then the gang without an estimate.
func TestReservationWithBackfill(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("resv", 2).GPUs(4))
	one := int32(1)
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1, ReserveAfterSeconds: &one})
	startScheduler(t) // --reserve-after is off: the queue's own threshold turns reservations on

	first := e.create(gang("first").Members(1).GPUs(4).Queue(queue).Estimate(15).RunFor("10s"))
	e.eventually(30*time.Second, "first runs", e.running(first))
	pods, err := e.pods(e.ctx, first)
	if err != nil || pods[0].Status.StartTime == nil {
		t.Fatalf("first's pod has no start time: %v", err)
	}
	// Phalanx counts on first's node at start + estimate, to the second.
	expected := pods[0].Status.StartTime.Add(15 * time.Second).UTC().Format(time.RFC3339)

	big := e.create(gang("big").Members(2).GPUs(4).Queue(queue).RunFor("4s"))
	e.eventually(30*time.Second, "big holds both nodes, expected to start when first's estimate ends", all(
		e.podGroupCondition("big", v1alpha1.PodGroupReserved, metav1.ConditionTrue, "2 node(s) reserved", expected),
		e.podGroupCondition("big", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue,
			"2 node(s) reserved for it; expected to start at "+expected)))
	e.eventually(10*time.Second, "big's status.expectedStartTime is its reservation's start", e.expectedStart("big", expected))
	e.eventually(10*time.Second, "an Event on big's PodGroup gives its reservation",
		e.eventOn("big", string(corev1.PodReasonUnschedulable), "2 node(s) reserved for it", "expected to start at "+expected))

	unknown := e.create(gang("unknown").Members(1).GPUs(4).Queue(queue).RunFor("2s"))
	short := e.create(ackJob("short").Workers(1).GPUsPerWorker(4).Queue(queue).PodAnnotation(annEstimate, "3s").RunFor("2s"))
	e.eventually(30*time.Second, "short, estimated to end before big starts, backfills the free node", e.started(short))
	e.eventually(10*time.Second, "unknown, with no estimate, says the nodes are reserved",
		e.podGroupCondition("unknown", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "reserved for gang "+e.ns+"/big"))
	e.eventually(30*time.Second, "short completes", e.inPhase(short, corev1.PodSucceeded))
	e.whileRunning(first, "big and unknown to wait while first runs, though a node is free",
		all(e.noneBound(big), e.noneBound(unknown)))

	e.eventually(30*time.Second, "big runs once first is done", e.started(big))
	if err := e.noneBound(unknown)(e.ctx); err != nil {
		e.dump()
		t.Fatalf("the gang without an estimate ran before the reserved gang: %v", err)
	}
	e.eventually(10*time.Second, "big's PodGroup is no longer Reserved",
		e.podGroupCondition("big", v1alpha1.PodGroupReserved, metav1.ConditionFalse))
	e.eventually(30*time.Second, "unknown runs after big", e.started(unknown))
}

// TestReserveAhead: on 2 nodes of 4 GPUs, job first (4 GPUs, estimated
// 20 s, done in 12 s) runs; gang big (2 x 4 GPUs) waits in a queue whose
// reserveAfterSeconds is 30, and the scheduler reserves up to an hour ahead
// of that (--reserve-ahead). big holds both nodes at once, ahead of its due
// time, its arrival plus 30 s, and is expected to start by then. A gang
// expected to end before that time uses the free node; one expected to run
// past it, and one without an estimate, do not. When first ends, big
// starts, before its due time.
func TestReserveAhead(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("ahead", 2).GPUs(4))
	after := int32(30)
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1, ReserveAfterSeconds: &after})
	startSchedulerOpts(t, scheduler.Options{ReserveAhead: time.Hour})

	first := e.create(gang("first").Members(1).GPUs(4).Queue(queue).Estimate(20).RunFor("12s"))
	e.eventually(30*time.Second, "first runs", e.running(first))
	// big arrives when its PodGroup or its first pod is created, within
	// these bounds (the API server's timestamps are whole seconds).
	before := time.Now().Truncate(time.Second).Add(-time.Second)
	big := e.create(gang("big").Members(2).GPUs(4).Queue(queue).RunFor("4s"))
	latest := time.Now().Add(time.Second)
	const words = "2 node(s) reserved for it ahead of its due time; expected to start by "
	var due time.Time
	e.eventually(10*time.Second, "big holds both nodes ahead of its due time", func(ctx context.Context) error {
		if err := e.podGroupCondition("big", v1alpha1.PodGroupReserved, metav1.ConditionTrue, words)(ctx); err != nil {
			return err
		}
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return err
		}
		msg := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupReserved).Message
		at, err := time.Parse(time.RFC3339, strings.Fields(msg[strings.Index(msg, words)+len(words):])[0])
		if err != nil {
			return fmt.Errorf("no time in %q: %v", msg, err)
		}
		if lo, hi := before.Add(30*time.Second), latest.Add(30*time.Second); at.Before(lo) || at.After(hi) {
			return fmt.Errorf("due at %s, want within [%s, %s]", at.UTC(), lo.UTC(), hi.UTC())
		}
		due = at
		return nil
	})

	long := e.create(ackJob("long").Workers(1).GPUsPerWorker(4).Queue(queue).PodAnnotation(annEstimate, "10m").RunFor("2s"))
	unknown := e.create(gang("unknown").Members(1).GPUs(4).Queue(queue).RunFor("2s"))
	short := e.create(ackJob("short").Workers(1).GPUsPerWorker(4).Queue(queue).PodAnnotation(annEstimate, "3s").RunFor("2s"))
	e.eventually(20*time.Second, "short, expected to end before big is due, backfills the free node", e.started(short))
	e.whileRunning(first, "big, long and unknown to wait while first runs, though a node is free",
		all(e.noneBound(big), e.noneBound(long), e.noneBound(unknown)))
	e.eventually(30*time.Second, "big runs once first is done", e.started(big))
	pods, err := e.pods(e.ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Status.StartTime == nil || !p.Status.StartTime.Time.Before(due) {
			e.dump()
			t.Fatalf("big's pod %s started at %v, want before its due time %s", p.Name, p.Status.StartTime, due.UTC())
		}
	}
	e.eventually(30*time.Second, "long and unknown run after big", all(e.started(long), e.started(unknown)))
}

// whileRunning checks c every pollInterval for as long as every pod of j
// runs, and fails the test the first time it does not hold; it returns when
// j's pods have finished, and fails if they had before c was checked once.
func (e *env) whileRunning(j *job, what string, c check) {
	e.t.Helper()
	for checked := false; ; checked = true {
		// c first: a failure counts only if j still ran after it was seen.
		err := c(e.ctx)
		if e.running(j)(e.ctx) != nil {
			if done := e.inPhase(j, corev1.PodSucceeded)(e.ctx); done != nil {
				e.dump()
				e.t.Fatalf("while checking %s, job %s stopped running without succeeding: %v", what, j.name, done)
			}
			if !checked {
				e.t.Fatalf("job %s had ended before %s could be checked once: the test checked nothing", j.name, what)
			}
			return
		}
		if err != nil {
			e.dump()
			e.t.Fatalf("expected %s, but: %v", what, err)
		}
		select {
		case <-time.After(pollInterval):
		case <-e.ctx.Done():
			e.t.Fatalf("test context ended while checking %s", what)
		}
	}
}

// nodesOf returns the nodes j's pods are bound to, by pod name.
func (e *env) nodesOf(ctx context.Context, j *job) (map[string]string, error) {
	pods, err := e.pods(ctx, j)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			return nil, fmt.Errorf("pod %s is not bound", p.Name)
		}
		out[p.Name] = p.Spec.NodeName
	}
	return out, nil
}

// TestStrictOrderQueue: in a queue with strictOrder, the head gang (a whole
// 4-GPU node, while each of the 2 nodes runs a 3-GPU job) blocks the queue's
// next gang, which would fit, and has a node reserved at once, though the
// queue sets no reserveAfterSeconds and the scheduler no --reserve-after.
// When a node frees, the head runs, then the next.
func TestStrictOrderQueue(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("strict", 2).GPUs(4))
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1, StrictOrder: true})
	startScheduler(t)

	// 3 + 3 GPUs cannot share a 4-GPU node: one job on each.
	a := e.create(gang("a").Members(1).GPUs(3).Queue(queue).Estimate(12).RunFor("10s"))
	b := e.create(gang("b").Members(1).GPUs(3).Queue(queue).Estimate(12).RunFor("10s"))
	e.eventually(30*time.Second, "a and b run", all(e.running(a), e.running(b)))
	head := e.create(gang("head").Members(1).GPUs(4).Queue(queue).RunFor("3s"))
	next := e.create(gang("next").Members(1).GPUs(1).Queue(queue).RunFor("2s"))
	e.eventually(30*time.Second, "head has a node reserved at once",
		e.podGroupCondition("head", v1alpha1.PodGroupReserved, metav1.ConditionTrue, "1 node(s) reserved"))
	e.eventually(10*time.Second, "next says it waits behind head",
		e.podGroupCondition("next", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "waiting behind gang", "strict order"))
	e.whileRunning(a, "next to wait behind head while a runs", e.noneBound(next))
	e.eventually(30*time.Second, "head runs once a node is free", e.started(head))
	e.eventually(30*time.Second, "next runs", e.started(next))
}

// TestShortestFirst: with shortest-first, on one node of 4 GPUs held by
// blocker, gang long (estimated 10 min) is created before gang short
// (estimated 5 s); both need the whole node. When blocker ends, short runs
// first though it came later, and long after it.
func TestShortestFirst(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("sjf", 1).GPUs(4))
	startSchedulerOpts(t, scheduler.Options{ShortestFirst: true})

	blocker := e.create(gang("blocker").Members(1).GPUs(4).RunFor("6s"))
	e.eventually(30*time.Second, "blocker runs", e.running(blocker))
	long := e.create(gang("long").Members(1).GPUs(4).Estimate(600).RunFor("2s"))
	short := e.create(gang("short").Members(1).GPUs(4).Estimate(5).RunFor("2s"))
	e.eventually(30*time.Second, "both wait for the node",
		all(e.podGroupCondition("long", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue),
			e.podGroupCondition("short", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue)))

	e.eventually(30*time.Second, "short runs once blocker is done", e.started(short))
	if err := e.noneBound(long)(e.ctx); err != nil {
		e.dump()
		t.Fatalf("long, created first but estimated longer, ran before short: %v", err)
	}
	e.eventually(30*time.Second, "long runs after short", e.started(long))
}

// TestOverShareGangSaysWhy: on 2 nodes of 4 GPUs, queue a (reservations
// after 1 s) runs a1 (4 GPUs) and a2 (2 GPUs), queue b runs b1 (2 GPUs) and
// waits with b2 (4 GPUs): of equal weight, each deserves 4 GPUs, and a holds
// 6. a's gang big (2 x 4 GPUs) is due for a reservation at once, but a
// queue over its share counts only on what its own gangs free, 6 GPUs:
// nothing is reserved for big, and its PodGroup says why. Once b2 is gone,
// b asks for only what it holds, a is within its share, and big gets both
// nodes reserved.
func TestOverShareGangSaysWhy(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("over", 2).GPUs(4))
	one := int32(1)
	qa := e.queueNamed("a", v1alpha1.QueueSpec{Weight: 1, ReserveAfterSeconds: &one})
	qb := e.queueNamed("b", v1alpha1.QueueSpec{Weight: 1})
	startScheduler(t) // no preemption: a keeps what it holds

	a1 := e.create(gang("a1").Members(1).GPUs(4).Queue(qa).Estimate(300).RunFor("300s"))
	e.eventually(30*time.Second, "a1 runs", e.running(a1))
	a2 := e.create(gang("a2").Members(1).GPUs(2).Queue(qa).Estimate(300).RunFor("300s"))
	b1 := e.create(gang("b1").Members(1).GPUs(2).Queue(qb).Estimate(300).RunFor("300s"))
	e.eventually(30*time.Second, "a2 and b1 run", all(e.running(a2), e.running(b1)))
	b2 := e.create(gang("b2").Members(1).GPUs(4).Queue(qb).RunFor("10s"))
	e.eventually(10*time.Second, "b2 waits", e.podGroupCondition("b2", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue))

	big := e.create(gang("big").Members(2).GPUs(4).Queue(qa).RunFor("10s"))
	e.eventually(30*time.Second, "big says why nothing is reserved for it",
		e.podGroupCondition("big", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "0/2 members fit",
			"in line for a reservation, but queue "+qa+" holds more than its deserved share and what its own gangs free is not enough for it",
			"until the queue is back within its share"))
	if err := e.podGroupCondition("big", v1alpha1.PodGroupReserved, metav1.ConditionTrue)(e.ctx); err == nil {
		e.dump()
		t.Fatal("big is Reserved while its queue is over its share")
	}
	if err := e.noneBound(big)(e.ctx); err != nil {
		e.dump()
		t.Fatal(err)
	}

	e.deletePods(b2)
	e.eventually(30*time.Second, "big, its queue within its share, holds both nodes",
		e.podGroupCondition("big", v1alpha1.PodGroupReserved, metav1.ConditionTrue, "2 node(s) reserved"))
	e.eventually(10*time.Second, "big no longer speaks of its queue's share",
		func(ctx context.Context) error {
			pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, "big", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupUnschedulable); c != nil && strings.Contains(c.Message, "deserved share") {
				return fmt.Errorf("Unschedulable still says %q", c.Message)
			}
			return nil
		})
}
