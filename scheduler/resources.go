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
// cpu, memory and pods are fixed; extended resources (names with a domain,
// such as nvidia.com/gpu) get the next free dimension the first time a node
// or pod names them, and keep it. Vectors computed earlier therefore stay
// valid when a resource is added.
type registry struct {
	names core.ResourceNames
}

func newRegistry() *registry {
	names, _ := core.NewResourceNames()
	return &registry{names: names}
}

// extended reports whether name is a device-like resource the core tracks.
// Resources without a domain other than cpu, memory and pods
// (ephemeral-storage, hugepages-*) are not scheduled on.
func extended(name corev1.ResourceName) bool { return strings.Contains(string(name), "/") }

// vector converts rl. A resource that does not fit in the core's dimensions
// is reported as a problem rather than silently dropped.
func (r *registry) vector(rl corev1.ResourceList) (core.Vector, string) {
	var v core.Vector
	keys := make([]string, 0, len(rl))
	for k := range rl {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		q := rl[corev1.ResourceName(k)]
		switch corev1.ResourceName(k) {
		case corev1.ResourceCPU:
			v[core.CPU] = q.MilliValue()
		case corev1.ResourceMemory:
			v[core.Memory] = q.Value()
		case corev1.ResourcePods:
			v[core.Pods] = q.Value()
		default:
			if !extended(corev1.ResourceName(k)) || q.IsZero() {
				continue
			}
			d := r.names.Index(k)
			if d < 0 {
				if len(r.names) == core.MaxDims {
					return v, fmt.Sprintf("resource %s is one extended resource too many: Phalanx tracks at most %d (%s)",
						k, core.MaxDims-core.FirstExtended, strings.Join(r.names[core.FirstExtended:], ", "))
				}
				r.names = append(r.names, k)
				d = len(r.names) - 1
			}
			v[d] = q.Value()
		}
	}
	return v, ""
}

// podRequests is what a pod asks of its node, as kube-scheduler counts it:
// the sum of its containers' requests (a limit stands in for a missing
// request), at least the largest init container's, plus the pod overhead.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addTo(sum, containerRequests(&pod.Spec.Containers[i]))
	}
	for i := range pod.Spec.InitContainers {
		for name, q := range containerRequests(&pod.Spec.InitContainers[i]) {
			if cur, ok := sum[name]; !ok || q.Cmp(cur) > 0 {
				sum[name] = q.DeepCopy()
			}
		}
	}
	addTo(sum, pod.Spec.Overhead)
	return sum
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
// unlimited.
func (r *registry) limits(rl corev1.ResourceList) (core.Vector, string) {
	v, problem := r.vector(rl)
	out := core.Unbounded()
	for name := range rl {
		switch {
		case name == corev1.ResourceCPU:
			out[core.CPU] = v[core.CPU]
		case name == corev1.ResourceMemory:
			out[core.Memory] = v[core.Memory]
		case name == corev1.ResourcePods:
			out[core.Pods] = v[core.Pods]
		case extended(name):
			if d := r.names.Index(string(name)); d >= 0 {
				out[d] = v[d]
			}
		}
	}
	return out, problem
}
