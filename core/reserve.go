package core

import (
	"cmp"
	"slices"
)

// Reservation with backfill, so that big gangs do not starve behind streams
// of small ones.
//
// When Config.ReserveAfter (or the queue's own ReserveAfter) is set, each
// FairShare cycle, once the queues' shares are known, picks the waiting gangs
// that deserve a reservation: among the gangs that have waited at least that
// long and are not yet placed, and the heads of StrictOrder queues whatever
// their wait, the first Config.Reservations: gangs holding some members but
// not their minimum first, then by priority then arrival. For
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
// queues drain nodes for its big one.
//
// Reservations are computed afresh every cycle from the snapshot, so they
// follow what actually happens: a job that ends early brings T forward, one
// that overruns its estimate pushes it back. Only what the gang needs on a
// reserved node is off limits: a gang that runs past T may still take the
// node's spare room, what the node will have at T beyond the gang's needs.

// reservation is one of the cycle's reservations.
type reservation struct {
	gang  *Gang
	start int64
	nodes []bool // by node index
	count int
	// spare is, for reserved nodes, the room they have at start beyond
	// what the reserved gang needs there: what other gangs may still take.
	spare []Vector
}

// reserveAfter is the wait after which g deserves a reservation, or 0.
func (c *cycle) reserveAfter(g *Gang) int64 {
	if qs := c.queues[g.Queue]; qs != nil && qs.q.ReserveAfter > 0 {
		return qs.q.ReserveAfter
	}
	return c.cfg.ReserveAfter
}

// reserveTries bounds how many candidates reserve tries per reservation.
const reserveTries = 4

// reserve picks the gangs that deserve a reservation and reserves the nodes
// each will get as they free up. runFairShare calls it once the queues have
// their admitted gangs, sorted, and their shares.
func (c *cycle) reserve() {
	var cands []*Gang
	for _, qs := range c.order {
		if qs.q.Closed {
			continue
		}
		head := qs.q.StrictOrder // the next unsatisfied gang is the queue's head
		for _, g := range qs.gangs {
			if g.Bound >= g.MinMember {
				continue
			}
			isHead := head
			head = false
			if after := c.reserveAfter(g); !isHead && (after <= 0 || c.now-g.Arrival < after) {
				continue
			}
			_, want := minimumOf(g)
			if _, over := exceeds(qs.allocated.Add(want), qs.q.Capability); over {
				continue // its queue would not let it run: reserving would only idle nodes
			}
			cands = append(cands, g)
		}
	}
	if len(cands) == 0 {
		return
	}
	// Partial gangs come first in the cycle too. The order ends on the
	// gangs' unique IDs: an unstable sort gives the one result.
	before := partialFirst(gangBefore)
	slices.SortFunc(cands, func(a, b *Gang) int {
		if before(a, b) {
			return -1
		}
		if before(b, a) {
			return 1
		}
		return 0
	})
	releases := make([]Release, 0, len(c.snap.Releases))
	for _, r := range c.snap.Releases {
		if r.At > 0 && r.Node >= 0 && r.Node < len(c.snap.Nodes) {
			releases = append(releases, r)
		}
	}
	slices.SortStableFunc(releases, func(a, b Release) int { return cmp.Compare(a.At, b.At) })
	limit := max(c.cfg.Reservations, 1)
	var taken []placement // what earlier reservations will hold
	var own []Release
	var ownRoom map[string]Vector // what each queue's releases free, in all
	// A gang that fits at no foreseeable time is passed over for the next,
	// but the tries are bounded: each costs a placement over the cluster.
	tries := 0
	for _, cand := range cands {
		if len(c.resvs) == limit || tries == reserveTries*limit {
			break
		}
		rel := releases
		if c.queues[cand.Queue].share > 1 {
			if ownRoom == nil {
				ownRoom = make(map[string]Vector)
				for _, r := range releases {
					ownRoom[r.Queue] = ownRoom[r.Queue].Add(r.Amount)
				}
			}
			if _, want := minimumOf(cand); !want.Fits(c.x.total.Add(ownRoom[cand.Queue])) {
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
		res, placed := c.reserveFor(cand, rel, taken)
		if res == nil {
			continue
		}
		c.resvs = append(c.resvs, res)
		taken = append(taken, placed...)
		if cand.Estimate > 0 {
			for _, p := range placed {
				releases = append(releases, Release{Node: p.node, Amount: p.req, At: res.start + cand.Estimate, Queue: cand.Queue})
			}
			slices.SortStableFunc(releases, func(a, b Release) int { return cmp.Compare(a.At, b.At) })
		}
	}
}

// reserveFor finds the earliest time at which g's minimum fits, once the
// first of releases happened and with what taken lists held, and reserves
// the nodes of that placement; nil if it never fits.
func (c *cycle) reserveFor(g *Gang, releases []Release, taken []placement) (*reservation, []placement) {
	// The smallest k such that the gang fits once the first k releases
	// happened; fitting is monotone in k.
	placed, future, fits := c.fitsAfter(g, releases, taken)
	if !fits {
		return nil, nil
	}
	k := len(releases)
	for lo, hi := 0, len(releases); lo < hi; {
		mid := (lo + hi) / 2
		if p, f, fits := c.fitsAfter(g, releases[:mid], taken); fits {
			hi, k, placed, future = mid, mid, p, f
		} else {
			lo = mid + 1
		}
	}
	start := c.now
	if k > 0 {
		start = max(start, releases[k-1].At)
	}
	res := &reservation{gang: g, start: start, nodes: make([]bool, len(c.snap.Nodes)),
		spare: make([]Vector, len(c.snap.Nodes))}
	for _, p := range placed {
		if !res.nodes[p.node] {
			res.nodes[p.node] = true
			res.count++
			res.spare[p.node] = future[p.node].Allocatable.Sub(future[p.node].Used)
		}
		res.spare[p.node] = res.spare[p.node].Sub(p.req)
	}
	for n := range res.spare {
		for d, v := range res.spare[n] {
			res.spare[n][d] = max(v, 0)
		}
	}
	return res, placed
}

// fitsAfter reports whether g's minimum fits once releases happened, and
// where, by placing it in a cycle of its own over that future state, which
// it returns too.
func (c *cycle) fitsAfter(g *Gang, releases []Release, taken []placement) ([]placement, []Node, bool) {
	nodes := slices.Clone(c.snap.Nodes)
	for _, p := range taken {
		nodes[p.node].Used = nodes[p.node].Used.Add(p.req)
	}
	for _, r := range releases {
		nodes[r.Node].Used = nodes[r.Node].Used.Sub(r.Amount)
	}
	for id, hs := range c.holds {
		if id == g.ID {
			continue
		}
		for _, h := range hs {
			nodes[h.node].Used = nodes[h.node].Used.Add(h.amount) // held for its gang from now on
		}
	}
	future := &Snapshot{Resources: c.snap.Resources, Nodes: nodes}
	fc := &cycle{cfg: c.cfg, snap: future, now: c.now,
		x:     newFreeIndex(nodes, c.x.gpu),
		unfit: make(map[shapeKey]*nodeReport), failedGangs: make(map[gangSignature]GangStatus)}
	members, want := minimumOf(g)
	t := &txn{}
	if _, ok := fc.placeMinimum(g, members, want, t); !ok {
		return nil, nil, false
	}
	return slices.Clone(t.placed), nodes, true
}

// mayUse reports whether the gang being placed may put a member with
// request r on node n, where t (if not nil) already placed some: on a
// reserved node, only the reserved gang and gangs that end before it starts
// may use more than the node's spare room, what the node has beyond the
// reservation's needs at its start.
func (c *cycle) mayUse(n int, r Vector, t *txn) bool {
	added := false
	for i, rv := range c.resvs {
		if c.open&(1<<i) != 0 || !rv.nodes[n] {
			continue
		}
		if t != nil && !added {
			added = true
			for _, p := range t.placed {
				if p.node == n {
					r = r.Add(p.req)
				}
			}
		}
		if !r.Fits(rv.spare[n]) {
			return false
		}
	}
	return true
}

// spend records that the gang being placed put r on n: it comes out of the
// spare room of the reservations it may not use.
func (c *cycle) spend(n int, r Vector) {
	for i, rv := range c.resvs {
		if c.open&(1<<i) == 0 && rv.nodes[n] {
			rv.spare[n] = rv.spare[n].Sub(r)
		}
	}
}

// openFor returns the reservations g may use beyond their spare room, one
// bit each: those of g itself and the later ones, which were computed
// around g's, and those that start after g is expected to end.
func (c *cycle) openFor(g *Gang) uint64 {
	var open uint64
	for i, rv := range c.resvs {
		if g == rv.gang {
			return open | ^uint64(0)<<i
		}
		if g.Estimate > 0 && c.now+g.Estimate <= rv.start {
			open |= 1 << i
		}
	}
	return open
}

// withReservation returns st saying when g is expected to start, if it holds
// a reservation, and nothing of one otherwise (st may come from another
// gang of the same shape).
func (c *cycle) withReservation(g *Gang, st GangStatus) GangStatus {
	st.resvNodes, st.resvStart, st.now = 0, 0, 0
	if rv := c.reservationOf(g); rv != nil {
		st.resvNodes, st.resvStart, st.now = rv.count, rv.start, c.now
	}
	return st
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
