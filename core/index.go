package core

// freeIndex keeps every node's free resources for one cycle and files the
// nodes in buckets by their free accelerator count, so that placement finds
// the best-fitting node without scanning the cluster: a member needing g GPUs
// only looks at buckets g and up. Without an accelerator dimension all nodes
// share bucket 0 and the search degrades to a first-fit scan.
//
// Every change of a node's free resources goes through take and give, which
// keep the buckets and the cluster-wide total in step. Within a bucket the
// order is the order of insertion and moves, which is deterministic.
type freeIndex struct {
	gpu     int // dimension of the accelerator, or -1
	free    []Vector
	total   Vector // sum of free over schedulable nodes
	buckets [][]int32
	pos     []int32 // node -> position in its bucket, or -1 if not filed
	bucket  []int32 // node -> bucket, or -1
	top     int     // highest non-empty bucket, or -1
	// dom, once the cycle needs topology, has its domain totals kept in step.
	dom *domains
	// journal, while recording (mark), lists every move since, so that
	// undo can put the index back as it was, bucket order included.
	journal   []indexMove
	recording bool
}

// indexMove is one move of the journal: node n had free resources old, in
// bucket at position pos, and top was the highest non-empty bucket.
type indexMove struct {
	n, bucket, pos, top int32
	old                 Vector
}

func newFreeIndex(nodes []Node, gpu int) *freeIndex {
	x := &freeIndex{
		gpu:    gpu,
		free:   make([]Vector, len(nodes)),
		pos:    make([]int32, len(nodes)),
		bucket: make([]int32, len(nodes)),
		top:    -1,
	}
	maxGPU := int64(0)
	for i := range nodes {
		x.free[i] = nodes[i].Allocatable.Sub(nodes[i].Used)
		if gpu >= 0 && nodes[i].Allocatable[gpu] > maxGPU {
			maxGPU = nodes[i].Allocatable[gpu]
		}
	}
	x.buckets = make([][]int32, maxGPU+1)
	x.refile(nodes)
	return x
}

// refile files every schedulable node of nodes afresh by what x.free says
// it has free, in node order, reusing x's memory: the index is then the one
// newFreeIndex builds over nodes with those free resources. It drops the
// domains.
func (x *freeIndex) refile(nodes []Node) {
	for b := range x.buckets {
		x.buckets[b] = x.buckets[b][:0]
	}
	x.total, x.top, x.dom = Vector{}, -1, nil
	for i := range nodes {
		x.pos[i], x.bucket[i] = -1, -1
		if nodes[i].Unschedulable {
			continue
		}
		x.total = x.total.Add(x.free[i])
		x.file(i)
	}
}

// bucketOf is the bucket for a free vector: its accelerator count clamped to
// the bucket range.
func (x *freeIndex) bucketOf(f Vector) int {
	if x.gpu < 0 || f[x.gpu] <= 0 {
		return 0
	}
	if b := f[x.gpu]; b < int64(len(x.buckets)) {
		return int(b)
	}
	return len(x.buckets) - 1
}

func (x *freeIndex) file(n int) {
	b := x.bucketOf(x.free[n])
	x.bucket[n] = int32(b)
	x.pos[n] = int32(len(x.buckets[b]))
	x.buckets[b] = append(x.buckets[b], int32(n))
	if b > x.top {
		x.top = b
	}
}

func (x *freeIndex) unfile(n int) {
	b, p := x.bucket[n], x.pos[n]
	s := x.buckets[b]
	last := s[len(s)-1]
	s[p] = last
	x.pos[last] = p
	x.buckets[b] = s[:len(s)-1]
	x.pos[n], x.bucket[n] = -1, -1
	for x.top >= 0 && len(x.buckets[x.top]) == 0 {
		x.top--
	}
}

// take subtracts r from node n's free resources.
func (x *freeIndex) take(n int, r Vector) { x.move(n, x.free[n].Sub(r)) }

// give adds r back to node n's free resources.
func (x *freeIndex) give(n int, r Vector) { x.move(n, x.free[n].Add(r)) }

func (x *freeIndex) move(n int, f Vector) {
	old := x.free[n]
	x.free[n] = f
	if x.recording {
		x.journal = append(x.journal, indexMove{n: int32(n), bucket: x.bucket[n], pos: x.pos[n], top: int32(x.top), old: old})
	}
	if x.bucket[n] < 0 {
		return // not schedulable: not counted
	}
	x.total = x.total.Sub(old).Add(f)
	if x.dom != nil {
		x.dom.move(n, old, f)
	}
	if x.bucketOf(f) != int(x.bucket[n]) {
		x.unfile(n)
		x.file(n)
	}
}

// gpus returns the accelerator amount of r, or 0 without an accelerator.
func (x *freeIndex) gpus(r Vector) int64 {
	if x.gpu < 0 {
		return 0
	}
	return r[x.gpu]
}

// mark starts recording the index's moves, if it was not, and returns the
// point to which undo puts the index back.
func (x *freeIndex) mark() int {
	x.recording = true
	return len(x.journal)
}

// undo puts the index back as it was at mark m, the order of every bucket
// included, and stops recording if m was where recording began. A placement
// rolled back (give after take) leaves its node elsewhere in its bucket;
// undo leaves no trace, so that what was tried and undone changes no later
// choice.
func (x *freeIndex) undo(m int) {
	for i := len(x.journal) - 1; i >= m; i-- {
		mv := &x.journal[i]
		n := int(mv.n)
		cur := x.free[n]
		x.free[n] = mv.old
		if mv.bucket < 0 {
			continue // not schedulable: not counted
		}
		x.total = x.total.Sub(cur).Add(mv.old)
		if x.dom != nil {
			x.dom.move(n, cur, mv.old)
		}
		if b := x.bucket[n]; b != mv.bucket {
			// Undo file: n is last in its bucket. Undo unfile: the node
			// that took n's place goes back to the end.
			s := x.buckets[b]
			x.buckets[b] = s[:len(s)-1]
			s = x.buckets[mv.bucket]
			if int(mv.pos) == len(s) {
				s = append(s, mv.n)
			} else {
				moved := s[mv.pos]
				s = append(s, moved)
				x.pos[moved] = int32(len(s) - 1)
				s[mv.pos] = mv.n
			}
			x.buckets[mv.bucket] = s
			x.bucket[n], x.pos[n] = mv.bucket, mv.pos
		}
		x.top = int(mv.top)
	}
	x.journal = x.journal[:m]
	if m == 0 {
		x.recording = false
	}
}

// commit stops recording and forgets the journal: what was done stays.
func (x *freeIndex) commit() {
	x.journal, x.recording = x.journal[:0], false
}
