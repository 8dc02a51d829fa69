package core

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Preemption within a queue and reclaim across queues, both gang-aware.
//
// With Config.Preemption, once every gang has had its turn, the cycle looks
// again at the gangs whose minimum found no room (not those refused by their
// queue's capability, nor invalid ones), in the order it visited them, and
// asks for each whether evicting running members would make room:
//
//   - A victim is a unit: a running gang whole, or one member above its
//     MinMember (an elastic member). A running gang is never left with fewer
//     than MinMember members. An Unevictable member is never a victim, nor
//     is its gang whole.
//   - Preemption: a unit of the preemptor's own queue whose gang has a lower
//     priority. Equal priority never preempts, not even an elastic member:
//     losing one restarts the rendezvous of elastic training (PyTorch's).
//   - Reclaim: a unit of another queue that holds more than its deserved
//     share (fairshare.go), and still at least that share without the unit
//     in the resources where it is over, while the preemptor's
//     queue stays within its own once the preemptor runs; never from a
//     queue marked NoReclaim. A queue only ever gives up what it holds
//     beyond its share: reclaim never takes it below, so the shares that
//     preemptor and victim queues end with are both within their due.
//     Config.ReclaimAfter makes a gang wait before it reclaims;
//     Config.ReclaimYoungerOnly limits reclaim to gangs that arrived after
//     the reclaiming gang: it takes back only what younger gangs took.
//   - A minimum run time protects a unit until its earliest member has run
//     that long: the victim queue's PreemptMinRuntime against preemption,
//     its ReclaimMinRuntime against reclaim (else the Config's). KAI
//     Scheduler has the same two settings on its queues; the idea is that
//     a job makes progress between evictions, and that room won by a
//     reclaim is not taken back before it was of use.
//   - Units are ranked cheapest first: lowest priority, then least run time
//     lost (member-seconds, each member weighted by its accelerators), then
//     elastic members before whole gangs, then name. The cycle finds the
//     shortest prefix of that ranking after whose eviction the preemptor's
//     minimum is placed, by binary search on trial placements, then drops
//     from the set, most expensive first, every unit it can do without
//     (trying at most the 32 most expensive).
//   - With Config.WeighLoss, the set is evicted only if what its members
//     lose is at most what the preemptor gains, both in accelerator-seconds.
//     The victims lose the run time they had (the ranking's cost), and wait
//     again: as long as they waited for their room the first time (from
//     arrival to start), and at least while the preemptor runs on it (its
//     estimate, if it has one), times their accelerators. The preemptor gains its
//     accelerators times how much sooner it starts: it would have started
//     by the time the last victim is expected to end, and not before
//     enough accelerators are free in the whole cluster (free now, plus the
//     releases expected by then); the earlier of the two bounds the gain.
//     A set with a member of unknown estimate is not weighed, nor are the
//     victims of a higher priority in the preemptor's own queue: the
//     priority says the preemptor matters more.
//   - Nothing is evicted unless the trial placement succeeded: the preemptor
//     is known to fit once its victims are gone. Its placement is held for
//     it (Plan.Holds) while they terminate, and what the victims still use
//     is counted as theirs until then. Members already terminating are not
//     victims again; their room counts as free for this phase, so a
//     preemptor that fits once they are gone waits rather than evicting
//     more.
//
// A gang for which nothing is evicted says why in its status: no running
// unit may be evicted for it (the rules above), evicting all that may be
// would not make room, or the evictions would lose more than it gains.
//
// No ping-pong: a victim of preemption has a lower priority than its
// preemptor, so it can never preempt it back; a victim of reclaim belongs to
// a queue over its deserved share, and its preemptor's queue stays within
// its own, so the victim's queue cannot reclaim from it in turn while the
// shares stand.
//
// Gangs without estimated ends are as good victims as any: preemption does
// not use estimates.

// unit is one candidate victim.
type unit struct {
	run     *Running
	ri      int // index of run in Snapshot.Running
	qs      *queueState
	members []int // indexes into run.Members
	whole   bool
	lost    int64
	// rate is how fast lost grows with the time: the weights of the members
	// that have started.
	rate   int64
	amount Vector // requests of members, pod slots included
	// since is the earliest start of its members: minimum run times count
	// from it.
	since int64
	taken bool
	id    int // position in preemption.units
	// weighed: reclaim weighed u against what its queue holds beyond its
	// share, which depends on the order of its queue's units; tried: u was
	// a candidate of a preemptor that went on to trials, which depend on
	// the order of its candidates (rankChanges).
	weighed, tried bool
	// siblings are the units of the same running gang, u included.
	siblings []*unit
}

// stuckGang is a gang whose minimum found no room in the cycle; status
// indexes its entry in Diagnostics.Pending.
type stuckGang struct {
	g  *Gang
	qs *queueState
	// at is g's index in qs.gangs, status its entry's.
	at, status int32
	// uniform says whether g's minimum is interchangeable members, and
	// shape then numbers their signature (shapes).
	uniform bool
	shape   int32
}

type preemptKey struct {
	shape    int32 // shapes' number of the gang's signature
	queue    *queueState
	priority int32
}

// failedPreemptions maps preemptKeys to why preemption failed for them:
// those whose shape, queue and priority fit in one word in a map of words,
// which hashes faster.
type failedPreemptions struct {
	words map[uint64]refusal
	other map[preemptKey]refusal
}

// refusal says why a gang's preemption phase evicted nothing for it; the
// gang's status says so (GangStatus.message).
type refusal uint8

const (
	notRefused refusal = iota
	// refusedNoVictims: no running unit may be evicted for the gang.
	refusedNoVictims
	// refusedTooFew: evicting every unit that may be would not make room.
	refusedTooFew
	// refusedLoss: the evictions that would make room lose more than the
	// gang gains (Config.WeighLoss).
	refusedLoss
)

var refusalText = [...]string{
	notRefused:       "",
	refusedNoVictims: "no running gang may be evicted for it",
	refusedTooFew:    "evicting every running gang that may be evicted for it would not make room",
	refusedLoss:      "the evictions that would make room would lose more run time than they would gain it",
}

func (k preemptKey) word() (uint64, bool) {
	pos, prio := k.queue.pos, k.priority
	if k.shape < 0 || pos < 0 || pos > math.MaxUint16 || prio < math.MinInt16 || prio > math.MaxInt16 {
		return 0, false
	}
	return uint64(k.shape)<<32 | uint64(pos)<<16 | uint64(uint16(prio)), true
}

// has returns why preemption failed for k, notRefused if it did not.
func (f *failedPreemptions) has(k preemptKey) refusal {
	if w, ok := k.word(); ok {
		return f.words[w]
	}
	return f.other[k]
}

func (f *failedPreemptions) add(k preemptKey, why refusal) {
	if w, ok := k.word(); ok {
		if f.words == nil {
			f.words = make(map[uint64]refusal)
		}
		f.words[w] = why
		return
	}
	if f.other == nil {
		f.other = make(map[preemptKey]refusal)
	}
	f.other[k] = why
}

func (f *failedPreemptions) forget() {
	clear(f.words)
	clear(f.other)
}

// preemption is the state of the cycle's preemption phase.
type preemption struct {
	units []*unit
	// freed[r][m] is the unit whose trial freed member m of running gang r,
	// -1 if none; evicted members are marked with -2.
	freed [][]int
	// listed[ri][mi] == gen marks the members of the units eligible
	// listed in its current call.
	listed [][]uint32
	gen    uint32
	failed failedPreemptions
	// releaseAt and released, made on first use by paysOff: the times of
	// the snapshot's releases with a known time, ascending, and the
	// accelerators freed by each time, cumulated.
	releaseAt, released []int64
	releasesSorted      bool
	// terminating counts members being evicted by earlier cycles.
	terminating int
	// lists remembers what eligible listed, until a preemption is
	// committed: gangs of one queue, priority and constraints get the same
	// candidates (candidatesKey). running holds the IDs of the running gangs,
	// made on the first use of lists.
	lists   map[candidatesKey]candidateList
	running map[string]struct{}
	costs   []accelCost // cannotPayOff's
	left    []Vector    // eligible's
	leftGen []uint32

	// The memory of the above, kept in the Scheduler's pool from one cycle
	// to the next (newPreemption, release).
	listedAll []uint32
	freedAll  []int
	slab      unitSlab
}

// newPreemption returns the state of a preemption phase over running,
// every member not yet freed nor listed; the cycle hands it back with
// release.
func (c *cycle) newPreemption(running []Running) *preemption {
	p, _ := c.sched.preemptions.Get().(*preemption)
	if p == nil {
		p = new(preemption)
	}
	members, units := 0, 0
	for ri := range running {
		r := &running[ri]
		members += len(r.Members)
		units += max(len(r.Members)-r.MinMember, 0) + 1 // elastic members, and the whole gang
	}
	p.listedAll, p.freedAll = sized(p.listedAll, members), sized(p.freedAll, members)
	clear(p.listedAll)
	p.listed, p.freed = p.listed[:0], p.freed[:0]
	if cap(p.slab.units) < units {
		p.slab.units = make([]unit, 0, units) // never to grow: units point into it
	}
	return p
}

// release hands p back to the scheduler's pool, holding nothing of the
// cycle.
func (p *preemption) release(pool *sync.Pool) {
	clear(p.units)
	clear(p.listed)
	clear(p.freed)
	clear(p.slab.units)
	clear(p.slab.sibs)
	p.failed.forget()
	p.units, p.listed, p.freed = p.units[:0], p.listed[:0], p.freed[:0]
	p.slab = unitSlab{units: p.slab.units[:0], members: p.slab.members[:0], sibs: p.slab.sibs[:0]}
	p.gen, p.terminating = 0, 0
	clear(p.leftGen) // stamped by gen, which starts again
	clear(p.lists)
	clear(p.running)
	p.releaseAt, p.released, p.releasesSorted = p.releaseAt[:0], p.released[:0], false
	pool.Put(p)
}

const (
	notFreed = -1
	evicted  = -2
)

func (c *cycle) preempt() {
	if !c.cfg.Preemption || c.cfg.Ordering != FairShare || len(c.stuck) == 0 {
		return
	}
	if len(c.snap.Running) == 0 {
		for _, s := range c.stuck {
			if !s.g.NoPreempt {
				c.diag.Pending[s.status].refuse(refusedNoVictims)
			}
		}
		return
	}
	p := c.newPreemption(c.snap.Running)
	defer p.release(&c.sched.preemptions)
	c.dealAll()
	c.unfit = make(map[shapeKey]*nodeReport) // room is given back below: forget what found none
	gpu := c.x.gpu
	// The per-member and per-unit state of every running gang, cut from
	// a few arrays.
	listed, freedAll := p.listedAll, p.freedAll
	slab := &p.slab
	var alive, pinned []int
	var lastQueue string
	var qs *queueState
	for ri := range c.snap.Running {
		r := &c.snap.Running[ri]
		n := len(r.Members)
		p.listed = append(p.listed, listed[:n:n])
		freed := freedAll[:n:n]
		listed, freedAll = listed[n:], freedAll[n:]
		p.freed = append(p.freed, freed)
		alive, pinned = alive[:0], pinned[:0]
		if qs == nil || r.Queue != lastQueue {
			qs, lastQueue = c.queues[r.Queue], r.Queue
		}
		for mi := range r.Members {
			m := &r.Members[mi]
			freed[mi] = notFreed
			if m.Node < 0 || m.Node >= len(c.snap.Nodes) {
				freed[mi] = evicted // unknown node: not ours to evict
				continue
			}
			if m.Terminating {
				// Its room counts as free, and its queue no longer holds it.
				c.x.give(m.Node, withPod(m.Request))
				if qs != nil {
					qs.allocated = qs.allocated.Sub(withPod(m.Request))
				}
				freed[mi] = evicted
				p.terminating++
				continue
			}
			if m.Unevictable {
				pinned = append(pinned, mi)
				continue
			}
			alive = append(alive, mi)
		}
		if qs == nil || len(alive) == 0 {
			continue
		}
		// Elastic members, latest started first: they lose the least.
		// Unevictable members stay, and count toward the minimum.
		slices.SortStableFunc(alive, func(a, b int) int { return cmp.Compare(r.Members[b].Start, r.Members[a].Start) })
		first := len(p.units)
		for k := 0; k < min(len(alive), len(alive)+len(pinned)-r.MinMember); k++ {
			p.units = append(p.units, slab.newUnit(c, r, ri, qs, alive[k:k+1], false, gpu))
		}
		if len(pinned) == 0 {
			p.units = append(p.units, slab.newUnit(c, r, ri, qs, alive, true, gpu))
		}
		siblings := slab.siblings(p.units[first:])
		for _, u := range siblings {
			u.siblings = siblings
		}
	}
	c.reapplyHolds()
	// Cheapest first; units equal in all that are in the order they were
	// made, as a stable sort would leave them.
	for i, u := range p.units {
		u.id = i
	}
	slices.SortFunc(p.units, func(a, b *unit) int {
		if a.run.Priority != b.run.Priority {
			return cmp.Compare(a.run.Priority, b.run.Priority)
		}
		if a.lost != b.lost {
			return cmp.Compare(a.lost, b.lost)
		}
		if a.whole != b.whole {
			if a.whole {
				return 1
			}
			return -1
		}
		if a.run.Gang != b.run.Gang {
			return strings.Compare(a.run.Gang, b.run.Gang)
		}
		if c := strings.Compare(a.run.Members[a.members[0]].Name, b.run.Members[b.members[0]].Name); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for i, u := range p.units {
		u.id = i
	}
	for _, s := range c.stuck {
		c.preemptFor(p, s)
	}
	c.rankChanges(p.units)
}

// rankChanges records when the ranking of units, sorted, may change as
// their lost run time grows, so far as the phase depended on it (Plan.Until):
// the order of the units tried, and of the units of one queue weighed. The
// order of a sorted sequence, or of part of it, changes first between two
// neighbours, when the one before, losing run time faster, catches up with
// the one after.
func (c *cycle) rankChanges(units []*unit) {
	var lastTried *unit
	for _, u := range units {
		if u.tried {
			c.rankChange(lastTried, u)
			lastTried = u
		}
		if u.weighed {
			c.rankChange(u.qs.lastWeighed, u)
			u.qs.lastWeighed = u
		}
	}
}

// rankChange records when unit b, ranked after a (if not nil), may come
// before it.
func (c *cycle) rankChange(a, b *unit) {
	if a == nil || a.run.Priority != b.run.Priority || a.rate <= b.rate {
		return
	}
	gap, faster := b.lost-a.lost, a.rate-b.rate // gap >= 0: a is before b
	c.changesAt(c.now + max((gap+faster-1)/faster, 1))
}

// unitSlab hands out the units of one preemption phase, their member lists
// and their lists of siblings from shared arrays.
type unitSlab struct {
	units   []unit
	members []int
	sibs    []*unit
}

// siblings returns a copy of us of its own.
func (s *unitSlab) siblings(us []*unit) []*unit {
	from := len(s.sibs)
	s.sibs = append(s.sibs, us...)
	return s.sibs[from:len(s.sibs):len(s.sibs)]
}

func (s *unitSlab) newUnit(c *cycle, r *Running, ri int, qs *queueState, members []int, whole bool, gpu int) *unit {
	from := len(s.members)
	s.members = append(s.members, members...)
	s.units = append(s.units, unit{run: r, ri: ri, qs: qs, members: s.members[from:len(s.members):len(s.members)], whole: whole})
	u := &s.units[len(s.units)-1]
	u.since = math.MaxInt64
	for _, mi := range members {
		m := &r.Members[mi]
		w := int64(1)
		if gpu >= 0 && m.Request[gpu] > 0 {
			w = m.Request[gpu]
		}
		u.lost += max(c.now-m.Start, 0) * w
		u.since = min(u.since, m.Start)
		if m.Start <= c.now {
			u.rate += w
		} else {
			c.changesAt(m.Start + 1) // it starts losing run time then
		}
		u.amount = u.amount.Add(withPod(m.Request))
	}
	return u
}

// dealAll computes every queue's deserved share over the whole cluster,
// counting what queues without pending gangs hold as their demand.
func (c *cycle) dealAll() {
	var total Vector
	for i := range c.snap.Nodes {
		if !c.snap.Nodes[i].Unschedulable {
			total = total.Add(c.snap.Nodes[i].Allocatable)
		}
	}
	for _, qs := range c.order {
		if len(qs.gangs) == 0 {
			qs.demand = qs.q.Allocated
		}
	}
	deal(c.order, total)
}

// overused reports whether v, what a queue holds, is beyond what it
// deserves in some resource.
func overused(v, deserved Vector) bool {
	for d := range v {
		if d != Pods && v[d] > deserved[d] {
			return true
		}
	}
	return false
}

// below reports whether v, what a queue would hold, falls under deserved in
// a resource in which the queue now holds more than it deserves: the
// resources that make it a victim. (In a resource nobody lacks, what a
// queue deserves is all it asks for, so every queue is "below" there.)
func below(v, deserved, holds Vector) bool {
	for d := range v {
		if d != Pods && holds[d] > deserved[d] && v[d] < deserved[d] {
			return true
		}
	}
	return false
}

// preemptFor looks for victims that make room for s.g, and evicts them if
// it finds a set.
func (c *cycle) preemptFor(p *preemption, s stuckGang) {
	g, qs := s.g, s.qs
	if g.NoPreempt {
		return
	}
	members, want := g.Pending[:g.MinMember-g.Bound], qs.wants[s.at]
	uniform := s.uniform
	key := preemptKey{shape: s.shape, queue: qs, priority: g.Priority}
	refuse := func(why refusal) {
		c.diag.Pending[s.status].refuse(why)
		if uniform {
			p.failed.add(key, why)
		}
	}
	if why := p.failed.has(key); uniform && why != notRefused {
		c.diag.Pending[s.status].refuse(why)
		return
	}
	c.open = c.openFor(g)
	c.openHolds(g)
	defer func() {
		c.open = 0
		c.closeHolds(false)
	}()
	t := &c.scratch

	// Room that terminating members free may already be enough.
	if p.terminating > 0 {
		clear(c.unfit)
		if _, ok := c.placeMinimum(g, members, want, t); ok {
			c.commitPreemption(p, s, want, nil, t)
			return
		}
	}
	cands, held := c.candidates(p, g, qs, want)
	if len(cands) == 0 {
		refuse(refusedNoVictims)
		return
	}
	// Not enough room in total even with every candidate gone: no trial.
	if !want.Fits(c.x.total.Add(held)) {
		refuse(refusedTooFew)
		return
	}
	for _, u := range cands {
		u.tried = true
	}
	// What no set of the candidates could pay for is refused without
	// trials. The trials would end as a refusal does (a failed trial is
	// remembered the same way under these settings, see below).
	if c.cfg.WeighLoss && !c.sched.noShortcuts && c.cannotPayOff(p, g, qs, members, cands) {
		c.sched.shortcuts.refused.Add(1)
		refuse(refusedLoss)
		return
	}
	// With WeighLoss, whatever is tried and given up is undone in the
	// index, its order included: an attempt that evicts nothing leaves no
	// trace, so that one refused without trials (above) decides as one
	// tried would have. Without it no attempt is skipped, and a given-up
	// attempt leaves the nodes it freed and took back where they moved in
	// their buckets, as it always did.
	journal := c.cfg.WeighLoss
	var mark int
	if journal {
		mark = c.x.mark()
	}
	giveUp := func(otherwise func()) {
		if !journal {
			otherwise()
			return
		}
		c.x.undo(mark)
		for _, u := range cands {
			freed := p.freed[u.ri]
			for _, mi := range u.members {
				if freed[mi] == u.id {
					freed[mi] = notFreed
				}
			}
		}
	}
	given := 0 // cands[:given] are freed in the index
	setPrefix := func(k int) {
		for ; given < k; given++ {
			c.freeUnit(p, cands[given])
		}
		for ; given > k; given-- {
			c.unfreeUnit(p, cands[given-1])
		}
	}
	setPrefix(len(cands))
	if !c.trial(g, members, want, t) {
		giveUp(func() { setPrefix(0) })
		why := refusedTooFew
		if c.cfg.WeighLoss && c.sched.noShortcuts && c.cannotPayOff(p, g, qs, members, cands) {
			why = refusedLoss // as the refusal without trials above says
		}
		refuse(why)
		return
	}
	k := len(cands)
	for lo, hi := 0, len(cands)-1; lo <= hi; {
		mid := (lo + hi) / 2
		setPrefix(mid)
		if c.trial(g, members, want, t) {
			k, hi = mid, mid-1
		} else {
			lo = mid + 1
		}
	}
	setPrefix(k)
	chosen := slices.Clone(cands[:k])
	// Drop, most expensive first, every unit the preemptor does without.
	const maxDrops = 32
	for i := len(chosen) - 1; i >= 0 && i >= len(chosen)-maxDrops; i-- {
		c.unfreeUnit(p, chosen[i])
		if c.trial(g, members, want, t) {
			chosen = slices.Delete(chosen, i, i+1)
			continue
		}
		c.freeUnit(p, chosen[i])
	}
	unfreeChosen := func() {
		for _, u := range chosen {
			c.unfreeUnit(p, u)
		}
	}
	if c.cfg.WeighLoss && !c.paysOff(p, g, qs, members, chosen) {
		giveUp(unfreeChosen)
		c.diag.Pending[s.status].refuse(refusedLoss)
		// A gang of the same shape, queue and priority has the same
		// candidates, and would be refused as well, unless its wait or
		// arrival makes a difference to them.
		if uniform && c.sameCandidates() {
			p.failed.add(key, refusedLoss)
		}
		return
	}
	clear(c.unfit)
	if _, ok := c.placeMinimum(g, members, want, t); !ok {
		// The index's order changed under the trials and the heuristic
		// placement found no room after all: evict nothing.
		giveUp(unfreeChosen)
		return
	}
	if journal {
		c.x.commit()
	}
	c.commitPreemption(p, s, want, chosen, t)
}

// cannotPayOff reports whether paysOff would refuse every set of cands
// after whose eviction g's minimum fits, so that no trial is needed. It
// answers only when nothing makes paysOff accept without weighing: every
// candidate is reclaimed (of another queue than qs) with a known estimate,
// every accelerator it holds has run, g needs more accelerators than are
// free, and a refusal is remembered as a failed trial is (no ReclaimAfter
// nor ReclaimYoungerOnly). Then any set that makes room frees at least the
// accelerators g lacks, and loses, per accelerator, its run time plus the
// second wait paysOff counts: the cheapest accelerators of the candidates,
// taken in part if need be, bound the loss from below. The gain is bounded
// from above by the latest estimated end of the candidates and by when
// enough accelerators free anyway. Both bounds move with time as paysOff's
// do, the loss up and the gain down, so a refusal stands while the
// candidates do.
func (c *cycle) cannotPayOff(p *preemption, g *Gang, qs *queueState, members []Member, cands []*unit) bool {
	gpu := c.x.gpu
	if gpu < 0 || !c.sameCandidates() {
		return false
	}
	var accel, wantAccel int64
	for i := range members {
		r := members[i].Request[gpu]
		wantAccel += r
		accel += max(r, 1) // paysOff's weight
	}
	free := c.x.total[gpu]
	lack := wantAccel - free
	if lack <= 0 {
		return false
	}
	costs := p.costs[:0]
	var lastEnd int64
	for _, u := range cands {
		if u.qs == qs || u.run.Estimate <= 0 {
			return false
		}
		freed := p.freed[u.ri]
		for _, mi := range u.members {
			m := &u.run.Members[mi]
			if freed[mi] != notFreed || m.Request[gpu] <= 0 {
				continue
			}
			if m.Start >= c.now {
				return false // a set of such members loses nothing yet
			}
			lastEnd = max(lastEnd, m.Start+u.run.Estimate)
			costs = append(costs, accelCost{per: c.now - m.Start + max(u.since-u.run.Arrival, g.Estimate, 0), n: m.Request[gpu]})
		}
	}
	p.costs = costs
	end := min(lastEnd, p.enoughFreeAt(c, free, wantAccel))
	gain := accel * max(end-c.now, 0)
	slices.SortFunc(costs, func(a, b accelCost) int { return cmp.Compare(a.per, b.per) })
	var loss int64
	for _, k := range costs {
		take := min(k.n, lack)
		loss += take * k.per
		if lack -= take; lack == 0 || loss > gain {
			break
		}
	}
	// With lack left, no set makes room: the trial would fail.
	return loss > gain || lack > 0
}

// sameCandidates reports whether gangs of one queue and priority get the
// same candidates whatever their wait and arrival: neither ReclaimAfter nor
// ReclaimYoungerOnly is set. A refusal is then remembered for their shape,
// and candidate lists are shared.
func (c *cycle) sameCandidates() bool {
	return c.cfg.ReclaimAfter == 0 && !c.cfg.ReclaimYoungerOnly
}

// accelCost is what evicting one member loses per accelerator, and its
// accelerators.
type accelCost struct{ per, n int64 }

// candidates is eligible, remembered in p.lists for gangs that get the same
// list: those of one queue and priority, whose first members have the same
// constraints, and who reclaim or not alike. Their own units aside: a gang
// with running members lists neither from nor into p.lists.
func (c *cycle) candidates(p *preemption, g *Gang, qs *queueState, want Vector) ([]*unit, Vector) {
	if !c.sameCandidates() || c.sched.noShortcuts {
		return c.eligible(p, g, qs, want, true)
	}
	if p.running == nil {
		p.running = make(map[string]struct{})
	}
	if len(p.running) == 0 {
		for i := range c.snap.Running {
			p.running[c.snap.Running[i].Gang] = struct{}{}
		}
	}
	if _, own := p.running[g.ID]; own {
		return c.eligible(p, g, qs, want, true)
	}
	k := candidatesKey{qs: qs, priority: g.Priority, cons: g.Pending[0].Constraints,
		reclaims: c.now >= g.Arrival && !overused(qs.allocated.Add(want), qs.deserved)}
	if l, ok := p.lists[k]; ok {
		c.sched.shortcuts.reused.Add(1)
		return l.units, l.total
	}
	units, total := c.eligible(p, g, qs, want, false)
	if p.lists == nil {
		p.lists = make(map[candidatesKey]candidateList)
	}
	p.lists[k] = candidateList{units, total}
	return units, total
}

// candidatesKey identifies the gangs that candidates gives the same list.
type candidatesKey struct {
	qs       *queueState
	priority int32
	cons     *Constraints
	reclaims bool
}

type candidateList struct {
	units []*unit
	total Vector
}

// paysOff reports whether evicting chosen, whose members are freed in the
// index, loses no more than it gains g (Config.WeighLoss): the loss is what
// the freed members ran, each second weighted by the member's accelerators
// (1 without any), plus what they wait again: as long as their unit waited
// from its gang's arrival to its start, at least g's estimate; the gain is
// the accelerators of g's members times the time until the last freed
// member's estimated end, or until enough accelerators free anyway, after
// which g would have started without the eviction. While it pays off it records when it
// stops to (Plan.Until): the loss grows with the victims' running members,
// the gain shrinks with time. A refusal stands while the set does: the loss
// only grows and the gain only shrinks. Victims in g's own queue (qs), which
// its priority preempts, are left out of the weighing.
func (c *cycle) paysOff(p *preemption, g *Gang, qs *queueState, members []Member, chosen []*unit) bool {
	gpu := c.x.gpu
	weight := func(r Vector) int64 {
		if gpu >= 0 && r[gpu] > 0 {
			return r[gpu]
		}
		return 1
	}
	var lost, rate, end, freedAccel, again int64
	for _, u := range chosen {
		// Victims preempted by priority (in g's own queue) free room and
		// end as the others do, but what they lose is not weighed.
		byPriority := u.qs == qs
		if u.run.Estimate <= 0 && !byPriority {
			return true // unknown end: nothing to weigh against
		}
		freed := p.freed[u.ri]
		for _, mi := range u.members {
			if freed[mi] != u.id {
				continue
			}
			m := &u.run.Members[mi]
			if gpu >= 0 {
				freedAccel += m.Request[gpu]
			}
			if u.run.Estimate <= 0 {
				end = math.MaxInt64 // a priority victim of unknown end
			} else {
				end = max(end, m.Start+u.run.Estimate)
			}
			if byPriority {
				continue
			}
			w := weight(m.Request)
			lost += max(c.now-m.Start, 0) * w
			again += max(u.since-u.run.Arrival, g.Estimate, 0) * w
			if m.Start <= c.now {
				rate += w
			}
		}
	}
	if lost == 0 {
		return true
	}
	lost += again
	var accel, wantAccel int64
	for i := range members {
		accel += weight(members[i].Request)
		if gpu >= 0 {
			wantAccel += members[i].Request[gpu]
		}
	}
	if wantAccel > 0 {
		// Free now without the victims, the chosen being freed in the index.
		end = min(end, p.enoughFreeAt(c, c.x.total[gpu]-freedAccel, wantAccel))
	}
	if end == math.MaxInt64 {
		return true // no end in sight without the eviction: it gains without bound
	}
	ahead := max(end-c.now, 0)
	if lost > accel*ahead {
		return false
	}
	// lost + rate*d > accel*(ahead-d) from d = (accel*ahead-lost)/(rate+accel) on.
	c.changesAt(c.now + (accel*ahead-lost)/(rate+accel) + 1)
	return true
}

// enoughFreeAt returns the first time at which free accelerators plus those
// of the releases expected by then (Snapshot.Releases with a known time)
// reach want, or math.MaxInt64 if they never do.
func (p *preemption) enoughFreeAt(c *cycle, free, want int64) int64 {
	if free >= want {
		return c.now
	}
	if !p.releasesSorted {
		// The cycle's releases sorted by time; clamped to now they stay
		// sorted. Ties add up the same in any order.
		p.releasesSorted = true
		gpu := c.x.gpu
		var sum int64
		for _, r := range c.sortedReleases() {
			if r.Amount[gpu] > 0 && !c.snap.Nodes[r.Node].Unschedulable {
				sum += r.Amount[gpu]
				p.releaseAt = append(p.releaseAt, max(r.At, c.now))
				p.released = append(p.released, sum)
			}
		}
	}
	k := sort.Search(len(p.released), func(i int) bool { return free+p.released[i] >= want })
	if k == len(p.released) {
		return math.MaxInt64
	}
	return p.releaseAt[k]
}

// trial reports whether the minimum of g fits now, leaving nothing placed.
func (c *cycle) trial(g *Gang, members []Member, want Vector, t *txn) bool {
	clear(c.unfit)
	c.trialing = true
	_, ok := c.placeMinimum(g, members, want, t)
	c.trialing = false
	if ok {
		c.rollback(t)
	}
	return ok
}

// eligible lists, cheapest first, the units g may evict, and what they hold
// together (a member in several listed units counted once). own says
// whether g may have running units, which are not its candidates.
func (c *cycle) eligible(p *preemption, g *Gang, qs *queueState, want Vector, own bool) ([]*unit, Vector) {
	waited := c.now-g.Arrival >= c.cfg.ReclaimAfter
	if !waited {
		c.changesAt(g.Arrival + c.cfg.ReclaimAfter)
	}
	reclaims := waited && !overused(qs.allocated.Add(want), qs.deserved)
	// left[q.pos] is what victim queue q holds once the listed units are
	// gone, where leftGen[q.pos] == p.gen.
	p.left, p.leftGen = sized(p.left, len(c.order)), sized(p.leftGen, len(c.order))
	left, leftGen := p.left, p.leftGen
	var out []*unit
	var total Vector
	p.gen++
	// adds is what u holds beyond the members already listed. A unit
	// without siblings shares no member with another: it adds its amount,
	// and its members need no mark.
	adds := func(u *unit) Vector {
		if len(u.siblings) == 1 {
			return u.amount
		}
		var v Vector
		for _, mi := range u.members {
			if p.listed[u.ri][mi] != p.gen {
				v = v.Add(withPod(u.run.Members[mi].Request))
			}
		}
		return v
	}
	list := func(u *unit, add Vector) {
		if len(u.siblings) > 1 {
			for _, mi := range u.members {
				p.listed[u.ri][mi] = p.gen
			}
		}
		total = total.Add(add)
		out = append(out, u)
	}
	units := p.units
	if !reclaims {
		// Only units of lower priority can be listed: the units are
		// sorted by priority first.
		units = units[:sort.Search(len(units), func(i int) bool { return units[i].run.Priority >= g.Priority })]
	}
	for _, u := range units {
		if u.taken || own && u.run.Gang == g.ID {
			continue
		}
		if u.qs == qs {
			if u.run.Priority < g.Priority && c.relevant(u, g) && c.ranLongEnough(u, u.qs.q.PreemptMinRuntime, c.cfg.PreemptMinRuntime) {
				list(u, adds(u))
			}
			continue
		}
		if !reclaims || u.qs.q.NoReclaim || c.cfg.ReclaimYoungerOnly && !arrivedBefore(g, &Gang{ID: u.run.Gang, Arrival: u.run.Arrival}) ||
			!c.relevant(u, g) || !c.ranLongEnough(u, u.qs.q.ReclaimMinRuntime, c.cfg.ReclaimMinRuntime) {
			continue
		}
		u.weighed = true
		pos := u.qs.pos
		if leftGen[pos] != p.gen {
			left[pos], leftGen[pos] = u.qs.allocated, p.gen
		}
		held := left[pos]
		add := adds(u)
		if !overused(held, u.qs.deserved) || below(held.Sub(add), u.qs.deserved, held) {
			continue
		}
		left[pos] = held.Sub(add)
		list(u, add)
	}
	return out, total
}

// ranLongEnough reports whether u has run its minimum run time: the queue's
// own when set (> 0; < 0: none), else the default def. Until then it
// records when it will have (Plan.Until).
func (c *cycle) ranLongEnough(u *unit, own, def int64) bool {
	least := def
	if own != 0 {
		least = max(own, 0)
	}
	if least == 0 || c.now-u.since >= least {
		return true
	}
	c.changesAt(u.since + least)
	return false
}

// relevant reports whether some member of u runs on a node the first
// pending member of g could use.
func (c *cycle) relevant(u *unit, g *Gang) bool {
	cons := g.Pending[0].Constraints
	for _, mi := range u.members {
		if c.verdicts.filter(u.run.Members[mi].Node, cons) == feasible {
			return true
		}
	}
	return false
}

// freeUnit gives the room of u's members not already freed back to the
// index.
func (c *cycle) freeUnit(p *preemption, u *unit) {
	freed := p.freed[u.ri]
	for _, mi := range u.members {
		if freed[mi] == notFreed {
			m := &u.run.Members[mi]
			c.x.give(m.Node, withPod(m.Request))
			freed[mi] = u.id
		}
	}
}

// unfreeUnit takes back what freeUnit(u) gave.
func (c *cycle) unfreeUnit(p *preemption, u *unit) {
	freed := p.freed[u.ri]
	for _, mi := range u.members {
		if freed[mi] == u.id {
			m := &u.run.Members[mi]
			c.x.take(m.Node, withPod(m.Request))
			freed[mi] = notFreed
		}
	}
}

// commitPreemption records the eviction of victims for s.g, whose minimum t
// holds placed, and holds that placement for it.
func (c *cycle) commitPreemption(p *preemption, s stuckGang, want Vector, victims []*unit, t *txn) {
	g, qs := s.g, s.qs
	clear(p.lists) // what queues hold changes, and units are taken
	var pods int
	var gangs []string
	var queues []string
	for _, u := range victims {
		freed := p.freed[u.ri]
		var amount Vector
		for _, mi := range u.members {
			if freed[mi] == evicted {
				continue
			}
			m := &u.run.Members[mi]
			freed[mi] = evicted
			amount = amount.Add(withPod(m.Request))
			pods++
			c.plan.Evictions = append(c.plan.Evictions, Eviction{Gang: u.run.Gang, Member: m.Name,
				Node: c.snap.Nodes[m.Node].Name, Preemptor: g.ID, Reclaim: u.qs != qs,
				PreemptorPriority: g.Priority, VictimPriority: u.run.Priority})
		}
		u.qs.allocated = u.qs.allocated.Sub(amount)
		if !slices.Contains(gangs, u.run.Gang) {
			gangs = append(gangs, u.run.Gang)
		}
		if u.qs != qs && !slices.Contains(queues, u.qs.q.Name) {
			queues = append(queues, u.qs.q.Name)
		}
		// A whole gang spends all its units; an elastic member, its own,
		// and the gang's whole unit no longer counts it.
		for _, o := range u.siblings {
			switch {
			case u.whole || o == u:
				o.taken = true
			case o.whole:
				o.amount = o.amount.Sub(amount)
			}
		}
	}
	qs.allocated = qs.allocated.Add(want)
	for _, n := range t.nodes {
		var amount Vector
		for _, pl := range t.placed {
			if pl.node == n {
				amount = amount.Add(pl.req)
			}
		}
		c.plan.Holds = append(c.plan.Holds, Hold{Gang: g.ID, Node: n, Amount: amount})
	}
	defer t.reset() // the placement stays taken in the index: later preemptors cannot count on it
	st := &c.diag.Pending[s.status]
	st.Reason = ReasonPreempting
	st.resvNodes = 0
	switch {
	case len(victims) == 0:
		st.text = fmt.Sprintf("fits once %d evicted member(s) have terminated; their room is held for it", c.terminatingOn(t.nodes))
	case len(queues) > 0:
		st.text = fmt.Sprintf("reclaiming from queue %s, over its deserved share: evicting %d pod(s) of %s; room held for it until they terminate",
			strings.Join(queues, ", "), pods, strings.Join(gangs, ", "))
	default:
		st.text = fmt.Sprintf("preempting lower-priority work in queue %s: evicting %d pod(s) of %s; room held for it until they terminate",
			qs.q.Name, pods, strings.Join(gangs, ", "))
	}
}

// terminatingOn counts the terminating members on nodes.
func (c *cycle) terminatingOn(nodes []int) int {
	n := 0
	for _, r := range c.snap.Running {
		for _, m := range r.Members {
			if m.Terminating && slices.Contains(nodes, m.Node) {
				n++
			}
		}
	}
	return n
}
