package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestPreemptionShortcutsPlanAlike runs random busy clusters, where queues
// over their share run gangs with and without estimates and gangs of other
// queues wait, through cycles with and without the preemption phase's
// shortcuts (a refusal without trials, candidate lists reused), and
// compares plans, Until included, and diagnostics. It fails if the
// shortcuts change a decision, and if they were never taken or no eviction
// was ever planned (it would then compare nothing).
func TestPreemptionShortcutsPlanAlike(t *testing.T) {
	configs := []Config{
		{Ordering: FairShare, Preemption: true, WeighLoss: true},
		{Ordering: FairShare, Preemption: true, WeighLoss: true, ReclaimMinRuntime: 300},
		{Ordering: FairShare, Preemption: true, WeighLoss: true, ReserveAfter: 600, Reservations: 2, ShortestFirst: true},
		{Ordering: FairShare, Preemption: true, WeighLoss: true, ReserveAfter: 600, ReserveAfterBacklog: true, Reservations: 2, ShortestFirst: true},
		{Ordering: FairShare, Preemption: true, WeighLoss: true, ReserveAfter: 600, ReserveAfterBacklog: true, Reservations: 2, ShortestFirst: true, ReserveByWork: 600},
		{Ordering: FairShare, Preemption: true, WeighLoss: true, Topology: randomTopology},
		{Ordering: FairShare, Preemption: true},
	}
	const now = 1500
	evictions := 0
	var refused, reused int64
	for seed := uint64(1); seed <= 40; seed++ {
		for ci, cfg := range configs {
			s := randomSnapshot(seed, 16+int(seed)%23, 500, 6)
			r := rand.New(rand.NewPCG(seed, uint64(100+ci)))
			for i := range s.Nodes {
				// Busy: only a few accelerators free in all.
				if used := 5 + int64(r.IntN(4)); s.Nodes[i].Used.IsZero() || r.IntN(2) == 0 {
					s.Nodes[i].Used = Vector{CPU: used * 4000, Memory: used << 33, Pods: used, gpuDim: used}
				}
			}
			for _, g := range s.Gangs {
				g.Arrival = r.Int64N(now + 1)
				if r.IntN(4) > 0 {
					g.Estimate = 1 + r.Int64N(6000)
				}
			}
			if cfg.Topology != nil {
				requireTopology(s, seed)
			}
			addRunning(s, seed)
			for i := range s.Running {
				run := &s.Running[i]
				run.Arrival = r.Int64N(now)
				for k := range run.Members {
					run.Members[k].Start = run.Arrival + r.Int64N(now-run.Arrival+1)
				}
				if r.IntN(6) > 0 {
					run.Estimate = 1 + r.Int64N(5000)
				}
			}
			if cfg.ReserveAfter > 0 {
				for _, run := range s.Running {
					for _, m := range run.Members {
						if run.Estimate > 0 {
							s.Releases = append(s.Releases, Release{Node: m.Node, Amount: withPod(m.Request),
								At: max(m.Start+run.Estimate, now+1), Queue: run.Queue})
						}
					}
				}
			}
			name := fmt.Sprintf("seed %d config %d", seed, ci)
			fast, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			slow, _ := New(cfg)
			slow.noShortcuts = true
			plan, diag := fast.RunCycle(s, now)
			want, wantDiag := slow.RunCycle(s, now)
			if diff := cmp.Diff(want, plan); diff != "" {
				t.Fatalf("%s: the plan differs with the shortcuts (-without +with):\n%s", name, diff)
			}
			if diff := cmp.Diff(messages(wantDiag), messages(diag)); diff != "" {
				t.Fatalf("%s: the diagnostics differ with the shortcuts (-without +with):\n%s", name, diff)
			}
			evictions += len(plan.Evictions)
			refused += fast.shortcuts.refused.Load()
			reused += fast.shortcuts.reused.Load()
		}
	}
	t.Logf("%d evictions planned; %d attempts refused without trials, %d candidate lists reused", evictions, refused, reused)
	if evictions == 0 || refused == 0 || reused == 0 {
		t.Errorf("%d evictions, %d refused without trials, %d lists reused: the test compares nothing", evictions, refused, reused)
	}
}

// TestFreeIndexUndo makes random moves in a free index after a mark and
// checks that undo leaves it as it was, the order of every bucket
// included, and that moves before the mark stay.
func TestFreeIndexUndo(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		s := randomSnapshot(seed, 8+int(seed)%30, 0, 1)
		x := newFreeIndex(s.Nodes, gpuDim)
		move := func() {
			n := r.IntN(len(s.Nodes))
			d := Vector{gpuDim: int64(r.IntN(3)), CPU: 1000}
			if r.IntN(2) == 0 && d.Fits(x.free[n]) {
				x.take(n, d)
			} else {
				x.give(n, d)
			}
		}
		for range r.IntN(20) {
			move()
		}
		before := cloneIndex(x)
		m := x.mark()
		for range 1 + r.IntN(60) {
			move()
		}
		x.undo(m)
		if diff := cmp.Diff(before, cloneIndex(x), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("seed %d: undo left the index otherwise (-before +after):\n%s", seed, diff)
		}
		if x.recording || len(x.journal) != 0 {
			t.Fatalf("seed %d: still recording after undo to the first mark", seed)
		}
	}
}

type indexView struct {
	Free        []Vector
	Total       Vector
	Buckets     [][]int32
	Pos, Bucket []int32
	Top         int
}

func cloneIndex(x *freeIndex) indexView {
	v := indexView{Free: slices.Clone(x.free), Total: x.total, Pos: slices.Clone(x.pos), Bucket: slices.Clone(x.bucket), Top: x.top}
	for _, b := range x.buckets {
		v.Buckets = append(v.Buckets, slices.Clone(b))
	}
	return v
}

// TestFailedMemo sets and gets random keys of every form failedMemo
// stores (plain, packed in a word, a struct) and compares with a map.
func TestFailedMemo(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	holders := []*Gang{nil, nil, {ID: "a"}, {ID: "b"}}
	opens := func() uint64 {
		switch r.IntN(5) {
		case 0:
			return 0
		case 1:
			return uint64(r.IntN(8))
		case 2:
			return uint64(r.IntN(8)) | ^uint64(0)<<r.IntN(4) // a reservation's own gang
		case 3:
			return uint64(r.IntN(1<<20)) | ^uint64(0)<<(40+r.IntN(24))
		default:
			return r.Uint64()
		}
	}
	var m failedMemo
	want := map[failedKey]int{}
	for i := range 20000 {
		k := failedKey{shape: int32(r.IntN(40)), open: opens(), holder: holders[r.IntN(len(holders))]}
		if r.IntN(50) == 0 {
			k.shape = 1<<23 + int32(r.IntN(3))
		}
		if r.IntN(2) == 0 {
			m.set(k, i)
			want[k] = i
		}
		got, ok := m.get(k)
		w, wok := want[k]
		if got != w || ok != wok {
			t.Fatalf("key %+v: get gives %d, %v; want %d, %v", k, got, ok, w, wok)
		}
		if r.IntN(3000) == 0 {
			m.forget()
			clear(want)
		}
	}
}

// TestSealedGangsPlanAlike runs random snapshots with their gangs sealed
// and not, and with seals gone stale (a member added, the bound changed,
// after Seal), and compares plans and diagnostics: a summary changes
// nothing, and a stale one is not used.
func TestSealedGangsPlanAlike(t *testing.T) {
	configs := []Config{
		{Ordering: FairShare, ReserveAfter: 600, Reservations: 2, ShortestFirst: true},
		{Ordering: FairShare, Preemption: true, WeighLoss: true, Topology: randomTopology},
		{Ordering: StrictFIFO},
	}
	for seed := uint64(1); seed <= 30; seed++ {
		for ci, cfg := range configs {
			name := fmt.Sprintf("seed %d config %d", seed, ci)
			s := randomSnapshot(seed, 12+int(seed)%20, 300, 6)
			if cfg.Preemption {
				addRunning(s, seed)
			}
			if cfg.Topology != nil {
				requireTopology(s, seed)
			}
			sched, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range s.Gangs {
				if i%5 == 0 && len(g.Pending) > 0 {
					g.Pending[0].Request[gpuDim] = -1 // invalid: validate's message
				}
			}
			want, wantDiag := sched.RunCycle(s, 1000)
			for _, g := range s.Gangs {
				g.Seal()
			}
			plan, diag := sched.RunCycle(s, 1000)
			if diff := cmp.Diff(want, plan); diff != "" {
				t.Fatalf("%s: sealed gangs plan otherwise (-unsealed +sealed):\n%s", name, diff)
			}
			if diff := cmp.Diff(messages(wantDiag), messages(diag)); diff != "" {
				t.Fatalf("%s: sealed gangs are diagnosed otherwise (-unsealed +sealed):\n%s", name, diff)
			}
			// Stale seals: every third gang changed after Seal.
			for i, g := range s.Gangs {
				switch i % 3 {
				case 1:
					g.Pending = append(g.Pending, Member{Name: g.ID + "-extra", Request: Vector{gpuDim: 8, CPU: 1000}})
				case 2:
					g.Bound = min(g.Bound+1, g.MinMember)
				}
			}
			stale, staleDiag := sched.RunCycle(s, 1000)
			for _, g := range s.Gangs {
				g.sealed = gangSummary{}
			}
			fresh, freshDiag := sched.RunCycle(s, 1000)
			if diff := cmp.Diff(fresh, stale); diff != "" {
				t.Fatalf("%s: stale seals were used (-unsealed +stale):\n%s", name, diff)
			}
			if diff := cmp.Diff(messages(freshDiag), messages(staleDiag)); diff != "" {
				t.Fatalf("%s: stale seals were used in diagnostics (-unsealed +stale):\n%s", name, diff)
			}
		}
	}
}
