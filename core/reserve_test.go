package core

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
		if msg := got[g].Message; !strings.Contains(msg, "2 reserved for gang big)") {
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
	if msg := pendingStatus(diag, "small").Message(); !strings.Contains(msg, "reserved for gang big") {
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

// Two 8-GPU nodes, each half used: node a frees its 4 GPUs at t=1000, node
// b at t=2000. Gangs first and second (one 8-GPU member each) have waited
// past the threshold; filler (4 GPUs) has not. first will hold node a from
// 1000 to 6000, so second's earliest start is on node b at 2000.
func twoReservationSnapshot(fillerEstimate int64) *Snapshot {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(4), MakeNode("b").GPUs(8).UsedGPUs(4)).Gangs(
		MakeGang("first").Members(1, GPUs(8)).Arrival(0).Estimate(5000),
		MakeGang("second").Members(1, GPUs(8)).Arrival(1).Estimate(500),
		MakeGang("filler").Members(1, GPUs(4)).Arrival(90).Estimate(fillerEstimate),
	).Obj()
	s.Releases = []Release{
		{Node: 0, Amount: Vector{Pods: 1, gpuDim: 4}, At: 1000},
		{Node: 1, Amount: Vector{Pods: 1, gpuDim: 4}, At: 2000},
	}
	return s
}

func TestSeveralReservations(t *testing.T) {
	cases := []struct {
		name           string
		reservations   int
		fillerEstimate int64
		want           []string
		second         string // what second's status says
	}{
		// One reservation: first gets node a at 1000; filler, which would
		// run past it, takes node b, and second waits for it.
		{"one", 1, 5000, []string{"filler"}, ""},
		// Two: second gets node b at 2000 as well, so the long filler has
		// nowhere to go.
		{"two", 2, 5000, nil, "1 node(s) reserved for it; expected to start in 31m40s"},
		// A filler that ends by 1000 may use either.
		{"two, short filler", 2, 900, []string{"filler"}, "1 node(s) reserved for it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, diag := runAt(t, twoReservationSnapshot(tc.fillerEstimate), Config{ReserveAfter: 50, Reservations: tc.reservations}, 100)
			if diff := cmp.Diff(tc.want, keys(placed(plan))); diff != "" {
				t.Errorf("placed (-want +got):\n%s", diff)
			}
			got := pendingOf(diag)
			if msg := got["first"].Message; !strings.Contains(msg, "1 node(s) reserved for it; expected to start in 15m0s") {
				t.Errorf("first: %q does not give its reservation", msg)
			}
			msg := got["second"].Message
			if tc.second == "" && strings.Contains(msg, "reserved for it") || !strings.Contains(msg, tc.second) {
				t.Errorf("second: %q, want it to say %q", msg, tc.second)
			}
			// A gang kept off both nodes names both reservations.
			if msg := got["filler"].Message; tc.want == nil && !strings.Contains(msg, "(2 reserved for gangs first and second)") {
				t.Errorf("filler: %q does not name both reservations", msg)
			}
		})
	}
}

// A reservation is computed around the earlier ones: the gang holding the
// first may still use the room the second counted it would take.
func TestLaterReservationLeavesEarlierGangItsRoom(t *testing.T) {
	// One 8-GPU node, free. a and b (4 GPUs each, waited past the
	// threshold) both fit now; b is shorter, so it is placed first.
	s := MakeSnapshot().Nodes(MakeNode("n").GPUs(8)).Gangs(
		MakeGang("a").Members(1, GPUs(4)).Arrival(0).Estimate(3600),
		MakeGang("b").Members(1, GPUs(4)).Arrival(1).Estimate(600),
	).Obj()
	plan, _ := runAt(t, s, Config{ReserveAfter: 50, Reservations: 2, ShortestFirst: true}, 100)
	if diff := cmp.Diff([]string{"a", "b"}, keys(placed(plan))); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
}

// A queue over its deserved share counts only on its own members' releases:
// its gang does not make other queues drain their nodes for it.
func TestOverShareQueueReservesFromItsOwn(t *testing.T) {
	// Three 4-GPU nodes. Queue a holds nodes a0 (until 3000) and a1 (until
	// 1000); queue b holds node b0 (until 500) and waits with a long gang.
	// a's big gang (2 x 4 GPUs) has waited past the threshold.
	snap := func(weightA int64) *Snapshot {
		s := MakeSnapshot().
			Nodes(MakeNode("a0").GPUs(4).UsedGPUs(4), MakeNode("a1").GPUs(4).UsedGPUs(4), MakeNode("b0").GPUs(4).UsedGPUs(4)).
			Queues(MakeQueue("a").Weight(weightA).AllocatedGPUs(8), MakeQueue("b").AllocatedGPUs(4)).
			Gangs(
				MakeGang("big").Queue("a").Members(2, GPUs(4)).Arrival(0).Estimate(600),
				MakeGang("next").Queue("b").Members(1, GPUs(4)).Arrival(50).Estimate(9000),
			).Obj()
		s.Releases = []Release{
			{Node: 0, Amount: Vector{Pods: 1, gpuDim: 4}, At: 3000, Queue: "a"},
			{Node: 1, Amount: Vector{Pods: 1, gpuDim: 4}, At: 1000, Queue: "a"},
			{Node: 2, Amount: Vector{Pods: 1, gpuDim: 4}, At: 500, Queue: "b"},
		}
		return s
	}
	cases := []struct {
		name    string
		weightA int64
		want    string
	}{
		// Equal weights: a deserves 6 GPUs and holds 8. big waits for a's
		// own nodes, the later at 3000.
		{"over its share", 1, "2 node(s) reserved for it; expected to start in 48m20s"},
		// a weighs 3: it deserves 9 and holds 8. big counts on b0's release
		// too and starts at 1000.
		{"within its share", 3, "2 node(s) reserved for it; expected to start in 15m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diag := runAt(t, snap(tc.weightA), Config{ReserveAfter: 60}, 100)
			if msg := pendingOf(diag)["big"].Message; !strings.Contains(msg, tc.want) {
				t.Errorf("big: %q, want it to say %q", msg, tc.want)
			}
		})
	}
}

func TestShortestFirst(t *testing.T) {
	// One 4-GPU node: room for one of the gangs, all 4 GPUs, one queue.
	gangs := func() []*gangBuilder {
		return []*gangBuilder{
			MakeGang("long").Members(1, GPUs(4)).Arrival(0).Estimate(3600),
			MakeGang("none").Members(1, GPUs(4)).Arrival(1),
			MakeGang("short").Members(1, GPUs(4)).Arrival(2).Estimate(600),
		}
	}
	cases := []struct {
		name     string
		shortest bool
		drop     string // a gang left out
		strict   bool
		partial  bool // "none" holds one of two members
		want     string
	}{
		{"by arrival", false, "", false, false, "long"},
		{"shortest first", true, "", false, false, "short"},
		{"an estimate before none", true, "short", false, false, "long"},
		{"strict-order queue keeps arrival", true, "", true, false, "long"},
		{"a partly bound gang first", true, "", false, true, "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gs []*gangBuilder
			for _, g := range gangs() {
				switch {
				case g.g.ID == tc.drop:
					continue
				case g.g.ID == "none" && tc.partial:
					g = MakeGang("none").Members(2, GPUs(4)).Bound(1).Min(2).Arrival(1)
					g.g.Pending = g.g.Pending[:1]
				}
				gs = append(gs, g)
			}
			q := MakeQueue("default")
			q.q.StrictOrder = tc.strict
			s := MakeSnapshot().Nodes(MakeNode("n").GPUs(4)).Queues(q).Gangs(gs...).Obj()
			plan, _ := runAt(t, s, Config{ShortestFirst: tc.shortest}, 10)
			if diff := cmp.Diff([]string{tc.want}, keys(placed(plan))); diff != "" {
				t.Errorf("placed (-want +got):\n%s", diff)
			}
		})
	}
}

// Gangs of a queue over its share that its own releases could never make
// room for do not use up the tries: the next candidate still reserves.
func TestHopelessOverShareGangsDoNotBlockReservations(t *testing.T) {
	// Four 4-GPU nodes, all used: queue a holds three until 1000, queue b
	// one until 500. a (over its share of 8) has five old gangs of 16 GPUs;
	// b's gang of 4 GPUs came later.
	b := MakeSnapshot().
		Nodes(MakeNode("n0").GPUs(4).UsedGPUs(4), MakeNode("n1").GPUs(4).UsedGPUs(4),
			MakeNode("n2").GPUs(4).UsedGPUs(4), MakeNode("n3").GPUs(4).UsedGPUs(4)).
		Queues(MakeQueue("a").AllocatedGPUs(12), MakeQueue("b").AllocatedGPUs(4))
	var gangs []*gangBuilder
	for i := range 5 {
		gangs = append(gangs, MakeGang(fmt.Sprintf("a%d", i)).Queue("a").Members(4, GPUs(4)).Arrival(int64(i)).Estimate(600))
	}
	gangs = append(gangs, MakeGang("bg").Queue("b").Members(1, GPUs(4)).Arrival(10).Estimate(600))
	s := b.Gangs(gangs...).Obj()
	for n := range 3 {
		s.Releases = append(s.Releases, Release{Node: n, Amount: Vector{Pods: 1, gpuDim: 4}, At: 1000, Queue: "a"})
	}
	s.Releases = append(s.Releases, Release{Node: 3, Amount: Vector{Pods: 1, gpuDim: 4}, At: 500, Queue: "b"})
	_, diag := runAt(t, s, Config{ReserveAfter: 60}, 100)
	pending := pendingOf(diag)
	if msg := pending["bg"].Message; !strings.Contains(msg, "1 node(s) reserved for it; expected to start in 6m40s") {
		t.Errorf("bg: %q does not give its reservation", msg)
	}
	// Each of a's gangs says why it has no reservation, and bg, which has
	// one, says nothing of the kind.
	const why = "in line for a reservation, but queue a holds more than its deserved share and what its own gangs free is not enough for it"
	for i := range 5 {
		id := fmt.Sprintf("a%d", i)
		if msg := pending[id].Message; !strings.Contains(msg, why) {
			t.Errorf("%s: %q, want it to say %q", id, msg, why)
		}
	}
	if msg := pending["bg"].Message; strings.Contains(msg, "in line for a reservation") {
		t.Errorf("bg: %q speaks of its queue's share", msg)
	}
	// Within its share (a weighs 3 and deserves 12 of 16), a's first gang
	// counts on b's release too and gets the reservation; none says why it
	// has none.
	s.Queues[0].Weight = 3
	_, diag = runAt(t, s, Config{ReserveAfter: 60}, 100)
	for id, st := range pendingOf(diag) {
		if strings.Contains(st.Message, "in line for a reservation") {
			t.Errorf("%s, within its share: %q", id, st.Message)
		}
	}
	if msg := pendingOf(diag)["a0"].Message; !strings.Contains(msg, "4 node(s) reserved for it") {
		t.Errorf("a0, within its share: %q does not give its reservation", msg)
	}
}

// backlogSnapshot is reservationSnapshot with one more waiting gang,
// later (4 GPUs for 2400 s, from 403 s), whose work adds to the backlog.
func backlogSnapshot() *Snapshot {
	s := reservationSnapshot()
	s.Gangs = append(s.Gangs, MakeGang("later").Members(1, GPUs(4)).Arrival(403).Estimate(2400).Obj())
	return s
}

// bigReserved reports whether the diagnostics say gang big holds a
// reservation.
func bigReserved(d Diagnostics) bool {
	return strings.Contains(pendingOf(d)["big"].Message, "reserved for it")
}

// With ReserveAfterBacklog, ReserveAfter is a floor: big also waits nine
// tenths (backlogShare) of the time the two nodes need to run the other
// waiting gangs' work, 4 x 100 + 4 x 1000 + 4 x 2400 = 14,000 GPU-seconds
// (unknown has no estimate and does not count, nor does big's own work),
// on the 12 GPUs free now and the 4 more that b frees at 1000 s. At t
// before 1000, 0.9 x 14,000 = 12,600 GPU-seconds take
// 1000 + (12,600 - 12 x (1000 - t)) / 16 - t = 1037.5 - t/4 seconds, which
// big has waited from t = 830 s on; on all 16 GPUs from now on, as if the
// running member had ended, it would be 787.5 s.
func TestReservationWaitsOutTheBacklog(t *testing.T) {
	snap, reserved := backlogSnapshot, bigReserved
	cfg := Config{ReserveAfter: 60, ReserveAfterBacklog: true}
	for _, now := range []int64{500, 788, 829} {
		if _, diag := runAt(t, snap(), cfg, now); reserved(diag) {
			t.Errorf("at %d s, before the backlog's 830 s, big has a reservation: %q", now, pendingOf(diag)["big"].Message)
		}
	}
	var diag Diagnostics
	if _, diag = runAt(t, snap(), cfg, 830); !reserved(diag) {
		t.Errorf("at 830 s big has no reservation: %q", pendingOf(diag)["big"].Message)
	}
	// The floor still applies when the backlog is shorter.
	if _, diag = runAt(t, snap(), Config{ReserveAfter: 1000, ReserveAfterBacklog: true}, 900); reserved(diag) {
		t.Errorf("at 900 s, before the floor of 1000 s, big has a reservation")
	}
	// Off, the floor alone.
	if _, diag = runAt(t, snap(), Config{ReserveAfter: 60}, 500); !reserved(diag) {
		t.Errorf("without the backlog big has no reservation at 500 s: %q", pendingOf(diag)["big"].Message)
	}
	// A queue's own threshold is taken as it is.
	s := snap()
	s.Queues[0].ReserveAfter = 60
	if _, diag = runAt(t, s, cfg, 500); !reserved(diag) {
		t.Errorf("with the queue's own threshold big has no reservation at 500 s: %q", pendingOf(diag)["big"].Message)
	}
	// A closed queue's gangs do not run, so they do not count: without
	// later, 0.9 x 4,400 GPU-seconds take 330 s on the 12 free GPUs.
	s = snap()
	s.Queues = append(s.Queues, MakeQueue("closed").Closed().Obj())
	s.Gangs[len(s.Gangs)-1].Queue = "closed"
	if _, diag = runAt(t, s, cfg, 500); !reserved(diag) {
		t.Errorf("with later in a closed queue big has no reservation at 500 s: %q", pendingOf(diag)["big"].Message)
	}
	// A queue whose gangs ran half their estimates, in sum, counts half
	// the work of its gangs that declared theirs: 7,000 GPU-seconds, of
	// which 6,300 take 1000 + (6,300 - 12 x (1000 - t)) / 16 - t =
	// 643.75 - t/4 seconds after t = 475 (before, 6,300 / 12 = 525 s), due
	// from t = 515 s. An estimate the driver derived otherwise is not
	// multiplied: with later's so, (4 x 100 + 4 x 1000) / 2 + 4 x 2400 =
	// 11,800, of which 10,620 take 913.75 - t/4 seconds, due from
	// t = 731 s.
	for _, tc := range []struct {
		wf         float64
		undeclared string
		ready      int64
	}{
		{wf: 0.5, ready: 515},
		{wf: 0.5, undeclared: "later", ready: 731},
		{wf: 1, ready: 830},
		{wf: 0, ready: 830}, // 0, NaN and infinity count as 1
		{wf: math.NaN(), ready: 830},
		{wf: math.Inf(1), ready: 830},
	} {
		wf, ready := tc.wf, tc.ready
		s = snap()
		if len(s.Queues) != 1 {
			t.Fatalf("%d queues, want the default one", len(s.Queues))
		}
		s.Queues[0].WorkFactor = wf
		for _, g := range s.Gangs {
			g.EstimateDeclared = g.Estimate > 0 && g.ID != tc.undeclared
		}
		if _, diag = runAt(t, s, cfg, ready-1); reserved(diag) {
			t.Errorf("work factor %g, %q undeclared: at %d s, before the backlog's %d s, big has a reservation", wf, tc.undeclared, ready-1, ready)
		}
		if _, diag = runAt(t, s, cfg, ready); !reserved(diag) {
			t.Errorf("work factor %g, %q undeclared: at %d s big has no reservation: %q", wf, tc.undeclared, ready, pendingOf(diag)["big"].Message)
		}
	}
	// A queue whose gangs overran their estimates by more than e one time
	// in ten: the member on b counts as freeing its 4 GPUs now, and the
	// 12,600 GPU-seconds take 12,600 / 16 = 787.5 s, 787 in whole
	// seconds: due from 787 s, not 830 s. At e exactly its end is still
	// counted on.
	for _, tc := range []struct {
		overrun float64
		ready   int64
	}{{3, 787}, {math.E, 830}, {1, 830}} {
		s = snap()
		s.Queues[0].OverrunFactor = tc.overrun
		s.Releases[0].Queue = s.Queues[0].Name
		if _, diag = runAt(t, s, cfg, 780); reserved(diag) {
			t.Errorf("overrun factor %g: at 780 s big has a reservation", tc.overrun)
		}
		if _, diag = runAt(t, s, cfg, tc.ready-1); reserved(diag) {
			t.Errorf("overrun factor %g: at %d s big has a reservation", tc.overrun, tc.ready-1)
		}
		if _, diag = runAt(t, s, cfg, tc.ready); !reserved(diag) {
			t.Errorf("overrun factor %g: at %d s big has no reservation: %q", tc.overrun, tc.ready, pendingOf(diag)["big"].Message)
		}
	}
}

// Reserved ahead: big, due at 3600 s, gets its nodes ReserveAhead before,
// for a reservation that starts at 3600 although both nodes are free by
// 1000. Until then gangs expected to end by 3600 may use them, long among
// them (it ends at 1500); unknown, without an estimate, may not.
func TestReserveAhead(t *testing.T) {
	cfg := Config{ReserveAfter: 3600, ReserveAhead: 3600}
	plan, diag := runAt(t, reservationSnapshot(), cfg, 500)
	if diff := cmp.Diff([]string{"long", "short"}, keys(placed(plan))); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
	got := pendingOf(diag)
	if msg := got["big"].Message; !strings.Contains(msg, "2 node(s) reserved for it ahead of its due time; expected to start within 51m40s") {
		t.Errorf("big: %q does not give its reservation from 3600 s", msg)
	}
	if msg := got["unknown"].Message; !strings.Contains(msg, "2 reserved for gang big)") {
		t.Errorf("unknown: %q does not say the nodes are reserved", msg)
	}
	if start, ok := reservationStart(diag, "big"); !ok || start != 3600 {
		t.Errorf("big's reservation starts at %d (held %v), want 3600", start, ok)
	}
	for _, st := range diag.Pending {
		if st.Gang == "big" && !st.ReservedAhead() {
			t.Errorf("big's reservation is not said to be made ahead")
		}
	}
	// Nodes that free after the gang is due: the reservation starts when
	// they free, as without reserving ahead, before and after it is due.
	for _, now := range []int64{500, 3600} {
		s := reservationSnapshot()
		s.Releases[0].At = 5000
		_, diag = runAt(t, s, cfg, now)
		if start, ok := reservationStart(diag, "big"); !ok || start != 5000 {
			t.Errorf("at %d s, with b busy until 5000 s, big's reservation starts at %d (held %v), want 5000", now, start, ok)
		}
	}
	// Due further ahead than ReserveAhead: nothing reserved yet, and the
	// plan says when that changes.
	cfg.ReserveAhead = 1000
	plan, diag = runAt(t, reservationSnapshot(), cfg, 500)
	if _, ok := reservationStart(diag, "big"); ok {
		t.Errorf("2600 s before its due time, with ReserveAhead 1000 s, big has a reservation")
	}
	if plan.Until > 2600 || plan.Until <= 500 {
		t.Errorf("Plan.Until %d, want at most 2600, when big may be reserved for", plan.Until)
	}
	_, diag = runAt(t, reservationSnapshot(), cfg, 2600)
	if _, ok := reservationStart(diag, "big"); !ok {
		t.Errorf("at 2600 s, 1000 s before its due time, big has no reservation")
	}
	if _, err := New(Config{ReserveAfter: 60, ReserveAhead: -1}); err == nil {
		t.Errorf("a negative ReserveAhead is accepted")
	}
}

// With ReserveAfterBacklog, ReserveAhead reserves ahead of the backlog's
// part of the threshold only: never before the floor. In the snapshot of
// TestReservationWaitsOutTheBacklog, big is due at 1037.5 - t/4 s when the
// backlog is counted at t (before 1000 s): 300 s ahead of that is from 600
// s on, not at 500. With a floor of 1000 s, longer than the backlog, big
// is due at 1000 s and is not reserved for before, however far ReserveAhead
// reaches; a queue's own threshold, and a fixed one, are reserved ahead of.
func TestReserveAheadOfTheBacklogOnly(t *testing.T) {
	snap, reserved := backlogSnapshot, bigReserved
	cfg := Config{ReserveAfter: 60, ReserveAfterBacklog: true, ReserveAhead: 300}
	if _, diag := runAt(t, snap(), cfg, 500); reserved(diag) {
		t.Errorf("at 500 s, more than 300 s before its due time of 912.5 s, big has a reservation: %q", pendingOf(diag)["big"].Message)
	}
	if _, diag := runAt(t, snap(), cfg, 600); !reserved(diag) {
		t.Errorf("at 600 s, 287.5 s before its due time, big has no reservation: %q", pendingOf(diag)["big"].Message)
	}
	cfg = Config{ReserveAfter: 1000, ReserveAfterBacklog: true, ReserveAhead: 3600}
	for _, now := range []int64{500, 999} {
		if _, diag := runAt(t, snap(), cfg, now); reserved(diag) {
			t.Errorf("at %d s, before the floor of 1000 s, big has a reservation: %q", now, pendingOf(diag)["big"].Message)
		}
	}
	if _, diag := runAt(t, snap(), cfg, 1000); !reserved(diag) {
		t.Errorf("at 1000 s, the floor, big has no reservation: %q", pendingOf(diag)["big"].Message)
	}
	s := snap()
	s.Queues[0].ReserveAfter = 1000
	if _, diag := runAt(t, s, cfg, 500); !reserved(diag) {
		t.Errorf("with its queue's own threshold of 1000 s, big has no reservation ahead at 500 s: %q", pendingOf(diag)["big"].Message)
	}
	cfg.ReserveAfterBacklog = false
	if _, diag := runAt(t, snap(), cfg, 500); !reserved(diag) {
		t.Errorf("with a fixed threshold of 1000 s, big has no reservation ahead at 500 s: %q", pendingOf(diag)["big"].Message)
	}
}

// A gang backfills nodes reserved for another only if it is expected to
// end by the reservation's start with its estimate times the larger of its
// queue's WorkFactor and OverrunFactor, when that is above 1 and the
// estimate declared. long, from 500 s with an estimate of 1000 s, may use
// big's nodes reserved from 3600 s at a factor of 3, not 4; short (100 s)
// may at 4, but not at 6 on nodes reserved (once due) from 1000 s.
func TestBackfillWorkFactor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		wf         float64
		undeclared bool
		want       []string
		overrun    float64
	}{
		{"ahead, factor 1", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 1, false, []string{"long", "short"}, 0},
		{"ahead, factor 3", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 3, false, []string{"long", "short"}, 0},
		{"ahead, factor 4", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 4, false, []string{"short"}, 0},
		{"ahead, factor 4, estimates not declared", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 4, true, []string{"long", "short"}, 0},
		{"ahead, factor 0.1", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 0.1, false, []string{"long", "short"}, 0},
		{"ahead, factor infinite", Config{ReserveAfter: 3600, ReserveAhead: 3600}, math.Inf(1), false, []string{"long", "short"}, 0},
		{"once due, factor 4", Config{ReserveAfter: 60}, 4, false, []string{"short"}, 0},
		{"once due, factor 6", Config{ReserveAfter: 60}, 6, false, nil, 0},
		{"ahead, overrun factor 3", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 1, false, []string{"long", "short"}, 3},
		{"ahead, overrun factor 4", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 1, false, []string{"short"}, 4},
		{"ahead, overrun factor 4, work factor 3", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 3, false, []string{"short"}, 4},
		{"ahead, overrun factor 3, work factor 4", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 4, false, []string{"short"}, 3},
		{"ahead, overrun factor 4, estimates not declared", Config{ReserveAfter: 3600, ReserveAhead: 3600}, 1, true, []string{"long", "short"}, 4},
		{"once due, overrun factor 6", Config{ReserveAfter: 60}, 1, false, nil, 6},
	} {
		s := reservationSnapshot()
		if len(s.Queues) != 1 {
			t.Fatalf("%d queues, want the default one", len(s.Queues))
		}
		s.Queues[0].WorkFactor, s.Queues[0].OverrunFactor = tc.wf, tc.overrun
		for _, g := range s.Gangs {
			g.EstimateDeclared = g.Estimate > 0 && !tc.undeclared
		}
		plan, _ := runAt(t, s, tc.cfg, 500)
		if diff := cmp.Diff(tc.want, keys(placed(plan)), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: placed (-want +got):\n%s", tc.name, diff)
		}
	}
}

// reservationStart returns when the reservation of gang starts, if the
// diagnostics say it holds one.
func reservationStart(d Diagnostics, gang string) (int64, bool) {
	for _, st := range d.Pending {
		if st.Gang == gang {
			_, start, ok := st.Reservation()
			return start, ok
		}
	}
	return 0, false
}

// A gang's hold wins over a reservation that shares its node. Node a is
// empty but 4 of its GPUs are held for the preemptor, whose victims were
// there; node b is busy until t=11000. The long-waiting gang (3 x 4 GPUs)
// can start at 11000 on a's other 4 GPUs and on b: a and b are reserved for
// it, a without the held GPUs, which it never counts on. The preemptor, too
// long to end before then, still starts at once on the GPUs held for it,
// and the reservation keeps its room: no other gang takes a's last 4.
func TestHoldWinsOverReservation(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8), MakeNode("b").GPUs(8).UsedGPUs(8)).Gangs(
		MakeGang("waited").Members(3, GPUs(4)).Arrival(0).Estimate(3600),
		MakeGang("preemptor").Members(1, GPUs(4)).Arrival(9000).Estimate(5000),
		MakeGang("other").Members(1, GPUs(4)).Arrival(9500).Estimate(5000),
	).Obj()
	s.Releases = []Release{{Node: 1, Amount: Vector{Pods: 1, gpuDim: 8}, At: 11000, Queue: "default"}}
	s.Holds = []Hold{{Gang: "preemptor", Node: 0, Amount: Vector{Pods: 1, gpuDim: 4}}}
	for _, cfg := range []Config{{ReserveAfter: 600}, {ReserveAfter: 600, ShortestFirst: true}} {
		plan, diag := runAt(t, s, cfg, 10000)
		if diff := cmp.Diff([]string{"preemptor"}, keys(placed(plan))); diff != "" {
			t.Errorf("shortest first %v: placed (-want +got):\n%s", cfg.ShortestFirst, diff)
		}
		if msg := pendingOf(diag)["waited"].Message; !strings.Contains(msg, "2 node(s) reserved for it") {
			t.Errorf("shortest first %v: waited: %q does not give its reservation", cfg.ShortestFirst, msg)
		}
	}
}

// A member past its estimated end is expected to run as long again as it
// has overrun, as in a forecast, not to end any moment: at t=500, node a's
// member, estimated to end at 200, is expected at 800, so the big gang
// reserves node b, which frees at 700. The expected end moves with the
// time, so the plan holds only until the next second.
func TestReservationAvoidsOverrunningNode(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(8), MakeNode("b").GPUs(8).UsedGPUs(8)).Gangs(
		MakeGang("big").Members(1, GPUs(8)).Arrival(0),
	).Obj()
	s.Releases = []Release{
		{Node: 0, Amount: Vector{Pods: 1, gpuDim: 8}, At: 200},
		{Node: 1, Amount: Vector{Pods: 1, gpuDim: 8}, At: 700},
	}
	plan, diag := runAt(t, s, Config{ReserveAfter: 60}, 500)
	if msg := pendingOf(diag)["big"].Message; !strings.Contains(msg, "1 node(s) reserved for it; expected to start in 3m20s") {
		t.Errorf("big: %q, want node b reserved, expected in 3m20s", msg)
	}
	if plan.Until != 501 {
		t.Errorf("plan until %d, want 501", plan.Until)
	}
	// Overrun by 10 s, node a's member is expected a minute later (560),
	// before b's.
	s.Releases[0].At = 490
	_, diag = runAt(t, s, Config{ReserveAfter: 60}, 500)
	if msg := pendingOf(diag)["big"].Message; !strings.Contains(msg, "expected to start in 1m0s") {
		t.Errorf("big: %q, want node a reserved, expected in 1m0s", msg)
	}
	if s.Releases[0].At != 490 {
		t.Errorf("the cycle changed the snapshot's release to %d", s.Releases[0].At)
	}
}

// backlog.wait runs the work on the room free over time: 12 GPUs now, 16
// from 100 s, 18 from 300 s on.
func TestBacklogWait(t *testing.T) {
	b := backlog{steps: []freeStep{{0, 0, 12}, {100, 1200, 16}, {300, 4400, 18}}}
	for _, tc := range []struct {
		work float64
		want int64
	}{
		{0, 0},
		{-5, 0},
		{600, 50},          // on the 12 free now
		{1200, 100},        // exactly when the first member ends
		{2000, 150},        // 1200 by 100 s, then 800 on 16
		{4400, 300},        // exactly at the last end
		{4400 + 1800, 400}, // then on 18
	} {
		if got := b.wait(tc.work); got != tc.want {
			t.Errorf("wait(%g) = %d, want %d", tc.work, got, tc.want)
		}
	}
	// Nothing free and nothing ending: never.
	none := backlog{steps: []freeStep{{0, 0, 0}}}
	if got := none.wait(1); got < math.MaxInt64/2 {
		t.Errorf("with no room ever, wait = %d, want at least %d", got, int64(math.MaxInt64/2))
	}
	// Nothing free now, 8 GPUs from 50 s.
	later := backlog{steps: []freeStep{{0, 0, 0}, {50, 0, 8}}}
	if got := later.wait(800); got != 150 {
		t.Errorf("with room from 50 s, wait = %d, want 150", got)
	}
}

// With ReserveByWork the gangs in line for a reservation go by arrival
// moved back by workWeight times the time their work would take the
// cluster, by at most ReserveByWork. One node of 8 GPUs is busy until
// t=1000; big (8 GPUs for 10 hours, the whole cluster: 80 hours by weight,
// a day by the bound) arrived at 0, small (4 GPUs for an hour: 4 hours by
// weight) after it. There is one reservation.
func TestReserveByWork(t *testing.T) {
	snap := func(smallArrival int64) *Snapshot {
		s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(8)).Gangs(
			MakeGang("big").Members(1, GPUs(8)).Arrival(0).Estimate(36000),
			MakeGang("small").Members(1, GPUs(4)).Arrival(smallArrival).Estimate(3600),
		).Obj()
		s.Releases = []Release{{Node: 0, Amount: Vector{Pods: 1, gpuDim: 8}, At: 1000}}
		return s
	}
	cases := []struct {
		name         string
		byWork       int64
		smallArrival int64
		reserved     string
	}{
		{"by arrival", 0, 100, "big"},
		// small's place is 100 + 4h, big's 0 + 1 day.
		{"by work", 86400, 100, "small"},
		// A bound of 4 hours: big's place is 0 + 4h, ahead of small's.
		{"by work, a shorter bound", 4 * 3600, 100, "big"},
		// small arrived more than a day after big: big goes first.
		{"by work, small a day later", 86400, 86500, "big"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diag := runAt(t, snap(tc.smallArrival), Config{ReserveAfter: 50, Reservations: 1, ReserveByWork: tc.byWork}, tc.smallArrival+100)
			for _, g := range []string{"big", "small"} {
				if _, ok := reservationStart(diag, g); ok != (g == tc.reserved) {
					t.Errorf("%s reserved for: %v, want only %s", g, ok, tc.reserved)
				}
			}
		})
	}
	// Before small has waited ReserveAfter, big holds the reservation; the
	// plan must say it may change once small is in line, ahead of big.
	t.Run("by work, small not yet in line", func(t *testing.T) {
		cfg := Config{ReserveAfter: 50, Reservations: 1, ReserveByWork: 86400}
		plan, diag := runAt(t, snap(100), cfg, 120)
		if _, ok := reservationStart(diag, "big"); !ok {
			t.Fatalf("big is not reserved for at 120")
		}
		if plan.Until > 150 {
			t.Errorf("Until = %d, want at most 150, when small is in line", plan.Until)
		}
		_, diag = runAt(t, snap(100), cfg, 150)
		if _, ok := reservationStart(diag, "small"); !ok {
			t.Errorf("small is not reserved for at 150")
		}
	})
	if _, err := New(Config{ReserveByWork: -1}); err == nil {
		t.Error("a negative ReserveByWork is accepted")
	}
}
