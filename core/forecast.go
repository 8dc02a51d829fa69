package core

import (
	"math"
	"slices"
)

// The forecast: when will each waiting gang start? (as Slurm's squeue --start)
//
// Forecast runs the scheduler's own cycle (RunCycle) forward in virtual time
// from a snapshot, on a copy of what the cycles change: the nodes' and the
// queues' usage, the gangs' waiting members, the releases and the holds.
//
//   - The first cycle runs at now over the snapshot as given, so a gang that
//     the real cycle over the same snapshot places starts at now.
//   - Running members end at their release time (Snapshot.Releases): their
//     room goes back to their node and their queue. A member whose release
//     time has passed (it runs past its estimate) is expected to run as
//     long again as it has overrun, and at least one step more: run times
//     have long tails, and the longer a job has overrun, the longer it is
//     likely to go on (on a trace with noisy estimates this puts more
//     forecasts within a quarter of the wait than ending such members a
//     step after now: docs/evaluation.md). A member whose end is unknown
//     (Release.At 0, or no release at all) keeps its room for the whole
//     forecast.
//   - A gang the forecast starts runs for its own Estimate from the cycle
//     that placed it, and gives its room back then; a gang without an
//     estimate keeps its room for the whole forecast.
//   - Nothing arrives: the waiting gangs are those of the snapshot.
//   - Nothing more is preempted: the forecast's cycles run without
//     preemption, so a gang that would make room by evicting others is
//     forecast to start when room frees up without it (an upper bound).
//     Members already being evicted (Snapshot.Running, Terminating) end a
//     step after now; holds in force stay until their gang is placed, so
//     a preemptor gets the room its victims free.
//   - The pods that pod affinity, anti-affinity and spread count
//     (Snapshot.Pods) are those of the snapshot throughout.
//
// A cycle runs at now, then at the next time something changes: a release,
// or the Plan.Until of the latest cycle (a gang's wait reaching the
// reservation threshold, a reservation's start), but never sooner than Step
// after the previous one, nor sooner than a sixteenth of the time from now
// to the previous one: releases within that gap are handled together, and a
// start is forecast up to a step or a sixteenth of its distance late (a start
// forecast in 8 h, up to 30 min late). The gaps grow with the distance, so
// a week's forecast takes about 16 ln(week / 16 Step) + 16 cycles (120 with
// Step 60 s), whatever the number of releases. The forecast stops at
// now + Horizon, after MaxCycles cycles, once every waiting gang has
// started, or when nothing more can change.
//
// The work is bounded by MaxCycles cycles, each one RunCycle over a snapshot
// no bigger than the one given, plus a copy of the snapshot's nodes, queues,
// gangs and releases.

// ForecastOptions bound a forecast.
type ForecastOptions struct {
	// Horizon is how far past now the forecast looks, in seconds: a gang
	// that does not start by now + Horizon has no expected start. Values
	// below 1 mean DefaultForecastHorizon.
	Horizon int64
	// MaxCycles bounds the cycles the forecast runs; values below 1 mean
	// DefaultForecastCycles. A gang not started when they run out has no
	// expected start.
	MaxCycles int
	// Step is the least time, in seconds, between two cycles of the
	// forecast; values below 1 mean 1.
	Step int64
}

// forecastPrecision: a forecast's cycles are at least a sixteenth of their
// distance from now apart.
const forecastPrecision = 16

// Defaults of ForecastOptions, and the step the scheduler and the
// simulator forecast with: a minute.
const (
	DefaultForecastHorizon = 7 * 24 * 3600
	DefaultForecastCycles  = 200
	DefaultForecastStep    = 60
)

// GangForecast is what the forecast says of one gang waiting for its
// minimum.
type GangForecast struct {
	Gang  string
	Queue string
	// Position is the gang's place, from 1, among the waiting gangs of its
	// queue, in the order a cycle visits them (partly bound gangs first,
	// then by priority, then arrival; with Config.ShortestFirst, shortest
	// estimate before arrival; under StrictFIFO, arrival only). Gangs a
	// cycle cannot consider (invalid ones, say) are ranked all the same.
	Position int
	// Start is when the gang's minimum is expected to be placed, if
	// Starts; in the time base of now.
	Start  int64
	Starts bool
	// Reserved is when nodes are first expected to be reserved for the
	// gang (reserve.go), if Reserves: the first cycle of the forecast in
	// which it holds a reservation, now if it holds one already. A gang
	// that starts without ever holding one, because room frees up for it
	// before it is due for one (within ReserveAhead of its threshold), or because it is
	// not among the first Config.Reservations candidates until then, has
	// none.
	Reserved int64
	Reserves bool
}

// Forecast is the outcome of Scheduler.Forecast.
type Forecast struct {
	// Gangs are the snapshot's gangs waiting for their minimum, in the
	// snapshot's order.
	Gangs []GangForecast
	// Cycles is how many cycles the forecast ran.
	Cycles int
	// Until is the time the forecast reached: gangs without a start do not
	// start before it, as far as the forecast can tell.
	Until int64
}

// Forecast says, for every gang of snap waiting for its minimum, its place
// in its queue and when it is expected to start. It does not modify snap;
// the same snapshot, time and options always give the same forecast. Like
// RunCycle, it is safe to call from several goroutines.
func (s *Scheduler) Forecast(snap *Snapshot, now int64, opts ForecastOptions) Forecast {
	if opts.Horizon < 1 {
		opts.Horizon = DefaultForecastHorizon
	}
	if opts.MaxCycles < 1 {
		opts.MaxCycles = DefaultForecastCycles
	}
	opts.Step = max(opts.Step, 1)
	end := now + opts.Horizon
	if end < now {
		end = math.MaxInt64
	}
	f := newForecaster(s, snap, now, opts.Step)
	out := Forecast{Gangs: f.positions(s.cfg)}
	index := make(map[string]int, len(out.Gangs))
	for i := range out.Gangs {
		index[out.Gangs[i].Gang] = i
	}
	waiting := len(out.Gangs)
	var plan Plan
	var diag Diagnostics
	for t := now; ; {
		if t > now {
			f.release(t)
		}
		f.sched.RunCycleReusing(&f.snap, t, &plan, &diag)
		out.Cycles++
		out.Until = t
		for k := range diag.Pending {
			if st := &diag.Pending[k]; st.resvNodes > 0 {
				if i, ok := index[st.Gang]; ok && !out.Gangs[i].Reserves {
					out.Gangs[i].Reserved, out.Gangs[i].Reserves = t, true
				}
			}
		}
		f.bind(plan.Binds, t)
		for _, id := range diag.Scheduled {
			if i, ok := index[id]; ok && !out.Gangs[i].Starts {
				out.Gangs[i].Start, out.Gangs[i].Starts = t, true
				waiting--
			}
		}
		f.prune(diag.Scheduled)
		if waiting == 0 || out.Cycles == opts.MaxCycles {
			break
		}
		next := min(f.nextRelease(), plan.Until)
		// A later cycle over the same state places nothing more unless
		// room frees up or the time crosses a threshold (Plan.Until).
		gap := max(opts.Step, (t-now)/forecastPrecision)
		if next == math.MaxInt64 || t > end-gap {
			out.Until = end // nothing changes any more, or not within the horizon
			break
		}
		next = max(next, t+gap)
		if next > end {
			out.Until = end
			break
		}
		t = next
	}
	return out
}

// forecaster is the state a forecast moves forward: its own snapshot,
// sharing with the caller's only what cycles never change.
type forecaster struct {
	sched *Scheduler
	snap  Snapshot
	// releases not yet applied, by time; At > 0.
	releases []Release
	nodes    map[string]int
	queues   map[string]int
	gangs    map[string]*Gang
	// copied: the gangs whose Pending is the forecast's own.
	copied map[*Gang]bool
}

func newForecaster(s *Scheduler, snap *Snapshot, now, step int64) *forecaster {
	f := &forecaster{sched: s.forecastScheduler(), snap: *snap}
	f.snap.Nodes = slices.Clone(snap.Nodes)
	f.snap.Queues = slices.Clone(snap.Queues)
	f.snap.Holds = slices.Clone(snap.Holds)
	f.snap.Running = nil // the forecast does not preempt
	f.nodes = make(map[string]int, len(snap.Nodes))
	for i := range snap.Nodes {
		f.nodes[snap.Nodes[i].Name] = i
	}
	f.queues = make(map[string]int, len(snap.Queues))
	for i := range snap.Queues {
		if _, dup := f.queues[snap.Queues[i].Name]; !dup {
			f.queues[snap.Queues[i].Name] = i
		}
	}
	f.snap.Gangs = make([]*Gang, 0, len(snap.Gangs))
	f.gangs = make(map[string]*Gang, len(snap.Gangs))
	f.copied = map[*Gang]bool{}
	for _, g := range snap.Gangs {
		if g == nil {
			continue
		}
		cp := *g
		f.snap.Gangs = append(f.snap.Gangs, &cp)
		f.gangs[g.ID] = &cp
	}
	f.releases = expectedReleases(f.releases, snap, now, step)
	f.terminating(snap, now+step)
	f.sortReleases()
	f.snap.Releases = f.releases
	return f
}

// expectedReleases appends to dst the releases of snap as a cycle or a
// forecast at now counts on them, each at its expected end (expectedEnd).
func expectedReleases(dst []Release, snap *Snapshot, now, step int64) []Release {
	for _, r := range snap.Releases {
		if countedOn(&r, snap) {
			r.At = expectedEnd(r.At, now, step)
			dst = append(dst, r)
		}
	}
	return dst
}

// countedOn reports whether a cycle or a forecast counts on r: it has a
// known time and a node of snap.
func countedOn(r *Release, snap *Snapshot) bool {
	return r.At > 0 && r.Node >= 0 && r.Node < len(snap.Nodes)
}

// terminating makes the members being evicted (Snapshot.Running, Placed.
// Terminating) end by at, a step after now: their own release, the first
// of their node, amount and queue not yet claimed, comes due then, or one
// is added for a member that has none.
func (f *forecaster) terminating(snap *Snapshot, at int64) {
	var claimed map[int]bool
	for _, r := range snap.Running {
		for _, m := range r.Members {
			if !m.Terminating || m.Node < 0 || m.Node >= len(snap.Nodes) {
				continue
			}
			if claimed == nil {
				claimed = map[int]bool{}
			}
			amount := withPod(m.Request)
			i := 0
			for ; i < len(f.releases); i++ {
				rel := &f.releases[i]
				if rel.Node == m.Node && rel.Amount == amount && rel.Queue == r.Queue && !claimed[i] {
					break
				}
			}
			if i < len(f.releases) {
				f.releases[i].At = min(f.releases[i].At, at)
				claimed[i] = true
				continue
			}
			f.releases = append(f.releases, Release{Node: m.Node, Amount: amount, At: at, Queue: r.Queue})
			claimed[len(f.releases)-1] = true
		}
	}
}

// forecastScheduler is s, or a Scheduler of s's configuration without
// preemption.
func (s *Scheduler) forecastScheduler() *Scheduler {
	if !s.cfg.Preemption {
		return s
	}
	s.noPreemptOnce.Do(func() {
		cfg := s.cfg
		cfg.Preemption = false
		s.noPreempt = &Scheduler{cfg: cfg}
	})
	return s.noPreempt
}

func (f *forecaster) sortReleases() {
	slices.SortStableFunc(f.releases, func(a, b Release) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
}

// expectedEnd is when a member whose estimated end is at is expected to
// end, forecast at now: at, or, once at has passed, as long after now as
// it has overrun, at least step.
func expectedEnd(at, now, step int64) int64 {
	if at > now {
		return at
	}
	over := max(now-at, step)
	if over > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + over
}

// nextRelease is when the next release takes effect; math.MaxInt64 if none
// is left.
func (f *forecaster) nextRelease() int64 {
	if len(f.releases) == 0 {
		return math.MaxInt64
	}
	return f.releases[0].At // sorted by At, all after now
}

// release gives back the room of every release due by t.
func (f *forecaster) release(t int64) {
	k := 0
	for k < len(f.releases) && f.releases[k].At <= t {
		r := &f.releases[k]
		n := &f.snap.Nodes[r.Node]
		n.Used = n.Used.Sub(r.Amount)
		if q, ok := f.queues[r.Queue]; ok {
			f.snap.Queues[q].Allocated = f.snap.Queues[q].Allocated.Sub(r.Amount)
		}
		k++
	}
	if k > 0 {
		f.releases = slices.Delete(f.releases, 0, k)
		f.snap.Releases = f.releases
	}
}

// bind applies a cycle's binds at time t: the members take their room and
// leave their gang's waiting members; each gives its room back after its
// gang's estimate, if it has one.
func (f *forecaster) bind(binds []Bind, t int64) {
	if len(binds) == 0 {
		return
	}
	added := false
	for _, b := range binds {
		g, n := f.gangs[b.Gang], -1
		if i, ok := f.nodes[b.Node]; ok {
			n = i
		}
		if g == nil || n < 0 {
			continue
		}
		if !f.copied[g] {
			g.Pending = slices.Clone(g.Pending)
			f.copied[g] = true
		}
		at := slices.IndexFunc(g.Pending, func(m Member) bool { return m.Name == b.Member })
		if at < 0 {
			continue
		}
		amount := podRequest(&g.Pending[at])
		g.Pending = slices.Delete(g.Pending, at, at+1)
		g.Bound++
		f.snap.Nodes[n].Used = f.snap.Nodes[n].Used.Add(amount)
		if q, ok := f.queues[g.Queue]; ok {
			f.snap.Queues[q].Allocated = f.snap.Queues[q].Allocated.Add(amount)
		}
		if g.Estimate > 0 && t <= math.MaxInt64-g.Estimate {
			f.releases = append(f.releases, Release{Node: n, Amount: amount, At: t + g.Estimate, Queue: g.Queue})
			added = true
		}
	}
	if added {
		f.sortReleases()
	}
	f.snap.Releases = f.releases
}

// prune drops the gangs left without waiting members, and the holds of the
// gangs that were placed.
func (f *forecaster) prune(placed []string) {
	f.snap.Gangs = slices.DeleteFunc(f.snap.Gangs, func(g *Gang) bool { return len(g.Pending) == 0 })
	if len(placed) == 0 || len(f.snap.Holds) == 0 {
		return
	}
	done := make(map[string]bool, len(placed))
	for _, id := range placed {
		done[id] = true
	}
	f.snap.Holds = slices.DeleteFunc(f.snap.Holds, func(h Hold) bool { return done[h.Gang] })
}

// positions lists the gangs waiting for their minimum, in snapshot order,
// with their place in their queue in the order cfg's cycles visit them.
func (f *forecaster) positions(cfg Config) []GangForecast {
	byQueue := map[string][]*Gang{}
	var names []string
	var out []GangForecast
	for _, g := range f.snap.Gangs {
		if g.Bound >= g.MinMember && g.MinMember > 0 {
			continue // only elastic members wait
		}
		if byQueue[g.Queue] == nil {
			names = append(names, g.Queue)
		}
		byQueue[g.Queue] = append(byQueue[g.Queue], g)
		out = append(out, GangForecast{Gang: g.ID, Queue: g.Queue})
	}
	strict := map[string]bool{}
	for i := range f.snap.Queues {
		strict[f.snap.Queues[i].Name] = f.snap.Queues[i].StrictOrder
	}
	place := make(map[string]int, len(out))
	var sorter gangSorter
	for _, name := range names {
		gangs := byQueue[name]
		o := byPriority
		switch {
		case cfg.Ordering == StrictFIFO:
			o = byArrival
		case cfg.ShortestFirst && !strict[name]:
			o = byEstimate
		}
		sorter.sort(gangs, o)
		for i, g := range gangs {
			place[g.ID] = i + 1
		}
	}
	for i := range out {
		out[i].Position = place[out[i].Gang]
	}
	return out
}
