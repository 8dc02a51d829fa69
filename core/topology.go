package core

import (
	"cmp"
	"fmt"
)

// Topology-aware placement of a gang's minimum.
//
// Config.Topology names node labels from the broadest level to the narrowest
// (e.g. zone, then rack); the node itself is the implicit narrowest level. A
// domain of level l is the set of schedulable nodes that share the values of
// the labels of levels 0..l, so domains nest: a rack lies within one zone. A
// node that lacks one of those labels belongs to no domain of level l or
// narrower. Domains are named by their values joined with "/", e.g. "a/r1".
//
// With a topology configured, a gang whose minimum has more than one member
// prefers the smallest domain that holds it. Each attempt below is one
// transaction (placeAll), rolled back whole when it fails:
//
//  1. the node: the plain placement, kept if it puts the whole minimum on
//     one node (skipped when the minimum needs more accelerators than any
//     node has free);
//  2. each label level, narrowest first: among the domains of that level
//     whose total free resources hold the minimum, the best-fitting ones
//     (fewest free accelerators, then name; at most maxDomainsTried), the
//     placement restricted to the domain's nodes, which picks the node the
//     plain placement would pick if the domain were the whole cluster;
//  3. the whole cluster, the plain placement.
//
// A gang with RequiredLevel stops after that level: its minimum lands within
// one domain of the level, or nowhere, and the gang waits with a message that
// says so. The levels narrower than the required one are tried first, and
// any placement they find lies within one required domain since domains nest.
// Elastic members beyond the minimum are placed without regard to topology.
//
// Domains are computed once per cycle, on the first gang that needs them, and
// their free totals are then kept in step by the free index.

// maxDomainsTried bounds the domains tried per level for one gang.
const maxDomainsTried = 4

// domains are the topology domains of one cycle.
type domains struct {
	of    [][]int32   // level -> node -> domain, -1 when none
	nodes [][][]int32 // level -> domain -> its nodes, in index order
	names [][]string  // level -> domain -> name
	free  [][]Vector  // level -> domain -> free resources of its nodes
}

// scope restricts a placement to the nodes of one domain; nil is the whole
// cluster.
type scope struct {
	level, domain int32
}

func newDomains(levels []string, nodes []Node, x *freeIndex) *domains {
	d := &domains{
		of:    make([][]int32, len(levels)),
		nodes: make([][][]int32, len(levels)),
		names: make([][]string, len(levels)),
		free:  make([][]Vector, len(levels)),
	}
	type key struct {
		parent int32
		value  string
	}
	ids := make([]map[key]int32, len(levels))
	for l := range levels {
		d.of[l] = make([]int32, len(nodes))
		ids[l] = make(map[key]int32)
	}
	for n := range nodes {
		parent := int32(-1)
		for l, label := range levels {
			v, ok := nodes[n].Labels[label]
			if !ok || x.bucket[n] < 0 || (l > 0 && parent < 0) {
				for ; l < len(levels); l++ {
					d.of[l][n] = -1
				}
				break
			}
			k := key{parent, v}
			id, seen := ids[l][k]
			if !seen {
				id = int32(len(d.nodes[l]))
				ids[l][k] = id
				name := v
				if l > 0 {
					name = d.names[l-1][parent] + "/" + v
				}
				d.names[l] = append(d.names[l], name)
				d.nodes[l] = append(d.nodes[l], nil)
				d.free[l] = append(d.free[l], Vector{})
			}
			d.of[l][n] = id
			d.nodes[l][id] = append(d.nodes[l][id], int32(n))
			d.free[l][id] = d.free[l][id].Add(x.free[n])
			parent = id
		}
	}
	return d
}

// move keeps the domain totals in step when node n's free resources go from
// old to f.
func (d *domains) move(n int, old, f Vector) {
	for l := range d.of {
		if id := d.of[l][n]; id >= 0 {
			d.free[l][id] = d.free[l][id].Sub(old).Add(f)
		}
	}
}

// refree recomputes the domains' free resources from x, an index of the
// same nodes as the one they were computed over (the same schedulable
// nodes): the domains are then those newDomains computes over x.
func (d *domains) refree(x *freeIndex) {
	for l := range d.free {
		clear(d.free[l])
		for n, id := range d.of[l] {
			if id >= 0 {
				d.free[l][id] = d.free[l][id].Add(x.free[n])
			}
		}
	}
}

// candidates appends to dst the domains of level l whose free resources hold
// want, best-fitting first, at most maxDomainsTried of them.
func (d *domains) candidates(dst []int32, l int, want Vector, gpu int) []int32 {
	dst = dst[:0]
	free, names := d.free[l], d.names[l]
	before := func(a, b int32) bool {
		if gpu >= 0 && free[a][gpu] != free[b][gpu] {
			return free[a][gpu] < free[b][gpu]
		}
		return cmp.Less(names[a], names[b])
	}
	for id := range free {
		if !want.Fits(free[id]) {
			continue
		}
		c := int32(id)
		if len(dst) == maxDomainsTried && !before(c, dst[len(dst)-1]) {
			continue
		}
		if len(dst) < maxDomainsTried {
			dst = append(dst, c)
		} else {
			dst[len(dst)-1] = c
		}
		for i := len(dst) - 1; i > 0 && before(dst[i], dst[i-1]); i-- {
			dst[i], dst[i-1] = dst[i-1], dst[i]
		}
	}
	return dst
}

// maxFree returns the most free accelerators in one domain of level l.
func (d *domains) maxFree(l, gpu int) int64 {
	var m int64
	if gpu < 0 {
		return 0
	}
	for _, f := range d.free[l] {
		m = max(m, f[gpu])
	}
	return m
}

// levelOf returns the index of label in levels, or -1.
func levelOf(levels []string, label string) int {
	for i, l := range levels {
		if l == label {
			return i
		}
	}
	return -1
}

// placeMinimum places members, the minimum of g, whose total request is
// want, following the rule at the top of this file. On success the
// placements are applied and listed in t.placed.
func (c *cycle) placeMinimum(g *Gang, members []Member, want Vector, t *txn) (GangStatus, bool) {
	levels := c.cfg.Topology
	if len(levels) == 0 || len(members) == 1 && g.RequiredLevel == "" {
		return c.placeAll(g, members, t, nil)
	}
	required := levelOf(levels, g.RequiredLevel) // admitted gangs name a level
	d := c.domains()
	if required >= 0 && len(c.cands(d, required, want)) == 0 {
		return c.requiredFailure(g, len(members), want, required, false), false
	}
	var plain GangStatus
	plainFailed := false
	if c.x.gpu < 0 || want[c.x.gpu] <= int64(c.x.top) {
		st, ok := c.placeAll(g, members, t, nil)
		switch {
		case ok && len(t.nodes) == 1 && (required < 0 || d.of[required][t.nodes[0]] >= 0):
			return GangStatus{}, true
		case ok:
			c.rollback(t)
		case required < 0:
			return st, false // the whole cluster cannot hold it, nor can a domain
		default:
			plain, plainFailed = st, true
		}
	}
	stop := max(required, 0)
	for l := len(levels) - 1; l >= stop; l-- {
		for _, id := range c.cands(d, l, want) {
			if _, ok := c.placeAll(g, members, t, &scope{int32(l), id}); ok {
				return GangStatus{}, true
			}
		}
	}
	if required >= 0 {
		if plainFailed && !plain.Short.IsZero() {
			return plain, false // short in total: say so, as for any gang
		}
		return c.requiredFailure(g, len(members), want, required, true), false
	}
	return c.placeAll(g, members, t, nil)
}

// domains returns the cycle's domains, computing them on first use.
func (c *cycle) domains() *domains {
	if c.x.dom == nil {
		c.x.dom = newDomains(c.cfg.Topology, c.snap.Nodes, c.x)
	}
	return c.x.dom
}

func (c *cycle) cands(d *domains, l int, want Vector) []int32 {
	c.candBuf = d.candidates(c.candBuf, l, want, c.x.gpu)
	return c.candBuf
}

// rollback gives back every placement of t.
func (c *cycle) rollback(t *txn) {
	c.unplaced(len(t.placed))
	for i := len(t.placed) - 1; i >= 0; i-- {
		c.x.give(t.placed[i].node, t.placed[i].req)
	}
	t.reset()
}

// requiredFailure is the status of a gang whose minimum fits in no domain of
// its required level; tried says whether some domain had enough free in
// total but placement within it failed. The words are left to Message.
func (c *cycle) requiredFailure(g *Gang, need int, want Vector, level int, tried bool) GangStatus {
	o := &outsideDomains{label: c.cfg.Topology[level], want: want, gpu: c.x.gpu, tried: tried}
	if o.gpu >= 0 {
		o.maxFree = c.x.dom.maxFree(level, o.gpu)
	}
	return GangStatus{Gang: g.ID, Reason: ReasonUnschedulable, Need: need, names: c.snap.Resources, domains: o}
}

// outsideDomains says why a gang's minimum fits no domain of its required
// level.
type outsideDomains struct {
	label   string
	want    Vector
	gpu     int
	maxFree int64
	tried   bool
}

func (o *outsideDomains) describe(names ResourceNames) string {
	want := o.want
	want[Pods] = 0
	switch {
	case o.tried:
		return fmt.Sprintf("no single %s can hold the gang: those with %s free in total cannot fit every member",
			o.label, names.Format(want))
	case o.gpu >= 0 && want[o.gpu] > o.maxFree:
		return fmt.Sprintf("no single %s can hold the gang: %d %s needed, at most %d free in one",
			o.label, want[o.gpu], names.Name(o.gpu), o.maxFree)
	}
	return fmt.Sprintf("no single %s has %s free for the gang", o.label, names.Format(want))
}
