package core

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlanUntil checks Plan.Until over random clusters with reservations,
// backfill, preemption and reclaim: a cycle over the same snapshot at any
// time before Until makes the same plan. The snapshots spread arrivals over
// the reservation and reclaim thresholds, and give running members various
// starts and weights, so that waits, backfill windows and the ranking of
// victims all change within the times tried; the test also checks that
// plans do change at Until in some of them (Until is not merely the next
// second everywhere, and what it bounds happens).
func TestPlanUntil(t *testing.T) {
	configs := []Config{
		{Ordering: FairShare, ReserveAfter: 600, Reservations: 2, ShortestFirst: true},
		{Ordering: FairShare, Preemption: true, ReclaimAfter: 300},
		{Ordering: FairShare, Preemption: true, ReserveAfter: 600, Reservations: 3, ShortestFirst: true},
		{Ordering: FairShare, Preemption: true, ReserveAfter: 400, Reservations: 1, ReclaimAfter: 900, Topology: randomTopology},
		// Without estimates (no backfill): the gangs that come to deserve a
		// reservation bound Until.
		{Ordering: FairShare, ReserveAfter: 600, Reservations: 1},
		{Ordering: FairShare, ReserveAfter: 900, Reservations: 2},
		// Minimum run times and weighed losses: protections that end and
		// evictions that stop paying off as time passes.
		{Ordering: FairShare, Preemption: true, PreemptMinRuntime: 400, ReclaimMinRuntime: 700, WeighLoss: true},
		{Ordering: FairShare, Preemption: true, ReserveAfter: 600, Reservations: 2, ShortestFirst: true,
			ReclaimMinRuntime: 300, WeighLoss: true},
		// Thresholds that also wait out the backlog, one per gang.
		{Ordering: FairShare, ReserveAfter: 300, ReserveAfterBacklog: true, Reservations: 2, ShortestFirst: true},
		// The line for a reservation by work as well as arrival, bounded.
		{Ordering: FairShare, ReserveAfter: 300, ReserveAfterBacklog: true, Reservations: 2, ShortestFirst: true, ReserveByWork: 600},
	}
	const now = 1500
	cycles, later, changedAtUntil := 0, 0, 0
	for seed := uint64(1); seed <= 40; seed++ {
		for ci, cfg := range configs {
			s := randomSnapshot(seed, 24+int(seed)%17, 600, 6)
			r := rand.New(rand.NewPCG(seed, uint64(ci)))
			// A busy cluster: most nodes mostly used, so that
			// reservations start later.
			for i := range s.Nodes {
				if used := 1 + int64(r.IntN(8)); s.Nodes[i].Used.IsZero() {
					s.Nodes[i].Used = Vector{CPU: used * 4000, Memory: used << 33, Pods: used, gpuDim: used}
				}
			}
			for _, g := range s.Gangs {
				g.Arrival = r.Int64N(now + 1)
				g.Estimate = 0
				if r.IntN(4) > 0 && (ci < 4 || ci >= 6) {
					g.Estimate = 1 + r.Int64N(5000)
				}
				if ci >= 4 && now-g.Arrival < cfg.ReserveAfter && r.IntN(4) == 0 {
					// A gang of a priority above the rest, which takes the
					// reservation once it has waited long enough.
					g.Priority = 3
				}
				if cfg.ReserveAfter > 0 && now-g.Arrival >= cfg.ReserveAfter {
					// Big gangs that have waited: their reservations start
					// once nodes free up.
					for k := range g.Pending {
						g.Pending[k].Request = Vector{CPU: 8 * 4000, Memory: 8 << 33, gpuDim: 8}
					}
				}
			}
			if cfg.Topology != nil {
				requireTopology(s, seed)
			}
			if cfg.ReserveAfter > 0 {
				for i := range s.Nodes {
					if !s.Nodes[i].Used.IsZero() && r.IntN(4) > 0 {
						s.Releases = append(s.Releases, Release{Node: i, Amount: s.Nodes[i].Used,
							At: now + 1 + r.Int64N(4000), Queue: s.Queues[r.IntN(len(s.Queues))].Name})
					}
				}
			}
			if cfg.Preemption {
				addRunning(s, seed)
				for i := range s.Running {
					for k := range s.Running[i].Members {
						s.Running[i].Members[k].Start = r.Int64N(now + 1)
					}
					if cfg.WeighLoss && r.IntN(5) > 0 {
						s.Running[i].Estimate = 1 + r.Int64N(4000)
					}
				}
			}
			sched, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("seed %d config %d", seed, ci)
			plan, _ := sched.RunCycle(s, now)
			cycles++
			if plan.Until <= now {
				t.Fatalf("%s: Until %d is not after the cycle's time %d", name, plan.Until, now)
			}
			times := []int64{now + 1, now + 7, now + 60, now + 3600, now + 86400}
			if plan.Until != math.MaxInt64 {
				later++
				times = append(times, plan.Until-1, now+(plan.Until-now)/2, plan.Until-2)
			}
			for _, at := range times {
				if at <= now || at >= plan.Until {
					continue
				}
				other, _ := sched.RunCycle(s, at)
				if diff := cmp.Diff(withoutUntil(plan), withoutUntil(other)); diff != "" {
					t.Fatalf("%s: the plan at %d differs from the plan at %d, before Until %d (-at %d +at %d):\n%s",
						name, at, now, plan.Until, now, at, diff)
				}
			}
			if plan.Until != math.MaxInt64 {
				if other, _ := sched.RunCycle(s, plan.Until); !cmp.Equal(withoutUntil(plan), withoutUntil(other)) {
					changedAtUntil++
				}
			}
		}
	}
	t.Logf("%d cycles, %d with a finite Until, %d of them planning otherwise at Until", cycles, later, changedAtUntil)
	if later == 0 || changedAtUntil == 0 {
		t.Errorf("%d cycles, %d with a finite Until, %d of them planning otherwise at Until: the test tries nothing", cycles, later, changedAtUntil)
	}
}

func withoutUntil(p Plan) Plan {
	p.Until = 0
	return p
}
