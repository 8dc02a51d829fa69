//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bindDirectly binds the first n pods of j, fill nodes in order, as a
// scheduler killed in the middle of binding the gang leaves it: some
// members bound, the rest pending, no scheduler running.
func (e *env) bindDirectly(j *job, n int, nodes []string, perNode int) {
	e.t.Helper()
	for i, name := range j.pods[:n] {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
			Target: corev1.ObjectReference{Kind: "Node", Name: nodes[i/perNode]}}
		if err := kube.CoreV1().Pods(e.ns).Bind(e.ctx, b, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("bind %s: %v", name, err)
		}
	}
	e.eventually(time.Minute, fmt.Sprintf("%d pods of %s run", n, j.name), e.countBound(j, n))
}

// countBound: exactly n pods of j (those that exist) are bound.
func (e *env) countBound(j *job, n int) check {
	return func(ctx context.Context) error {
		l, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: labelJob + "=" + j.name})
		if err != nil {
			return err
		}
		bound := 0
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		if bound != n {
			return fmt.Errorf("%d pods of %s are bound; want %d", bound, j.name, n)
		}
		return nil
	}
}

// TestPartialGangCompletedFirst: a scheduler died with a 32-member gang at
// 10/32 bound; a 16-member gang of higher priority arrives; a new scheduler
// starts. It completes the partial gang first, so its 10 members do not
// hold GPUs idle for ever, and the new gang waits whole.
func TestPartialGangCompletedFirst(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("partial", 5).GPUs(8))
	high := e.priorityClass("high", 1000)
	big := e.create(gang("big").Members(32).GPUs(1))
	e.bindDirectly(big, 10, e.nodes, 8)
	urgent := e.create(gang("urgent").Members(16).GPUs(1).PriorityClass(high))

	startScheduler(t)
	e.eventually(time.Minute, "the partial gang is completed", e.bound(big))
	e.consistently(holdStill, "the higher-priority gang to wait whole, and no node over its GPUs",
		all(e.noneBound(urgent), gpusWithinCapacity))
	e.eventually(30*time.Second, "urgent says why it waits",
		e.podGroupCondition("urgent", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "members fit", "nvidia.com/gpu"))
}

// TestPartialGangReleased: the partial gang can never be completed (it needs
// 32 GPUs, the cluster has 24). Its status says by when the rest must fit;
// past --partial-gang-timeout its bound members are evicted, so they hold
// nothing for a gang that cannot run, and the gang that waited behind it
// runs.
func TestPartialGangReleased(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("release", 3).GPUs(8))
	big := e.create(gang("big").Members(32).GPUs(1))
	e.bindDirectly(big, 10, e.nodes, 8)
	other := e.create(gang("other").Members(20).GPUs(1))

	startSchedulerOpts(t, scheduler.Options{PartialGangTimeout: 15 * time.Second})
	e.eventually(30*time.Second, "the partial gang's status says when its members will be evicted",
		e.podGroupCondition("big", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue,
			"10/32 members hold nodes while the rest waits", "completed before other gangs", "unless the rest fits by"))
	e.consistently(5*time.Second, "the other gang to wait while the partial one holds its members",
		all(e.noneBound(other), e.countBound(big, 10)))
	e.eventually(time.Minute, "the partial gang's members are evicted", e.countBound(big, 0))
	e.eventually(time.Minute, "the gang that waited runs", e.running(other))
	e.eventually(10*time.Second, "no node over its GPUs", gpusWithinCapacity)
	e.eventually(10*time.Second, "an Event says why a member was evicted",
		e.eventOn(big.pods[0], "PartialGangReleased", "held 10 of its 32 members", "without the rest fitting"))
}
