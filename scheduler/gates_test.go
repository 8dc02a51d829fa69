package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Gated adds schedulingGates to the pod.
func (b *podBuilder) Gated(gates ...string) *podBuilder {
	for _, g := range gates {
		b.p.Spec.SchedulingGates = append(b.p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
	}
	return b
}

// TestSchedulingGates: a gang whose minimum needs members held by
// schedulingGates waits, saying how many and by which gates, and nothing of
// it is placed; once the gates are removed it is placed whole. A gated
// member beyond the minimum only waits itself.
func TestSchedulingGates(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue("default"))
	s.SetNode(testNode("n1", 8))
	s.SetPodGroup(testPodGroup("job", 4))
	const kueue = "kueue.x-k8s.io/admission"
	for _, name := range []string{"job-0", "job-1"} {
		s.SetPod(testPod(name).Group("job").GPUs(1).Obj())
	}
	s.SetPod(testPod("job-2").Group("job").GPUs(1).Gated(kueue).Obj())
	s.SetPod(testPod("job-3").Group("job").GPUs(1).Gated(kueue, "example.com/quota").Obj())

	snap, views := s.Snapshot()
	plan, diag := newCore(t).RunCycle(snap, 1000)
	if len(plan.Binds) != 0 {
		t.Errorf("binds %v while the minimum is gated", plan.Binds)
	}
	if len(diag.Pending) != 1 {
		t.Fatalf("pending %v, want the gang", diag.Pending)
	}
	verd := verdictOf(views["ns/job"], diag.Pending[0], 1000, nil)
	want := "2 of 4 members are held by schedulingGates (example.com/quota, " + kueue + "); the gang needs 4 to start"
	if verd.reason != ReasonSchedulingGated || verd.message != want {
		t.Errorf("verdict %s: %q, want %s: %q", verd.reason, verd.message, ReasonSchedulingGated, want)
	}
	if g := gangByID(snap, "ns/job"); g == nil || len(g.Pending) != 2 {
		t.Errorf("gang %+v, want 2 members the core could place", g)
	}

	// Every member gated (Kueue's usual case): the gang still reports.
	s.SetPod(testPod("job-0").Group("job").GPUs(1).Gated(kueue).Obj())
	s.SetPod(testPod("job-1").Group("job").GPUs(1).Gated(kueue).Obj())
	snap, views = s.Snapshot()
	_, diag = newCore(t).RunCycle(snap, 1001)
	if len(diag.Pending) != 1 || views["ns/job"].invalid == "" || !views["ns/job"].heldByGates {
		t.Fatalf("pending %v, view %+v: want the gang held by its gates", diag.Pending, views["ns/job"])
	}
	if got := diag.Pending[0].Message(); got != "4 of 4 members are held by schedulingGates (example.com/quota, "+kueue+"); the gang needs 4 to start" {
		t.Errorf("message %q", got)
	}

	// The gates are removed: the gang is placed whole.
	for _, name := range []string{"job-0", "job-1", "job-2", "job-3"} {
		s.SetPod(testPod(name).Group("job").GPUs(1).Obj())
	}
	snap, _ = s.Snapshot()
	plan, _ = newCore(t).RunCycle(snap, 1002)
	if len(plan.Binds) != 4 {
		t.Errorf("binds %v after the gates were removed, want 4", plan.Binds)
	}
}

// TestGatedElasticMember: a member held by its gates beyond the gang's
// minimum does not hold the others back.
func TestGatedElasticMember(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue("default"))
	s.SetNode(testNode("n1", 8))
	s.SetPodGroup(testPodGroup("job", 2))
	s.SetPod(testPod("job-0").Group("job").GPUs(1).Obj())
	s.SetPod(testPod("job-1").Group("job").GPUs(1).Obj())
	s.SetPod(testPod("job-2").Group("job").GPUs(1).Gated("example.com/later").Obj())
	snap, views := s.Snapshot()
	if views["ns/job"].heldByGates {
		t.Errorf("gang held by an elastic member's gate")
	}
	plan, _ := newCore(t).RunCycle(snap, 1000)
	var got []string
	for _, b := range plan.Binds {
		got = append(got, b.Member)
	}
	if len(got) != 2 || got[0] == "job-2" || got[1] == "job-2" {
		t.Errorf("binds %v, want job-0 and job-1", got)
	}
	if why := views["ns/job"].invalid; why != "" {
		t.Errorf("gang invalid: %s", why)
	}
}
