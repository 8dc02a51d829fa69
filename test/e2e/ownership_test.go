//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTwoSchedulerNames: two instances serve different scheduler names on
// one cluster. Each writes the status of the PodGroups whose pods it
// serves, and never the other's: the field managers of each PodGroup's
// status name one instance only. A PodGroup with no pods yet is written by
// the instance serving the default name, unless its annotation names the
// other, as the second instance's PodGroups here do. (Two schedulers bind
// independently: the gangs start one after the other, so that neither
// binds onto room the other has just taken.)
func TestTwoSchedulerNames(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("two", 2).GPUs(2))
	startScheduler(t, "phalanx")
	startScheduler(t, "second")

	const owner = "scheduling.phalanx.dev/scheduler-name"
	mine := e.create(gang("mine").Members(2).GPUs(1))
	e.eventually(time.Minute, "mine runs", e.running(mine))
	theirs := e.create(gang("theirs").Members(2).GPUs(1).SchedulerName("second").PodGroupAnnotation(owner, "second"))
	e.eventually(time.Minute, "theirs runs", e.running(theirs))
	waiting := e.create(gang("waiting").Members(4).GPUs(1).SchedulerName("second").PodGroupAnnotation(owner, "second"))
	e.eventually(30*time.Second, "the waiting gang says why",
		e.podGroupCondition("waiting", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "members fit"))
	empty := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1}}
	claimed := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "claimed",
		Annotations: map[string]string{owner: "second"}}, Spec: v1alpha1.PodGroupSpec{MinMember: 1}}
	for _, pg := range []*v1alpha1.PodGroup{empty, claimed} {
		if _, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"mine": "phalanx", "theirs": "second", "waiting": "second", "empty": "phalanx", "claimed": "second"}
	e.eventually(30*time.Second, "every PodGroup has a status", func(ctx context.Context) error {
		for name := range want {
			pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pg.Status.Phase == "" {
				return fmt.Errorf("PodGroup %s has no phase yet", name)
			}
		}
		return nil
	})
	e.consistently(holdStill, "each PodGroup's status to be written by its own instance only",
		all(e.noneBound(waiting), gpusWithinCapacity, func(ctx context.Context) error {
			for name, owner := range want {
				pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				for _, f := range pg.ManagedFields {
					if f.Subresource != "status" {
						continue
					}
					// The field manager is the writer's user agent, which
					// names the instance (launchScheduler).
					if got, ok := strings.CutPrefix(f.Manager, "phalanx-scheduler-"); ok && got != owner {
						return fmt.Errorf("PodGroup %s's status was written by the instance serving %s; it belongs to %s's", name, got, owner)
					}
				}
			}
			return nil
		}))
}
