package core

import (
	"cmp"
	"slices"
)

// Reservation with backfill, so that big gangs do not starve behind streams
// of small ones.
//
// When Config.ReserveAfter (or the queue's own ReserveAfter) is set, each
// FairShare cycle first picks the waiting gang that deserves a reservation:
// among the gangs that have waited at least that long and are not yet
// placed, and the heads of StrictOrder queues whatever their wait, the
// first by priority then arrival. It then finds the earliest time
// T at which the gang's minimum fits, counting on the running members'
// releases (Snapshot.Releases) in order of their expected end, and where it
// would be placed at T. The nodes of that placement are reserved for the
// cycle: the gang itself may use them, and so may a gang with an estimate
// that ends by T (backfill); no other gang may. A gang without an estimate
// never runs on reserved nodes, so it can never delay the reservation.
// Members whose end is unknown are never counted on: if the gang cannot fit
// without them, nothing is reserved.
//
// The reservation is computed afresh every cycle from the snapshot, so it
// follows what actually happens: a job that ends early brings T forward, one
// that overruns its estimate pushes it back. Only what the gang needs on a
// reserved node is off limits: a gang that runs past T may still take the
// node's spare room, what the node will have at T beyond the gang's needs.

// reservation is the cycle's reservation, if any.
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

// reserve picks the gang that deserves a reservation and reserves the nodes
// it will get as they free up.
func (c *cycle) reserve() {
	if c.cfg.Ordering != FairShare {
		return
	}
	// The heads of StrictOrder queues: their first unsatisfied gangs among
	// those the cycle admits (an invalid gang blocks nothing).
	heads := map[string]*Gang{}
	for _, g := range c.snap.Gangs {
		if g == nil || g.Bound >= g.MinMember {
			continue
		}
		if _, bad := validate(g, c.cfg.Topology); bad {
			continue
		}
		if qs := c.queues[g.Queue]; qs != nil && qs.q.StrictOrder {
			if h := heads[g.Queue]; h == nil || gangBefore(g, h) {
				heads[g.Queue] = g
			}
		}
	}
	var cand *Gang
	for _, g := range c.snap.Gangs {
		if g == nil || g.Bound >= g.MinMember {
			continue
		}
		after := c.reserveAfter(g)
		if heads[g.Queue] != g && (after <= 0 || c.now-g.Arrival < after) {
			continue
		}
		if _, bad := validate(g, c.cfg.Topology); bad {
			continue
		}
		qs := c.queues[g.Queue]
		if qs == nil || qs.q.Closed {
			continue
		}
		_, want := minimumOf(g)
		if _, over := exceeds(qs.allocated.Add(want), qs.q.Capability); over {
			continue // its queue would not let it run: reserving would only idle nodes
		}
		if cand == nil || gangBefore(g, cand) {
			cand = g
		}
	}
	if cand == nil {
		return
	}
	releases := make([]Release, 0, len(c.snap.Releases))
	for _, r := range c.snap.Releases {
		if r.At > 0 && r.Node >= 0 && r.Node < len(c.snap.Nodes) {
			releases = append(releases, r)
		}
	}
	slices.SortStableFunc(releases, func(a, b Release) int { return cmp.Compare(a.At, b.At) })
	// The smallest k such that the gang fits once the first k releases
	// happened; fitting is monotone in k.
	placed, future, fits := c.fitsAfter(cand, releases)
	if !fits {
		return
	}
	k := len(releases)
	for lo, hi := 0, len(releases); lo < hi; {
		mid := (lo + hi) / 2
		if p, f, fits := c.fitsAfter(cand, releases[:mid]); fits {
			hi, k, placed, future = mid, mid, p, f
		} else {
			lo = mid + 1
		}
	}
	start := c.now
	if k > 0 {
		start = max(start, releases[k-1].At)
	}
	res := &reservation{gang: cand, start: start, nodes: make([]bool, len(c.snap.Nodes)),
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
	c.resv = res
}

// fitsAfter reports whether g's minimum fits once releases happened, and
// where, by placing it in a cycle of its own over that future state, which
// it returns too.
func (c *cycle) fitsAfter(g *Gang, releases []Release) ([]placement, []Node, bool) {
	nodes := slices.Clone(c.snap.Nodes)
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
	if c.resv == nil || c.open || !c.resv.nodes[n] {
		return true
	}
	if t != nil {
		for _, p := range t.placed {
			if p.node == n {
				r = r.Add(p.req)
			}
		}
	}
	return r.Fits(c.resv.spare[n])
}

// spend records that a gang that may not use reserved room placed r on n.
func (c *cycle) spend(n int, r Vector) {
	if c.resv != nil && !c.open && c.resv.nodes[n] {
		c.resv.spare[n] = c.resv.spare[n].Sub(r)
	}
}

// openFor reports whether g may use the reserved nodes: it is the reserved
// gang, or it is expected to end before the reservation starts.
func (c *cycle) openFor(g *Gang) bool {
	if c.resv == nil {
		return true
	}
	return g == c.resv.gang || (g.Estimate > 0 && c.now+g.Estimate <= c.resv.start)
}
