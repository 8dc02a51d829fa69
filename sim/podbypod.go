package sim

// This file is the "pod-by-pod" baseline: what the default kube-scheduler
// does with the pods of gang jobs when nothing coordinates them. It lives in
// the simulator, not in the core.
//
// Pods are created when their job arrives; pods of jobs arriving at the same
// time are created interleaved round-robin across those jobs (first member of
// each job, then the second, ...), as concurrent operators do. Every cycle
// tries every pending pod in creation order; a pod that fits is bound at
// once, a pod that does not fit is skipped and does not block the pods
// behind it. A pod fits a node that admits it (cordon, taints, nodeSelector,
// required affinity) and has its request plus one pod slot free; among those
// nodes it goes to the best by kube-scheduler's default NodeResourcesFit
// LeastAllocated score (integer mean over cpu, memory and GPU of
// free-after-placement / allocatable x 100, skipping resources the node does
// not have), ties to the earliest node. A job starts when MinMember of its
// pods are placed (all of them unless the job is elastic); until then its
// placed pods hold their resources, which is the waste gangs avoid.
//
// Speed: pods are grouped by shape (request and constraints pointer), each
// shape a FIFO. A cycle merges the shapes by creation order with a heap; once
// the head of a shape fails, every pod of that shape fails for the rest of
// the cycle (nodes only fill up within it), so the shape drops out; and it
// stays out of later cycles until capacity is given back (state.gen moves),
// since until then nothing it could use was freed.

import (
	"container/heap"
	"fmt"

	"github.com/phalanx-sched/phalanx/core"
)

// maxNodeScore is kube-scheduler's framework.MaxNodeScore.
const maxNodeScore = 100

type pod struct {
	job *job
	m   int32
	seq int64
}

type shapeKey struct {
	req  core.Vector
	cons *core.Constraints
}

// podShape is the FIFO of pending pods of one shape.
type podShape struct {
	key  shapeKey
	pods []pod
	head int
	// failedGen is the state generation at which the head last failed, when
	// failed is set.
	failedGen uint64
	failed    bool
	// eligible[n] caches core.Admits(node n, key.cons); nodes never change their
	// labels or taints, so it only grows as nodes join.
	eligible []bool
}

type podByPod struct {
	s      *state
	shapes []*podShape
	byKey  map[shapeKey]*podShape
	seq    int64
	ready  shapeHeap
}

func newPodByPod(s *state) *podByPod {
	return &podByPod{s: s, byKey: make(map[shapeKey]*podShape)}
}

func (p *podByPod) arrive(jobs []*job) {
	for r := 0; ; r++ {
		created := false
		for _, j := range jobs {
			if r >= len(j.members) {
				continue
			}
			created = true
			p.enqueue(j, r)
		}
		if !created {
			return
		}
	}
}

// enqueue creates a pending pod for member m of j, behind every pod created
// before.
func (p *podByPod) enqueue(j *job, m int) {
	key := shapeKey{req: j.members[m].req, cons: j.members[m].cons}
	sh, ok := p.byKey[key]
	if !ok {
		sh = &podShape{key: key}
		p.byKey[key] = sh
		p.shapes = append(p.shapes, sh)
	}
	sh.pods = append(sh.pods, pod{job: j, m: int32(m), seq: p.seq})
	p.seq++
}

// requeue creates the pod of a member that waits again (a failed member's
// replacement), as its job's controller would.
func (p *podByPod) requeue(j *job, m int) { p.enqueue(j, m) }

// failed does nothing: the default scheduler keeps nothing for anyone.
func (p *podByPod) failed(*job, int, int32, core.Vector) {}

// completed leaves the job's unplaced pods in their FIFOs; they are dropped
// when they reach the head.
func (p *podByPod) completed(*job) {}

func (p *podByPod) finish() error { return nil }

// advance drops the head pods whose job has completed and reports whether a
// pod is left.
func (sh *podShape) advance() bool {
	for sh.head < len(sh.pods) && sh.pods[sh.head].job.done {
		sh.pods[sh.head] = pod{}
		sh.head++
	}
	if sh.head > 64 && sh.head*2 > len(sh.pods) {
		n := copy(sh.pods, sh.pods[sh.head:])
		clear(sh.pods[n:])
		sh.pods, sh.head = sh.pods[:n], 0
	}
	return sh.head < len(sh.pods)
}

func (p *podByPod) cycle() error {
	s := p.s
	p.ready = p.ready[:0]
	k := 0
	for _, sh := range p.shapes {
		if !sh.advance() {
			delete(p.byKey, sh.key)
			continue
		}
		p.shapes[k] = sh
		k++
		if !sh.failed || sh.failedGen != s.gen {
			sh.failed = false
			p.ready = append(p.ready, sh)
		}
	}
	clear(p.shapes[k:])
	p.shapes = p.shapes[:k]
	heap.Init(&p.ready)
	for len(p.ready) > 0 {
		sh := p.ready[0]
		n := p.bestNode(sh)
		if n < 0 {
			sh.failed, sh.failedGen = true, s.gen
			heap.Pop(&p.ready)
			continue
		}
		pd := sh.pods[sh.head]
		sh.pods[sh.head] = pod{}
		sh.head++
		s.bind(pd.job, int(pd.m), n)
		if sh.advance() {
			heap.Fix(&p.ready, 0)
		} else {
			heap.Pop(&p.ready)
		}
	}
	return nil
}

// bestNode returns the node a pod of shape sh goes to, or -1.
func (p *podByPod) bestNode(sh *podShape) int32 {
	nodes := p.s.snap.Nodes
	for i := len(sh.eligible); i < len(nodes); i++ {
		sh.eligible = append(sh.eligible, core.Admits(&nodes[i], sh.key.cons))
	}
	best, bestScore := int32(-1), int64(-1)
	for i := range nodes {
		if !sh.eligible[i] || !fitsNode(&nodes[i], sh.key.req) {
			continue
		}
		if sc := leastAllocated(&nodes[i], sh.key.req, p.s.gpu); sc > bestScore {
			best, bestScore = int32(i), sc
		}
	}
	return best
}

// leastAllocated is kube-scheduler's NodeResourcesFit LeastAllocated score of
// placing req on n, over cpu, memory and the GPU dimension (gpu, -1 if none),
// each weighted 1, in the same integer arithmetic.
func leastAllocated(n *core.Node, req core.Vector, gpu int) int64 {
	var sum, count int64
	for _, d := range [...]int{core.CPU, core.Memory, gpu} {
		if d < 0 || n.Allocatable[d] == 0 {
			continue
		}
		capacity, requested := n.Allocatable[d], n.Used[d]+req[d]
		if requested <= capacity {
			sum += (capacity - requested) * maxNodeScore / capacity
		}
		count++
	}
	if count == 0 {
		return 0
	}
	return sum / count
}

func (p *podByPod) reason(j *job) string {
	total := len(j.members)
	if total == 0 {
		return "job has no members"
	}
	if mm := j.spec.MinMember; mm < 1 || mm > total {
		return fmt.Sprintf("%d/%d pods placed; minMember %d is not in 1..%d, the job never starts", j.placed, total, mm, total)
	}
	for m := range j.members {
		mem := &j.members[m]
		if mem.state != memberPending {
			continue
		}
		return fmt.Sprintf("%d/%d pods placed; %d pending: %s", j.placed, total, total-j.placed, p.why(mem))
	}
	return fmt.Sprintf("%d/%d pods placed", j.placed, total)
}

// why says in words why member m finds no node now.
func (p *podByPod) why(m *member) string {
	s := p.s
	admitted, large := false, false
	for i := range s.snap.Nodes {
		n := &s.snap.Nodes[i]
		if !core.Admits(n, m.cons) {
			continue
		}
		admitted = true
		req := m.req
		req[core.Pods]++
		if req.Fits(n.Allocatable) {
			large = true
			break
		}
	}
	switch {
	case !admitted:
		return "no node matches its nodeSelector, affinity and tolerations"
	case !large:
		return fmt.Sprintf("no node is large enough for %s", s.names.Format(m.req))
	}
	return fmt.Sprintf("no node has %s free", s.names.Format(m.req))
}

// shapeHeap orders shapes by the creation order of their head pod.
type shapeHeap []*podShape

func (h shapeHeap) Len() int { return len(h) }
func (h shapeHeap) Less(a, b int) bool {
	return h[a].pods[h[a].head].seq < h[b].pods[h[b].head].seq
}
func (h shapeHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *shapeHeap) Push(x any)   { *h = append(*h, x.(*podShape)) }
func (h *shapeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}
