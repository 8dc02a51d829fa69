package core

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// Reservation with backfill, so that big gangs do not starve behind streams
// of small ones.
//
// When Config.ReserveAfter (or the queue's own ReserveAfter) is set, each
// FairShare cycle, once the queues' shares are known, picks the waiting gangs
// that deserve a reservation: among the gangs that have waited at least that
// long and are not yet placed, and the heads of StrictOrder queues whatever
// their wait, the first Config.Reservations: gangs holding some members but
// not their minimum first, then by priority then arrival (moved back by
// their work with Config.ReserveByWork, below). For
// each, it finds the earliest time T at which the gang's minimum fits,
// counting on the running members' releases (Snapshot.Releases) in order of
// their expected end, and where it would be placed at T. The nodes of that
// placement are reserved for the cycle: the gang itself may use them, and so
// may a gang with an estimate that ends by T (backfill); no other gang may.
// A gang without an estimate never runs on reserved nodes, so it can never
// delay a reservation. Members whose end is unknown are never counted on: if
// the gang cannot fit without them, nothing is reserved for it.
//
// Each later reservation is computed as if the earlier ones' gangs held
// their room from now until T plus their estimate (for ever without one), so
// two reservations never count on the same room at the same time: this is
// what lets the second gang in line gather nodes while the first waits,
// rather than after it has started.
//
// A gang whose queue holds more than its deserved share counts only on the
// releases of its own queue: it waits for its queue's own members to end,
// and the room other queues free stays theirs. Without this rule a queue
// that runs many small gangs beyond its share would also make the other
// queues drain nodes for its big one. When its own queue's releases would
// never make room for it, nothing is reserved for it until the queue is back
// within its share, and its status says so (GangStatus.Message).
//
// With Config.ReserveAfterBacklog, Config.ReserveAfter is a floor: a gang
// also waits, before it becomes a candidate, nine tenths (backlogShare) of
// the time the cluster needs to run the work waiting now, the backlog. The
// work is the sum, over the waiting gangs that have an estimate, of what
// they ask of the accelerator (of CPU on a cluster without one) times their
// estimate (and their queue's WorkFactor if they declared it); the time is
// how long the schedulable nodes take to run it on what they have free now
// and on what each running member frees at its expected end (backlog.wait).
// A gang that arrived now would wait about that long if gangs ran in arrival
// order and no gang waited for room: the running gangs' work counts only as
// far as it keeps the cluster from the waiting work, not a member that ends
// after the backlog has run (docs/evaluation-notebook.md, "A ninth pass" and "A tenth
// pass"). Under overload, when every gang waits days, a fixed threshold
// sends every gang past it, small or big, to the few reservations in arrival
// order, and each drains nodes that the others, placed as they come, would
// have used; with the backlog added only the gangs that waited longer than
// arrival order would have made them, the ones the stream of smaller work
// keeps passing over, drain nodes. When little waits, the floor alone
// applies. A queue's own ReserveAfter is taken as it is
// (docs/evaluation.md).
//
// With Config.ReserveAhead, a gang becomes a candidate that long before it
// is due (its threshold, ReserveAfter or the backlog), and its reservation
// starts no sooner than it is due: until then its nodes take only the gangs
// expected to end by then, besides the reserved gang itself, which may start
// as soon as it fits. The nodes stop taking long work ahead of time and keep
// taking short work, gangs of any size among it, rather than draining only
// once the gang is due. On the traces of docs/evaluation-notebook.md ("An eighth
// pass") this lowered both the mean completion time and the big gangs' wait
// under overload; once due, the reservation is what it was without it.
// With Config.ReserveAfterBacklog, only the backlog's part of the threshold
// is reserved ahead of: a gang is never a candidate before it has waited
// the floor, Config.ReserveAfter. When little waits, the floor is the whole
// threshold, most waiting gangs are within ReserveAhead of it, and
// reservations made for them at once kept long gangs off their nodes for
// nothing; a lightly loaded cluster's big gangs waited longer for it
// (docs/evaluation-notebook.md, "A twelfth pass").
//
// With Config.ReserveByWork, the candidates of equal priority take their
// turn by their arrival moved back by their work: workWeight times the time
// all the schedulable accelerators would take to run what the gang asks of
// them for its estimate, by at most ReserveByWork. Under overload more
// gangs are in line than there are reservations, and in arrival order the
// gangs of one or two nodes that run for hours, which need whole nodes,
// wait behind the biggest gangs that arrived before them while whole nodes
// free only through reservations; a gang's key lets it pass those that
// arrived a little before it and ask more, and the bound keeps every gang
// from being passed by one that arrived more than ReserveByWork after it.
// Without the bound the biggest gangs were passed by days, and the longest
// waits grew by up to two thirds (docs/evaluation-notebook.md, "An eleventh pass" and
// "A fifteenth pass"). Gangs without an estimate keep their arrival.
//
// Reservations are computed afresh every cycle from the snapshot, so they
// follow what actually happens: a job that ends early brings T forward, one
// that overruns its estimate pushes it back. A member past its estimated
// end is expected to run as long again as it has overrun, at least a minute
// (expectedEnd, as in a forecast): the reservation then takes nodes that
// free sooner, if there are any, and gangs that end before its start may
// backfill meanwhile. Expecting it to end any moment would hold the
// reservation on its node with no backfill, cycle after cycle, which costs
// much mean JCT when estimates are short (docs/evaluation.md, "Wrong
// estimates"). Only what the gang needs on a reserved node is off limits: a
// gang that runs past T may still take the node's spare room, what the node
// will have at T beyond the gang's needs.

// reservation is one of the cycle's reservations.
type reservation struct {
	gang  *Gang
	start int64
	// ahead: start is when the gang is due, later than its nodes are
	// expected to be free for it (Config.ReserveAhead); it may start
	// sooner.
	ahead bool
	// slot is, by node, the node's index in spare, or -1 when the node is
	// not reserved.
	slot  []int32
	count int
	// spare is, for reserved nodes, the room they have at start beyond
	// what the reserved gang needs there: what other gangs may still take.
	spare []Vector
}

// reserveTries bounds how many candidates reserve tries per reservation.
const reserveTries = 4

// reserve picks the gangs that deserve a reservation and reserves the nodes
// each will get as they free up. runFairShare calls it once the queues have
// their admitted gangs, sorted, and their shares; schedulable is what the
// nodes that take new pods have in all.
func (c *cycle) reserve(schedulable Vector) {
	cands, waiting := c.mem.cands[:0], c.mem.waiting[:0]
	defer func() { c.mem.cands, c.mem.waiting = cands[:0], waiting }()
	ahead := c.cfg.ReserveAhead
	var bl backlog
	if c.cfg.ReserveAfterBacklog && c.cfg.ReserveAfter > 0 {
		bl = c.backlog(schedulable)
	}
	for _, qs := range c.order {
		if qs.q.Closed {
			continue
		}
		after, own := c.cfg.ReserveAfter, qs.q.ReserveAfter > 0
		if own {
			after = qs.q.ReserveAfter
		}
		head := qs.q.StrictOrder // the next unsatisfied gang is the queue's head
		for i, g := range qs.gangs {
			if g.Bound >= g.MinMember {
				continue
			}
			isHead := head
			head = false
			wait, floor := after, int64(0)
			if !own && c.cfg.ReserveAfterBacklog {
				floor = after // ahead of the backlog's part only
				if len(bl.steps) > 0 {
					wait = max(after, bl.without(g, qs.wants[i], qs.q.WorkFactor))
				}
			}
			if !isHead && wait <= 0 {
				continue
			}
			var due int64 // when g is due, if its reservation may start no sooner
			key := g.Arrival + c.workDelay(g, qs.wants[i], qs.q.WorkFactor, schedulable)
			if !isHead {
				due = g.Arrival + wait
				if from := max(due-ahead, g.Arrival+floor); c.now < from {
					waiting = append(waiting, waiter{g, from, key})
					continue
				}
			}
			if _, over := exceeds(qs.allocated.Add(qs.wants[i]), qs.q.Capability); over {
				continue // its queue would not let it run: reserving would only idle nodes
			}
			cands = append(cands, candidate{g, due, key})
		}
	}
	if len(cands) == 0 {
		c.waitersChange(waiting, nil)
		return
	}
	// Partial gangs come first in the cycle too. Only the first few
	// candidates are ever tried: they are taken from a heap in that order
	// rather than sorted all (the order ends on the gangs' unique IDs).
	heapifyCands(cands)
	releases := c.sortedReleases()
	limit := max(c.cfg.Reservations, 1)
	var taken []placement // what earlier reservations will hold
	var own []*Release
	var ownRoom map[string]Vector // what each queue's releases free, in all
	// A gang that fits at no foreseeable time is passed over for the next,
	// but the tries are bounded: each costs a placement over the cluster.
	tries := 0
	var fs *futures
	defer func() {
		if fs != nil {
			fs.release(&c.sched.futures)
		}
	}()
	var last *candidate // the last candidate taken
	for len(cands) > 0 {
		if len(c.resvs) == limit || tries == reserveTries*limit {
			break
		}
		var next candidate
		next, cands = popCand(cands)
		last = &next
		cand := next.g
		rel := releases
		if c.queues[cand.Queue].share > 1 {
			if ownRoom == nil {
				ownRoom = make(map[string]Vector)
				for _, r := range releases {
					ownRoom[r.Queue] = ownRoom[r.Queue].Add(r.Amount)
				}
			}
			if _, want := minimumOf(cand); !want.Fits(c.x.total.Add(ownRoom[cand.Queue])) {
				c.noteOverShare(cand)
				continue // more than is free and its queue will free: not worth a try
			}
			// A queue over its deserved share counts only on what it holds
			// itself: its gang waits for its own members to end, and never
			// keeps other queues from the room they free.
			own = own[:0]
			for _, r := range releases {
				if r.Queue == cand.Queue {
					own = append(own, r)
				}
			}
			rel = own
		}
		tries++
		if fs == nil {
			fs = c.newFutures()
		}
		res, placed := c.reserveFor(fs, cand, rel, taken)
		if res == nil {
			if len(rel) < len(releases) {
				c.noteOverShare(cand) // it fits nowhere on what its own queue frees
			}
			continue
		}
		if next.due > res.start {
			// Reserved ahead: the gang's room is there before it is due,
			// and gangs that end by then may use it meanwhile.
			res.start, res.ahead = next.due, true
		}
		c.resvs = append(c.resvs, res)
		taken = append(taken, placed...)
		if cand.Estimate > 0 {
			// As a stable sort by time would: after every release of the
			// same time, in the order of placed.
			at := res.start + cand.Estimate
			i, _ := slices.BinarySearchFunc(releases, at, func(r *Release, at int64) int {
				if r.At <= at {
					return -1
				}
				return 1
			})
			add := make([]Release, len(placed))
			ptrs := make([]*Release, len(placed))
			for k, p := range placed {
				add[k] = Release{Node: p.node, Amount: p.req, At: at, Queue: cand.Queue}
				ptrs[k] = &add[k]
			}
			releases = slices.Insert(releases, i, ptrs...)
		}
	}
	if len(c.resvs) < limit && tries < reserveTries*limit {
		last = nil // a candidate after the last would have been taken too
	}
	c.waitersChange(waiting, last)
}

// workWeight is how many times the time its work would take the whole
// cluster a gang's place in line for a reservation moves back
// (Config.ReserveByWork): chosen among 1 to 32 on the traces of
// docs/evaluation-notebook.md ("An eleventh pass").
const workWeight = 8

// workDelay is how far back g's work moves its place in line for a
// reservation: workWeight times the seconds the schedulable accelerators
// (CPU on a cluster without them) would take to run what g asks of them
// for its estimate (as the backlog counts it, with its queue's WorkFactor
// wf), at most Config.ReserveByWork; 0 without an estimate.
func (c *cycle) workDelay(g *Gang, want Vector, wf float64, schedulable Vector) int64 {
	limit := c.cfg.ReserveByWork
	if limit <= 0 || g.Estimate <= 0 {
		return 0
	}
	dim := c.workDim()
	if schedulable[dim] <= 0 {
		return limit
	}
	d := workWeight * workOf(g, want[dim], wf) / float64(schedulable[dim])
	return int64(min(d, float64(limit)))
}

// noteOverShare records that g, a reservation candidate, got none because its
// queue is over its deserved share and counts only on its own releases,
// which do not make room for it: its status says so (GangStatus.Message).
func (c *cycle) noteOverShare(g *Gang) {
	if c.overShare == nil {
		c.overShare = make(map[*Gang]bool)
	}
	c.overShare[g] = true
}

// backlogShare is the share of the backlog's time a gang waits out before
// it is due: a little under all of it, so that a big gang is due a little
// before arrival order would have started it and its reservation, which
// drains nodes, is in place about then. On the twenty traces of
// docs/evaluation-notebook.md ("A tenth pass"), 0.9 and 1 met every target on 18 and
// 17 of them; 0.85 and 0.95, measured with the share taken of all the
// waiting work before the gang's own part came off, on 16 and 17.
const backlogShare = 0.9

// untrustedOverrun is the overrun factor (Queue.OverrunFactor) above which
// the backlog does not count on the expected ends of a queue's running
// members: one in ten of its latest gangs ran e times their corrected
// estimate or longer, as when each estimate is off by exp(N(0, σ)) with
// σ above about 0.78. Waiting on ends that far off held big gangs back: at
// σ = 1 the big jobs' p99 wait on Philly was 24d1h counting them, 17d18h
// before the backlog counted them, and 17d4h with this rule
// (docs/evaluation-notebook.md, "Backfill by how far one in ten overran"). Right
// estimates, or estimates off by one factor, give 1, and the rule never
// applies. Of the thresholds run (1.5, 2, e and 4: the same page,
// "The threshold"), e met every target on the most traces at σ = 0.5
// and σ = 1.
const untrustedOverrun = math.E

// backlog is the work of the waiting gangs that have an estimate, in open
// queues: what each asks of the accelerator (of CPU without one) times its
// estimate, times its queue's WorkFactor where the estimate was declared;
// and, to say how long it takes to run, what the schedulable nodes free
// from now on.
type backlog struct {
	dim  int
	work float64 // can pass 2^63 in resource-seconds: CPU in millicores
	// steps give, from now, the room the schedulable nodes have free over
	// time: the first is now, each next one the expected end of running
	// members, after which the rate holds until the next. The rate after
	// the last is what the schedulable nodes have, less what members
	// without a known end hold. None when nothing waits or no node is
	// schedulable: the backlog is then off.
	steps []freeStep
}

// freeStep is a time (seconds from now), the free room integrated over time
// from now until then (resource-seconds), and the room free from then on.
type freeStep struct{ at, area, rate float64 }

// backlog sums the cycle's backlog over nodes that have schedulable in all.
// The queues' gangs must be admitted (runFairShare).
func (c *cycle) backlog(schedulable Vector) backlog {
	b := backlog{dim: c.workDim()}
	for _, qs := range c.order {
		if qs.q.Closed {
			continue // its gangs do not run, whatever waits
		}
		for i, g := range qs.gangs {
			b.work += b.of(g, qs.wants[i], qs.q.WorkFactor)
		}
	}
	if b.work > 0 && schedulable[b.dim] > 0 {
		b.steps = c.freeSteps(b.dim, c.mem.steps[:0])
		c.mem.steps = b.steps
	}
	return b
}

// freeSteps appends to dst the steps of the room free in dimension dim on
// the schedulable nodes: what they have free now, and what each running
// member with a known end frees then. A member past its estimated end is
// expected to end as a forecast expects it (expectedEnd); members without a
// known end never free theirs. A member of a queue whose estimates cannot
// be counted on one by one (its OverrunFactor is above untrustedOverrun)
// counts as freeing its room now, as every member did in the backlog
// before it counted their ends. The steps are not counted on for any
// placement, so unlike sortedReleases they do not make the plan change a
// second later when ends have passed.
func (c *cycle) freeSteps(dim int, dst []freeStep) []freeStep {
	ends := c.mem.ends[:0]
	step := freeStep{rate: float64(c.x.total[dim])}
	untrusted := slices.ContainsFunc(c.order, func(qs *queueState) bool { return qs.q.OverrunFactor > untrustedOverrun })
	for i := range c.snap.Releases {
		r := &c.snap.Releases[i]
		if !countedOn(r, c.snap) || c.snap.Nodes[r.Node].Unschedulable || r.Amount[dim] <= 0 {
			continue
		}
		if untrusted {
			if qs := c.queues[r.Queue]; qs != nil && qs.q.OverrunFactor > untrustedOverrun {
				step.rate += float64(r.Amount[dim]) // its end cannot be known: counted as free now
				continue
			}
		}
		at := expectedEnd(r.At, c.now, DefaultForecastStep)
		ends = append(ends, freeStep{at: float64(at - c.now), rate: float64(r.Amount[dim])})
	}
	slices.SortFunc(ends, func(a, b freeStep) int { return cmp.Compare(a.at, b.at) })
	c.mem.ends = ends
	dst = append(dst, step)
	for _, e := range ends {
		step.area += step.rate * (e.at - step.at)
		step.at = e.at
		step.rate += e.rate
		dst = append(dst, step)
	}
	return dst
}

// of is g's part of the backlog; want is what g needs (queueState.wants),
// wf its queue's WorkFactor.
func (b *backlog) of(g *Gang, want Vector, wf float64) float64 {
	if g.Bound >= g.MinMember {
		return 0
	}
	return workOf(g, want[b.dim], wf)
}

// workDim is the resource in which the backlog and workDelay count work:
// the accelerator, or CPU on a cluster without one.
func (c *cycle) workDim() int {
	if c.x.gpu < 0 {
		return CPU
	}
	return c.x.gpu
}

// workOf is what g, asking amount of a resource, asks of it for its
// estimate: amount times the estimate, times the queue's WorkFactor wf when
// the estimate was declared; 0 without an estimate.
func workOf(g *Gang, amount int64, wf float64) float64 {
	if g.Estimate <= 0 {
		return 0
	}
	if !g.EstimateDeclared || !(wf > 0) || math.IsInf(wf, 0) {
		wf = 1
	}
	return float64(amount) * float64(g.Estimate) * wf
}

// without returns how long, in seconds, g waits before it is due by the
// backlog: backlogShare of the time the schedulable nodes need to run the
// backlog but for g's own part, about how long g would wait if gangs ran
// in arrival order and g had arrived now.
func (b *backlog) without(g *Gang, want Vector, wf float64) int64 {
	return b.wait(max(b.work-b.of(g, want, wf), 0) * backlogShare)
}

// wait returns how long, in seconds from now, the schedulable nodes take
// to run work on the room they have free (steps): the time at which that
// room, integrated from now, reaches work.
func (b *backlog) wait(work float64) int64 {
	if work <= 0 || len(b.steps) == 0 {
		return 0
	}
	// The last step whose area is below work: the room it leaves free runs
	// the rest, unless the next step comes first (then its area is not
	// below work).
	i, _ := slices.BinarySearchFunc(b.steps, work, func(s freeStep, w float64) int {
		if s.area < w {
			return -1
		}
		return 1
	})
	s := b.steps[max(i-1, 0)]
	t := math.Inf(1)
	if s.rate > 0 {
		t = s.at + (work-s.area)/s.rate
	}
	if i < len(b.steps) {
		t = min(t, b.steps[i].at)
	}
	return int64(min(t, float64(math.MaxInt64/2)))
}

// waiter is a gang that is not a reservation candidate only for want of
// waiting: it becomes one at at.
type waiter struct {
	g   *Gang
	at  int64
	key int64 // its place in line, as candidate.key
}

// waitersChange records when the reservations may change as waiting gangs
// become candidates (Plan.Until): the candidates are taken in order and
// only the first few are, so a new one changes what is taken only if it
// comes before last, the last taken when no more would have been; any new
// one does when last is nil.
func (c *cycle) waitersChange(waiting []waiter, last *candidate) {
	for _, w := range waiting {
		if last == nil || candBefore(candidate{w.g, 0, w.key}, *last) {
			c.changesAt(w.at)
		}
	}
}

// sortedReleases returns the snapshot's releases that are counted on (a
// known time, a known node), stably sorted by time. They are read only, and
// made once per cycle: their capacity is their length, so that a caller
// that inserts gets a copy.
func (c *cycle) sortedReleases() []*Release {
	if c.releasesKnown {
		return c.releases
	}
	c.releasesKnown = true
	all := c.snap.Releases
	// A member past its estimated end is counted on as a forecast counts
	// on it (expectedEnd): it runs as long again as it has overrun, at
	// least a minute, rather than ending any moment, so that a reservation
	// does not wait on its node cycle after cycle. Those ends move with the
	// time, so the plan may change a second later; before any has passed,
	// it changes once the first passes (below).
	if releasesPassed(c.snap, c.now) {
		c.mem.releases = expectedReleases(c.mem.releases[:0], c.snap, c.now, DefaultForecastStep)
		all = c.mem.releases
		c.changesAt(c.now + 1)
	}
	releases := make([]*Release, 0, len(all))
	sorted := true
	for i := range all {
		if r := &all[i]; countedOn(r, c.snap) {
			if n := len(releases); n > 0 && r.At < releases[n-1].At {
				sorted = false
			}
			releases = append(releases, r)
		}
	}
	if !sorted {
		// By time then position: the stable sort by time.
		perm := make([]int32, 0, len(releases))
		for i := range all {
			if r := &all[i]; countedOn(r, c.snap) {
				perm = append(perm, int32(i))
			}
		}
		slices.SortFunc(perm, func(a, b int32) int {
			if ta, tb := all[a].At, all[b].At; ta != tb {
				return cmp.Compare(ta, tb)
			}
			return cmp.Compare(a, b)
		})
		for i, k := range perm {
			releases[i] = &all[k]
		}
	}
	c.releases = releases[:len(releases):len(releases)]
	if len(releases) > 0 {
		// Every release is still to come: once the first has passed
		// without its member ending, all are expected later, and the
		// reservations and the gains of evictions read from them change.
		c.changesAt(releases[0].At)
	}
	return c.releases
}

// releasesPassed reports whether one of snap's releases is due by now.
func releasesPassed(snap *Snapshot, now int64) bool {
	for i := range snap.Releases {
		if at := snap.Releases[i].At; at > 0 && at <= now {
			return true
		}
	}
	return false
}

// candBefore is the order of reservation candidates: gangs holding some
// members but not their minimum first, then higher priority, then the
// earlier key (arrival, moved back by work with Config.ReserveByWork), then
// earlier arrival, then ID.
func candBefore(a, b candidate) bool {
	if pa, pb := partial(a.g), partial(b.g); pa != pb {
		return pa
	}
	if a.g.Priority != b.g.Priority {
		return a.g.Priority > b.g.Priority
	}
	if a.key != b.key {
		return a.key < b.key
	}
	return arrivedBefore(a.g, b.g)
}

// candidate is a gang that may get a reservation in this cycle; due, when
// > 0, is when it is due, before which its reservation does not start
// (Config.ReserveAhead); key is its place in line: its arrival plus
// workDelay.
type candidate struct {
	g   *Gang
	due int64
	key int64
}

// heapifyCands makes h a heap by candBefore, the first candidate on top.
func heapifyCands(h []candidate) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftCand(h, i)
	}
}

// popCand returns the first candidate of heap h and the heap without it.
func popCand(h []candidate) (candidate, []candidate) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = candidate{}
	h = h[:last]
	siftCand(h, 0)
	return top, h
}

func siftCand(h []candidate, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && candBefore(h[r], h[l]) {
			m = r
		}
		if !candBefore(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// futures is the scratch of the cycle's reservation searches: the cluster
// as it will be once some releases happened, and a cycle of its own to
// place a gang over it. Each try rebuilds the free index in place, with the
// nodes filed as newFreeIndex would file them, so a try places exactly as
// a cycle over a copy of the nodes with those resources used would.
type futures struct {
	fc    cycle
	x     freeIndex
	dom   *domains // kept from one try to the next, its free recomputed
	now   []Vector // what every node has free now
	cur   []Vector // free after the first k releases, before placement
	k     int
	total Vector // the sum over schedulable nodes of cur, less what is below zero
	t     txn
}

// newFutures returns the scratch of the cycle's reservation searches; the
// cycle hands it back with release.
func (c *cycle) newFutures() *futures {
	fs, _ := c.sched.futures.Get().(*futures)
	if fs == nil {
		fs = new(futures)
	}
	n := len(c.snap.Nodes)
	fs.now, fs.cur = sized(fs.now, n), sized(fs.cur, n)
	buckets := sized(fs.x.buckets, len(c.x.buckets))
	for b := range buckets {
		buckets[b] = buckets[b][:0]
	}
	fs.x = freeIndex{gpu: c.x.gpu, free: sized(fs.x.free, n), pos: sized(fs.x.pos, n), bucket: sized(fs.x.bucket, n),
		buckets: buckets}
	fs.dom, fs.k = nil, 0
	for i := range c.snap.Nodes {
		fs.now[i] = c.snap.Nodes[i].Allocatable.Sub(c.snap.Nodes[i].Used)
	}
	unfit := fs.fc.unfit
	if unfit == nil {
		unfit = make(map[shapeKey]*nodeReport)
	}
	fs.fc = cycle{cfg: c.cfg, snap: &Snapshot{Resources: c.snap.Resources, Nodes: c.snap.Nodes}, now: c.now,
		x: &fs.x, unfit: unfit, trialing: true, verdicts: c.verdicts, candBuf: fs.fc.candBuf}
	return fs
}

// release hands fs back to the scheduler's pool, holding nothing of the
// cycle.
func (fs *futures) release(pool *sync.Pool) {
	clear(fs.fc.unfit)
	fs.fc = cycle{unfit: fs.fc.unfit, candBuf: fs.fc.candBuf}
	fs.dom, fs.x.dom = nil, nil
	fs.t.reset()
	pool.Put(fs)
}

// sized returns s with length n, reusing its memory if it has the room.
func sized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// start sets the future to now, less what taken lists and the holds of
// gangs other than g, with no release counted yet.
func (fs *futures) start(c *cycle, g *Gang, taken []placement) {
	copy(fs.cur, fs.now)
	for _, p := range taken {
		fs.cur[p.node] = fs.cur[p.node].Sub(p.req)
	}
	for id, hs := range c.holds {
		if id == g.ID {
			continue
		}
		for _, h := range hs {
			fs.cur[h.node] = fs.cur[h.node].Sub(h.amount) // held for its gang from now on
		}
	}
	fs.k = 0
	fs.total = Vector{}
	for n := range fs.cur {
		if !c.snap.Nodes[n].Unschedulable {
			fs.total = fs.total.Add(positive(fs.cur[n]))
		}
	}
}

// seek moves the future to the moment the first k of releases happened.
func (fs *futures) seek(c *cycle, releases []*Release, k int) {
	for ; fs.k < k; fs.k++ {
		r := releases[fs.k]
		fs.set(c, r.Node, fs.cur[r.Node].Add(r.Amount))
	}
	for fs.k > k {
		fs.k--
		r := releases[fs.k]
		fs.set(c, r.Node, fs.cur[r.Node].Sub(r.Amount))
	}
}

func (fs *futures) set(c *cycle, n int, f Vector) {
	if !c.snap.Nodes[n].Unschedulable {
		fs.total = fs.total.Sub(positive(fs.cur[n])).Add(positive(f))
	}
	fs.cur[n] = f
}

// positive returns v with what is below zero counted as zero.
func positive(v Vector) Vector {
	for d := range v {
		v[d] = max(v[d], 0)
	}
	return v
}

// reserveFor finds the earliest time at which g's minimum fits, once the
// first of releases happened and with what taken lists held, and reserves
// the nodes of that placement; nil if it never fits.
func (c *cycle) reserveFor(fs *futures, g *Gang, releases []*Release, taken []placement) (*reservation, []placement) {
	fs.start(c, g, taken)
	// The smallest k such that the gang fits once the first k releases
	// happened; fitting is monotone in k.
	placed, free, fits := c.fitsAfter(fs, g, releases, len(releases))
	if !fits {
		return nil, nil
	}
	k := len(releases)
	for lo, hi := 0, len(releases); lo < hi; {
		mid := (lo + hi) / 2
		if p, f, fits := c.fitsAfter(fs, g, releases, mid); fits {
			hi, k, placed, free = mid, mid, p, f
		} else {
			lo = mid + 1
		}
	}
	start := c.now
	if k > 0 {
		start = max(start, releases[k-1].At)
	}
	if start == c.now {
		// The start moves with the time, and with it what later
		// reservations count on.
		c.changesAt(c.now + 1)
	}
	res := &reservation{gang: g, start: start, slot: make([]int32, len(c.snap.Nodes))}
	for n := range res.slot {
		res.slot[n] = -1
	}
	for i, p := range placed {
		if res.slot[p.node] < 0 {
			res.slot[p.node] = int32(len(res.spare))
			res.spare = append(res.spare, free[i])
		}
		k := res.slot[p.node]
		res.spare[k] = res.spare[k].Sub(p.req)
	}
	res.count = len(res.spare)
	for k := range res.spare {
		res.spare[k] = positive(res.spare[k])
	}
	return res, placed
}

// fitsAfter reports whether g's minimum fits once the first k of releases
// happened, and where, by placing it in a cycle of its own over that future
// state; with each placement, what its node had free before any was made.
// A future whose free resources do not add up to the minimum is refused
// without a try: no placement could succeed there.
func (c *cycle) fitsAfter(fs *futures, g *Gang, releases []*Release, k int) ([]placement, []Vector, bool) {
	fs.seek(c, releases, k)
	members, want := minimumOf(g)
	if !want.Fits(fs.total) {
		return nil, nil, false
	}
	copy(fs.x.free, fs.cur)
	fs.x.refile(c.snap.Nodes)
	if fs.dom != nil {
		fs.dom.refree(&fs.x)
		fs.x.dom = fs.dom
	}
	fc := &fs.fc
	clear(fc.unfit)
	_, ok := fc.placeMinimum(g, members, want, &fs.t)
	fs.dom = fs.x.dom
	if !ok {
		return nil, nil, false
	}
	placed := slices.Clone(fs.t.placed)
	free := make([]Vector, len(placed))
	for i, p := range placed {
		free[i] = fs.cur[p.node]
	}
	return placed, free, true
}

// mayUse reports whether the gang being placed may put a member with
// request r on node n, where t (if not nil) already placed some: on a
// reserved node, only the reserved gang and gangs that end before it starts
// may use more than the node's spare room, what the node has beyond the
// reservation's needs at its start. A gang's holds on n add to the room it
// may use there: reservations never count on held room (futures.start).
func (c *cycle) mayUse(n int, r Vector, t *txn) bool { return c.refusedBy(n, r, t) < 0 }

// refusedBy returns the index in c.resvs of the first reservation that
// keeps the gang being placed from putting r on n (mayUse), or -1.
func (c *cycle) refusedBy(n int, r Vector, t *txn) int {
	added := false
	var held Vector
	for i, rv := range c.resvs {
		if c.open&(1<<i) != 0 || rv.slot[n] < 0 {
			continue
		}
		if !added {
			added = true
			if t != nil {
				for _, p := range t.placed {
					if p.node == n {
						r = r.Add(p.req)
					}
				}
			}
			held = c.heldLeft(n)
		}
		if !r.Fits(rv.spare[rv.slot[n]].Add(held)) {
			return i
		}
	}
	return -1
}

// heldLeft is what the open holds of the gang being placed keep on n and
// its placements have not used yet.
func (c *cycle) heldLeft(n int) Vector {
	var v Vector
	if c.holder == nil {
		return v
	}
	for _, h := range c.holds[c.holder.ID] {
		if h.node == n && h.state == holdOpen {
			v = v.Add(positive(h.amount.Sub(h.covered)))
		}
	}
	return v
}

// spend records that the gang being placed put r on n: what its open holds
// on n do not cover comes out of the spare room of the reservations it may
// not use.
func (c *cycle) spend(n int, r Vector) {
	if c.holder != nil {
		for _, h := range c.holds[c.holder.ID] {
			if h.node != n || h.state != holdOpen {
				continue
			}
			for d := range r {
				cover := min(max(h.amount[d]-h.covered[d], 0), max(r[d], 0))
				h.covered[d] += cover
				r[d] -= cover
			}
		}
	}
	for i, rv := range c.resvs {
		if k := rv.slot[n]; c.open&(1<<i) == 0 && k >= 0 {
			rv.spare[k] = rv.spare[k].Sub(r)
		}
	}
}

// openFor returns the reservations g may use beyond their spare room, one
// bit each: those of g itself and the later ones, which were computed
// around g's, and those that start after g is expected to end (by
// backfillEstimate).
func (c *cycle) openFor(g *Gang) uint64 {
	var open uint64
	if len(c.resvs) == 0 {
		return open // nothing to open, and no queue lookup for each gang tried
	}
	est := c.backfillEstimate(g)
	for i, rv := range c.resvs {
		if g == rv.gang {
			return open | ^uint64(0)<<i
		}
		if est > 0 && c.now+est <= rv.start {
			open |= 1 << i
			c.changesAt(rv.start - est + 1) // it no longer ends in time
		}
	}
	return open
}

// backfillEstimate is how long g is taken to run when it would use nodes
// reserved for another gang: its estimate, when it was declared, times the
// larger of its queue's WorkFactor and OverrunFactor when that is above 1:
// when the queue's latest completed gangs ran longer, in sum, than their
// corrected estimates said, or one in ten of them ran that much longer. A
// gang that overruns onto a reservation delays the gang it was made for,
// so its queue's record of overrunning counts against it here. A factor
// below 1 is not applied: the gang's own estimate still bounds what it may
// take. Exact estimates give a factor of exactly 1, and the estimate as it
// is (docs/evaluation.md, "Wrong estimates", measures it).
func (c *cycle) backfillEstimate(g *Gang) int64 {
	est := g.Estimate
	if est <= 0 || !g.EstimateDeclared {
		return est
	}
	qs := c.queues[g.Queue]
	if qs == nil {
		return est
	}
	f := 1.0
	for _, x := range [...]float64{qs.q.WorkFactor, qs.q.OverrunFactor} {
		if x > f && !math.IsInf(x, 0) {
			f = x
		}
	}
	if f > 1 {
		return int64(min(float64(est)*f, float64(math.MaxInt64/2)))
	}
	return est
}

// withReservation returns st saying when g is expected to start, if it holds
// a reservation, and nothing of one otherwise (st may come from another
// gang of the same shape).
func (c *cycle) withReservation(g *Gang, st GangStatus) GangStatus {
	c.setReservation(g, &st)
	return st
}

// setReservation is withReservation in place.
func (c *cycle) setReservation(g *Gang, st *GangStatus) {
	st.resvNodes, st.resvStart, st.now, st.resvAhead, st.overShare = 0, 0, 0, false, ""
	if rv := c.reservationOf(g); rv != nil {
		st.resvNodes, st.resvStart, st.now, st.resvAhead = rv.count, rv.start, c.now, rv.ahead
	} else if c.overShare[g] {
		st.overShare = g.Queue
	}
}

// reservationOf returns g's reservation, or nil.
func (c *cycle) reservationOf(g *Gang) *reservation {
	for _, rv := range c.resvs {
		if rv.gang == g {
			return rv
		}
	}
	return nil
}
