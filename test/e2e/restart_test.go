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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestRestart stops the scheduler while one gang runs and another waits,
// and starts a new one: the new scheduler rebuilds its state from the API
// server, leaves the running gang where it is, does not start the waiting
// gang in part, overcommits no node, and starts the waiting gang whole once
// room is made.
func TestRestart(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("restart", 8).GPUs(1))
	stop := startScheduler(t)

	a := e.create(gang("a").Members(4).GPUs(1).RunFor("60s"))
	e.eventually(time.Minute, "gang a runs", e.running(a))
	b := e.create(gang("b").Members(6).GPUs(1))
	e.eventually(30*time.Second, "gang b waits for 2 more GPUs",
		e.podGroupCondition("b", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "4/6 members fit", "nvidia.com/gpu"))

	placed := e.placements(a)
	stop()
	startScheduler(t)

	e.consistently(holdStill, "after the restart, a to keep its nodes, b to stay whole-pending, and no node over its GPUs",
		all(e.samePlacements(a, placed), e.noneBound(b), gpusWithinCapacity))
	e.eventually(30*time.Second, "the new scheduler reports b waiting",
		e.podGroupCondition("b", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "4/6 members fit"))

	e.deletePods(a)
	e.eventually(time.Minute, "gang b runs whole", e.running(b))
	e.eventually(10*time.Second, "no node over its GPUs", gpusWithinCapacity)
}

type placement struct {
	uid  types.UID
	node string
}

// placements records where each pod of j is bound.
func (e *env) placements(j *job) map[string]placement {
	e.t.Helper()
	pods, err := e.pods(e.ctx, j)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]placement{}
	for _, p := range pods {
		out[p.Name] = placement{p.UID, p.Spec.NodeName}
	}
	return out
}

// samePlacements: every pod of j is the same object on the same node as
// recorded.
func (e *env) samePlacements(j *job, want map[string]placement) check {
	return func(ctx context.Context) error {
		pods, err := e.pods(ctx, j)
		if err != nil {
			return err
		}
		for _, p := range pods {
			w := want[p.Name]
			if p.UID != w.uid || p.Spec.NodeName != w.node {
				return fmt.Errorf("pod %s is %s on %q; it was %s on %q", p.Name, p.UID, p.Spec.NodeName, w.uid, w.node)
			}
		}
		return nil
	}
}

// TestHoldAcrossRestart: a member of a running gang is deleted; its room is
// held for its replacement. The scheduler is restarted before the
// replacement comes: the new one restores the hold from the state the
// former recorded (scheduler/state.go), so a pod that arrives meanwhile
// does not take the room, and the replacement returns to its node.
func TestHoldAcrossRestart(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("rehold", 2).GPUs(4))
	opts := scheduler.Options{HoldFailedMember: 2 * time.Minute, StateNamespace: e.ns}
	stop := startSchedulerOpts(t, opts)

	trainJob := gang("train").Members(2).GPUs(4).RunFor("300s")
	train := e.create(trainJob)
	e.eventually(30*time.Second, "train runs", e.running(train))
	nodes, err := e.nodesOf(e.ctx, train)
	if err != nil {
		t.Fatal(err)
	}
	lost := e.loseMember(train, "train-worker-0")
	e.eventually(10*time.Second, "the hold is recorded", func(ctx context.Context) error {
		cm, err := kube.CoreV1().ConfigMaps(e.ns).Get(ctx, "phalanx-state-phalanx", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !strings.Contains(cm.Data["state.json"], e.ns+"/train") {
			return fmt.Errorf("the state records no hold of train: %s", cm.Data["state.json"])
		}
		return nil
	})
	stop()
	startSchedulerOpts(t, opts)

	greedy := e.create(gang("greedy").Members(1).GPUs(4).RunFor("5s"))
	e.consistently(holdStill, "greedy to leave the held room alone after the restart", e.noneBound(greedy))
	replacement := e.replaceMember(trainJob, lost)
	e.eventually(30*time.Second, "the replacement returns to its member's node", e.podOn(replacement.Name, nodes[lost]))
	e.eventually(10*time.Second, "no node over its GPUs", gpusWithinCapacity)
}
