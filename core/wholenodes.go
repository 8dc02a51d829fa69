package core

import "slices"

// Gangs that take whole nodes go first while nothing is reserved.
//
// In a FairShare cycle the queues take turns, the one furthest below its
// deserved share first, and every gang that fits is placed. A gang that
// asks at least a whole node's accelerators fits only where that many are
// free together. As members end one by one, the smaller gangs of the queues
// whose turn comes first take what frees, and the big gang starts only when
// enough frees together within one cycle. On a cluster where nothing waits
// long enough to be reserved for (Config.ReserveAfter), a burst of big
// gangs then waits behind the stream of small ones for hours, though the
// cluster has room for both over the day.
//
// So, with Config.ReserveAfter (reservations on, as by default), in a cycle
// that holds no reservation, the waiting gangs that ask at least as many
// accelerators as the biggest schedulable node has, and that have an
// estimate, are tried before the queues take their turns: across queues,
// in the order the queues sort their own gangs (by priority, then shortest
// estimate under Config.ShortestFirst, then arrival). Those that fit are
// placed and counted in their queue's share at once; the others wait for
// their queue's turn, as before, and what they found is not recorded until
// then (tryGang records nothing while c.early is set). A gang of a
// StrictOrder queue keeps its queue's order; one its queue's capability or
// a closed queue refuses fails the early try as it would its turn.
//
// Once reservations are in play, the cluster has a backlog, and the big
// gangs that waited longest are the reservations' to serve, in arrival
// order; trying big gangs first there as well left the least-served queue
// less of its due and preempted more gangs (docs/evaluation-notebook.md, "A
// fourteenth pass"). Without reservations at all (ReserveAfter 0, the volcano
// baseline's configuration) the queues' turns alone decide, as they did.

// wholeNodesFirst places, ahead of the queues' turns, the gangs of qss
// that ask a whole node's accelerators or more and fit now.
func (c *cycle) wholeNodesFirst(qss []*queueState) {
	gpu := c.x.gpu
	if gpu < 0 {
		return
	}
	var node int64 // the most accelerators a schedulable node has
	for i := range c.snap.Nodes {
		if n := &c.snap.Nodes[i]; !n.Unschedulable {
			node = max(node, n.Allocatable[gpu])
		}
	}
	if node <= 0 {
		return
	}
	var list []earlyGang
	if c.mem != nil {
		list = c.mem.early[:0]
		defer func() { clear(list); c.mem.early = list[:0] }()
	}
	for _, qs := range qss {
		if qs.q.StrictOrder {
			continue
		}
		for i := qs.next; i < len(qs.gangs); i++ {
			if g := qs.gangs[i]; g.Bound < g.MinMember && g.Estimate > 0 && qs.wants[i][gpu] >= node {
				list = append(list, earlyGang{g, qs, i})
			}
		}
	}
	if len(list) == 0 {
		return
	}
	before := gangBefore
	if c.cfg.ShortestFirst {
		before = shorterBefore
	}
	slices.SortFunc(list, func(a, b earlyGang) int {
		switch {
		case before(a.g, b.g):
			return -1
		case before(b.g, a.g):
			return 1
		}
		return 0
	})
	c.early = true
	defer func() {
		c.early = false
		c.earlyFailed.forget()
	}()
	for _, e := range list {
		if !c.tryGang(e.g, e.qs, e.at) {
			continue
		}
		e.qs.updateShare()
		e.qs.placedFirst = append(e.qs.placedFirst, e.at)
	}
	for _, qs := range qss {
		slices.Sort(qs.placedFirst)
	}
}

// earlyGang is a gang wholeNodesFirst tries: qs.gangs[at].
type earlyGang struct {
	g  *Gang
	qs *queueState
	at int
}
