package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runGang adds a running gang to s: one member per entry of gpus, on the
// node of the same index in on, started at start. It counts the members in
// their nodes' Used and their queue's Allocated, as callers must.
func runGang(s *Snapshot, id, queue string, prio int32, minMember int, start int64, on []int, gpus ...int64) {
	r := Running{Gang: id, Queue: queue, Priority: prio, MinMember: minMember}
	for i, g := range gpus {
		m := Placed{Name: id + "-" + string(rune('0'+i)), Node: on[i], Request: Vector{gpuDim: g}, Start: start}
		r.Members = append(r.Members, m)
		s.Nodes[on[i]].Used = s.Nodes[on[i]].Used.Add(withPod(m.Request))
		for q := range s.Queues {
			if s.Queues[q].Name == queue {
				s.Queues[q].Allocated = s.Queues[q].Allocated.Add(withPod(m.Request))
			}
		}
	}
	s.Running = append(s.Running, r)
}

func preemptive() Config { return Config{Preemption: true} }

// victims lists "gang/member" of every eviction.
func victims(p Plan) []string {
	var out []string
	for _, e := range p.Evictions {
		out = append(out, e.Gang+"/"+e.Member)
	}
	return out
}

func twoEightGPUNodes() *snapBuilder {
	return MakeSnapshot().Nodes(MakeNode("a").GPUs(8), MakeNode("b").GPUs(8))
}

func TestPreemptLowestPriority(t *testing.T) {
	s := twoEightGPUNodes().Gangs(MakeGang("high").Members(1, GPUs(8)).Priority(10)).Obj()
	runGang(s, "mid", "default", 5, 1, 0, []int{0}, 8)
	runGang(s, "low", "default", 0, 1, 0, []int{1}, 8)
	plan, diag := runAt(t, s, preemptive(), 100)
	if diff := cmp.Diff([]string{"low/low-0"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
	if len(plan.Binds) != 0 {
		t.Errorf("binds %v: the preemptor must wait for its victims to terminate", plan.Binds)
	}
	want := []Hold{{Gang: "high", Node: 1, Amount: Vector{Pods: 1, gpuDim: 8}}}
	if diff := cmp.Diff(want, plan.Holds); diff != "" {
		t.Errorf("holds (-want +got):\n%s", diff)
	}
	st := pendingOf(diag)["high"]
	if st.Reason != ReasonPreempting || !strings.Contains(st.Message, "evicting 1 pod(s) of low") {
		t.Errorf("high: %v", st)
	}
	if e := plan.Evictions[0]; e.Preemptor != "high" || e.Reclaim || e.Node != "b" {
		t.Errorf("eviction %+v", e)
	}
}

func TestPreemptLeastRunTimeLost(t *testing.T) {
	s := twoEightGPUNodes().Gangs(MakeGang("high").Members(1, GPUs(8)).Priority(10)).Obj()
	runGang(s, "old", "default", 0, 1, 0, []int{0}, 8)
	runGang(s, "young", "default", 0, 1, 90, []int{1}, 8)
	plan, _ := runAt(t, s, preemptive(), 100)
	if diff := cmp.Diff([]string{"young/young-0"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
}

func TestPreemptNothingItDoesNotNeed(t *testing.T) {
	// The cheapest unit is on node b, but the preemptor needs all 8 GPUs of
	// one node: evicting it would not help, so only a's two gangs go.
	s := twoEightGPUNodes().Gangs(MakeGang("high").Members(1, GPUs(8)).Priority(10)).Obj()
	runGang(s, "b1", "default", 0, 1, 99, []int{1}, 4)
	runGang(s, "b2", "default", 1, 1, 0, []int{1}, 4)
	runGang(s, "a1", "default", 0, 1, 50, []int{0}, 4)
	runGang(s, "a2", "default", 0, 1, 40, []int{0}, 4)
	plan, _ := runAt(t, s, preemptive(), 100)
	got := victims(plan)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"a1/a1-0", "a2/a2-0"}, got); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
}

func TestPreemptNeverBreaksAGang(t *testing.T) {
	// "elastic" runs 3 members of 4 GPUs with minMember 2: one member is
	// beyond its minimum and may go alone, for a gang of higher priority;
	// the other two only together.
	s := twoEightGPUNodes().Gangs(MakeGang("higher").Members(1, GPUs(4)).Priority(1)).Obj()
	runGang(s, "elastic", "default", 0, 2, 0, []int{0, 0, 1}, 4, 4, 4)
	s.Running[0].Members[2].Start = 50 // the latest: the cheapest to lose
	runGang(s, "other", "default", 0, 1, 0, []int{1}, 4)
	plan, _ := runAt(t, s, preemptive(), 100)
	if diff := cmp.Diff([]string{"elastic/elastic-2"}, victims(plan)); diff != "" {
		t.Errorf("elastic member (-want +got):\n%s", diff)
	}

	s = twoEightGPUNodes().Gangs(MakeGang("big").Members(1, GPUs(8)).Priority(1)).Obj()
	runGang(s, "elastic", "default", 0, 2, 0, []int{0, 0, 1}, 4, 4, 4)
	runGang(s, "other", "default", 5, 1, 0, []int{1}, 4)
	plan, _ = runAt(t, s, preemptive(), 100)
	// Node a frees only if both members there go, which leaves elastic
	// with one: the whole gang goes.
	got := victims(plan)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"elastic/elastic-0", "elastic/elastic-1", "elastic/elastic-2"}, got); diff != "" {
		t.Errorf("higher priority (-want +got):\n%s", diff)
	}
}

func TestNoPreemption(t *testing.T) {
	cases := map[string]struct {
		snap *Snapshot
		cfg  Config
	}{
		"equal priority": {snap: func() *Snapshot {
			s := twoEightGPUNodes().Gangs(MakeGang("p").Members(1, GPUs(8))).Obj()
			runGang(s, "r1", "default", 0, 1, 0, []int{0}, 8)
			runGang(s, "r2", "default", 0, 1, 0, []int{1}, 8)
			return s
		}(), cfg: preemptive()},
		"equal priority, elastic member": {snap: func() *Snapshot {
			// Losing one member restarts an elastic job's rendezvous: a
			// gang of equal priority waits instead.
			s := twoEightGPUNodes().Gangs(MakeGang("p").Members(1, GPUs(4))).Obj()
			runGang(s, "elastic", "default", 0, 2, 0, []int{0, 0, 1}, 4, 4, 4)
			runGang(s, "other", "default", 0, 1, 0, []int{1}, 4)
			return s
		}(), cfg: preemptive()},
		"cannot fit even with every victim gone": {snap: func() *Snapshot {
			s := twoEightGPUNodes().Gangs(MakeGang("p").Members(3, GPUs(8)).Priority(9)).Obj()
			runGang(s, "r1", "default", 0, 1, 0, []int{0}, 8)
			return s
		}(), cfg: preemptive()},
		"preemptionPolicy Never": {snap: func() *Snapshot {
			s := twoEightGPUNodes().Gangs(MakeGang("p").Members(1, GPUs(8)).Priority(9)).Obj()
			s.Gangs[0].NoPreempt = true
			runGang(s, "r1", "default", 0, 1, 0, []int{0}, 8)
			runGang(s, "r2", "default", 0, 1, 0, []int{1}, 8)
			return s
		}(), cfg: preemptive()},
		"preemption off": {snap: func() *Snapshot {
			s := twoEightGPUNodes().Gangs(MakeGang("p").Members(1, GPUs(8)).Priority(9)).Obj()
			runGang(s, "r1", "default", 0, 1, 0, []int{0}, 8)
			runGang(s, "r2", "default", 0, 1, 0, []int{1}, 8)
			return s
		}(), cfg: Config{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan, diag := runAt(t, tc.snap, tc.cfg, 100)
			if len(plan.Evictions) != 0 || len(plan.Holds) != 0 {
				t.Errorf("evictions %v, holds %v", plan.Evictions, plan.Holds)
			}
			if st := pendingOf(diag)["p"]; st.Reason != ReasonUnschedulable && st.Reason != ReasonExceedsCluster {
				t.Errorf("p: %v", st)
			}
		})
	}
}

// Queue a holds the whole cluster in two gangs; queue b, of equal weight,
// deserves half of it.
func reclaimSnapshot(bWants int) *Snapshot {
	s := twoEightGPUNodes().Queues(MakeQueue("a"), MakeQueue("b")).
		Gangs(MakeGang("claim").Queue("b").Members(bWants/8, GPUs(8))).Obj()
	runGang(s, "a-old", "a", 0, 1, 0, []int{0}, 8)
	runGang(s, "a-new", "a", 0, 1, 60, []int{1}, 8)
	return s
}

func TestReclaim(t *testing.T) {
	plan, diag := runAt(t, reclaimSnapshot(8), preemptive(), 100)
	if diff := cmp.Diff([]string{"a-new/a-new-0"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
	if !plan.Evictions[0].Reclaim {
		t.Errorf("eviction %+v is not marked as reclaim", plan.Evictions[0])
	}
	if msg := pendingOf(diag)["claim"].Message; !strings.Contains(msg, "reclaiming from queue a, over its deserved share") {
		t.Errorf("claim: %q", msg)
	}
}

func TestNoReclaim(t *testing.T) {
	// b would hold more than its half.
	plan, _ := runAt(t, reclaimSnapshot(16), preemptive(), 100)
	if len(plan.Evictions) != 0 {
		t.Errorf("b beyond its share evicts %v", victims(plan))
	}
	// a is not reclaimable.
	s := reclaimSnapshot(8)
	s.Queues[0].NoReclaim = true
	plan, _ = runAt(t, s, preemptive(), 100)
	if len(plan.Evictions) != 0 {
		t.Errorf("a is not reclaimable, yet %v", victims(plan))
	}
	// Higher priority does not cross queues.
	s = reclaimSnapshot(16)
	s.Gangs[0].Priority = 100
	plan, _ = runAt(t, s, preemptive(), 100)
	if len(plan.Evictions) != 0 {
		t.Errorf("priority crossed queues: %v", victims(plan))
	}
}

// TestNoPingPong plays the cycles after a reclaim and a preemption: once the
// preemptor runs, its victim, pending again, takes nothing back.
func TestNoPingPong(t *testing.T) {
	// After the reclaim: a and b hold one node each; a's victim waits.
	s := twoEightGPUNodes().Queues(MakeQueue("a"), MakeQueue("b")).
		Gangs(MakeGang("a-new").Queue("a").Members(1, GPUs(8)).Arrival(60)).Obj()
	runGang(s, "a-old", "a", 0, 1, 0, []int{0}, 8)
	runGang(s, "claim", "b", 0, 1, 110, []int{1}, 8)
	plan, diag := runAt(t, s, preemptive(), 200)
	if len(plan.Evictions) != 0 {
		t.Errorf("reclaim victim takes back: %v", victims(plan))
	}
	if st := pendingOf(diag)["a-new"]; st.Reason != ReasonUnschedulable {
		t.Errorf("a-new: %v", st)
	}
	// After a preemption: the low-priority victim waits.
	s = twoEightGPUNodes().Gangs(MakeGang("low").Members(1, GPUs(8))).Obj()
	runGang(s, "high", "default", 10, 1, 110, []int{1}, 8)
	runGang(s, "mid", "default", 5, 1, 0, []int{0}, 8)
	plan, _ = runAt(t, s, preemptive(), 200)
	if len(plan.Evictions) != 0 {
		t.Errorf("preemption victim takes back: %v", victims(plan))
	}
}

func TestPreemptorWaitsForTerminatingVictims(t *testing.T) {
	// The victim evicted last cycle is still terminating on b: the
	// preemptor waits for it and nothing else is evicted; a later,
	// lower-priority gang cannot count on the same room.
	s := twoEightGPUNodes().Gangs(
		MakeGang("high").Members(1, GPUs(8)).Priority(10),
		MakeGang("next").Members(1, GPUs(8)).Priority(1).Arrival(5),
	).Obj()
	runGang(s, "keep", "default", 5, 1, 0, []int{0}, 8)
	runGang(s, "low", "default", 0, 1, 0, []int{1}, 8)
	s.Running[1].Members[0].Terminating = true
	s.Holds = []Hold{{Gang: "high", Node: 1, Amount: Vector{Pods: 1, gpuDim: 8}}}
	plan, diag := runAt(t, s, preemptive(), 100)
	if len(plan.Evictions) != 0 || len(plan.Binds) != 0 {
		t.Errorf("evictions %v binds %v", victims(plan), plan.Binds)
	}
	if diff := cmp.Diff([]Hold{{Gang: "high", Node: 1, Amount: Vector{Pods: 1, gpuDim: 8}}}, plan.Holds); diff != "" {
		t.Errorf("holds (-want +got):\n%s", diff)
	}
	got := pendingOf(diag)
	if st := got["high"]; st.Reason != ReasonPreempting || !strings.Contains(st.Message, "evicted member(s) have terminated") {
		t.Errorf("high: %v", st)
	}
	if st := got["next"]; st.Reason != ReasonUnschedulable {
		t.Errorf("next: %v", st)
	}
}

func TestHoldKeepsRoomForItsGang(t *testing.T) {
	// A member of "train" failed on node a; its 4 GPUs are held for the
	// replacement. "early" arrived first and fits nowhere else.
	mk := func(withReplacement bool) *Snapshot {
		b := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(4), MakeNode("b").GPUs(8).UsedGPUs(8))
		gangs := []*gangBuilder{MakeGang("early").Members(1, GPUs(4)).Arrival(0)}
		if withReplacement {
			gangs = append(gangs, MakeGang("train").Members(1, GPUs(4)).Bound(1).Min(2).Arrival(10))
		}
		s := b.Gangs(gangs...).Obj()
		s.Holds = []Hold{{Gang: "train", Node: 0, Amount: Vector{Pods: 1, gpuDim: 4}}}
		return s
	}
	for _, cfg := range []Config{{}, {Preemption: true}, {ReserveAfter: 1}} {
		plan, diag := runAt(t, mk(true), cfg, 100)
		if diff := cmp.Diff(map[string][]string{"train": {"a"}}, nodesOf(plan)); diff != "" {
			t.Errorf("%+v: placed (-want +got):\n%s", cfg, diff)
		}
		if st := pendingOf(diag)["early"]; st.Reason != ReasonUnschedulable {
			t.Errorf("%+v: early: %v", cfg, st)
		}
		// Before the replacement exists the room stays held.
		plan, _ = runAt(t, mk(false), cfg, 100)
		if len(plan.Binds) != 0 {
			t.Errorf("%+v: held room taken: %v", cfg, plan.Binds)
		}
	}
	// Without the hold, early takes the room before the replacement exists;
	// once it exists, the partial gang goes first even without a hold.
	s := mk(false)
	s.Holds = nil
	plan, _ := runAt(t, s, Config{}, 100)
	if diff := cmp.Diff(map[string][]string{"early": {"a"}}, nodesOf(plan)); diff != "" {
		t.Errorf("no hold: placed (-want +got):\n%s", diff)
	}
	s = mk(true)
	s.Holds = nil
	plan, _ = runAt(t, s, Config{}, 100)
	if diff := cmp.Diff(map[string][]string{"train": {"a"}}, nodesOf(plan)); diff != "" {
		t.Errorf("no hold, replacement waiting: placed (-want +got):\n%s", diff)
	}
}

// With ReclaimYoungerOnly, reclaim takes back only from gangs that arrived
// after the reclaiming gang: a-new (arrived at 55) when claim arrived at
// 50, nothing when it arrived at 70.
func TestReclaimYoungerOnly(t *testing.T) {
	for _, tc := range []struct {
		arrival int64
		want    []string
	}{{50, []string{"a-new/a-new-0"}}, {70, nil}} {
		s := reclaimSnapshot(8)
		s.Gangs[0].Arrival = tc.arrival
		s.Running[0].Arrival, s.Running[1].Arrival = 0, 55
		plan, _ := runAt(t, s, Config{Preemption: true, ReclaimYoungerOnly: true}, 100)
		if diff := cmp.Diff(tc.want, victims(plan)); diff != "" {
			t.Errorf("claim arrived at %d: victims (-want +got):\n%s", tc.arrival, diff)
		}
	}
}

// Unevictable members (an eviction was refused) are never victims, nor is
// their gang whole; the next cheapest victim goes instead.
func TestPreemptSkipsUnevictable(t *testing.T) {
	s := twoEightGPUNodes().Gangs(MakeGang("high").Members(1, GPUs(8)).Priority(10)).Obj()
	runGang(s, "mid", "default", 5, 1, 0, []int{0}, 8)
	runGang(s, "low", "default", 0, 1, 0, []int{1}, 8)
	s.Running[1].Members[0].Unevictable = true
	plan, _ := runAt(t, s, preemptive(), 100)
	if diff := cmp.Diff([]string{"mid/mid-0"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
	// low runs two members of 4 GPUs on b (minMember 1), one unevictable:
	// the other may go as an elastic member, the gang never whole.
	s = twoEightGPUNodes().Gangs(MakeGang("high").Members(1, GPUs(4)).Priority(10)).Obj()
	runGang(s, "mid", "default", 5, 1, 0, []int{0}, 8)
	runGang(s, "low", "default", 0, 1, 0, []int{1, 1}, 4, 4)
	s.Running[1].Members[0].Unevictable = true
	plan, _ = runAt(t, s, preemptive(), 100)
	if diff := cmp.Diff([]string{"low/low-1"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
}

// A gang whose minimum asks more than every node has together says so, and
// evicts nothing: no eviction would make it fit. Its elastic members do not
// count, nor do cordoned nodes' GPUs go missing from what the cluster has.
func TestGangLargerThanCluster(t *testing.T) {
	s := twoEightGPUNodes().Gangs(
		MakeGang("huge").Members(5, GPUs(4)).Priority(9),
		MakeGang("elastic").Members(5, GPUs(4)).Min(4).Priority(9),
	).Obj()
	runGang(s, "low", "default", 0, 1, 0, []int{0}, 8)
	plan, diag := runAt(t, s, preemptive(), 100)
	for _, e := range plan.Evictions {
		if e.Preemptor == "huge" {
			t.Errorf("huge evicts %v", e)
		}
	}
	want := pendingView{ReasonExceedsCluster, "can never fit: the cluster has 16 nvidia.com/gpu, the gang needs 20 nvidia.com/gpu"}
	if got := pendingOf(diag)["huge"]; got != want {
		t.Errorf("huge: %v, want %v", got, want)
	}
	if got := pendingOf(diag)["elastic"]; got.Reason == ReasonExceedsCluster {
		t.Errorf("elastic, whose minimum fits the cluster: %v", got)
	}

	cordoned := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).Cordoned(), MakeNode("b").GPUs(8)).
		Gangs(MakeGang("g").Members(2, GPUs(8))).Obj()
	_, diag = runAt(t, cordoned, Config{}, 100)
	if got := pendingOf(diag)["g"]; got.Reason == ReasonExceedsCluster {
		t.Errorf("a cordoned node's GPUs still belong to the cluster: %v", got)
	}
	cpu := MakeSnapshot().Nodes(MakeNode("a").CPUs(4)).Gangs(MakeGang("g").Members(1, GPUs(1))).Obj()
	_, diag = runAt(t, cpu, Config{}, 100)
	if got := pendingOf(diag)["g"]; got.Message != "can never fit: the cluster has no nvidia.com/gpu, the gang needs 1 nvidia.com/gpu" {
		t.Errorf("no GPU in the cluster: %v", got)
	}
}
