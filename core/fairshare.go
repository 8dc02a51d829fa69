package core

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strings"
)

// This file orders queues by fair share.
//
// What a queue deserves is computed by water-filling: the cluster's
// allocatable resources are dealt out in proportion to the queues' weights,
// no queue getting more than it demands (what it holds plus what its gangs
// ask for) or more than its capability; what a satisfied queue leaves is
// dealt out again among the rest. A queue always deserves at least its
// guarantee. A queue's share is then the largest, over resources, of what it
// holds divided by what it deserves (its dominant share, relative to its
// due), and the cycle serves the queue with the lowest share first.
//
// The policy is work-conserving: a queue past its deserved share still gets
// resources nobody else can use in this cycle. Only its capability is a hard
// limit. Taking back what a queue holds beyond its share is reclaim's job.

// maxWeight caps queue weights so that dealing never overflows.
const maxWeight = 1 << 20

type queueState struct {
	q         *Queue
	weight    int64
	allocated Vector
	demand    Vector
	deserved  Vector
	gangs     []*Gang
	wants     []Vector // by gang: what admit returned
	next      int      // index of the next gang to visit
	// blockedBy, in a StrictOrder queue, is the gang that did not fit.
	blockedBy *Gang
	share     float64
	heapIndex int
	// lastWeighed is scratch of rankChanges.
	lastWeighed *unit
	// pos is the queue's place in the cycle's order of queues.
	pos int
	// placedFirst holds, ascending, the indexes in gangs of the gangs
	// wholeNodesFirst placed, and firstAt the next of them a turn reaches.
	placedFirst []int
	firstAt     int
}

// deal computes deserved for every queue by water-filling total among them.
func deal(queues []*queueState, total Vector) {
	for _, qs := range queues {
		qs.deserved = Vector{}
	}
	remaining := total
	active := make([]*queueState, 0, len(queues))
	for _, qs := range queues {
		if !qs.demand.IsZero() {
			active = append(active, qs)
		}
	}
	for len(active) > 0 && !remaining.IsZero() {
		var weights int64
		for _, qs := range active {
			weights += qs.weight
		}
		dealt := Vector{}
		next := active[:0]
		for _, qs := range active {
			satisfied := true
			for d := range remaining {
				if remaining[d] <= 0 {
					continue
				}
				want := min(qs.demand[d], qs.q.Capability[d])
				give := min(mulDiv(remaining[d], qs.weight, weights), want-qs.deserved[d])
				if give < 0 {
					give = 0
				}
				qs.deserved[d] += give
				dealt[d] += give
				if qs.deserved[d] < want {
					satisfied = false
				}
			}
			if !satisfied {
				next = append(next, qs)
			}
		}
		remaining = remaining.Sub(dealt)
		if dealt.IsZero() {
			break // rounding left crumbs smaller than one unit per queue
		}
		active = next
	}
	for _, qs := range queues {
		for d := range qs.deserved {
			qs.deserved[d] = max(qs.deserved[d], qs.q.Guarantee[d])
		}
	}
}

// Deserved returns what each queue of s deserves, by name, dealt as a cycle
// deals it: the schedulable nodes' allocatable resources water-filled by
// weight among the queues, each up to what it demands (what it holds plus
// what its valid waiting gangs ask for) and its capability, and at least its
// guarantee. It is for reports (a Queue's status, metrics); a cycle deals
// among the gangs it admits.
func Deserved(s *Snapshot) map[string]Vector {
	var total Vector
	for i := range s.Nodes {
		if !s.Nodes[i].Unschedulable {
			total = total.Add(s.Nodes[i].Allocatable)
		}
	}
	byName := map[string]*queueState{}
	queues := make([]*queueState, 0, len(s.Queues))
	for i := range s.Queues {
		q := &s.Queues[i]
		if byName[q.Name] != nil {
			continue // the first definition wins, as in a cycle
		}
		qs := &queueState{q: q, weight: min(max(q.Weight, 1), maxWeight), demand: q.Allocated}
		byName[q.Name] = qs
		queues = append(queues, qs)
	}
	for _, g := range s.Gangs {
		if g == nil || g.Invalid != "" || g.Unsupported != "" || byName[g.Queue] == nil {
			continue
		}
		qs := byName[g.Queue]
		for i := range g.Pending {
			qs.demand = qs.demand.Add(g.Pending[i].Request)
		}
	}
	deal(queues, total)
	out := make(map[string]Vector, len(queues))
	for _, qs := range queues {
		out[qs.q.Name] = qs.deserved
	}
	return out
}

// updateShare recomputes the dominant share of what qs holds relative to what
// it deserves. Holding something it does not deserve at all counts as a huge
// share; holding nothing counts as zero.
func (qs *queueState) updateShare() {
	share := 0.0
	for d := range qs.allocated {
		a := qs.allocated[d]
		if a <= 0 || d == Pods {
			continue
		}
		s := 1e9
		if qs.deserved[d] > 0 {
			s = float64(a) / float64(qs.deserved[d])
		}
		share = max(share, s)
	}
	qs.share = share
}

// queueHeap orders queues by share, then name, so that ties break the same
// way every time.
type queueHeap []*queueState

func (h queueHeap) Len() int { return len(h) }
func (h queueHeap) Less(i, j int) bool {
	if h[i].share != h[j].share {
		return h[i].share < h[j].share
	}
	return h[i].q.Name < h[j].q.Name
}
func (h queueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *queueHeap) Push(x any) {
	qs := x.(*queueState)
	qs.heapIndex = len(*h)
	*h = append(*h, qs)
}
func (h *queueHeap) Pop() any {
	old := *h
	qs := old[len(old)-1]
	*h = old[:len(old)-1]
	return qs
}

var _ heap.Interface = (*queueHeap)(nil)

// gangBefore is the order of gangs within a queue: higher priority first,
// then earlier arrival, then ID.
func gangBefore(a, b *Gang) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return arrivedBefore(a, b)
}

// shorterBefore is the order of gangs within a queue under
// Config.ShortestFirst: higher priority first, then gangs that hold members
// but not their minimum (those members idle until the rest come), then
// shorter estimate (none counting as the longest), then earlier arrival,
// then ID.
func shorterBefore(a, b *Gang) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if pa, pb := partial(a), partial(b); pa != pb {
		return pa
	}
	if ea, eb := estimateOrMax(a), estimateOrMax(b); ea != eb {
		return ea < eb
	}
	return arrivedBefore(a, b)
}

// partialFirst orders the gangs that hold members but not their minimum
// before the others, each part by less.
func partialFirst(less func(a, b *Gang) bool) func(a, b *Gang) bool {
	return func(a, b *Gang) bool {
		if pa, pb := partial(a), partial(b); pa != pb {
			return pa
		}
		return less(a, b)
	}
}

// partial reports whether g holds members but fewer than its minimum.
func partial(g *Gang) bool { return g.Bound > 0 && g.Bound < g.MinMember }

func estimateOrMax(g *Gang) int64 {
	if g.Estimate > 0 {
		return g.Estimate
	}
	return math.MaxInt64
}

func arrivedBefore(a, b *Gang) bool {
	if a.Arrival != b.Arrival {
		return a.Arrival < b.Arrival
	}
	return a.ID < b.ID
}

// gangOrder is an order in which a cycle visits gangs.
type gangOrder uint8

const (
	byArrival  gangOrder = iota // arrivedBefore
	byPriority                  // partialFirst(gangBefore)
	byEstimate                  // partialFirst(shorterBefore)
)

// gangKey is a gang's place in a gangOrder: keys compare field by field,
// then by the gang's ID.
type gangKey struct {
	first    uint64 // partial gangs first, then higher priority
	estimate int64
	arrival  int64
	g        *Gang
	at       int32 // the gang's index before sorting
}

func (o gangOrder) key(g *Gang) gangKey {
	k := gangKey{arrival: g.Arrival, g: g}
	if o == byArrival {
		return k
	}
	k.first = uint64(math.MaxInt32 - int64(g.Priority)) // fits 32 bits
	if !partial(g) {
		k.first |= 1 << 32
	}
	if o == byEstimate {
		k.estimate = estimateOrMax(g)
	}
	return k
}

func compareGangKeys(a, b gangKey) int {
	switch {
	case a.first != b.first:
		return cmp.Compare(a.first, b.first)
	case a.estimate != b.estimate:
		return cmp.Compare(a.estimate, b.estimate)
	case a.arrival != b.arrival:
		return cmp.Compare(a.arrival, b.arrival)
	}
	return strings.Compare(a.g.ID, b.g.ID)
}

// gangSorter sorts gangs in a gangOrder, keeping its scratch space from one
// sort to the next. Every order of gangs ends on their IDs, unique in a
// snapshot: no two gangs are equal, so an unstable sort gives the one result.
type gangSorter struct {
	keys   []gangKey
	packed []packedKey
	low    []uint64 // the low words of packed, when the high ones are equal
	// perm, after a sort that moved gangs, gives for each place the index
	// the gang there had before.
	perm []int32
	old  []*Gang
}

// packedKey is (first, estimate, index) of a gangKey in 128 bits, compared
// as two words: the order of gangs given in arrival order, where the index
// stands for arrival and ID.
type packedKey struct{ hi, lo uint64 }

func comparePacked(a, b packedKey) int {
	if a.hi != b.hi {
		return cmp.Compare(a.hi, b.hi)
	}
	return cmp.Compare(a.lo, b.lo)
}

// sort sorts gangs in order o and reports whether it moved any (then perm
// says how). Gangs given in arrival order, as callers usually keep them,
// are sorted on packed keys, and not at all if they are in order o already.
func (s *gangSorter) sort(gangs []*Gang, o gangOrder) bool {
	if o == byArrival {
		for i := 1; i < len(gangs); i++ {
			if !arrivedBefore(gangs[i-1], gangs[i]) {
				return s.sortByKeys(gangs, o)
			}
		}
		return false
	}
	s.packed = s.packed[:0]
	inArrival, sorted := true, true
	for i, g := range gangs {
		k := o.key(g)
		// first takes 33 bits and estimate 63 (it is never negative).
		p := packedKey{hi: k.first<<31 | uint64(k.estimate)>>32, lo: uint64(k.estimate)<<32 | uint64(i)}
		s.packed = append(s.packed, p)
		if i > 0 {
			inArrival = inArrival && arrivedBefore(gangs[i-1], g)
			sorted = sorted && comparePacked(s.packed[i-1], p) < 0
		}
	}
	s.perm = s.perm[:0]
	if inArrival {
		if sorted {
			return false
		}
		if s.sameHigh() {
			// One word of key each, as usual (one priority, estimates
			// below 2^32 s): sorted as words.
			s.low = s.low[:0]
			for _, p := range s.packed {
				s.low = append(s.low, p.lo)
			}
			slices.Sort(s.low)
			for _, lo := range s.low {
				s.perm = append(s.perm, int32(lo&math.MaxUint32))
			}
		} else {
			slices.SortFunc(s.packed, comparePacked)
			for _, p := range s.packed {
				s.perm = append(s.perm, int32(p.lo&math.MaxUint32))
			}
		}
	} else {
		return s.sortByKeys(gangs, o)
	}
	s.permute(gangs)
	return true
}

// sameHigh reports whether the packed keys all have the same high word.
func (s *gangSorter) sameHigh() bool {
	for _, p := range s.packed {
		if p.hi != s.packed[0].hi {
			return false
		}
	}
	return true
}

// sortByKeys sorts gangs in order o on their full keys.
func (s *gangSorter) sortByKeys(gangs []*Gang, o gangOrder) bool {
	s.keys = s.keys[:0]
	for i, g := range gangs {
		k := o.key(g)
		k.at = int32(i)
		s.keys = append(s.keys, k)
	}
	slices.SortFunc(s.keys, compareGangKeys)
	s.perm = s.perm[:0]
	for _, k := range s.keys {
		s.perm = append(s.perm, k.at)
	}
	s.permute(gangs)
	return true
}

// permute puts gangs in the order perm gives.
func (s *gangSorter) permute(gangs []*Gang) {
	s.old = append(s.old[:0], gangs...)
	for i, at := range s.perm {
		gangs[i] = s.old[at]
	}
	clear(s.old)
}

// mulDiv returns a*b/c for non-negative a and 0 < b <= c without
// overflowing: memory totals in bytes times weights exceed int64.
func mulDiv(a, b, c int64) int64 {
	return a/c*b + a%c*b/c
}
