package scheduler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func (b *podBuilder) Priority(p int32) *podBuilder { b.p.Spec.Priority = &p; return b }

// trainStore: nodes a and b of 4 GPUs; gang "train" (minMember 2) runs one
// 2-GPU member on each. A store that keeps the room of lost members for
// hold seconds.
func trainStore(hold int64) *Store {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue("default"))
	s.SetNode(testNode("a", 4))
	s.SetNode(testNode("b", 4))
	s.SetPodGroup(testPodGroup("train", 2))
	s.SetPod(testPod("train-0").Group("train").GPUs(2).On("a", corev1.PodRunning).Obj())
	s.SetPod(testPod("train-1").Group("train").GPUs(2).On("b", corev1.PodRunning).Obj())
	s.holdFailed = hold
	s.now = func() time.Time { return time.Unix(1000, 0) }
	return s
}

func cycleNodes(t *testing.T, s *Store, cfg core.Config) map[string]string {
	t.Helper()
	sched, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := s.Snapshot()
	plan, _ := sched.RunCycle(snap, 1000)
	out := map[string]string{}
	for _, b := range plan.Binds {
		out[b.Member] = b.Node
	}
	return out
}

// A member of a running gang is deleted; a 4-GPU pod that arrived earlier
// would take the freed room on a and leave the gang's replacement waiting.
// The hold keeps it for the replacement.
func TestHoldForFailedMember(t *testing.T) {
	for _, how := range []string{"deleted", "failed"} {
		s := trainStore(300)
		s.SetPod(testPod("greedy").GPUs(4).Obj())
		lost := testPod("train-0").Group("train").GPUs(2).On("a", corev1.PodRunning).Obj()
		if how == "deleted" {
			s.DeletePod(lost.UID)
		} else {
			lost.Status.Phase = corev1.PodFailed
			s.SetPod(lost)
		}
		snap, _ := s.Snapshot()
		want := []core.Hold{{Gang: "ns/train", Node: 0, Amount: core.Vector{core.Pods: 1, core.FirstExtended: 2}}}
		if diff := cmp.Diff(want, snap.Holds); diff != "" {
			t.Fatalf("%s: holds (-want +got):\n%s", how, diff)
		}
		if got := cycleNodes(t, s, core.Config{}); len(got) != 0 {
			t.Errorf("%s: before the replacement exists, the held room was given: %v", how, got)
		}
		s.SetPod(testPod("train-0b").Group("train").GPUs(2).Obj())
		if diff := cmp.Diff(map[string]string{"train-0b": "a"}, cycleNodes(t, s, core.Config{})); diff != "" {
			t.Errorf("%s: binds (-want +got):\n%s", how, diff)
		}
		s.Placed("ns/train", []string{"a"}, true)
		if snap, _ := s.Snapshot(); len(snap.Holds) != 0 {
			t.Errorf("%s: the replacement is bound, yet holds remain: %v", how, snap.Holds)
		}
	}
}

func TestNoHold(t *testing.T) {
	// Off: the greedy pod takes the room.
	s := trainStore(0)
	s.SetPod(testPod("greedy").GPUs(4).Obj())
	s.DeletePod("uid-train-0")
	if diff := cmp.Diff(map[string]string{"greedy": "a"}, cycleNodes(t, s, core.Config{})); diff != "" {
		t.Errorf("binds (-want +got):\n%s", diff)
	}
	// A member we evicted, or one of a gang that was not running whole,
	// leaves no hold; nor does a hold outlive its time.
	s = trainStore(300)
	s.MarkEvicting("uid-train-0")
	s.DeletePod("uid-train-0")
	if snap, _ := s.Snapshot(); len(snap.Holds) != 0 {
		t.Errorf("evicted member: holds %v", snap.Holds)
	}
	s.DeletePod("uid-train-1")
	if len(s.holds) != 0 {
		t.Errorf("gang not running whole: holds %v", s.holds)
	}
	s = trainStore(300)
	s.DeletePod("uid-train-0")
	s.now = func() time.Time { return time.Unix(1300, 0) }
	if snap, _ := s.Snapshot(); len(snap.Holds) != 0 {
		t.Errorf("expired hold still applied: %v", snap.Holds)
	}
}

// The store lists running members for the core, terminating ones marked,
// and a high-priority gang preempts the low-priority one whole.
func TestRunningAndPreemption(t *testing.T) {
	s := trainStore(300)
	s.preempting = true
	s.SetPod(testPod("urgent").GPUs(4).Priority(100).Obj())
	snap, views := s.Snapshot()
	if len(snap.Running) != 1 || len(snap.Running[0].Members) != 2 || snap.Running[0].MinMember != 2 {
		t.Fatalf("running %+v", snap.Running)
	}
	sched, err := core.New(core.Config{Preemption: true})
	if err != nil {
		t.Fatal(err)
	}
	plan, diag := sched.RunCycle(snap, 1000)
	if len(plan.Evictions) != 2 {
		t.Fatalf("evictions %+v: the gang must go whole", plan.Evictions)
	}
	st := diag.Pending[0]
	if v := verdictOf(views[st.Gang], st, 1000, nil); v.reason != string(core.ReasonPreempting) {
		t.Errorf("verdict %+v", v)
	}
	for _, e := range plan.Evictions {
		s.MarkEvicting(types.UID("uid-" + e.Member))
	}
	byGang := map[string][]heldRoom{}
	for _, h := range plan.Holds {
		byGang[h.Gang] = append(byGang[h.Gang], heldRoom{node: snap.Nodes[h.Node].Name, amount: h.Amount, until: 2000})
	}
	s.SetPlanHolds(byGang)
	snap, _ = s.Snapshot()
	for _, m := range snap.Running[0].Members {
		if !m.Terminating {
			t.Errorf("member %s being evicted is not terminating", m.Name)
		}
	}
	plan, diag = sched.RunCycle(snap, 1001)
	if len(plan.Evictions) != 0 || diag.Pending[0].Reason != core.ReasonPreempting {
		t.Errorf("second cycle: evictions %v, status %v", plan.Evictions, diag.Pending[0].Message())
	}
}
