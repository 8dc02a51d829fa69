package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// registry maps Kubernetes resource names to the dimensions of core.Vector.
// cpu, memory and pods are fixed; any other resource (an extended resource
// such as nvidia.com/gpu, ephemeral-storage, hugepages-2Mi) gets the next
// free dimension the first time a pod of ours requests a nonzero amount of
// it, or a PodGroup's minResources or a Queue names it, and keeps it. A
// node's allocatable alone never adds one: nodes report ephemeral-storage
// and hugepages that few pods ask for, and a Vector has only
// core.MaxDims-core.FirstExtended dimensions to spare. Vectors computed
// earlier therefore miss a dimension added later; grown tells the store to
// convert those again (Store.regrow).
type registry struct {
	names core.ResourceNames
	// grown, when set, is called each time a dimension is added, before
	// the conversion that added it returns.
	grown func()
}

func newRegistry() *registry {
	names, _ := core.NewResourceNames()
	return &registry{names: names}
}

// maxAmount bounds every amount the adapter hands the core, in the core's
// units: millicores, bytes, devices, pod slots. It is 10^15 (a thousand
// million cores, a petabyte of memory), far beyond any real node, and small
// enough that an int64 holds the sum of 9,223 amounts at the bound: a node's
// usage, a queue's allocation and the cluster's total cannot wrap around.
const maxAmount int64 = 1e15

// bound is maxAmount as a Quantity of the named resource.
func bound(name corev1.ResourceName) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(maxAmount, resource.DecimalExponent)
	}
	return *resource.NewQuantity(maxAmount, resource.DecimalExponent)
}

// amount converts q, an amount of the named resource, into the core's unit.
// A negative amount comes back as 0 and one beyond maxAmount as maxAmount,
// each with a problem that names the resource, the value (in the canonical
// form the API server shows: 1e16 reads 10e15) and the bound. It compares q
// before converting it: Value and MilliValue return wrong numbers for
// quantities an int64 cannot hold.
func amount(name corev1.ResourceName, q resource.Quantity) (int64, string) {
	b := bound(name)
	switch {
	case q.Sign() < 0:
		return 0, fmt.Sprintf("requests %s=%s, a negative amount", name, q.String())
	case q.Cmp(b) > 0:
		return maxAmount, fmt.Sprintf("requests %s=%s, more than Phalanx can count (at most %s)", name, q.String(), b.String())
	case name == corev1.ResourceCPU:
		return q.MilliValue(), ""
	}
	return q.Value(), ""
}

// vector converts rl, adding a dimension for each resource of a nonzero
// amount that has none yet. Every dimension of the result lies in
// [0, maxAmount]: an amount out of bounds is clamped to them and reported as
// a problem, as is a resource that does not fit in the core's dimensions
// (which is left out). Only the first problem, in the order of the resource
// names, is reported. A pod's problem makes its gang invalid; for a queue's
// guarantee the clamped amounts are what counts.
func (r *registry) vector(rl corev1.ResourceList) (core.Vector, string) {
	return r.convert(rl, true)
}

// known converts rl on the dimensions that exist, leaving out the resources
// that have none: a node's allocatable, what pods of other schedulers use.
// Amounts out of bounds are clamped.
func (r *registry) known(rl corev1.ResourceList) core.Vector {
	v, _ := r.convert(rl, false)
	return v
}

func (r *registry) convert(rl corev1.ResourceList, add bool) (core.Vector, string) {
	var v core.Vector
	var problem string
	keys := make([]string, 0, len(rl))
	for k := range rl {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := corev1.ResourceName(k)
		d := fixed(name)
		if d < 0 {
			d = r.names.Index(k)
		}
		if d < 0 && !add {
			continue
		}
		n, why := amount(name, rl[name])
		if problem == "" {
			problem = why
		}
		if d < 0 {
			if n == 0 {
				continue
			}
			if len(r.names) == core.MaxDims {
				if problem == "" {
					problem = fmt.Sprintf("resource %s is one resource too many: Phalanx tracks at most %d besides cpu, memory and pods (%s)",
						k, core.MaxDims-core.FirstExtended, strings.Join(r.names[core.FirstExtended:], ", "))
				}
				continue
			}
			r.names = append(r.names, k)
			d = len(r.names) - 1
			if r.grown != nil {
				r.grown()
			}
		}
		v[d] = n
	}
	return v, problem
}

// fixed returns the dimension of cpu, memory or pods, and -1 for any other
// resource.
func fixed(name corev1.ResourceName) int {
	switch name {
	case corev1.ResourceCPU:
		return core.CPU
	case corev1.ResourceMemory:
		return core.Memory
	case corev1.ResourcePods:
		return core.Pods
	}
	return -1
}

// podRequests is what a pod asks of its node, as kube-scheduler counts it
// (k8s.io/component-helpers' PodRequests):
//
//   - the containers' requests, summed, plus those of the sidecars
//     (init containers with restartPolicy Always), which run beside them;
//   - at least, for each other init container, its own request plus those
//     of the sidecars declared before it, which run while it does;
//   - pod-level requests (spec.resources), where given, replace the sum for
//     cpu, memory and hugepages;
//   - plus the pod overhead.
//
// A limit stands in for a missing request, as the API server defaults it.
//
// The result is read only: for a pod of one container with requests only
// (most pods, once leanPod has dropped the limits that requests cover), it
// is that container's own map.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	if s := &pod.Spec; len(s.Containers) == 1 && len(s.InitContainers) == 0 && s.Resources == nil && len(s.Overhead) == 0 &&
		len(s.Containers[0].Resources.Limits) == 0 && s.Containers[0].Resources.Requests != nil {
		return s.Containers[0].Resources.Requests
	}
	sum := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addTo(sum, containerRequests(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{} // those declared so far
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := containerRequests(c)
		if p := c.RestartPolicy; p != nil && *p == corev1.ContainerRestartPolicyAlways {
			addTo(sum, req)
			addTo(sidecars, req)
			maxTo(initMax, sidecars) // while it starts, the sidecars so far run
			continue
		}
		addTo(req, sidecars)
		maxTo(initMax, req)
	}
	maxTo(sum, initMax)
	if r := pod.Spec.Resources; r != nil {
		for name, q := range podLevel(r) {
			sum[name] = q.DeepCopy()
		}
	}
	addTo(sum, pod.Spec.Overhead)
	return sum
}

// podLevel returns the pod-level requests that replace the containers' sum:
// those of cpu, memory and hugepages, a limit standing in for a missing
// request.
func podLevel(r *corev1.ResourceRequirements) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, rl := range []corev1.ResourceList{r.Limits, r.Requests} {
		for name, q := range rl {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				out[name] = q
			}
		}
	}
	return out
}

// maxTo raises each amount of dst to that of src where src's is larger.
func maxTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

func containerRequests(c *corev1.Container) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range c.Resources.Limits {
		out[name] = q.DeepCopy()
	}
	for name, q := range c.Resources.Requests {
		out[name] = q.DeepCopy()
	}
	return out
}

func addTo(sum, add corev1.ResourceList) {
	for name, q := range add {
		cur := sum[name]
		cur.Add(q)
		sum[name] = cur
	}
}

// resourceList renders a Vector back into Kubernetes form, for statuses.
func (r *registry) resourceList(v core.Vector) corev1.ResourceList {
	out := corev1.ResourceList{}
	for d, amount := range v {
		if amount == 0 || d >= len(r.names) {
			continue
		}
		switch d {
		case core.CPU:
			out[corev1.ResourceCPU] = *resource.NewMilliQuantity(amount, resource.DecimalSI)
		case core.Memory:
			out[corev1.ResourceMemory] = *resource.NewQuantity(amount, resource.BinarySI)
		default:
			out[corev1.ResourceName(r.names[d])] = *resource.NewQuantity(amount, resource.DecimalSI)
		}
	}
	return out
}

// limits converts a queue's capability: resources it does not list are
// unlimited, and so are those it caps beyond maxAmount. A negative cap is 0.
func (r *registry) limits(rl corev1.ResourceList) (core.Vector, string) {
	v, problem := r.vector(rl)
	out := core.Unbounded()
	for name, q := range rl {
		d := fixed(name)
		if d < 0 {
			d = r.names.Index(string(name))
		}
		if d < 0 {
			continue
		}
		out[d] = v[d]
		if b := bound(name); q.Cmp(b) > 0 {
			out[d] = core.Unlimited
		}
	}
	return out, problem
}
