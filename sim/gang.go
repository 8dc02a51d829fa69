package sim

// This file runs the gang policies ("phalanx", "fifo-gang", "volcano")
// through the core. The simulator keeps one core.Snapshot for the whole run
// and updates it incrementally: the state writes node Used and queue
// Allocated as members bind and free, and this file keeps Snapshot.Gangs, the
// gangs that still have pending members, in arrival order (Submit, then ID,
// the core's own tie rule, so the core never has to sort), each sealed
// (core.Gang.Seal) after every change to its members or bound. Each cycle hands
// the snapshot to RunCycle, checks every bind of the plan against the
// snapshot (known gang, member and node, admitted by the node's filters,
// fits its free resources) and applies it through the state, then checks and
// applies every eviction (known gang, member and node, the member placed on
// that node and not already terminating, a known pending preemptor); a bad
// plan aborts the run with an error. A gang leaves the list when its last
// member is bound or when its job completes with elastic members still
// pending, and comes back, at its place in arrival order, when a member of
// it waits again (an evicted member whose grace period ended, a failed
// member's replacement). The diagnostics of the last cycle name why each
// never-started job waits.
//
// With preemption on, every cycle also fills Snapshot.Running from the jobs
// with members on nodes. A victim job left below MinMember by the plan's
// evictions restarts from scratch: its other members terminate too and,
// once their grace period ends, the whole gang waits again with its original
// arrival. Holds: the plan's holds for a preemptor replace the ones it had,
// and last until the gang gets a bind or grace period + holdMargin has
// passed; a member that fails while its gang runs gets a hold of what it
// freed on its node, for the gang, until its replacement binds or the hold
// period (Options.HoldFailed) ends. Both kinds go into Snapshot.Holds.
//
// A cycle is skipped when it would plan nothing, as the core's Plan.Until
// lets the simulator know: the last cycle planned nothing, nothing but
// wake-ups happened since, the snapshot is the same (its releases, running
// gangs and holds are compared, as the time may move them), and the time
// is before that plan's Until. The skipped cycle would have planned nothing
// again; its diagnostics are computed only if it was the run's last, for
// the reasons of the jobs that never started. Runs that record events do
// not skip: their waiting messages say when reservations start, which moves
// with the time.

import (
	"fmt"
	"slices"
	"sort"

	"github.com/phalanx-sched/phalanx/core"
)

// holdMargin is how much longer than the grace period a preemptor's holds
// last, for its victims to terminate and for it to be placed.
const holdMargin = 60

// cycler is the part of *core.Scheduler the gang policies use; tests
// substitute a fake.
type cycler interface {
	RunCycle(snap *core.Snapshot, now int64) (core.Plan, core.Diagnostics)
}

// reusingCycler is a cycler that can reuse the memory of the plan and the
// diagnostics of an earlier cycle, as *core.Scheduler does.
type reusingCycler interface {
	RunCycleReusing(snap *core.Snapshot, now int64, plan *core.Plan, diag *core.Diagnostics)
}

// gangEntry is one pending gang and its job.
type gangEntry struct {
	gang core.Gang
	job  *job
	// ix[k] is the job member of gang.Pending[k]; -1 marks it bound in the
	// plan being applied.
	ix     []int32
	cursor int
	// touched is set while the plan being applied binds members of the gang.
	touched bool
}

// preemptHolds are the holds a plan made for one preemptor.
type preemptHolds struct {
	job   *job
	holds []core.Hold
	until int64
}

// failHold keeps what a failed member freed for its replacement.
type failHold struct {
	job    *job
	member int
	run    uint32 // the job's run when the member failed
	hold   core.Hold
	until  int64
}

// gangOptions are what distinguishes the gang policies in the simulator.
type gangOptions struct {
	reserve bool // the core reserves: keep Snapshot.Releases
	preempt bool // the core preempts: keep Snapshot.Running, apply evictions
	// ignoreTopology drops the jobs' required topology levels and the
	// queues' strict order (a policy that does not know them).
	ignoreTopology bool
	// holdFailed is how long a failed member's resources are held for its
	// replacement, in seconds; 0: not at all.
	holdFailed int64
	// correctEstimates corrects each queue's estimates by its record
	// (Options.NoEstimateCorrection).
	correctEstimates bool
	// wakeAfter lists waits after which the core treats a gang differently
	// (it reserves, it reclaims): a gang still waiting after its first
	// cycle gets a cycle at each, even if nothing else happens then.
	wakeAfter []int64
	// forecastEvery is Options.ForecastEvery; 0: no forecasts.
	forecastEvery int64
	// noSkip runs every cycle; checkSkips runs the cycles it would skip
	// too, and fails the run if one plans anything; skips, if not nil,
	// counts the cycles skipped (tests).
	noSkip, checkSkips bool
	skips              *int
}

type gangPolicy struct {
	s       *state
	sched   cycler
	opt     gangOptions
	entries []*gangEntry
	byID    map[string]*gangEntry
	dirty   bool
	plan    core.Plan        // of the last cycle run
	last    core.Diagnostics // of the last cycle run
	reasons map[string]string
	touched []*gangEntry
	fresh   []*gangEntry      // arrived since the last cycle (wakeFresh)
	said    map[string]string // last reason recorded per gang
	// estimatesGen is the state's estimates.gen the gangs' estimates
	// were last refreshed at.
	estimatesGen uint64

	preemptHolds []preemptHolds // in the order they were made
	failHolds    []failHold     // in the order the members failed
	placed       []core.Placed  // scratch for Snapshot.Running
	victims      []*job         // scratch: the jobs a plan evicts from

	// idle: the last cycle run planned nothing, and until is its plan's
	// Until; skipped: a cycle was skipped since.
	idle, skipped bool
	until         int64
	// nextForecast is the earliest time of the next forecast; fcReleases
	// the releases it reads, reused.
	nextForecast int64
	fcReleases   []core.Release
	// The snapshot's releases, running gangs and holds are computed into
	// these and swapped in, so that the last cycle's stay to compare with.
	spareReleases []core.Release
	spareRunning  []core.Running
	sparePlaced   []core.Placed
	spareHolds    []core.Hold
}

func newGangPolicy(s *state, sched cycler, opt gangOptions) *gangPolicy {
	if opt.ignoreTopology {
		for i := range s.snap.Queues {
			s.snap.Queues[i].StrictOrder = false
		}
	}
	if _, ok := sched.(forecaster); ok {
		s.forecastEvery = opt.forecastEvery
	}
	return &gangPolicy{s: s, sched: sched, opt: opt, byID: make(map[string]*gangEntry)}
}

func (g *gangPolicy) arrive(jobs []*job) {
	batch := append([]*job(nil), jobs...)
	sort.SliceStable(batch, func(a, b int) bool { return batch[a].spec.ID < batch[b].spec.ID })
	for _, j := range batch {
		if len(j.members) == 0 {
			continue
		}
		e := g.newEntry(j, len(j.members))
		for m := range j.members {
			mem := &j.members[m]
			e.gang.Pending = append(e.gang.Pending, core.Member{Name: mem.name, Request: mem.req, Constraints: mem.cons})
			e.ix = append(e.ix, int32(m))
		}
		e.gang.Seal()
		g.entries = append(g.entries, e)
		g.s.snap.Gangs = append(g.s.snap.Gangs, &e.gang)
		if len(g.opt.wakeAfter) > 0 {
			g.fresh = append(g.fresh, e)
		}
	}
}

// wakeFresh sets the wake-ups of the gangs that arrived in this cycle and
// still wait.
func (g *gangPolicy) wakeFresh() {
	for _, e := range g.fresh {
		if e.gang.Bound >= e.gang.MinMember {
			continue
		}
		for _, d := range g.opt.wakeAfter {
			if at := e.gang.Arrival + d; at > g.s.now {
				g.s.push(timer{at: at, kind: timerWake, job: int32(e.job.idx)})
			}
		}
	}
	clear(g.fresh)
	g.fresh = g.fresh[:0]
}

// newEntry makes the entry of j with room for n pending members and
// registers it by ID; the caller puts it in the list.
func (g *gangPolicy) newEntry(j *job, n int) *gangEntry {
	e := &gangEntry{job: j, ix: make([]int32, 0, n)}
	e.gang = core.Gang{
		ID:        j.spec.ID,
		Queue:     j.spec.Queue,
		Priority:  j.spec.Priority,
		MinMember: j.spec.MinMember,
		Arrival:   j.spec.Submit,
		Estimate:  g.s.expected(j),
		// every estimate the simulator gives is one the trace declares
		EstimateDeclared: j.estimate > 0,
		Bound:            j.placed,
		Pending:          make([]core.Member, 0, n),
	}
	if !g.opt.ignoreTopology {
		e.gang.RequiredLevel = j.spec.RequiredTopology
	}
	g.byID[e.gang.ID] = e
	return e
}

func (g *gangPolicy) completed(j *job) {
	if e, ok := g.byID[j.spec.ID]; ok {
		e.gang.Pending, e.ix = nil, nil
		g.dirty = true
	}
}

// requeue puts member m of j back among the pending members of its gang, in
// member order, bringing the gang back into the list if it had left.
func (g *gangPolicy) requeue(j *job, m int) {
	g.compact() // an entry emptied this instant must not be found again
	e, ok := g.byID[j.spec.ID]
	if !ok {
		e = g.newEntry(j, 1)
		g.insert(e)
	}
	e.gang.Bound = j.placed
	k := sort.Search(len(e.ix), func(i int) bool { return e.ix[i] > int32(m) })
	mem := &j.members[m]
	e.gang.Pending = append(e.gang.Pending, core.Member{})
	copy(e.gang.Pending[k+1:], e.gang.Pending[k:])
	e.gang.Pending[k] = core.Member{Name: mem.name, Request: mem.req, Constraints: mem.cons}
	e.ix = append(e.ix, 0)
	copy(e.ix[k+1:], e.ix[k:])
	e.ix[k] = int32(m)
	e.gang.Seal()
}

// insert puts e into the list at its place in arrival order.
func (g *gangPolicy) insert(e *gangEntry) {
	k := sort.Search(len(g.entries), func(i int) bool {
		o := &g.entries[i].gang
		if o.Arrival != e.gang.Arrival {
			return o.Arrival > e.gang.Arrival
		}
		return o.ID > e.gang.ID
	})
	g.entries = append(g.entries, nil)
	copy(g.entries[k+1:], g.entries[k:])
	g.entries[k] = e
	gangs := g.s.snap.Gangs
	gangs = append(gangs, nil)
	copy(gangs[k+1:], gangs[k:])
	gangs[k] = &e.gang
	g.s.snap.Gangs = gangs
}

// failed holds what member m of j freed on node for its replacement.
func (g *gangPolicy) failed(j *job, m int, node int32, amount core.Vector) {
	if e, ok := g.byID[j.spec.ID]; ok {
		e.gang.Bound = j.placed
		e.gang.Seal()
	}
	if g.opt.holdFailed <= 0 || j.start < 0 {
		return
	}
	until := g.s.now + g.opt.holdFailed
	g.failHolds = append(g.failHolds, failHold{job: j, member: m, run: j.runs, until: until,
		hold: core.Hold{Gang: j.spec.ID, Node: int(node), Amount: amount}})
	g.s.push(timer{at: until, kind: timerWake, job: int32(j.idx)})
}

// compact drops the gangs with no pending member, keeping the order.
func (g *gangPolicy) compact() {
	if !g.dirty {
		return
	}
	g.dirty = false
	k := 0
	for _, e := range g.entries {
		if len(e.gang.Pending) == 0 {
			delete(g.byID, e.gang.ID)
			continue
		}
		g.entries[k] = e
		g.s.snap.Gangs[k] = &e.gang
		k++
	}
	clear(g.entries[k:])
	clear(g.s.snap.Gangs[k:])
	g.entries = g.entries[:k]
	g.s.snap.Gangs = g.s.snap.Gangs[:k]
}

func (g *gangPolicy) cycle() error {
	s := g.s
	same := g.idle && !s.changed && s.now < g.until && !s.record && !g.opt.noSkip
	s.changed = false
	g.compact()
	same = g.refreshHolds() && same
	if len(g.entries) == 0 {
		g.idle = false
		g.wakeFresh()
		return nil
	}
	if s.estimates.gen != g.estimatesGen {
		// A queue's correction changed with a completion (so s.changed
		// is set and the cycle runs).
		g.estimatesGen = s.estimates.gen
		for _, e := range g.entries {
			if e != nil {
				e.gang.Estimate = s.expected(e.job)
			}
		}
	}
	if g.opt.reserve {
		rel := s.releases(g.spareReleases[:0])
		same = same && slices.Equal(rel, s.snap.Releases)
		g.spareReleases, s.snap.Releases = s.snap.Releases, rel
	}
	if g.opt.preempt {
		run, placed := s.runningGangs(g.spareRunning, g.sparePlaced)
		same = same && sameRunning(run, s.snap.Running)
		g.spareRunning, g.sparePlaced = s.snap.Running, g.placed
		s.snap.Running, g.placed = run, placed
	}
	g.forecast()
	if same {
		// Nothing changed but the time, and the last plan, empty, holds
		// until g.until.
		g.skipped = true
		if g.opt.skips != nil {
			*g.opt.skips++
		}
		if g.opt.checkSkips {
			if plan, _ := g.sched.RunCycle(&s.snap, s.now); !emptyPlan(plan) {
				return fmt.Errorf("sim: at %d s a skipped cycle plans %d bind(s), %d eviction(s), %d hold(s)",
					s.now, len(plan.Binds), len(plan.Evictions), len(plan.Holds))
			}
		}
		g.wakeFresh()
		return nil
	}
	// The plan and the diagnostics of the cycle before are no longer
	// read: their memory is reused.
	if r, ok := g.sched.(reusingCycler); ok {
		r.RunCycleReusing(&s.snap, s.now, &g.plan, &g.last)
	} else {
		g.plan, g.last = g.sched.RunCycle(&s.snap, s.now)
	}
	plan, diag := g.plan, g.last
	g.idle, g.until, g.skipped = emptyPlan(plan), plan.Until, false
	g.recordReasons(diag)
	g.noteReservations(diag)
	var e *gangEntry
	for _, b := range plan.Binds {
		if e == nil || e.gang.ID != b.Gang {
			var ok bool
			if e, ok = g.byID[b.Gang]; !ok {
				return fmt.Errorf("sim: at %d s the plan binds unknown gang %q", s.now, b.Gang)
			}
			if !e.touched {
				e.touched = true
				g.touched = append(g.touched, e)
			}
		}
		if err := g.apply(e, b); err != nil {
			return err
		}
	}
	for _, e := range g.touched {
		k := 0
		for i, x := range e.ix {
			if x >= 0 {
				e.gang.Pending[k], e.ix[k] = e.gang.Pending[i], x
				k++
			}
		}
		clear(e.gang.Pending[k:])
		e.gang.Bound = e.job.placed
		e.gang.Pending, e.ix = e.gang.Pending[:k], e.ix[:k]
		e.gang.Seal()
		e.cursor, e.touched = 0, false
		if k == 0 {
			g.dirty = true
		}
		g.dropPreemptHolds(e.job)
	}
	clear(g.touched)
	g.touched = g.touched[:0]
	if err := g.evict(plan.Evictions); err != nil {
		return err
	}
	g.wakeFresh()
	return g.keepHolds(plan.Holds)
}

// forecaster is the part of *core.Scheduler that forecasts.
type forecaster interface {
	Forecast(snap *core.Snapshot, now int64, opts core.ForecastOptions) core.Forecast
}

// forecast, when one is due, forecasts the start of every waiting gang
// over the snapshot the cycle is about to read, as the scheduler does, and
// records it for the jobs that wait for their first start and have no
// forecast yet.
func (g *gangPolicy) forecast() {
	f, ok := g.sched.(forecaster)
	if !ok || g.s.forecastEvery <= 0 || g.s.now < g.nextForecast {
		return
	}
	g.nextForecast = g.s.now + g.s.forecastEvery
	snap := g.s.snap
	if !g.opt.reserve { // the cycle has not filled them
		g.fcReleases = g.s.releases(g.fcReleases[:0])
		snap.Releases = g.fcReleases
	}
	out := f.Forecast(&snap, g.s.now, core.ForecastOptions{Step: core.DefaultForecastStep})
	for i := range out.Gangs {
		gf := &out.Gangs[i]
		e := g.byID[gf.Gang]
		if e == nil || e.job.firstStart >= 0 || e.job.fcAt >= 0 {
			continue
		}
		e.job.fcAt, e.job.fcStart, e.job.fcReserved = g.s.now, -1, -1
		if gf.Starts {
			e.job.fcStart = gf.Start
		}
		if gf.Reserves {
			e.job.fcReserved = gf.Reserved
		}
	}
}

// finish runs the last cycle if it was skipped, for its diagnostics: the
// reasons of the jobs that never started.
func (g *gangPolicy) finish() error {
	if !g.skipped {
		return nil
	}
	g.skipped = false
	plan, diag := g.sched.RunCycle(&g.s.snap, g.s.now)
	if !emptyPlan(plan) {
		return fmt.Errorf("sim: at %d s the last cycle, skipped, plans %d bind(s), %d eviction(s), %d hold(s)",
			g.s.now, len(plan.Binds), len(plan.Evictions), len(plan.Holds))
	}
	g.last = diag
	return nil
}

func emptyPlan(p core.Plan) bool {
	return len(p.Binds) == 0 && len(p.Evictions) == 0 && len(p.Holds) == 0
}

// sameRunning reports whether a and b list the same running gangs.
func sameRunning(a, b []core.Running) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Gang != y.Gang || x.Queue != y.Queue || x.Priority != y.Priority || x.MinMember != y.MinMember ||
			x.Arrival != y.Arrival || !slices.Equal(x.Members, y.Members) {
			return false
		}
	}
	return true
}

// evict checks the plan's evictions and carries them out; victims left
// below MinMember restart.
func (g *gangPolicy) evict(evictions []core.Eviction) error {
	if len(evictions) == 0 {
		return nil
	}
	s := g.s
	if !g.opt.preempt {
		return fmt.Errorf("sim: at %d s the plan evicts %s of gang %q, but preemption is off", s.now, evictions[0].Member, evictions[0].Gang)
	}
	g.victims = g.victims[:0]
	var victim *job
	for _, ev := range evictions {
		if victim == nil || victim.spec.ID != ev.Gang {
			victim = nil
			for _, ji := range s.resident {
				if j := &s.jobs[ji]; j.spec.ID == ev.Gang {
					victim = j
					break
				}
			}
			if victim == nil {
				return fmt.Errorf("sim: at %d s the plan evicts %q of gang %q, which has no member on a node", s.now, ev.Member, ev.Gang)
			}
		}
		n, ok := s.nodeIdx[ev.Node]
		if !ok {
			return fmt.Errorf("sim: at %d s the plan evicts %q from unknown node %q", s.now, ev.Member, ev.Node)
		}
		m := -1
		for i := range victim.members {
			if victim.members[i].name == ev.Member {
				m = i
				break
			}
		}
		if m < 0 {
			return fmt.Errorf("sim: at %d s the plan evicts %q, which is not a member of gang %q", s.now, ev.Member, ev.Gang)
		}
		mem := &victim.members[m]
		switch {
		case mem.state == memberTerminating:
			return fmt.Errorf("sim: at %d s the plan evicts %q, which is already terminating", s.now, ev.Member)
		case mem.state != memberPlaced || mem.node != n:
			return fmt.Errorf("sim: at %d s the plan evicts %q from node %q, where it does not run", s.now, ev.Member, ev.Node)
		}
		if _, ok := g.byID[ev.Preemptor]; !ok {
			return fmt.Errorf("sim: at %d s the plan evicts %q for gang %q, which has no pending member", s.now, ev.Member, ev.Preemptor)
		}
		verb := "preempted"
		if ev.Reclaim {
			verb = "reclaimed"
		}
		s.evict(victim, m, verb+" by "+ev.Preemptor)
		s.evictedMembers++
		if !slices.Contains(g.victims, victim) {
			g.victims = append(g.victims, victim)
		}
	}
	s.preemptedGangs += len(g.victims)
	for _, j := range g.victims {
		j.preemptions++
		if j.start >= 0 && j.placed < j.spec.MinMember {
			s.restart(j)
		}
		if e, ok := g.byID[j.spec.ID]; ok {
			e.gang.Bound = j.placed
			e.gang.Seal()
		}
	}
	clear(g.victims)
	return nil
}

// keepHolds checks the plan's holds and keeps them, each gang's replacing
// the ones it had.
func (g *gangPolicy) keepHolds(holds []core.Hold) error {
	s := g.s
	for i := 0; i < len(holds); {
		gang := holds[i].Gang
		e, ok := g.byID[gang]
		if !ok {
			return fmt.Errorf("sim: at %d s the plan holds resources for gang %q, which has no pending member", s.now, gang)
		}
		k := i
		for ; k < len(holds) && holds[k].Gang == gang; k++ {
			if holds[k].Node < 0 || holds[k].Node >= len(s.snap.Nodes) {
				return fmt.Errorf("sim: at %d s the plan holds resources for gang %q on node %d, which does not exist", s.now, gang, holds[k].Node)
			}
		}
		g.dropPreemptHolds(e.job)
		until := s.now + s.grace + holdMargin
		g.preemptHolds = append(g.preemptHolds, preemptHolds{job: e.job, holds: append([]core.Hold(nil), holds[i:k]...), until: until})
		s.push(timer{at: until, kind: timerWake, job: int32(e.job.idx)})
		i = k
	}
	return nil
}

// dropPreemptHolds forgets the holds made for j as a preemptor.
func (g *gangPolicy) dropPreemptHolds(j *job) {
	k := 0
	for _, h := range g.preemptHolds {
		if h.job != j {
			g.preemptHolds[k] = h
			k++
		}
	}
	clear(g.preemptHolds[k:])
	g.preemptHolds = g.preemptHolds[:k]
}

// refreshHolds drops the holds that ended and fills Snapshot.Holds with the
// others: a preemptor's until they expire or its job is done; a failed
// member's until they expire, the replacement is placed, or the job is done
// or restarted. It reports whether the holds are those of the last
// snapshot.
func (g *gangPolicy) refreshHolds() bool {
	s := g.s
	holds := g.spareHolds[:0]
	k := 0
	for _, h := range g.preemptHolds {
		if h.until > s.now && !h.job.done {
			g.preemptHolds[k] = h
			k++
			holds = append(holds, h.holds...)
		}
	}
	clear(g.preemptHolds[k:])
	g.preemptHolds = g.preemptHolds[:k]
	k = 0
	for _, h := range g.failHolds {
		st := h.job.members[h.member].state
		if h.until > s.now && !h.job.done && h.job.runs == h.run && h.job.start >= 0 && (st == memberFailed || st == memberPending) {
			g.failHolds[k] = h
			k++
			holds = append(holds, h.hold)
		}
	}
	clear(g.failHolds[k:])
	g.failHolds = g.failHolds[:k]
	same := slices.Equal(holds, s.snap.Holds)
	g.spareHolds, s.snap.Holds = s.snap.Holds, holds
	return same
}

// recordReasons adds a "waiting" event each time a gang's reason to wait
// changes, when the run is recorded.
func (g *gangPolicy) recordReasons(diag core.Diagnostics) {
	if !g.s.record {
		return
	}
	if g.said == nil {
		g.said = make(map[string]string)
	}
	for _, st := range diag.Pending {
		msg := st.Message()
		if g.said[st.Gang] == msg {
			continue
		}
		g.said[st.Gang] = msg
		g.s.events = append(g.s.events, PodEvent{Time: g.s.now, Job: st.Gang, Kind: "waiting", Reason: msg})
	}
}

// noteReservations records, for each job the cycle reserved nodes for, the
// first time it did.
func (g *gangPolicy) noteReservations(diag core.Diagnostics) {
	if !g.opt.reserve {
		return
	}
	for k := range diag.Pending {
		if _, _, ok := diag.Pending[k].Reservation(); !ok {
			continue
		}
		if e := g.byID[diag.Pending[k].Gang]; e != nil && e.job.reserved < 0 {
			e.job.reserved = g.s.now
		}
	}
}

// apply checks one bind against the snapshot and carries it out.
func (g *gangPolicy) apply(e *gangEntry, b core.Bind) error {
	s := g.s
	n, ok := s.nodeIdx[b.Node]
	if !ok {
		return fmt.Errorf("sim: at %d s the plan binds %s to unknown node %q", s.now, b.Member, b.Node)
	}
	// Binds usually come in pending order: search from where the last one
	// was found, wrapping around.
	k := -1
	for i := range e.gang.Pending {
		at := (e.cursor + i) % len(e.gang.Pending)
		if e.ix[at] >= 0 && e.gang.Pending[at].Name == b.Member {
			k = at
			break
		}
	}
	if k < 0 {
		return fmt.Errorf("sim: at %d s the plan binds %q of gang %q, which is not pending", s.now, b.Member, b.Gang)
	}
	e.cursor = k + 1
	m := int(e.ix[k])
	e.ix[k] = -1
	mem := &e.job.members[m]
	node := &s.snap.Nodes[n]
	if !core.Admits(node, mem.cons) {
		return fmt.Errorf("sim: at %d s the plan binds %q to node %q, which its constraints exclude", s.now, b.Member, b.Node)
	}
	if !fitsNode(node, mem.req) {
		return fmt.Errorf("sim: at %d s the plan binds %q to node %q, which has only %s free",
			s.now, b.Member, b.Node, s.names.Format(node.Allocatable.Sub(node.Used)))
	}
	s.bind(e.job, m, n)
	return nil
}

func (g *gangPolicy) reason(j *job) string {
	if len(j.members) == 0 {
		return "job has no members"
	}
	if g.reasons == nil {
		g.reasons = make(map[string]string, len(g.last.Pending))
		for _, st := range g.last.Pending {
			msg := st.Message()
			if msg == "" {
				msg = string(st.Reason)
			}
			g.reasons[st.Gang] = msg
		}
	}
	if msg, ok := g.reasons[j.spec.ID]; ok {
		return msg
	}
	return "no diagnostic from the scheduler"
}

// fitsNode reports whether req plus one pod fits the free resources of n.
func fitsNode(n *core.Node, req core.Vector) bool {
	req[core.Pods]++
	return req.Fits(n.Allocatable.Sub(n.Used))
}
