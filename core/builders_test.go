package core

import "fmt"

// Fluent builders for core tests: MakeNode("n1").GPUs(8), MakeGang("train").
// Members(4, GPUs(2)), and a snapshot that names "nvidia.com/gpu" as its
// fourth dimension.

const gpuDim = FirstExtended

var testResources = ResourceNames{"cpu", "memory", "pods", "nvidia.com/gpu"}

// req builds a request from options such as GPUs(2), CPUs(1).
type reqOpt func(*Vector)

func GPUs(n int64) reqOpt  { return func(v *Vector) { v[gpuDim] = n } }
func CPUs(n int64) reqOpt  { return func(v *Vector) { v[CPU] = n * 1000 } }
func MemGi(n int64) reqOpt { return func(v *Vector) { v[Memory] = n << 30 } }

func req(opts ...reqOpt) Vector {
	var v Vector
	for _, o := range opts {
		o(&v)
	}
	return v
}

type nodeBuilder struct{ n Node }

func MakeNode(name string) *nodeBuilder {
	return &nodeBuilder{Node{Name: name, Allocatable: Vector{CPU: 64000, Memory: 256 << 30, Pods: 110}}}
}
func (b *nodeBuilder) GPUs(n int64) *nodeBuilder { b.n.Allocatable[gpuDim] = n; return b }
func (b *nodeBuilder) CPUs(n int64) *nodeBuilder { b.n.Allocatable[CPU] = n * 1000; return b }
func (b *nodeBuilder) UsedGPUs(n int64) *nodeBuilder {
	b.n.Used[gpuDim] += n
	b.n.Used[Pods]++
	return b
}
func (b *nodeBuilder) Used(v Vector) *nodeBuilder { b.n.Used = b.n.Used.Add(v); return b }
func (b *nodeBuilder) Label(k, v string) *nodeBuilder {
	if b.n.Labels == nil {
		b.n.Labels = map[string]string{}
	}
	b.n.Labels[k] = v
	return b
}
func (b *nodeBuilder) Taint(k, v string, e TaintEffect) *nodeBuilder {
	b.n.Taints = append(b.n.Taints, Taint{Key: k, Value: v, Effect: e})
	return b
}
func (b *nodeBuilder) Cordoned() *nodeBuilder { b.n.Unschedulable = true; return b }
func (b *nodeBuilder) Obj() Node              { return b.n }

type gangBuilder struct{ g Gang }

func MakeGang(id string) *gangBuilder { return &gangBuilder{Gang{ID: id, Queue: "default"}} }

// Task adds n pending members named <gang>-<role>-<i> with request r and
// shared constraints c (may be nil). MinMember follows the member count
// unless set with Min.
func (b *gangBuilder) Task(role string, n int, r Vector, c *Constraints) *gangBuilder {
	for i := 0; i < n; i++ {
		b.g.Pending = append(b.g.Pending, Member{Name: fmt.Sprintf("%s-%s-%d", b.g.ID, role, i), Request: r, Constraints: c})
	}
	return b
}
func (b *gangBuilder) Members(n int, opts ...reqOpt) *gangBuilder {
	return b.Task("m", n, req(opts...), nil)
}
func (b *gangBuilder) Min(n int) *gangBuilder          { b.g.MinMember = n; return b }
func (b *gangBuilder) Bound(n int) *gangBuilder        { b.g.Bound = n; return b }
func (b *gangBuilder) Queue(q string) *gangBuilder     { b.g.Queue = q; return b }
func (b *gangBuilder) Priority(p int32) *gangBuilder   { b.g.Priority = p; return b }
func (b *gangBuilder) Arrival(t int64) *gangBuilder    { b.g.Arrival = t; return b }
func (b *gangBuilder) Estimate(s int64) *gangBuilder   { b.g.Estimate = s; return b }
func (b *gangBuilder) Invalid(why string) *gangBuilder { b.g.Invalid = why; return b }
func (b *gangBuilder) Required(level string) *gangBuilder {
	b.g.RequiredLevel = level
	return b
}
func (b *gangBuilder) Obj() *Gang {
	g := b.g
	if g.MinMember == 0 {
		g.MinMember = g.Bound + len(g.Pending)
	}
	return &g
}

type queueBuilder struct{ q Queue }

func MakeQueue(name string) *queueBuilder {
	return &queueBuilder{Queue{Name: name, Weight: 1, Capability: Unbounded()}}
}
func (b *queueBuilder) Weight(w int64) *queueBuilder { b.q.Weight = w; return b }
func (b *queueBuilder) CapGPUs(n int64) *queueBuilder {
	b.q.Capability[gpuDim] = n
	return b
}
func (b *queueBuilder) AllocatedGPUs(n int64) *queueBuilder {
	b.q.Allocated[gpuDim] = n
	return b
}
func (b *queueBuilder) GuaranteeGPUs(n int64) *queueBuilder {
	b.q.Guarantee[gpuDim] = n
	return b
}
func (b *queueBuilder) Closed() *queueBuilder { b.q.Closed = true; return b }
func (b *queueBuilder) Obj() Queue            { return b.q }

type snapBuilder struct{ s Snapshot }

// MakeSnapshot starts a snapshot with a "default" queue unless queues are
// added explicitly.
func MakeSnapshot() *snapBuilder { return &snapBuilder{Snapshot{Resources: testResources}} }

func (b *snapBuilder) Nodes(ns ...*nodeBuilder) *snapBuilder {
	for _, n := range ns {
		b.s.Nodes = append(b.s.Nodes, n.Obj())
	}
	return b
}

// NodesN adds count nodes named <prefix>-<i> built by mk.
func (b *snapBuilder) NodesN(prefix string, count int, mk func(*nodeBuilder) *nodeBuilder) *snapBuilder {
	for i := 0; i < count; i++ {
		b.s.Nodes = append(b.s.Nodes, mk(MakeNode(fmt.Sprintf("%s-%d", prefix, i))).Obj())
	}
	return b
}
func (b *snapBuilder) Queues(qs ...*queueBuilder) *snapBuilder {
	for _, q := range qs {
		b.s.Queues = append(b.s.Queues, q.Obj())
	}
	return b
}
func (b *snapBuilder) Gangs(gs ...*gangBuilder) *snapBuilder {
	for _, g := range gs {
		b.s.Gangs = append(b.s.Gangs, g.Obj())
	}
	return b
}
func (b *snapBuilder) Obj() *Snapshot {
	s := b.s
	if len(s.Queues) == 0 {
		s.Queues = []Queue{MakeQueue("default").Obj()}
	}
	return &s
}
