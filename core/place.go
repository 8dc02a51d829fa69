package core

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Placement of one gang's minimum, as a transaction over the free index.
//
// Members are tried largest accelerator request first. Each member goes to a
// node the gang already uses if one has room (a gang on as few nodes as
// possible), otherwise to the node chosen by accelerator best fit (by when
// nodes come free first, for a gang with an estimate: ends.go): with R
// accelerators still to place for the gang, the node with the fewest free
// accelerators among those with at least R (the whole rest of the gang fits
// there, and partly used nodes fill before empty ones); failing that, the
// node with the most free accelerators (a gang too big for one node takes
// whole nodes). Every member is tried even after one fails, so that the
// diagnostic can say how many fit; then the transaction commits whole or is
// rolled back whole, holding nothing.

// shapeKey identifies members that are interchangeable for placement.
type shapeKey struct {
	req Vector
	c   *Constraints
	// open: the member may use reserved nodes (reserve.go).
	open uint64
	// holder: the gang whose holds are open to the member (hold.go).
	holder *Gang
	// sig names the pod anti-affinity terms that select the member, and
	// loosened is podIndex.loosened for members whose pod terms more pods
	// may satisfy (podconstraints.go).
	sig      int32
	loosened uint32
}

type placement struct {
	member, node int
	req          Vector
}

// txn is the overlay of one gang's tentative placements. The cycle reuses one
// txn for every gang to avoid allocating.
type txn struct {
	placed []placement
	nodes  []int // distinct nodes used, in order of first use
	order  []int
}

func (t *txn) reset() {
	t.placed, t.nodes, t.order = t.placed[:0], t.nodes[:0], t.order[:0]
}

func (t *txn) add(member, node int, r Vector) {
	t.placed = append(t.placed, placement{member: member, node: node, req: r})
	for _, n := range t.nodes {
		if n == node {
			return
		}
	}
	t.nodes = append(t.nodes, node)
}

// placeAll tries to place every one of members, on the nodes of sc only
// when sc is not nil. On success the placements stay applied to the index and
// are listed in t.placed; on failure they are rolled back and the returned
// status says why (in detail only for the whole cluster).
func (c *cycle) placeAll(g *Gang, members []Member, t *txn, sc *scope) (GangStatus, bool) {
	t.reset()
	c.placingEnd(g)
	gpu := c.x.gpu
	var remaining int64
	for i := range members {
		t.order = append(t.order, i)
		remaining += c.x.gpus(members[i].Request)
	}
	if len(t.order) > 1 {
		slices.SortStableFunc(t.order, func(a, b int) int {
			ra, rb := &members[a].Request, &members[b].Request
			if gpu >= 0 && ra[gpu] != rb[gpu] {
				return cmp.Compare(rb[gpu], ra[gpu])
			}
			return cmp.Compare(rb[CPU], ra[CPU])
		})
	}
	var (
		unplaced  Vector
		report    *nodeReport
		firstFail = -1
	)
	for _, i := range t.order {
		m := &members[i]
		r := podRequest(m)
		if firstFail >= 0 && m.Request == members[firstFail].Request && m.Constraints == members[firstFail].Constraints {
			unplaced = unplaced.Add(r) // as the failed one: fewer nodes left
			continue
		}
		n, ok := c.findNode(m, r, t, remaining, sc)
		if !ok {
			if firstFail < 0 {
				firstFail = i
				if sc != nil {
					break // the caller wants no details, only the roll back
				}
				report = c.unfit[c.lastShape]
				if report == nil && !c.trialing {
					report = c.report(r, m.Constraints, c.lastCheck)
				}
			}
			unplaced = unplaced.Add(r)
			continue
		}
		c.x.take(n, r)
		t.add(i, n, r)
		c.placed(m, n)
		remaining -= c.x.gpus(r)
	}
	if firstFail < 0 {
		return GangStatus{}, true
	}
	fit := len(t.placed)
	short := unplaced.Sub(c.x.total)
	for d := range short {
		short[d] = max(short[d], 0)
	}
	c.rollback(t)
	if fit > 0 && sc == nil {
		// The member failed while the gang's own placements held resources;
		// remember its shape only if it finds no node without them either.
		m := &members[firstFail]
		c.findNode(m, podRequest(m), nil, 0, nil)
	}
	return GangStatus{Gang: g.ID, Reason: ReasonUnschedulable, Fit: fit, Need: len(members),
		Short: short, names: c.snap.Resources, report: report}, false
}

// findNode returns the node for a member with request r, or false. t, if not
// nil, is the gang's transaction: its nodes are preferred. remaining is what
// the gang still needs of the accelerator, this member included. sc, if not
// nil, restricts the search to one domain's nodes.
func (c *cycle) findNode(m *Member, r Vector, t *txn, remaining int64, sc *scope) (int, bool) {
	key := shapeKey{req: r, c: m.Constraints, open: c.open, holder: c.holder}
	var pc *podCheck
	if c.pods != nil {
		if pc = c.pods.prepare(m); pc != nil {
			key.sig = pc.sig
			if m.Constraints.looseTerms() {
				key.loosened = c.pods.loosened
			}
		}
	}
	c.lastShape, c.lastCheck = key, pc
	if _, bad := c.unfit[key]; bad {
		return -1, false
	}
	// A member with pod constraints and no other is at least as hard to
	// place as a member without any: if such a member found no node, this
	// one finds none either.
	var plainKey shapeKey
	plain := false
	if c.pods != nil {
		plainKey = shapeKey{req: r, c: c.pods.baseOf(m.Constraints), open: c.open, holder: c.holder}
		plain = plainKey != key
	}
	if plain {
		if _, bad := c.unfit[plainKey]; bad {
			c.lastShape = plainKey
			return -1, false
		}
	}
	x, flt := c.x, c.verdicts
	vs := flt.of(m.Constraints)
	roomy := false // some node has the room and passes the node filters
	fits := func(n int) bool {
		if !r.Fits(x.free[n]) {
			return false
		}
		// The pod checks first, as they are cheaper than the node filters,
		// which a node they refuse needs only while none had room.
		others := pc == nil || c.pods.checkNode(pc, n) == feasible && c.pins.admit(m, n)
		if !others && roomy || flt.at(vs, n, m.Constraints) != feasible || !c.mayUse(n, r, t) {
			return false
		}
		roomy = true
		return others
	}
	defer func() {
		if plain && !roomy && c.lastShape == key {
			c.rememberUnfit(plainKey, &Member{Request: m.Request, Constraints: plainKey.c}, r, t, nil)
		}
	}()
	if c.cfg.Spread && sc == nil {
		return c.spreadNode(key, m, r, t, fits)
	}
	if t != nil {
		for _, n := range t.nodes {
			if fits(n) {
				return n, true
			}
		}
	}
	if c.holder != nil {
		// The room held for the gang first: a replacement returns to it.
		for _, h := range c.holds[c.holder.ID] {
			if h.state == holdOpen && (sc == nil || x.dom.of[sc.level][h.node] == sc.domain) && fits(h.node) {
				return h.node, true
			}
		}
	}
	g := x.gpus(r)
	if sc != nil {
		return c.findInDomain(x.dom.nodes[sc.level][sc.domain], fits, g, remaining)
	}
	if g <= int64(x.top) {
		if from := max(g, remaining); g > 0 && c.end < math.MaxInt64 && c.byEnds() {
			if n, ok := c.freesSoonest(from, fits); ok {
				return n, true
			}
		} else {
			for b := from; b <= int64(x.top); b++ {
				for _, n := range x.buckets[b] {
					if fits(int(n)) {
						return int(n), true
					}
				}
			}
		}
		for b := min(remaining-1, int64(x.top)); b >= g; b-- {
			for _, n := range x.buckets[b] {
				if fits(int(n)) {
					return int(n), true
				}
			}
		}
	}
	c.rememberUnfit(key, m, r, t, pc)
	return -1, false
}

// spreadNode returns the fitting node with the most free accelerators, the
// first in bucket order among equals (Config.Spread).
func (c *cycle) spreadNode(key shapeKey, m *Member, r Vector, t *txn, fits func(int) bool) (int, bool) {
	x := c.x
	for b := int64(x.top); b >= x.gpus(r) && b >= 0; b-- {
		for _, n := range x.buckets[b] {
			if fits(int(n)) {
				return int(n), true
			}
		}
	}
	c.rememberUnfit(key, m, r, t, c.lastCheck)
	return -1, false
}

// rememberUnfit records that members of key's shape find no node, unless
// the gang's own placements (t) may be what keeps them out.
func (c *cycle) rememberUnfit(key shapeKey, m *Member, r Vector, t *txn, pc *podCheck) {
	switch {
	case t != nil && len(t.placed) > 0:
	case len(c.pins) > 0: // a pinned try is narrower than the member's shape
	case c.trialing:
		c.unfit[key] = nil // no one reads the report of a trial
	default:
		c.unfit[key] = c.report(r, m.Constraints, pc)
	}
}

// findInDomain returns the node of nodes the bucket search of findNode
// would return if nodes were the whole cluster: the lowest bucket of at least
// max(g, remaining), else the highest below it, the first in bucket order.
func (c *cycle) findInDomain(nodes []int32, fits func(int) bool, g, remaining int64) (int, bool) {
	x := c.x
	from := max(g, remaining)
	best := int32(-1)
	var bestB, bestP int32
	for _, n := range nodes {
		b, p := x.bucket[n], x.pos[n]
		if b < 0 || int64(b) < g || !fits(int(n)) {
			continue
		}
		if best >= 0 {
			up, bestUp := int64(b) >= from, int64(bestB) >= from
			switch {
			case up != bestUp:
				if !up {
					continue
				}
			case b != bestB:
				if up == (b > bestB) {
					continue
				}
			case p > bestP:
				continue
			}
		}
		best, bestB, bestP = n, b, p
	}
	return int(best), best >= 0
}

// nodeReport counts why the nodes of the cluster turn a member shape away,
// in the manner of kube-scheduler's "0/4 nodes are available" message.
type nodeReport struct {
	req      Vector
	nodes    int
	fit      int
	byFilter [len(filterText)]int
	shortOf  [MaxDims]int
	// reservedFor names the gangs whose reservations refused nodes, the
	// first two in the cycle's order; moreReserved says there were more.
	reservedFor  [2]string
	moreReserved bool
}

// hopeless reports whether every node refuses the member whatever runs on
// it: cordon, taints, selectors, node and volume affinity. Evicting
// nothing could help it.
func (r *nodeReport) hopeless() bool {
	n := 0
	for f := filteredUnschedulable; f <= filteredVolume; f++ {
		n += r.byFilter[f]
	}
	return n == r.nodes
}

// addReserved records that the reservation of gang id refused a node.
func (r *nodeReport) addReserved(id string) {
	for i, have := range r.reservedFor {
		switch have {
		case id:
			return
		case "":
			r.reservedFor[i] = id
			return
		}
	}
	r.moreReserved = true
}

// reservedText says whose reservations refused the nodes, e.g. "reserved
// for gang ns/big", stable while the reservations are.
func (r *nodeReport) reservedText() string {
	switch {
	case r.reservedFor[0] == "":
		return filterText[filteredReserved]
	case r.reservedFor[1] == "":
		return "reserved for gang " + r.reservedFor[0]
	case r.moreReserved:
		return "reserved for gangs " + r.reservedFor[0] + ", " + r.reservedFor[1] + " and others"
	}
	return "reserved for gangs " + r.reservedFor[0] + " and " + r.reservedFor[1]
}

func (c *cycle) report(r Vector, cons *Constraints, pc *podCheck) *nodeReport {
	rep := &nodeReport{req: r, nodes: len(c.snap.Nodes)}
	vs := c.verdicts.of(cons)
	for n := range c.snap.Nodes {
		if f := c.verdicts.at(vs, n, cons); f != feasible {
			rep.byFilter[f]++
			continue
		}
		if pc != nil {
			if f := c.pods.checkNode(pc, n); f != feasible {
				rep.byFilter[f]++
				continue
			}
		}
		if i := c.refusedBy(n, r, nil); i >= 0 {
			rep.byFilter[filteredReserved]++
			rep.addReserved(c.resvs[i].gang.ID)
			continue
		}
		if d, over := exceeds(r, c.x.free[n]); over {
			rep.shortOf[d]++
			continue
		}
		rep.fit++
	}
	return rep
}

func (r *nodeReport) filtered() bool {
	for _, n := range r.byFilter {
		if n > 0 {
			return true
		}
	}
	return false
}

// describe renders the report, e.g. "a member needing 2 nvidia.com/gpu,
// 1 cpu: 0/4 nodes fit (3 insufficient nvidia.com/gpu, 1 untolerated taint)".
func (r *nodeReport) describe(names ResourceNames) string {
	req := r.req
	req[Pods] = 0
	var why []string
	dims := []int{FirstExtended, FirstExtended + 1, FirstExtended + 2, FirstExtended + 3, FirstExtended + 4, CPU, Memory, Pods}
	for _, d := range dims {
		if r.shortOf[d] > 0 {
			why = append(why, fmt.Sprintf("%d insufficient %s", r.shortOf[d], names.Name(d)))
		}
	}
	for f, n := range r.byFilter {
		switch {
		case n == 0:
		case filterResult(f) == filteredReserved:
			why = append(why, fmt.Sprintf("%d %s", n, r.reservedText()))
		default:
			why = append(why, fmt.Sprintf("%d %s", n, filterText[f]))
		}
	}
	s := fmt.Sprintf("a member needing %s: %d/%d nodes fit", names.Format(req), r.fit, r.nodes)
	if len(why) > 0 {
		s += " (" + strings.Join(why, ", ") + ")"
	}
	return s
}
