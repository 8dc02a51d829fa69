package main

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The keys and names the schedulers read.
const (
	labelGangName    = "pod-group.scheduling.sigs.k8s.io/name"
	labelMinAvail    = "pod-group.scheduling.sigs.k8s.io/min-available"
	resourceGPU      = corev1.ResourceName("nvidia.com/gpu")
	nsRunning        = "scale-running"
	nsPending        = "scale-pending"
	podsPerNode      = 110
	phalanxScheduler = "phalanx"
)

// member is one pod of the plan.
type member struct {
	name string
	gpu  bool   // one GPU (and one cpu), else one cpu and 1Gi
	gang int    // index of its gang within its half
	size int    // members of that gang (its min-available)
	node string // running: its node; pending: where the raw binder puts it
}

// plan is the cluster every scheduler faces: nodes, a running half bound to
// them, and a pending half that fits in what the running half leaves.
type plan struct {
	nodes, gpusPerNode int
	running, pending   []member
	runningGPU         int // GPUs the running half uses
	pendingGPU         int // pods of the pending half that ask for a GPU
}

func nodeName(i int) string { return fmt.Sprintf("scale-node-%05d", i) }

// newPlan lays out the pods. Node i has (i mod 5)/4 of its GPUs used by the
// running half (0, 2, 4, 6 or 8 of 8), which makes 40% of the cluster's GPUs
// free; the rest of the running half are CPU-only pods spread evenly. Of the
// pending half, as many pods as 80% of the free GPUs ask for one GPU, the
// others are CPU-only, so every pending pod fits wherever the schedulers put
// them (each node keeps far more free pod slots and cpus than they need).
// Both halves are cut into gangs whose sizes take equal shares of the pods,
// interleaved.
func newPlan(nodes, gpusPerNode, pods int, gangSizes []int) (*plan, error) {
	if nodes <= 0 || pods < 2 {
		return nil, fmt.Errorf("want nodes > 0 and pods >= 2")
	}
	if pods > nodes*podsPerNode*6/10 {
		return nil, fmt.Errorf("%d pods on %d nodes is more than 60%% of their %d pod slots", pods, nodes, podsPerNode)
	}
	p := &plan{nodes: nodes, gpusPerNode: gpusPerNode}
	nRunning := pods / 2
	nPending := pods - nRunning

	// Running half: GPU pods by the pattern, then CPU-only pods round robin.
	free := make([]int, nodes)
	for i := range nodes {
		used := min((i%5)*gpusPerNode/4, nRunning-len(p.running))
		for range used {
			p.running = append(p.running, member{gpu: true, node: nodeName(i)})
		}
		p.runningGPU += used
		free[i] = gpusPerNode - used
	}
	for i := 0; len(p.running) < nRunning; i++ {
		p.running = append(p.running, member{node: nodeName(i % nodes)})
	}

	// Pending half: GPU pods first fit over the free GPUs, then CPU-only pods
	// round robin.
	freeGPU := nodes*gpusPerNode - p.runningGPU
	p.pendingGPU = min(nPending, freeGPU*4/5)
	node := 0
	for len(p.pending) < p.pendingGPU {
		for free[node] == 0 {
			node++
		}
		free[node]--
		p.pending = append(p.pending, member{gpu: true, node: nodeName(node)})
	}
	for i := 0; len(p.pending) < nPending; i++ {
		p.pending = append(p.pending, member{node: nodeName(i % nodes)})
	}

	for half, list := range [][]member{p.running, p.pending} {
		prefix := [...]string{"r", "p"}[half]
		for i := range list {
			list[i].name = fmt.Sprintf("%s-%06d", prefix, i)
		}
		assignGangs(list, gangSizes)
	}
	return p, nil
}

// assignGangs cuts members into consecutive gangs, each time of the size
// that has so far received the fewest pods, so that every size gets about
// an equal share of the pods and sizes interleave. The last gang may be
// smaller than its size.
func assignGangs(list []member, sizes []int) {
	got := make([]int, len(sizes))
	gang := 0
	for i := 0; i < len(list); gang++ {
		k := 0
		for j := range sizes {
			if got[j] < got[k] {
				k = j
			}
		}
		n := min(sizes[k], len(list)-i)
		got[k] += n
		for j := i; j < i+n; j++ {
			list[j].gang, list[j].size = gang, n
		}
		i += n
	}
}

// gangCounts returns how many gangs of each size the list has.
func gangCounts(list []member) map[int]int {
	counts := map[int]int{}
	last := -1
	for _, m := range list {
		if m.gang != last {
			counts[m.size]++
			last = m.gang
		}
	}
	return counts
}

// pod builds the object of m in ns. For Phalanx (and the raw binder) it
// carries the gang labels and schedulerName phalanx; for kube-scheduler it
// has neither. A running member is created bound to its node.
func pod(m member, ns string, gangs, bound bool) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	lim := corev1.ResourceList{}
	if m.gpu {
		req[resourceGPU] = resource.MustParse("1")
		lim[resourceGPU] = resource.MustParse("1")
	} else {
		req[corev1.ResourceMemory] = resource.MustParse("1Gi")
	}
	zero := int64(0)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: ns, Labels: map[string]string{"app": "scale"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "c", Image: "none",
				Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}},
		},
	}
	if gangs {
		p.Spec.SchedulerName = phalanxScheduler
		p.Labels[labelGangName] = "g-" + strconv.Itoa(m.gang)
		p.Labels[labelMinAvail] = strconv.Itoa(m.size)
	}
	if bound {
		p.Spec.NodeName = m.node
	}
	return p
}
