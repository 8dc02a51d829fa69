package core

import "math"

// Placement by when nodes come free.
//
// Best fit alone puts a member on the partly used node with the fewest free
// accelerators, whatever the ends of the node's other members: a 1-GPU job
// of five hours beside members that end in one keeps the node from coming
// free whole for four more hours, and the gangs that need whole nodes wait
// for it. So a member of a gang with an estimate, when the whole rest of its
// gang fits on one node, goes among the nodes where that rest fits to the
// one whose expected free time (the latest expected end of the members on
// it) its own expected end pushes back least; best fit breaks ties. A node
// whose members all run past the member's end is not pushed back at all: the
// first such node in best-fit order is taken at once. An empty node is
// pushed back by the whole estimate, so partly used nodes still fill first.
//
// A member of unknown end never frees its node: such a node is pushed back
// by nothing, and takes the members that come as best fit would give them.
// Members of gangs without an estimate, and those of gangs too big for one
// node, are placed by best fit alone. The search looks at no more than
// endScanLimit nodes where the member fits, so that a cluster of thousands of
// partly used nodes costs no more than a bounded scan per member.
//
// On the synthetic traces of docs/evaluation-notebook.md ("A thirteenth pass") this
// lowered the mean completion time and the big gangs' wait at once under
// overload, and left light load about as it was; on the Philly trace it
// lowered the big gangs' wait and cost the small jobs' (28 minutes of mean
// completion time).

// endScanLimit bounds how many fitting nodes a member's search by ends
// looks at.
const endScanLimit = 64

// nodeEnds returns, by node, when the node's running members are expected
// to have all ended (math.MaxInt64 if one never does by what is known: a
// release of unknown time, or accelerators in use that no release of known
// time accounts for; 0 for a node with none), built at the cycle's first
// need from the snapshot's releases. The snapshot carries releases when
// reservations are on (Snapshot.Releases); without them every used node
// counts as never free, and placement is best fit alone. The cycle's own
// placements are not added: the nodes' order by free time then holds while
// the time passes (freesSoonest), and counting them changed no verdict on
// sets 2 to 4 of docs/evaluation.md.
func (c *cycle) nodeEnds() []int64 {
	if c.ends != nil {
		return c.ends
	}
	n, gpu := len(c.snap.Nodes), c.x.gpu
	ends, known := sized(c.mem.nodeEnds, n), sized(c.mem.nodeKnown, n)
	clear(ends)
	clear(known)
	c.endsNext = math.MaxInt64
	for i := range c.snap.Releases {
		r := &c.snap.Releases[i]
		if r.Node < 0 || r.Node >= n {
			continue
		}
		e := int64(math.MaxInt64)
		if r.At > 0 {
			e = expectedEnd(r.At, c.now, DefaultForecastStep)
			known[r.Node] += r.Amount[gpu]
			if r.At <= c.now {
				c.endsMove = true
			} else {
				c.endsNext = min(c.endsNext, r.At)
			}
		}
		ends[r.Node] = max(ends[r.Node], e)
	}
	for i := range c.snap.Nodes {
		if c.snap.Nodes[i].Used[gpu] > known[i] {
			ends[i] = math.MaxInt64 // accelerators held by members of unknown end
		}
	}
	c.mem.nodeEnds, c.mem.nodeKnown, c.ends = ends, known, ends
	return ends
}

// placingEnd sets when the members placed from now on are expected to end:
// g's estimate from now, or never when it has none.
func (c *cycle) placingEnd(g *Gang) {
	c.end = math.MaxInt64
	if g.Estimate > 0 && g.Estimate < math.MaxInt64-c.now {
		c.end = c.now + g.Estimate
	}
}

// byEnds reports whether the cycle places by ends: it has an accelerator
// and neither spreads nor packs, and it is not the scratch cycle of a
// reservation's search (which places at a later time, on what will be free
// then).
func (c *cycle) byEnds() bool {
	return c.mem != nil && c.x.gpu >= 0 && !c.cfg.Spread && !c.cfg.Pack
}

// freesSoonest returns, among the nodes of buckets from and up where fits
// holds, the one whose expected free time a member ending at c.end pushes
// back least, the first in bucket order among equals, looking at no more
// than endScanLimit of them; false if none fits.
//
// The choice holds while the time passes (Plan.Until) until a node it took
// for not being pushed back would be, or until a member's expected end
// passes and the nodes' free times move; when one has passed already, they
// move with the time. Until then every push grows with the time alike and
// their order stays.
func (c *cycle) freesSoonest(from int64, fits func(int) bool) (int, bool) {
	x, ends := c.x, c.nodeEnds()
	best, bestPush, seen := -1, int64(math.MaxInt64), 0
	for b := from; b <= int64(x.top) && seen < endScanLimit; b++ {
		for _, n := range x.buckets[b] {
			if !fits(int(n)) {
				continue
			}
			push := max(c.end-ends[n], 0)
			if push < bestPush {
				best, bestPush = int(n), push
			}
			if seen++; push == 0 || seen == endScanLimit {
				break
			}
		}
		if bestPush == 0 {
			break
		}
	}
	if best < 0 {
		return -1, false
	}
	if c.trialing {
		// A trial is rolled back whatever nodes it took: only whether the
		// gang fits counts, and any node where its rest fits will do.
		return best, true
	}
	if c.endsMove {
		c.changesAt(c.now + 1)
	} else {
		c.changesAt(c.endsNext)
	}
	if bestPush == 0 && ends[best] < math.MaxInt64 {
		c.changesAt(c.now + ends[best] - c.end + 1)
	}
	return best, true
}
