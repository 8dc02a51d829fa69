package scheduler

import (
	"encoding/json"
	"slices"

	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The constraints a pod declares about other pods: required pod affinity
// and anti-affinity, topology spread constraints with whenUnsatisfiable
// DoNotSchedule, and host ports. The core decides them (core/podconstraints.go);
// this file converts them.

// podTerms are a pod's constraints about other pods, in the core's terms.
type podTerms struct {
	PodAffinity     []core.PodAffinityTerm  `json:"a,omitempty"`
	PodAntiAffinity []core.PodAffinityTerm  `json:"n,omitempty"`
	Spread          []core.SpreadConstraint `json:"s,omitempty"`
	HostPorts       []core.HostPort         `json:"p,omitempty"`
}

// podTermsOf converts the pod's terms and returns them with a canonical key
// for interning, "" when it has none. A spread's matchLabelKeys are folded
// into its selector with the pod's own values, as kube-scheduler does (an
// API server that merged them already gives a requirement twice, which
// changes nothing).
func podTermsOf(pod *corev1.Pod) (podTerms, string) {
	var out podTerms
	spec := &pod.Spec
	if a := spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				out.PodAffinity = append(out.PodAffinity, affinityTerm(&pa.RequiredDuringSchedulingIgnoredDuringExecution[i], pod))
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				out.PodAntiAffinity = append(out.PodAntiAffinity, affinityTerm(&pa.RequiredDuringSchedulingIgnoredDuringExecution[i], pod))
			}
		}
	}
	for i := range spec.TopologySpreadConstraints {
		tsc := &spec.TopologySpreadConstraints[i]
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue // ScheduleAnyway is a preference (docs/constraints.md)
		}
		sc := core.SpreadConstraint{MaxSkew: tsc.MaxSkew, TopologyKey: tsc.TopologyKey,
			Selector:           selector(tsc.LabelSelector, tsc.MatchLabelKeys, pod.Labels),
			IgnoreNodeAffinity: tsc.NodeAffinityPolicy != nil && *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore,
			HonorTaints:        tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor}
		if tsc.MinDomains != nil {
			sc.MinDomains = *tsc.MinDomains
		}
		out.Spread = append(out.Spread, sc)
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort > 0 {
					out.HostPorts = append(out.HostPorts, core.HostPort{Port: p.HostPort, Protocol: string(p.Protocol), IP: p.HostIP})
				}
			}
		}
	}
	if len(out.PodAffinity) == 0 && len(out.PodAntiAffinity) == 0 && len(out.Spread) == 0 && len(out.HostPorts) == 0 {
		return out, ""
	}
	key, _ := json.Marshal(out) // plain data: maps come out sorted
	return out, "\x03" + string(key)
}

// affinityTerm converts a required pod (anti-)affinity term; matchLabelKeys
// and mismatchLabelKeys are folded into its selector with the pod's values.
func affinityTerm(t *corev1.PodAffinityTerm, pod *corev1.Pod) core.PodAffinityTerm {
	out := core.PodAffinityTerm{Selector: selector(t.LabelSelector, t.MatchLabelKeys, pod.Labels),
		Namespaces: slices.Clone(t.Namespaces), TopologyKey: t.TopologyKey}
	if out.Selector != nil {
		for _, k := range t.MismatchLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				out.Selector.MatchExpressions = append(out.Selector.MatchExpressions,
					core.Requirement{Key: k, Operator: core.SelectorNotIn, Values: []string{v}})
			}
		}
	}
	if t.NamespaceSelector != nil {
		out.NamespaceSelector = selector(t.NamespaceSelector, nil, nil)
	}
	return out
}

// selector converts a label selector, nil selecting nothing, with a
// requirement key In (the pod's value) for each of matchLabelKeys the pod
// carries.
func selector(ls *metav1.LabelSelector, matchKeys []string, own map[string]string) *core.LabelSelector {
	if ls == nil {
		return nil
	}
	out := &core.LabelSelector{}
	if len(ls.MatchLabels) > 0 {
		out.MatchLabels = make(map[string]string, len(ls.MatchLabels))
		for k, v := range ls.MatchLabels {
			out.MatchLabels[k] = v
		}
	}
	for _, e := range ls.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, core.Requirement{Key: e.Key,
			Operator: core.SelectorOperator(e.Operator), Values: slices.Clone(e.Values)})
	}
	for _, k := range matchKeys {
		if v, ok := own[k]; ok {
			out.MatchExpressions = append(out.MatchExpressions, core.Requirement{Key: k, Operator: core.SelectorIn, Values: []string{v}})
		}
	}
	return out
}

// avoids reports whether constraints hold required pod anti-affinity.
func avoids(c *core.Constraints) bool { return c != nil && len(c.PodAntiAffinity) > 0 }

// declaresPodTerms reports whether a pod of another scheduler declares what
// binds the placement of ours: required anti-affinity or host ports.
func declaresPodTerms(pod *corev1.Pod) bool {
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		return true
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort > 0 {
					return true
				}
			}
		}
	}
	return false
}

// snapshotPods lists the pods on the snapshot's nodes for the core, with
// the labels of the namespaces, when some pod needs them: a pending member
// asks about pods, or a pod keeps others away. order is the snapshot's
// node order.
func (s *Store) snapshotPods(snap *core.Snapshot, order []string, asked bool) {
	if !asked && s.avoiding == 0 {
		return
	}
	index := make(map[string]int, len(order))
	for i, name := range order {
		index[name] = i
	}
	snap.Pods = make([]core.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		if !p.holds() {
			continue
		}
		n, ok := index[p.node]
		if !ok {
			continue
		}
		snap.Pods = append(snap.Pods, core.Pod{Node: n, Namespace: p.pod.Namespace, Labels: p.pod.Labels, Constraints: p.cons})
	}
	snap.Namespaces = make(map[string]map[string]string, len(s.namespaces))
	for name, l := range s.namespaces {
		snap.Namespaces[name] = l
	}
}
