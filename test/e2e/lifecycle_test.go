//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDeletedPodGroupKeepsGang replays what a job operator does at the end
// of a job (cleanPodPolicy None): it deletes the PodGroup while the pods
// still run. They stay a gang of two, never loose pods: a gang of equal
// priority that does not fit waits, and evicts nothing.
func TestDeletedPodGroupKeepsGang(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("deleted-pg", 2).GPUs(1))
	startSchedulerOpts(t, scheduler.Options{Preemption: true})

	a := e.create(gang("a").Members(2).GPUs(1))
	e.eventually(time.Minute, "a runs whole", e.running(a))
	if err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Delete(e.ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	b := e.create(gang("b").Members(1).GPUs(1))
	e.eventually(30*time.Second, "b waits, saying it does not fit",
		e.podsCondition(b, corev1.PodScheduled, corev1.ConditionFalse, "0/1 members fit"))
	e.consistently(holdStill, "a's members to keep running, b to wait", all(e.running(a), e.noneBound(b)))
}

// TestElasticMembers: a gang of minMember 2 with 3 members on 2 GPUs runs
// with 2; the third says why it waits; a gang of equal priority that needs
// a GPU waits too, and takes none of the elastic gang's.
func TestElasticMembers(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("elastic", 2).GPUs(1))
	startSchedulerOpts(t, scheduler.Options{Preemption: true})

	el := e.create(gang("el").Members(3).MinMember(2).GPUs(1))
	e.eventually(time.Minute, "el's minimum runs", e.countBound(el, 2))
	e.eventually(30*time.Second, "the waiting elastic member says why",
		e.podsConditionOfUnbound(el, corev1.PodScheduled, corev1.ConditionFalse, scheduler.ReasonElasticWaiting, "beyond the minimum"))
	e.eventually(30*time.Second, "and an Event says so", e.eventOn("el-worker-2", scheduler.ReasonElasticWaiting, "beyond the minimum"))
	other := e.create(gang("other").Members(1).GPUs(1))
	e.eventually(30*time.Second, "other waits", e.podsCondition(other, corev1.PodScheduled, corev1.ConditionFalse, "0/1 members fit"))
	e.consistently(holdStill, "el to keep both its members, other to wait", all(e.countBound(el, 2), e.noneBound(other)))
}

// podsConditionOfUnbound: every pod of j without a node carries condition
// typ with status, and its message contains every one of words; there is
// at least one.
func (e *env) podsConditionOfUnbound(j *job, typ corev1.PodConditionType, status corev1.ConditionStatus, words ...string) check {
	return func(ctx context.Context) error {
		pods, err := e.pods(ctx, j)
		if err != nil {
			return err
		}
		n := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				continue
			}
			n++
			if err := e.podCondition(p.Name, typ, status, words...)(ctx); err != nil {
				return err
			}
		}
		if n == 0 {
			return fmt.Errorf("every pod of %s is bound", j.name)
		}
		return nil
	}
}
