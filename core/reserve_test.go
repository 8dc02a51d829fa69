package core

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Two 8-GPU nodes: node a frees its 8 GPUs at t=100, node b holds 4 GPUs
// until t=1000. At t=500 the big gang (2 x 8 GPUs, waiting since t=0) can
// start only at 1000: both nodes are reserved for it. Small gangs may use
// them only if they are expected to end by then.
func reservationSnapshot() *Snapshot {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8), MakeNode("b").GPUs(8).UsedGPUs(4)).Gangs(
		MakeGang("big").Members(2, GPUs(8)).Arrival(0),
		MakeGang("short").Members(1, GPUs(4)).Arrival(400).Estimate(100),
		MakeGang("long").Members(1, GPUs(4)).Arrival(401).Estimate(1000),
		MakeGang("unknown").Members(1, GPUs(4)).Arrival(402),
	).Obj()
	s.Releases = []Release{{Node: 1, Amount: Vector{Pods: 1, gpuDim: 4}, At: 1000}}
	return s
}

func runAt(t *testing.T, s *Snapshot, cfg Config, now int64) (Plan, Diagnostics) {
	t.Helper()
	sched, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sched.RunCycle(s, now)
}

func TestReservationWithBackfill(t *testing.T) {
	plan, diag := runAt(t, reservationSnapshot(), Config{ReserveAfter: 60}, 500)
	if diff := cmp.Diff([]string{"short"}, keys(placed(plan))); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
	got := pendingOf(diag)
	if msg := got["big"].Message; !strings.Contains(msg, "2 node(s) reserved for it; expected to start in 8m20s") {
		t.Errorf("big: %q does not give its reservation", msg)
	}
	for _, g := range []string{"long", "unknown"} {
		if msg := got[g].Message; !strings.Contains(msg, "reserved for a waiting gang") {
			t.Errorf("%s: %q does not say the nodes are reserved", g, msg)
		}
	}
}

func TestNoReservation(t *testing.T) {
	// Off: the small gangs take what they find and the big one starves.
	plan, _ := runAt(t, reservationSnapshot(), Config{}, 500)
	if got := len(plan.Binds); got != 3 {
		t.Errorf("without reservation %d binds, want 3 (every small gang)", got)
	}
	// Not waited long enough yet.
	plan, _ = runAt(t, reservationSnapshot(), Config{ReserveAfter: 3600}, 500)
	if got := len(plan.Binds); got != 3 {
		t.Errorf("before the threshold %d binds, want 3", got)
	}
	// A per-queue threshold overrides the scheduler's.
	s := reservationSnapshot()
	s.Queues[0].ReserveAfter = 60
	plan, _ = runAt(t, s, Config{ReserveAfter: 3600}, 500)
	if diff := cmp.Diff([]string{"short"}, keys(placed(plan))); diff != "" {
		t.Errorf("queue threshold: placed (-want +got):\n%s", diff)
	}
	// Nothing is reserved when the gang needs members whose end is unknown.
	s = reservationSnapshot()
	s.Releases[0].At = 0
	plan, _ = runAt(t, s, Config{ReserveAfter: 60}, 500)
	if got := len(plan.Binds); got != 3 {
		t.Errorf("unknown ends: %d binds, want 3 (no reservation)", got)
	}
}

// When the reserved gang fits now, it gets its nodes even if gangs ordered
// before it would take them.
func TestReservedGangFitsNow(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8)).Queues(MakeQueue("x"), MakeQueue("y")).Gangs(
		MakeGang("big").Queue("x").Members(1, GPUs(8)).Arrival(0),
		MakeGang("eager").Queue("y").Priority(5).Members(1, GPUs(2)).Arrival(480),
	).Obj()
	// Queue x already holds a lot, so fair share would serve y first.
	s.Queues[0].Allocated = Vector{gpuDim: 100}
	plan, _ := runAt(t, s, Config{ReserveAfter: 60}, 500)
	if diff := cmp.Diff([]string{"big"}, keys(placed(plan))); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
}

// A gang its queue's capability keeps from running gets no reservation.
func TestNoReservationBeyondCapability(t *testing.T) {
	s := reservationSnapshot()
	s.Queues[0].Capability[gpuDim] = 12 // big needs 16
	plan, diag := runAt(t, s, Config{ReserveAfter: 60}, 500)
	if got := len(plan.Binds); got != 3 {
		t.Errorf("%d binds, want 3: nothing reserved for a gang over its queue's capability", got)
	}
	if msg := pendingOf(diag)["big"].Message; strings.Contains(msg, "reserved") {
		t.Errorf("big: %q", msg)
	}
}

// A reserved node's room beyond the reservation's needs stays open: node a
// runs 6 of its 8 GPUs until t=1000, when the 4-GPU gang big is expected to
// start there. A 2-GPU gang without an estimate may take the 2 free GPUs
// (a keeps 4 for big at 1000); when big needs all 8, it may not.
func TestReservationLeavesSpareRoom(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(6)).Gangs(
		MakeGang("big").Members(1, GPUs(4)).Arrival(0),
		MakeGang("small").Members(1, GPUs(2)).Arrival(400),
	).Obj()
	s.Releases = []Release{{Node: 0, Amount: Vector{Pods: 1, gpuDim: 6}, At: 1000}}
	plan, diag := runAt(t, s, Config{ReserveAfter: 60}, 500)
	if diff := cmp.Diff([]string{"small"}, keys(placed(plan))); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
	if _, start, ok := pendingStatus(diag, "big").Reservation(); !ok || start != 1000 {
		t.Errorf("big: reservation starting at %d (%v), want 1000", start, ok)
	}
	// When big needs the whole node at 1000, the 6 GPUs free now are not
	// for a gang that would still run then.
	s.Nodes[0].Used = Vector{Pods: 1, gpuDim: 2}
	s.Releases[0].Amount = s.Nodes[0].Used
	s.Gangs[0] = MakeGang("big").Members(1, GPUs(8)).Arrival(0).Obj()
	plan, diag = runAt(t, s, Config{ReserveAfter: 60}, 500)
	if len(plan.Binds) != 0 {
		t.Errorf("binds %v eat into big's reservation", plan.Binds)
	}
	if msg := pendingStatus(diag, "small").Message(); !strings.Contains(msg, "reserved for a waiting gang") {
		t.Errorf("small: %q", msg)
	}
}

func pendingStatus(d Diagnostics, gang string) GangStatus {
	for _, st := range d.Pending {
		if st.Gang == gang {
			return st
		}
	}
	return GangStatus{}
}

// In a StrictOrder queue the first gang that does not fit blocks the later
// ones and gets nodes reserved at once; other queues go on.
func TestStrictOrderQueue(t *testing.T) {
	strict := MakeQueue("strict")
	strict.q.StrictOrder = true
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(4), MakeNode("b").GPUs(8).UsedGPUs(4)).
		Queues(strict, MakeQueue("other")).Gangs(
		MakeGang("broken").Queue("strict").Members(1, GPUs(1)).Arrival(1).Invalid("bad spec"), // blocks nothing
		MakeGang("head").Queue("strict").Members(1, GPUs(8)).Arrival(90),
		MakeGang("next").Queue("strict").Members(1, GPUs(2)).Arrival(95),
		MakeGang("elsewhere").Queue("other").Members(1, GPUs(2)).Arrival(96),
	).Obj()
	s.Releases = []Release{{Node: 0, Amount: Vector{Pods: 1, gpuDim: 4}, At: 500}, {Node: 1, Amount: Vector{Pods: 1, gpuDim: 4}, At: 900}}
	plan, diag := runAt(t, s, Config{}, 100) // no ReserveAfter: the head reserves all the same
	got := pendingOf(diag)
	if st := got["next"]; st.Reason != ReasonBlocked || !strings.Contains(st.Message, "waiting behind gang head, which does not fit: queue strict runs its gangs in strict order") {
		t.Errorf("next: %v", st)
	}
	if _, start, ok := pendingStatus(diag, "head").Reservation(); !ok || start != 500 {
		t.Errorf("head: reservation from %d (%v), want 500", start, ok)
	}
	if diff := cmp.Diff(map[string][]string{"elsewhere": {"b"}}, nodesOf(plan)); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
}
