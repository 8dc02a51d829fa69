package core

// Holds keep resources on a node for one gang (Snapshot.Holds).
//
// At the start of a cycle every hold is taken out of its node's free
// resources, clipped to what is free there: resources still used by a
// terminating member cannot be held yet, and a later cycle, after the member
// is gone, holds them. To every other gang the held resources look used.
// When the holding gang's turn comes its holds are opened, given back to the
// free index for its placement; if it is placed they are spent, and what it
// left unused is free for the rest of the cycle; if not, they are taken back.
// Reservations never count on held room (futures.start), so a gang may use
// its holds on a reserved node beyond the reservation's spare room
// (mayUse, spend): a preemptor is never kept from the room its victims
// freed by a reservation, which its victim, waiting again, may hold.
//
// A shape of member that found no node while some gang's holds were open may
// fit when they are closed, and the reverse; the cycle's memo of unplaceable
// shapes is therefore keyed on the holder too (shapeKey.holder). Room a
// placed gang leaves of its holds is freed for the rest of the cycle, so the
// memos are forgotten then.

type holdState uint8

const (
	holdApplied  holdState = iota // taken out of the node's free resources
	holdOpen                      // given back while its gang is placed
	holdReleased                  // its gang was placed: free to all
)

// held is one hold as the cycle applies it.
type held struct {
	node int
	// amount is what the hold asks for; applied what is taken out of the
	// node's free resources now (amount clipped to what was free).
	amount, applied Vector
	// covered is what the gang's placements on the node used of amount
	// (spend): room no reservation counts on.
	covered Vector
	state   holdState
}

// applyHolds takes every hold of the snapshot out of the free index.
func (c *cycle) applyHolds() {
	for _, h := range c.snap.Holds {
		if h.Node < 0 || h.Node >= len(c.snap.Nodes) {
			continue
		}
		if c.holds == nil {
			c.holds = make(map[string][]*held)
		}
		hd := &held{node: h.Node, amount: h.Amount, applied: clip(h.Amount, c.x.free[h.Node])}
		c.x.take(h.Node, hd.applied)
		c.holds[h.Gang] = append(c.holds[h.Gang], hd)
		c.holdOrder = append(c.holdOrder, hd)
	}
}

// clip returns want limited, dimension by dimension, to what is free, and
// never negative.
func clip(want, free Vector) Vector {
	for d := range want {
		want[d] = min(max(want[d], 0), max(free[d], 0))
	}
	return want
}

// openHolds gives g's applied holds back to the free index and makes g the
// holder, if it has any.
func (c *cycle) openHolds(g *Gang) {
	for _, h := range c.holds[g.ID] {
		if h.state == holdApplied {
			c.x.give(h.node, h.applied)
			h.state = holdOpen
			c.holder = g
		}
	}
}

// closeHolds ends the holder's turn. If it was placed its open holds are
// spent: what it left unused is free to all. If not, what is left of them is
// taken back.
func (c *cycle) closeHolds(placed bool) {
	if c.holder == nil {
		return
	}
	released := false
	for _, h := range c.holds[c.holder.ID] {
		switch {
		case h.state != holdOpen:
		case placed:
			h.state = holdReleased
			// Room left on the node may be what the hold kept. Memos are
			// only ever too cautious, so a hold without accelerators, or a
			// node left with none, need not clear them.
			g := c.x.gpu
			released = released || g < 0 || h.applied[g] > 0 && c.x.free[h.node][g] > 0
		default:
			h.applied = clip(h.applied, c.x.free[h.node])
			c.x.take(h.node, h.applied)
			h.state = holdApplied
		}
	}
	c.holder = nil
	if released {
		// What the gang left of its holds is free to all now: shapes that
		// found no node may fit.
		clear(c.unfit)
		c.failedGangs.forget()
		c.earlyFailed.forget()
	}
}

// reapplyHolds clips every applied hold afresh to what is free now; the
// preemption phase calls it once it has counted terminating members' room as
// free, so that a preemptor's holds cover the room its victims free.
// Holds are clipped in the snapshot's order, so that the plan does not
// depend on the order of a map.
func (c *cycle) reapplyHolds() {
	for _, h := range c.holdOrder {
		if h.state == holdApplied {
			c.x.give(h.node, h.applied)
		}
	}
	for _, h := range c.holdOrder {
		if h.state == holdApplied {
			h.applied = clip(h.amount, c.x.free[h.node])
			c.x.take(h.node, h.applied)
		}
	}
}
