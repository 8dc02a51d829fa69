package core

import (
	"container/heap"
	"fmt"
	"math"
	"strings"
	"sync"
)

// One cycle, in plain words:
//
//  1. Index the nodes by free accelerators (index.go) and give every queue
//     its deserved share (fairshare.go). Then, with Config.ReserveAfter,
//     reserve nodes for the gangs that have waited too long (reserve.go).
//  2. Visit gangs in policy order: under FairShare, first the gangs that
//     hold some members but not their minimum; then, with
//     Config.ReserveAfter, in a cycle that holds no reservation, the gangs
//     that ask a whole node's accelerators or more (wholenodes.go; one that
//     does not fit waits for its queue's turn); then pop the queue with the
//     lowest share and take its next gang by priority then arrival (or
//     estimate then arrival, with Config.ShortestFirst). Under StrictFIFO,
//     take gangs by arrival across the cluster and stop at the first that
//     does not fit.
//  3. Place each gang's minimum in one transaction (place.go): every member
//     needed to reach MinMember gets a node, or the transaction is rolled back
//     and nothing is held for the gang. With a topology, the minimum tries
//     the smallest domain first, one transaction per domain (topology.go). A
//     queue whose capability the gang would exceed gets nothing.
//  4. When every gang has had its turn, place the elastic members (beyond
//     MinMember) of satisfied gangs one by one, in the same order, so that no
//     gang's extras take room another gang's minimum needed.
//  5. With Config.Preemption, look for victims among running gangs for each
//     gang whose minimum found no room (preempt.go): evictions and holds go
//     into the plan; nothing is bound for the preemptor until its victims are
//     gone.
//
// Holds (hold.go) are taken out of the free index before step 1 and opened
// only for the gang that holds them.
// Resources only ever get scarcer within steps 2 to 4 (evictions are
// planned, not applied; a hold opened for its gang is a view keyed apart,
// and the memos below are forgotten when a placed gang frees what it left
// of its holds), so
// a member shape that found no node stays unplaceable for the rest of them;
// the cycle remembers such shapes and fails them at once. Step 5 gives room
// back in trials and forgets them before each.
//
// The time enters a cycle only in a few comparisons (a gang's wait against
// ReserveAfter or ReclaimAfter, a backfill's estimated end against a
// reservation's start, the run time an eviction would lose, which ranks
// victims); each records when it would come out otherwise, and the earliest
// of these is Plan.Until: over the same snapshot, every earlier time gives
// the same plan.

// RunCycle decides one scheduling cycle over snap at time now and returns
// the plan and why every gang left pending waits. It does not modify snap.
// The same snapshot and time always give the same plan, bit for bit.
func (s *Scheduler) RunCycle(snap *Snapshot, now int64) (Plan, Diagnostics) {
	var plan Plan
	var diag Diagnostics
	s.RunCycleReusing(snap, now, &plan, &diag)
	return plan, diag
}

// RunCycleReusing is RunCycle writing the plan and the diagnostics into
// *plan and *diag, whose slices, those of an earlier cycle that the caller
// no longer reads, it reuses: a caller that runs cycle after cycle saves
// their memory.
func (s *Scheduler) RunCycleReusing(snap *Snapshot, now int64, plan *Plan, diag *Diagnostics) {
	c := newCycle(s, snap, plan, diag)
	defer c.mem.release(&s.memory)
	c.now, c.until = now, math.MaxInt64
	c.applyHolds()
	switch s.cfg.Ordering {
	case StrictFIFO:
		c.runStrictFIFO()
	default:
		c.runFairShare()
	}
	c.placeElastic()
	c.preempt()
	c.plan.Until = c.until
	*plan, *diag = c.plan, c.diag
}

// changesAt records that a comparison the cycle made with its time comes
// out otherwise from time t on (Plan.Until).
func (c *cycle) changesAt(t int64) {
	c.until = min(c.until, max(t, c.now+1))
}

type cycle struct {
	sched  *Scheduler
	cfg    Config
	snap   *Snapshot
	x      *freeIndex
	queues map[string]*queueState
	order  []*queueState // queues by name, for deterministic iteration
	unfit  map[shapeKey]*nodeReport
	// failedGangs remembers, per cycle, gangs of identical members that
	// found no placement: a later gang of the same shape fails the same way.
	// Each holds the index in diag.Pending of the first such gang's status.
	failedGangs failedMemo
	// shapes numbers the signatures of the cycle's gangs.
	shapes shapes
	// satisfied gangs in the order they were visited, with the index of their
	// first pending member not yet placed.
	satisfied []elastic
	// capacity is the sum of every node's allocatable, once computed.
	capacity      Vector
	capacityKnown bool
	plan          Plan
	diag          Diagnostics
	scratch       txn
	candBuf       []int32
	sorter        *gangSorter
	mem           *cycleMemory
	now           int64
	// until is what the cycle's plan says in Plan.Until (changesAt).
	until int64
	// resvs are the cycle's reservations (reserve.go); bit i of open says
	// whether the gang being placed may use the nodes of resvs[i].
	resvs []*reservation
	open  uint64
	// overShare holds the reservation candidates that got none because
	// their queue holds more than its deserved share and what its own
	// members free would not fit them (reserve.go); nil when none.
	overShare map[*Gang]bool
	// holds in force, by gang ID, and the gang whose holds are open now
	// (hold.go).
	holds     map[string][]*held
	holdOrder []*held // the same, in the snapshot's order
	holder    *Gang
	// stuck lists, in visit order, the gangs whose minimum found no room:
	// the candidates for preemption (preempt.go).
	stuck []stuckGang
	// early is set while wholeNodesFirst tries gangs ahead of their
	// queue's turn: a failure is not recorded, the gang's turn will; early
	// failures are remembered in earlyFailed instead.
	early       bool
	earlyFailed failedMemo
	// end is when the members being placed are expected to end, ends when
	// each node's members are (ends.go).
	end  int64
	ends []int64
	// endsNext is the earliest expected end of a member yet to come, and
	// endsMove says that one has passed (ends.go).
	endsNext int64
	endsMove bool
	// trialing is set while preemption tries placements it will roll back:
	// failures need no node report.
	trialing bool
	// pods indexes the pods on nodes when some use pod affinity, spread or
	// host ports (podconstraints.go); pins narrow an anchored placement.
	pods      *podIndex
	verdicts  *verdicts // of the node filters (filter.go)
	pins      pins
	lastShape shapeKey
	lastCheck *podCheck
	lastQS    *queueState // queueOf's
	// releases are sortedReleases', once made.
	releases      []*Release
	releasesKnown bool
}

type elastic struct {
	g    *Gang
	qs   *queueState
	from int
}

// newCycle returns a cycle over snap whose plan and diagnostics reuse the
// slices of plan and diag.
func newCycle(s *Scheduler, snap *Snapshot, plan *Plan, diag *Diagnostics) *cycle {
	c := &cycle{
		sched:  s,
		cfg:    s.cfg,
		snap:   snap,
		x:      newFreeIndex(snap.Nodes, snap.Resources.Index(s.cfg.GPU)),
		queues: make(map[string]*queueState, len(snap.Queues)),
		unfit:  make(map[shapeKey]*nodeReport),

		pods:     newPodIndex(snap),
		verdicts: newVerdicts(snap.Nodes),
	}
	clear(diag.Pending)
	c.diag.Pending = diag.Pending[:0]
	if c.diag.Pending == nil || cap(c.diag.Pending) < len(snap.Gangs) {
		c.diag.Pending = make([]GangStatus, 0, len(snap.Gangs))
	}
	clear(diag.Scheduled)
	clear(plan.Binds)
	clear(plan.Evictions)
	clear(plan.Holds)
	c.diag.Scheduled = diag.Scheduled[:0]
	c.plan = Plan{Binds: plan.Binds[:0], Evictions: plan.Evictions[:0], Holds: plan.Holds[:0]}
	c.mem = newCycleMemory(&s.memory, len(snap.Queues))
	c.sorter, c.stuck = &c.mem.sorter, c.mem.stuck
	for i := range snap.Queues {
		q := &snap.Queues[i]
		if _, dup := c.queues[q.Name]; dup {
			continue // the first definition wins; callers keep names unique
		}
		qs := &c.mem.queues[i]
		*qs = queueState{q: q, weight: min(max(q.Weight, 1), maxWeight), allocated: q.Allocated,
			gangs: qs.gangs[:0], wants: qs.wants[:0], placedFirst: qs.placedFirst[:0]}
		c.queues[q.Name] = qs
		c.order = append(c.order, qs)
	}
	sortQueuesByName(c.order)
	for i, qs := range c.order {
		qs.pos = i
	}
	return c
}

// admit files g under its queue, or reports why it cannot be considered at
// all. It returns the queue state and, except under StrictFIFO (which
// computes it only for the gangs it tries), the total request of the
// members g still needs to reach MinMember, pod slots included
// (minimumOf); or nil when g was reported.
func (c *cycle) admit(g *Gang) (*queueState, Vector) {
	if st, bad := validate(g, c.cfg.Topology); bad {
		c.diag.Pending = append(c.diag.Pending, st)
		return nil, Vector{}
	}
	qs := c.queueOf(g.Queue)
	if qs == nil {
		c.pending(g, ReasonQueueNotFound, 0, fmt.Sprintf("queue %q does not exist", g.Queue))
		return nil, Vector{}
	}
	var want Vector
	if g.Bound < g.MinMember && c.cfg.Ordering != StrictFIFO {
		want = wantOf(g)
	}
	if msg := c.neverFits(g, want); msg != "" {
		c.pending(g, ReasonExceedsCluster, g.MinMember-g.Bound, msg)
		return nil, Vector{}
	}
	return qs, want
}

// queueOf returns the state of the named queue, or nil. The last one
// found is kept: gangs of a queue often come in runs, and callers share
// the string of a queue's name, whose comparison is then a pointer's.
func (c *cycle) queueOf(name string) *queueState {
	if c.lastQS != nil && c.lastQS.q.Name == name {
		return c.lastQS
	}
	qs := c.queues[name]
	if qs != nil {
		c.lastQS = qs
	}
	return qs
}

// neverFits says why g's minimum can never fit, or "": the members it
// still needs ask more of some resource than every node of the cluster has
// together, used or not. Such a gang is not placed, and evicts nothing:
// no eviction would make room. want is minimumOf(g)'s total.
func (c *cycle) neverFits(g *Gang, want Vector) string {
	if g.Bound >= g.MinMember || c.cfg.Ordering == StrictFIFO {
		// Only elastic members wait; or the strict FIFO baseline, which
		// blocks behind such a gang as the schedulers it models do.
		return ""
	}
	if !c.capacityKnown {
		for i := range c.snap.Nodes {
			c.capacity = c.capacity.Add(c.snap.Nodes[i].Allocatable)
		}
		c.capacityKnown = true
	}
	for _, d := range dimsByImportance {
		if want[d] > c.capacity[d] {
			return fmt.Sprintf("can never fit: the cluster has %s, the gang needs %s",
				c.snap.Resources.amount(d, c.capacity[d]), c.snap.Resources.amount(d, want[d]))
		}
	}
	return ""
}

func validate(g *Gang, levels []string) (GangStatus, bool) {
	need := g.MinMember - g.Bound
	switch {
	case g.Invalid != "":
		return GangStatus{Gang: g.ID, Reason: ReasonInvalid, Need: need, text: g.Invalid}, true
	case g.Unsupported != "":
		return GangStatus{Gang: g.ID, Reason: ReasonUnsupportedConstraint, Need: need, text: g.Unsupported}, true
	case g.RequiredLevel != "" && levelOf(levels, g.RequiredLevel) < 0:
		if len(levels) == 0 {
			return GangStatus{Gang: g.ID, Reason: ReasonInvalid, Need: need, text: fmt.Sprintf(
				"the gang requires one %s, but the scheduler has no topology levels", g.RequiredLevel)}, true
		}
		return GangStatus{Gang: g.ID, Reason: ReasonInvalid, Need: need, text: fmt.Sprintf(
			"the gang requires one %s, which is not a topology level of the scheduler (%s)",
			g.RequiredLevel, strings.Join(levels, ", "))}, true
	case g.MinMember < 1:
		return GangStatus{Gang: g.ID, Reason: ReasonInvalid, text: fmt.Sprintf("minMember is %d; it must be at least 1", g.MinMember)}, true
	case g.Bound+len(g.Pending) < g.MinMember:
		have := g.Bound + len(g.Pending)
		return GangStatus{Gang: g.ID, Reason: ReasonNotEnoughMembers, Need: need, text: fmt.Sprintf(
			"%d of %d members exist (minMember %d); waiting for %d more", have, g.MinMember, g.MinMember, g.MinMember-have)}, true
	}
	if s := g.summary(); s != nil {
		if s.negative != "" {
			return GangStatus{Gang: g.ID, Reason: ReasonInvalid, Need: need, text: s.negative}, true
		}
		return GangStatus{}, false
	}
	if msg := negativeRequest(g.Pending); msg != "" {
		return GangStatus{Gang: g.ID, Reason: ReasonInvalid, Need: need, text: msg}, true
	}
	return GangStatus{}, false
}

// negativeRequest says which member first requests a negative amount of a
// resource, or "".
func negativeRequest(members []Member) string {
	for i := range members {
		for d, v := range members[i].Request {
			if v < 0 {
				return fmt.Sprintf("member %s requests a negative amount of resource #%d", members[i].Name, d)
			}
		}
	}
	return ""
}

func (c *cycle) pending(g *Gang, r Reason, need int, text string) {
	c.diag.Pending = append(c.diag.Pending, GangStatus{Gang: g.ID, Reason: r, Need: need, text: text})
}

func (c *cycle) runFairShare() {
	for _, g := range c.snap.Gangs {
		if g == nil {
			continue
		}
		if qs, want := c.admit(g); qs != nil {
			qs.gangs = append(qs.gangs, g)
			qs.wants = append(qs.wants, want)
		}
	}
	var total Vector
	for i := range c.snap.Nodes {
		if !c.snap.Nodes[i].Unschedulable {
			total = total.Add(c.snap.Nodes[i].Allocatable)
		}
	}
	h := make(queueHeap, 0, len(c.order))
	for _, qs := range c.order {
		if len(qs.gangs) == 0 {
			continue
		}
		if c.cfg.ShortestFirst && !qs.q.StrictOrder {
			c.sortQueue(qs, byEstimate)
		} else {
			c.sortQueue(qs, byPriority)
		}
		qs.demand = qs.allocated
		for _, g := range qs.gangs {
			if sum := g.summary(); sum != nil {
				qs.demand = qs.demand.Add(sum.demand)
			} else {
				qs.demand = qs.demand.Add(demandOf(g.Pending))
			}
		}
		h = append(h, qs)
	}
	deal(h, total)
	for _, qs := range h {
		qs.updateShare()
	}
	c.reserve(total)
	// Gangs that hold members but not their minimum go first, whatever
	// their queue's share and their priority: the members they hold idle
	// until the rest come (after a crash in the middle of binding the gang,
	// or a lost member), and a later gang must not take the room the rest
	// needs. Each queue's gangs are sorted with them at the front.
	for _, qs := range h {
		for qs.next < len(qs.gangs) && partial(qs.gangs[qs.next]) {
			c.visitNext(qs)
		}
	}
	if c.cfg.ReserveAfter > 0 && len(c.resvs) == 0 {
		c.wholeNodesFirst(h)
	}
	live := h[:0]
	for _, qs := range h {
		if qs.next < len(qs.gangs) {
			live = append(live, qs)
		}
	}
	h = live
	heap.Init(&h)
	for h.Len() > 0 {
		qs := h[0]
		c.visitNext(qs)
		if qs.next == len(qs.gangs) {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
}

// visitNext gives the next gang of qs its turn: it is placed, or it blocks
// a StrictOrder queue, or it waits behind the gang that blocks it.
func (c *cycle) visitNext(qs *queueState) {
	g := qs.gangs[qs.next]
	qs.next++
	if i := qs.firstAt; i < len(qs.placedFirst) && qs.placedFirst[i] == qs.next-1 {
		qs.firstAt++
		return // placed by wholeNodesFirst
	}
	switch {
	case qs.blockedBy != nil && g.Bound < g.MinMember:
		c.diag.Pending = append(c.diag.Pending, GangStatus{Gang: g.ID, Reason: ReasonBlocked,
			Need: g.MinMember - g.Bound, blockedBy: qs.blockedBy.ID, strictQueue: qs.q.Name})
	case c.tryGang(g, qs, qs.next-1):
		qs.updateShare()
	case qs.q.StrictOrder:
		qs.blockedBy = g
	}
}

func (c *cycle) runStrictFIFO() {
	gangs := c.mem.gangs[:0]
	for _, g := range c.snap.Gangs {
		if g != nil {
			gangs = append(gangs, g)
		}
	}
	c.mem.gangs = gangs
	c.sorter.sort(gangs, byArrival)
	var head *Gang
	for _, g := range gangs {
		qs, _ := c.admit(g)
		if qs == nil {
			continue
		}
		if head != nil {
			if g.Bound < g.MinMember {
				c.diag.Pending = append(c.diag.Pending, GangStatus{Gang: g.ID, Reason: ReasonBlocked,
					Need: g.MinMember - g.Bound, blockedBy: head.ID})
			}
			continue
		}
		var want Vector
		if g.Bound < g.MinMember {
			want = wantOf(g)
		}
		qs.gangs, qs.wants = append(qs.gangs, g), append(qs.wants, want)
		if !c.tryGang(g, qs, len(qs.gangs)-1) {
			head = g
		}
	}
}

// tryGang places what g needs to reach MinMember, all or nothing, and
// reports whether g is now satisfied. g is qs.gangs[at].
func (c *cycle) tryGang(g *Gang, qs *queueState, at int) bool {
	need := g.MinMember - g.Bound
	if need <= 0 {
		c.satisfied = append(c.satisfied, elastic{g: g, qs: qs})
		return true
	}
	// Under c.early a failure is not recorded: the gang's turn will be.
	if qs.q.Closed {
		if !c.early {
			c.pending(g, ReasonQueueClosed, need, fmt.Sprintf("queue %s is closed", qs.q.Name))
		}
		return false
	}
	want := qs.wants[at]
	if d, over := exceeds(qs.allocated.Add(want), qs.q.Capability); over {
		if c.early {
			return false
		}
		name := c.snap.Resources.Name(d)
		if want[d] > qs.q.Capability[d] {
			c.pending(g, ReasonQueueAtCapability, need, fmt.Sprintf(
				"the gang needs %d %s, more than queue %s's capability of %d: it cannot run in this queue",
				want[d], name, qs.q.Name, qs.q.Capability[d]))
			return false
		}
		c.pending(g, ReasonQueueAtCapability, need, fmt.Sprintf(
			"queue %s is at its capability: the gang needs %d %s, the queue holds %d of its %d",
			qs.q.Name, want[d], name, qs.allocated[d], qs.q.Capability[d]))
		return false
	}
	c.open = c.openFor(g)
	c.openHolds(g)
	defer func() { c.open = 0 }()
	var sig gangSignature
	var uniform bool
	if sum := g.summary(); sum != nil && sum.minimum {
		sig, uniform = sum.sig, sum.uniform
	} else {
		sig, uniform = signatureOf(g.Pending[:need], g.RequiredLevel)
	}
	stuck := stuckGang{g: g, qs: qs, at: int32(at), uniform: uniform}
	if uniform {
		stuck.shape = c.shapes.number(sig)
	}
	key := failedKey{shape: stuck.shape, open: c.open, holder: c.holder}
	uniform = uniform && c.alike(g.Pending[:need])
	if uniform && c.early {
		if _, failed := c.earlyFailed.get(key); failed {
			c.closeHolds(false)
			return false
		}
	} else if uniform {
		if first, failed := c.failedGangs.get(key); failed {
			// As the first one failed: withReservation replaces what it
			// said of its own reservation.
			stuck.status = int32(len(c.diag.Pending))
			c.addStuck(stuck)
			c.diag.Pending = append(c.diag.Pending, c.diag.Pending[first])
			st := &c.diag.Pending[len(c.diag.Pending)-1]
			st.Gang = g.ID
			c.setReservation(g, st)
			c.closeHolds(false)
			return false
		}
	}
	t := &c.scratch
	if st, ok := c.placeMinimum(g, g.Pending[:need], want, t); !ok && !c.placeAnchored(g, g.Pending[:need], t) {
		if c.early {
			if uniform {
				c.earlyFailed.set(key, 0)
			}
			c.closeHolds(false)
			return false
		}
		if st.Reason == ReasonUnschedulable {
			stuck.status = int32(len(c.diag.Pending))
			c.addStuck(stuck)
		}
		if uniform {
			c.failedGangs.set(key, len(c.diag.Pending))
		}
		c.diag.Pending = append(c.diag.Pending, c.withReservation(g, st))
		c.closeHolds(false)
		return false
	}
	for _, p := range t.placed {
		c.plan.Binds = append(c.plan.Binds, Bind{Gang: g.ID, Member: g.Pending[p.member].Name, Node: c.snap.Nodes[p.node].Name})
		c.spend(p.node, p.req) // before closeHolds: what its holds cover is not spent
	}
	c.closeHolds(true)
	qs.allocated = qs.allocated.Add(want)
	c.diag.Scheduled = append(c.diag.Scheduled, g.ID)
	c.satisfied = append(c.satisfied, elastic{g: g, qs: qs, from: need})
	return true
}

// addStuck records a gang whose minimum found no room.
func (c *cycle) addStuck(s stuckGang) {
	c.stuck = append(c.stuck, s)
	c.mem.stuck = c.stuck
}

// placeElastic places, one by one, the pending members of satisfied gangs
// beyond what MinMember required.
func (c *cycle) placeElastic() {
	for _, e := range c.satisfied {
		if e.from < len(e.g.Pending) {
			c.openHolds(e.g)
		}
		c.placingEnd(e.g)
		for i := e.from; i < len(e.g.Pending); i++ {
			m := &e.g.Pending[i]
			r := podRequest(m)
			if _, over := exceeds(e.qs.allocated.Add(r), e.qs.q.Capability); over || e.qs.q.Closed {
				break
			}
			n, ok := c.findNode(m, r, nil, c.x.gpus(r), nil)
			if !ok {
				continue
			}
			c.x.take(n, r)
			c.placed(m, n)
			c.spend(n, r)
			e.qs.allocated = e.qs.allocated.Add(r)
			c.plan.Binds = append(c.plan.Binds, Bind{Gang: e.g.ID, Member: m.Name, Node: c.snap.Nodes[n].Name})
		}
		c.closeHolds(false)
	}
}

// podRequest is a member's request with the pod slot it takes.
func podRequest(m *Member) Vector { return withPod(m.Request) }

// withPod is a request with the pod slot it takes.
func withPod(r Vector) Vector {
	r[Pods] = 1
	return r
}

// demandOf is the total request of members, pod slots excluded.
func demandOf(members []Member) Vector {
	var v Vector
	for i := range members {
		v = v.Add(members[i].Request)
	}
	return v
}

// minimumOf returns the pending members g still needs to reach MinMember
// and their total request, pod slots included. g must be valid (validate).
func minimumOf(g *Gang) ([]Member, Vector) {
	members := g.Pending[:g.MinMember-g.Bound]
	var want Vector
	for i := range members {
		want = want.Add(podRequest(&members[i]))
	}
	return members, want
}

// exceeds reports the first dimension where v is over limit.
func exceeds(v, limit Vector) (int, bool) {
	for d := range v {
		if v[d] > limit[d] {
			return d, true
		}
	}
	return 0, false
}

// sortQueue sorts the gangs of qs, and their wants with them, in order o.
func (c *cycle) sortQueue(qs *queueState, o gangOrder) {
	if !c.sorter.sort(qs.gangs, o) {
		return
	}
	c.mem.wants = append(c.mem.wants[:0], qs.wants...)
	for i, at := range c.sorter.perm {
		qs.wants[i] = c.mem.wants[at]
	}
}

// cycleMemory is the memory of a cycle's lists (queues and their gangs,
// stuck gangs, sorts, reservation candidates), kept in the Scheduler's pool
// from one cycle to the next; it holds nothing a cycle decides on.
type cycleMemory struct {
	queues  []queueState // by index in Snapshot.Queues
	stuck   []stuckGang
	sorter  gangSorter
	wants   []Vector
	gangs   []*Gang
	cands   []candidate
	waiting []waiter
	// releases holds the snapshot's releases at their expected ends when
	// some have passed (sortedReleases).
	releases []Release
	// steps and ends are the backlog's (freeSteps).
	steps []freeStep
	ends  []freeStep
	// nodeEnds and nodeKnown are the placement's by ends (ends.go).
	nodeEnds, nodeKnown []int64
	// early lists wholeNodesFirst's gangs.
	early []earlyGang
}

// newCycleMemory returns the memory of a cycle over a snapshot of n queues;
// the cycle hands it back with release.
func newCycleMemory(pool *sync.Pool, n int) *cycleMemory {
	m, _ := pool.Get().(*cycleMemory)
	if m == nil {
		m = new(cycleMemory)
	}
	m.queues = sized(m.queues, n)
	return m
}

// release hands m back to pool, holding nothing of the cycle.
func (m *cycleMemory) release(pool *sync.Pool) {
	for i := range m.queues {
		qs := &m.queues[i]
		clear(qs.gangs)
		*qs = queueState{gangs: qs.gangs[:0], wants: qs.wants[:0], placedFirst: qs.placedFirst[:0]}
	}
	clear(m.stuck)
	clear(m.sorter.keys)
	clear(m.gangs)
	clear(m.cands[:cap(m.cands)])
	clear(m.waiting[:cap(m.waiting)])
	m.stuck, m.gangs, m.cands, m.waiting = m.stuck[:0], m.gangs[:0], m.cands[:0], m.waiting[:0]
	m.releases = m.releases[:0]
	m.sorter.keys = m.sorter.keys[:0]
	pool.Put(m)
}

func sortQueuesByName(qs []*queueState) {
	for i := 1; i < len(qs); i++ {
		for j := i; j > 0 && qs[j].q.Name < qs[j-1].q.Name; j-- {
			qs[j], qs[j-1] = qs[j-1], qs[j]
		}
	}
}

// gangSignature identifies gangs whose minimum is n interchangeable members
// with the same topology requirement.
type gangSignature struct {
	shape    shapeKey
	n        int
	required string
}

// failedKey identifies, in failedGangs, gangs of one signature (by number)
// placed with the same reservations and holds open.
type failedKey struct {
	shape  int32
	open   uint64
	holder *Gang
}

// failedMemo maps failedKeys to the index of the first failed gang's
// status; the keys without reservations open nor holder, the most common,
// by shape in a slice, and those without holder whose shape and open
// reservations pack in a word (packed) in a map of words, which hashes
// faster than a struct.
type failedMemo struct {
	plain []int32 // by shape: the index plus 1, or 0
	words map[uint64]int
	other map[failedKey]int
}

// packed returns k in one word, if it fits: no holder, a shape below 2^23,
// and open reservations whose bits from 40 up are all 0 or all 1 (openFor
// sets all from the gang's own reservation up), kept as one bit.
func (k failedKey) packed() (uint64, bool) {
	const low = 40
	hi := k.open >> low
	if k.holder != nil || k.shape < 0 || k.shape >= 1<<23 || hi != 0 && hi != 1<<(64-low)-1 {
		return 0, false
	}
	w := uint64(k.shape)<<(low+1) | k.open&(1<<low-1)
	if hi != 0 {
		w |= 1 << low
	}
	return w, true
}

func (m *failedMemo) get(k failedKey) (int, bool) {
	if k.open == 0 && k.holder == nil {
		if int(k.shape) < len(m.plain) && m.plain[k.shape] > 0 {
			return int(m.plain[k.shape]) - 1, true
		}
	}
	if w, ok := k.packed(); ok {
		i, ok := m.words[w]
		return i, ok
	}
	i, ok := m.other[k]
	return i, ok
}

func (m *failedMemo) set(k failedKey, i int) {
	if k.open == 0 && k.holder == nil && i < math.MaxInt32 {
		if int(k.shape) >= len(m.plain) {
			m.plain = append(m.plain, make([]int32, int(k.shape)+1-len(m.plain))...)
		}
		m.plain[k.shape] = int32(i) + 1
		return
	}
	if w, ok := k.packed(); ok {
		if m.words == nil {
			m.words = make(map[uint64]int)
		}
		m.words[w] = i
		return
	}
	if m.other == nil {
		m.other = make(map[failedKey]int)
	}
	m.other[k] = i
}

// forget empties m.
func (m *failedMemo) forget() {
	clear(m.plain)
	clear(m.words)
	clear(m.other)
}

// shapes numbers gang signatures, so that the cycle's memos key on a
// number rather than hash a signature at each look-up.
type shapes struct {
	cons     map[*Constraints]uint64 // numbers of the constraints seen
	lastC    *Constraints
	lastCN   uint64
	byHash   map[uint64]int32 // the first signature of each hash
	sigs     []gangSignature  // by number
	sameHash []int32          // by number: the next signature of the same hash, or -1
	last     int32            // the number last returned, + 1 (0: none)
}

// number returns the number of sig, which must have no open
// reservations, holder or pod terms set.
func (s *shapes) number(sig gangSignature) int32 {
	if s.last > 0 && s.sigs[s.last-1] == sig {
		return s.last - 1 // gangs alike often come one after another
	}
	n := s.lookup(sig)
	s.last = n + 1
	return n
}

func (s *shapes) lookup(sig gangSignature) int32 {
	h := s.hash(sig)
	first, ok := s.byHash[h]
	if ok {
		for n := first; n >= 0; n = s.sameHash[n] {
			if s.sigs[n] == sig {
				return n
			}
		}
	}
	n := int32(len(s.sigs))
	s.sigs = append(s.sigs, sig)
	s.sameHash = append(s.sameHash, -1)
	if !ok {
		if s.byHash == nil {
			s.byHash = make(map[uint64]int32)
		}
		s.byHash[h] = n
		return n
	}
	last := first
	for s.sameHash[last] >= 0 {
		last = s.sameHash[last]
	}
	s.sameHash[last] = n
	return n
}

// hash is FNV-1a over the words of sig, its constraints by number.
func (s *shapes) hash(sig gangSignature) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, v := range sig.shape.req {
		h = (h ^ uint64(v)) * prime
	}
	if c := sig.shape.c; c != nil {
		if c != s.lastC {
			if s.cons == nil {
				s.cons = make(map[*Constraints]uint64)
			}
			n, ok := s.cons[c]
			if !ok {
				n = uint64(len(s.cons)) + 1
				s.cons[c] = n
			}
			s.lastC, s.lastCN = c, n
		}
		h = (h ^ s.lastCN) * prime
	}
	h = (h ^ uint64(sig.n)) * prime
	for i := 0; i < len(sig.required); i++ {
		h = (h ^ uint64(sig.required[i])) * prime
	}
	return h
}

// signatureOf returns the signature of members of a gang requiring one
// domain of level required (or none), and false when they are not all alike
// (such gangs are not remembered).
func signatureOf(members []Member, required string) (gangSignature, bool) {
	first := &members[0]
	for i := 1; i < len(members); i++ {
		if members[i].Request != first.Request || members[i].Constraints != first.Constraints {
			return gangSignature{}, false
		}
	}
	return gangSignature{shapeKey{req: podRequest(first), c: first.Constraints}, len(members), required}, true
}
