package sim

// This file tells stuck jobs from unschedulable ones at the end of a run. A
// job fits the empty cluster at its largest (every pool joined, nothing
// bound) if the members it needs to start, its first MinMember members, can
// be packed into the nodes by first-fit-decreasing: members sorted by
// request, largest first (extended resources, then cpu, then memory), each
// put on the first node, in node order, that admits it and still has its
// request plus one pod slot free. First-fit-decreasing can miss a packing
// that exists; for the shapes of real jobs (identical workers plus a few
// small roles) it does not. Queue capabilities are not taken into account:
// "unschedulable" is about the cluster. A job that requires one domain of a
// topology level must fit the nodes of one value of that label, tried in
// order of first appearance; one that names a label outside the workload's
// topology fits nowhere (the scheduler rejects it).

import (
	"cmp"
	"slices"

	"github.com/phalanx-sched/phalanx/core"
)

// fitter packs jobs into the empty cluster, reusing its scratch space.
type fitter struct {
	nodes    []core.Node
	topology []string
	free     []core.Vector
	order    []int
}

func newFitter(nodes []core.Node, topology []string) *fitter {
	return &fitter{nodes: nodes, topology: topology, free: make([]core.Vector, len(nodes))}
}

// fits reports whether j can start on the empty cluster.
func (f *fitter) fits(j *job) bool {
	need := j.spec.MinMember
	if need < 1 || need > len(j.members) {
		return false
	}
	label := j.spec.RequiredTopology
	if label == "" {
		return f.pack(j, func(*core.Node) bool { return true })
	}
	if !slices.Contains(f.topology, label) {
		return false
	}
	tried := map[string]bool{}
	for i := range f.nodes {
		v, ok := f.nodes[i].Labels[label]
		if !ok || tried[v] {
			continue
		}
		tried[v] = true
		if f.pack(j, func(n *core.Node) bool { got, ok := n.Labels[label]; return ok && got == v }) {
			return true
		}
	}
	return false
}

// pack reports whether the first MinMember members of j fit, first-fit
// decreasing, the empty nodes that in accepts.
func (f *fitter) pack(j *job, in func(*core.Node) bool) bool {
	need := j.spec.MinMember
	for i := range f.nodes {
		f.free[i] = f.nodes[i].Allocatable
		if !in(&f.nodes[i]) {
			f.free[i] = core.Vector{}
		}
	}
	f.order = f.order[:0]
	for m := 0; m < need; m++ {
		f.order = append(f.order, m)
	}
	slices.SortStableFunc(f.order, func(a, b int) int {
		return -compareRequest(j.members[a].req, j.members[b].req)
	})
	for _, m := range f.order {
		mem := &j.members[m]
		req := mem.req
		req[core.Pods] = 1
		placed := false
		for i := range f.nodes {
			if req.Fits(f.free[i]) && core.Admits(&f.nodes[i], mem.cons) {
				f.free[i] = f.free[i].Sub(req)
				placed = true
				break
			}
		}
		if !placed {
			return false
		}
	}
	return true
}

// compareRequest orders requests by extended resources, then cpu, then
// memory.
func compareRequest(a, b core.Vector) int {
	for d := core.FirstExtended; d < core.MaxDims; d++ {
		if c := cmp.Compare(a[d], b[d]); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(a[core.CPU], b[core.CPU]); c != 0 {
		return c
	}
	return cmp.Compare(a[core.Memory], b[core.Memory])
}
