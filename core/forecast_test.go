package core

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func forecastOf(t *testing.T, s *Snapshot, cfg Config, now int64, opts ForecastOptions) Forecast {
	t.Helper()
	sched, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sched.Forecast(s, now, opts)
}

// starts maps each forecast gang to its expected start, -1 for none.
func starts(f Forecast) map[string]int64 {
	out := map[string]int64{}
	for _, g := range f.Gangs {
		out[g.Gang] = -1
		if g.Starts {
			out[g.Gang] = g.Start
		}
	}
	return out
}

func positions(f Forecast) map[string]int {
	out := map[string]int{}
	for _, g := range f.Gangs {
		out[g.Gang] = g.Position
	}
	return out
}

// Two 8-GPU nodes, both full with a gang that ends at t=100. "pair" needs
// both nodes and runs 50 s: it starts at 100, and "next", which needs both
// too, at 150. "next" has no estimate and keeps both nodes, so "one", behind
// it, never starts; "huge" can never fit.
func TestForecastHandComputed(t *testing.T) {
	s := MakeSnapshot().Nodes(
		MakeNode("a").GPUs(8).UsedGPUs(8),
		MakeNode("b").GPUs(8).UsedGPUs(8),
	).Gangs(
		MakeGang("pair").Members(2, GPUs(8)).Arrival(1).Estimate(50),
		MakeGang("next").Members(2, GPUs(8)).Arrival(2),
		MakeGang("one").Members(1, GPUs(8)).Arrival(3),
		MakeGang("huge").Members(3, GPUs(8)).Arrival(4),
	).Obj()
	s.Releases = []Release{
		{Node: 0, Amount: Vector{Pods: 1, gpuDim: 8}, At: 100, Queue: "default"},
		{Node: 1, Amount: Vector{Pods: 1, gpuDim: 8}, At: 100, Queue: "default"},
	}
	f := forecastOf(t, s, Config{}, 0, ForecastOptions{Horizon: 3600})
	want := map[string]int64{"pair": 100, "next": 150, "one": -1, "huge": -1}
	if diff := cmp.Diff(want, starts(f)); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"pair": 1, "next": 2, "one": 3, "huge": 4}, positions(f)); diff != "" {
		t.Errorf("positions (-want +got):\n%s", diff)
	}
	// Cycles at 0, 100, 150; then nothing can change.
	if f.Cycles != 3 || f.Until != 3600 {
		t.Errorf("%d cycles until %d, want 3 until 3600", f.Cycles, f.Until)
	}
}

// A gang that fits now starts now: the forecast's first cycle is the real
// one.
func TestForecastFitsNow(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8)).Gangs(
		MakeGang("now").Members(1, GPUs(4)).Arrival(1).Estimate(10),
		MakeGang("later").Members(1, GPUs(8)).Arrival(2),
	).Obj()
	f := forecastOf(t, s, Config{}, 1000, ForecastOptions{})
	if diff := cmp.Diff(map[string]int64{"now": 1000, "later": 1010}, starts(f)); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
}

// Positions follow the core's order within each queue: partly bound gangs
// first, then priority, then arrival; with ShortestFirst, shorter estimates
// before later arrivals.
func TestForecastPositions(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(8)).Queues(MakeQueue("q1"), MakeQueue("q2")).Gangs(
		MakeGang("low-early").Queue("q1").Members(1, GPUs(1)).Arrival(1).Estimate(500),
		MakeGang("low-late").Queue("q1").Members(1, GPUs(1)).Arrival(5).Estimate(10),
		MakeGang("high").Queue("q1").Members(1, GPUs(1)).Arrival(9).Priority(10),
		MakeGang("partial").Queue("q1").Members(1, GPUs(1)).Bound(1).Min(2).Arrival(20),
		MakeGang("running-elastic").Queue("q1").Members(1, GPUs(1)).Bound(2).Min(2).Arrival(0),
		MakeGang("other").Queue("q2").Members(1, GPUs(1)).Arrival(30),
	).Obj()
	f := forecastOf(t, s, Config{}, 100, ForecastOptions{})
	want := map[string]int{"partial": 1, "high": 2, "low-early": 3, "low-late": 4, "other": 1}
	if diff := cmp.Diff(want, positions(f)); diff != "" {
		t.Errorf("positions (-want +got):\n%s", diff)
	}
	f = forecastOf(t, s, Config{ShortestFirst: true}, 100, ForecastOptions{})
	want = map[string]int{"partial": 1, "high": 2, "low-late": 3, "low-early": 4, "other": 1}
	if diff := cmp.Diff(want, positions(f)); diff != "" {
		t.Errorf("positions, shortest first (-want +got):\n%s", diff)
	}
	f = forecastOf(t, s, Config{Ordering: StrictFIFO}, 100, ForecastOptions{})
	want = map[string]int{"low-early": 1, "low-late": 2, "high": 3, "partial": 4, "other": 1}
	if diff := cmp.Diff(want, positions(f)); diff != "" {
		t.Errorf("positions, strict FIFO (-want +got):\n%s", diff)
	}
}

// The reserved gang's forecast start is its reservation's expected start
// (reserve_test.go's scenario at t=500: "big" is reserved both nodes from
// 1000; "short" backfills until 600).
func TestForecastAgreesWithReservation(t *testing.T) {
	cfg := Config{ReserveAfter: 60}
	_, diag := runAt(t, reservationSnapshot(), cfg, 500)
	var resv int64 = -1
	for _, st := range diag.Pending {
		if _, start, ok := st.Reservation(); ok && st.Gang == "big" {
			resv = start
		}
	}
	f := forecastOf(t, reservationSnapshot(), cfg, 500, ForecastOptions{})
	got := starts(f)
	if resv != 1000 || got["big"] != resv {
		t.Errorf("big: reservation start %d, forecast %d; want both 1000", resv, got["big"])
	}
	want := map[string]int64{"big": 1000, "short": 500, "long": -1, "unknown": -1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
}

// Members just past their estimate end one step after now; members whose
// end is unknown never end within the forecast; a start past the horizon is
// none.
func TestForecastOverdueUnknownHorizon(t *testing.T) {
	s := MakeSnapshot().Nodes(
		MakeNode("a").GPUs(8).UsedGPUs(8),
		MakeNode("b").GPUs(8).UsedGPUs(8),
		MakeNode("c").GPUs(8).UsedGPUs(8),
	).Gangs(
		MakeGang("on-a").Members(1, GPUs(8)).Arrival(1).Estimate(10),
		MakeGang("after-a").Members(1, GPUs(8)).Arrival(2),
		MakeGang("anywhere").Members(1, GPUs(8)).Arrival(3),
	).Obj()
	s.Releases = []Release{
		{Node: 0, Amount: Vector{Pods: 1, gpuDim: 8}, At: 990, Queue: "default"}, // overdue by 10 s at 1000
		{Node: 2, Amount: Vector{Pods: 1, gpuDim: 8}, At: 0},                     // unknown
	}
	f := forecastOf(t, s, Config{}, 1000, ForecastOptions{Step: 30, Horizon: 3600})
	// on-a ends at 1040, but cycles are a step apart: 1000, 1030, 1060.
	want := map[string]int64{"on-a": 1030, "after-a": 1060, "anywhere": -1}
	if diff := cmp.Diff(want, starts(f)); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
	// b frees at 5000: past a horizon of 3600 from 1000, within one of 4000.
	s.Releases = append(s.Releases, Release{Node: 1, Amount: Vector{Pods: 1, gpuDim: 8}, At: 5000, Queue: "default"})
	if got := starts(forecastOf(t, s, Config{}, 1000, ForecastOptions{Step: 30, Horizon: 3600}))["anywhere"]; got != -1 {
		t.Errorf("anywhere starts at %d, past the horizon", got)
	}
	if got := starts(forecastOf(t, s, Config{}, 1000, ForecastOptions{Step: 30, Horizon: 4000}))["anywhere"]; got != 5000 {
		t.Errorf("anywhere starts at %d, want 5000", got)
	}
	// One cycle only: the one at now.
	f = forecastOf(t, s, Config{}, 1000, ForecastOptions{Step: 30, MaxCycles: 1})
	if f.Cycles != 1 || starts(f)["on-a"] != -1 {
		t.Errorf("with one cycle: %d cycles, on-a at %d; want 1 and none", f.Cycles, starts(f)["on-a"])
	}
}

// A member that has run past its estimated end is expected to run as long
// again as it has overrun, at least a step: the longer it has overrun, the
// later the gang waiting for its node starts.
func TestForecastOverrun(t *testing.T) {
	for _, tc := range []struct{ end, start int64 }{
		{990, 1030},  // 10 s over: a step (30 s) after now
		{970, 1030},  // 30 s over: a step
		{400, 1600},  // 600 s over: 600 s more
		{1500, 1500}, // not over: its estimated end
	} {
		s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(8)).Gangs(
			MakeGang("next").Members(1, GPUs(8)).Arrival(1),
		).Obj()
		s.Releases = []Release{{Node: 0, Amount: Vector{Pods: 1, gpuDim: 8}, At: tc.end, Queue: "default"}}
		if got := starts(forecastOf(t, s, Config{}, 1000, ForecastOptions{Step: 30}))["next"]; got != tc.start {
			t.Errorf("estimated end %d, forecast at 1000: next starts at %d, want %d", tc.end, got, tc.start)
		}
	}
}

// Preemption is left out of the forecast: the high-priority gang waits for
// the running gang to end instead of evicting it; and the forecast neither
// modifies its snapshot nor varies between runs.
func TestForecastPureWithoutPreemption(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(8)).Gangs(
		MakeGang("urgent").Members(1, GPUs(8)).Arrival(5).Priority(100),
	).Obj()
	s.Releases = []Release{{Node: 0, Amount: Vector{Pods: 1, gpuDim: 8}, At: 400, Queue: "default"}}
	s.Running = []Running{{Gang: "low", Queue: "default", MinMember: 1, Members: []Placed{{Name: "low-0", Node: 0, Request: Vector{gpuDim: 8}}}}}
	before := cloneSnapshot(s)
	before.Releases = append([]Release(nil), s.Releases...)
	sched, err := New(Config{Preemption: true})
	if err != nil {
		t.Fatal(err)
	}
	f1 := sched.Forecast(s, 100, ForecastOptions{})
	f2 := sched.Forecast(s, 100, ForecastOptions{})
	if got := starts(f1)["urgent"]; got != 400 {
		t.Errorf("urgent starts at %d, want 400 (no preemption in the forecast)", got)
	}
	if !reflect.DeepEqual(f1, f2) {
		t.Errorf("two forecasts differ:\n%+v\n%+v", f1, f2)
	}
	if !reflect.DeepEqual(before, s) {
		t.Errorf("the forecast modified its snapshot")
	}
}

// BenchmarkForecast5000Nodes forecasts BenchmarkCycle5000Nodes's snapshot
// (5,000 nodes of 8 GPUs, 20,000 pending pods) with every gang given an
// estimate of a minute to a day and every used node a release within a day,
// as BenchmarkCycle5000NodesReservations: reservations after an hour, two
// at once, and the forecast's defaults (a week, at most
// DefaultForecastCycles cycles, a minute apart).
func BenchmarkForecast5000Nodes(b *testing.B) {
	benchForecast(b, Config{ReserveAfter: 3600, Reservations: 2}, ForecastOptions{Step: 60})
}

// BenchmarkForecast5000NodesDefaults is BenchmarkForecast5000Nodes with the
// scheduler's reservation defaults: a day and nine tenths of the backlog on
// what the running members free (a freeSteps in every forecast cycle),
// reserved up to two days ahead of the backlog's part, four at once, in
// line by arrival moved back by their work by at most a day.
func BenchmarkForecast5000NodesDefaults(b *testing.B) {
	benchForecast(b, Config{ReserveAfter: 86400, ReserveAfterBacklog: true, ReserveAhead: 2 * 86400, Reservations: 4, ShortestFirst: true, ReserveByWork: 86400}, ForecastOptions{Step: 60})
}

// BenchmarkForecast5000NodesReserveAhead is BenchmarkForecast5000Nodes with
// reservations made up to two days ahead (the scheduler's default).
func BenchmarkForecast5000NodesReserveAhead(b *testing.B) {
	benchForecast(b, Config{ReserveAfter: 3600, ReserveAhead: 2 * 86400, Reservations: 2}, ForecastOptions{Step: 60})
}

func benchForecast(b *testing.B, cfg Config, opts ForecastOptions) {
	s := estimatedSnapshot()
	sched, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var f Forecast
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f = sched.Forecast(s, 86400, opts)
	}
	b.StopTimer()
	started, reserved := 0, 0
	for _, g := range f.Gangs {
		if g.Starts {
			started++
		}
		if g.Reserves {
			reserved++
		}
	}
	b.ReportMetric(float64(f.Cycles), "cycles")
	b.ReportMetric(float64(len(f.Gangs)), "waiting-gangs")
	b.ReportMetric(float64(started), "forecast-starts")
	b.ReportMetric(float64(reserved), "forecast-reservations")
	b.ReportMetric(float64(f.Until-86400)/3600, "hours-covered")
}

// A preemptor whose victims are being evicted starts a step after now, in
// the room they free and its hold keeps for it, not when the victims'
// estimates would have ended; a victim without a release frees its room
// the same way, and each release is counted once.
func TestForecastTerminatingVictims(t *testing.T) {
	s := MakeSnapshot().Nodes(
		MakeNode("a").GPUs(8).UsedGPUs(4).UsedGPUs(4),
		MakeNode("b").GPUs(8).UsedGPUs(8),
	).Gangs(
		MakeGang("preemptor").Members(2, GPUs(8)).Arrival(5).Priority(100),
		MakeGang("small").Members(1, GPUs(4)).Arrival(6),
	).Obj()
	half, whole := Vector{Pods: 1, gpuDim: 4}, Vector{Pods: 1, gpuDim: 8}
	s.Releases = []Release{
		{Node: 0, Amount: half, At: 5000, Queue: "default"},
		{Node: 0, Amount: half, At: 6000, Queue: "default"},
	}
	s.Running = []Running{
		{Gang: "victim", Queue: "default", MinMember: 2, Members: []Placed{
			{Name: "v-0", Node: 0, Request: Vector{gpuDim: 4}, Terminating: true},
			{Name: "v-1", Node: 0, Request: Vector{gpuDim: 4}, Terminating: true},
		}},
		{Gang: "victim2", Queue: "default", MinMember: 1, Members: []Placed{
			{Name: "w-0", Node: 1, Request: Vector{gpuDim: 8}, Terminating: true}, // no release
		}},
	}
	s.Holds = []Hold{{Gang: "preemptor", Node: 0, Amount: whole}, {Gang: "preemptor", Node: 1, Amount: whole}}
	f := forecastOf(t, s, Config{Preemption: true}, 100, ForecastOptions{Step: 30})
	want := map[string]int64{"preemptor": 130, "small": -1}
	if diff := cmp.Diff(want, starts(f)); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
	// Not terminating: the preemptor waits for the releases, and b never
	// frees.
	for i := range s.Running {
		for j := range s.Running[i].Members {
			s.Running[i].Members[j].Terminating = false
		}
	}
	if got := starts(forecastOf(t, s, Config{}, 100, ForecastOptions{Step: 30}))["preemptor"]; got != -1 {
		t.Errorf("without evictions the preemptor starts at %d, want never (b has no release)", got)
	}
}

// TestForecastProperties on random snapshots: the gangs forecast to start
// at now are exactly those the real cycle places; every start lies within
// the horizon; positions number each queue's waiting gangs from 1 without
// gaps; the same inputs give the same forecast.
func TestForecastProperties(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s := randomSnapshot(seed, 60, 500, 8)
		r := rand.New(rand.NewPCG(seed, 3))
		for _, g := range s.Gangs {
			if r.IntN(4) > 0 {
				g.Estimate = 60 + r.Int64N(7200)
			}
		}
		for n := range s.Nodes {
			if u := s.Nodes[n].Used; !u.IsZero() && r.IntN(3) > 0 {
				s.Releases = append(s.Releases, Release{Node: n, Amount: u, At: 1000 + r.Int64N(7200), Queue: "alpha"})
			}
		}
		cfg := Config{ReserveAfter: 600, Reservations: 2, ShortestFirst: seed%2 == 0}
		const now, horizon = 1000, 4 * 3600
		_, diag := runAt(t, s, cfg, now)
		f := forecastOf(t, s, cfg, now, ForecastOptions{Step: 60, Horizon: horizon})
		if again := forecastOf(t, s, cfg, now, ForecastOptions{Step: 60, Horizon: horizon}); !reflect.DeepEqual(f, again) {
			t.Fatalf("seed %d: two forecasts differ", seed)
		}
		placed := map[string]bool{}
		for _, id := range diag.Scheduled {
			placed[id] = true
		}
		perQueue := map[string][]int{}
		later := 0
		for _, g := range f.Gangs {
			if g.Starts && g.Start > now {
				later++
			}
			if atNow := g.Starts && g.Start == now; atNow != placed[g.Gang] {
				t.Errorf("seed %d: %s starts at now %v in the forecast, placed by the cycle %v", seed, g.Gang, atNow, placed[g.Gang])
			}
			if g.Starts && (g.Start < now || g.Start > now+horizon) {
				t.Errorf("seed %d: %s starts at %d, outside [%d, %d]", seed, g.Gang, g.Start, now, now+horizon)
			}
			perQueue[g.Queue] = append(perQueue[g.Queue], g.Position)
		}
		if later == 0 {
			t.Errorf("seed %d: no gang starts after now: the forecast was not exercised", seed)
		}
		for q, ps := range perQueue {
			slices.Sort(ps)
			for i, p := range ps {
				if p != i+1 {
					t.Fatalf("seed %d: queue %s positions %v", seed, q, ps)
				}
			}
		}
	}
}

// When nodes are first reserved for a gang: node a is full until 1000, b is
// free. "big" (both nodes, arrived at 0, runs 500 s) becomes a reservation
// candidate once it has waited ReserveAfter (300 s): reserved at 300,
// started at 1000. "big2" (the same, arrived at 1) is second in line, and
// one reservation is held at a time: it is reserved for at the first cycle
// after big has started (the forecast's cycles are up to a sixteenth of
// their distance from now apart), and starts when big ends, 1500. Without
// ReserveAfter nothing is ever reserved; with a reservation already held at
// the forecast's time, it is reserved now.
func TestForecastReservedFrom(t *testing.T) {
	snap := func() *Snapshot {
		s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(8), MakeNode("b").GPUs(8)).Gangs(
			MakeGang("big").Members(2, GPUs(8)).Arrival(0).Estimate(500),
			MakeGang("big2").Members(2, GPUs(8)).Arrival(1).Estimate(500),
		).Obj()
		s.Releases = []Release{{Node: 0, Amount: Vector{Pods: 1, gpuDim: 8}, At: 1000, Queue: "default"}}
		return s
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		now  int64
		big  int64 // when big is reserved; -1: never
		// big2 is reserved in (1000, 1000 + (1000 - now)/16], or never.
		big2 bool
	}{
		{"candidate at 300", Config{ReserveAfter: 300, Reservations: 1}, 100, 300, true},
		{"reserved now", Config{ReserveAfter: 300, Reservations: 1}, 400, 400, true},
		{"no reservations", Config{}, 100, -1, false},
	} {
		f := forecastOf(t, snap(), tc.cfg, tc.now, ForecastOptions{})
		got := map[string]GangForecast{}
		for _, g := range f.Gangs {
			got[g.Gang] = g
		}
		if b := got["big"]; b.Reserves != (tc.big >= 0) || (b.Reserves && b.Reserved != tc.big) {
			t.Errorf("%s: big reserved %v at %d, want at %d", tc.name, b.Reserves, b.Reserved, tc.big)
		}
		b2 := got["big2"]
		if in := b2.Reserved > 1000 && b2.Reserved <= 1000+(1000-tc.now)/forecastPrecision; b2.Reserves != tc.big2 || (b2.Reserves && !in) {
			t.Errorf("%s: big2 reserved %v at %d, want %v, after big's start at 1000", tc.name, b2.Reserves, b2.Reserved, tc.big2)
		}
		if diff := cmp.Diff(map[string]int64{"big": 1000, "big2": 1500}, starts(f)); diff != "" {
			t.Errorf("%s: starts (-want +got):\n%s", tc.name, diff)
		}
	}
}
