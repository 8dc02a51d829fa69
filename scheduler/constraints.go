package scheduler

import (
	"sort"
	"strings"

	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
)

// constraintsCache interns the placement constraints of pods: pods with the
// same nodeSelector, required node affinity, tolerations, volume node
// affinity and terms about other pods (podterms.go) (the members of one
// job, typically) share one *core.Constraints, which lets the core
// remember per cycle that such a member found no node.
//
// It forgets everything when one of its maps holds constraintsMax entries:
// pods keep the constraints they were given, and only pods read after that
// stop sharing with those read before. Nothing is removed as pods go, so
// without the bound a cluster whose nodes come and go would keep the
// constraints of every DaemonSet pod pinned to a node that ever was.
type constraintsCache struct {
	byKey map[string]*core.Constraints
	// labelled holds constraints with a label added (withLabel).
	labelled map[labelledKey]*core.Constraints
}

// constraintsMax bounds each map of a constraintsCache.
const constraintsMax = 1 << 14

func newConstraintsCache() *constraintsCache {
	return &constraintsCache{byKey: map[string]*core.Constraints{}, labelled: map[labelledKey]*core.Constraints{}}
}

// of returns the shared constraints of pod, or nil when it has none.
// volumes holds the required node affinity of the PersistentVolumes bound to
// the pod's claims, one entry per volume (Store.volumeAffinity).
func (c *constraintsCache) of(pod *corev1.Pod, volumes [][]corev1.NodeSelectorTerm) *core.Constraints {
	spec := &pod.Spec
	var terms []corev1.NodeSelectorTerm
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	pt, ptKey := podTermsOf(pod)
	if len(spec.NodeSelector) == 0 && len(terms) == 0 && len(spec.Tolerations) == 0 && len(volumes) == 0 && ptKey == "" {
		return nil
	}
	key := constraintsKey(spec.NodeSelector, terms, spec.Tolerations) + volumesKey(volumes) + ptKey
	if cached, ok := c.byKey[key]; ok {
		return cached
	}
	out := &core.Constraints{PodAffinity: pt.PodAffinity, PodAntiAffinity: pt.PodAntiAffinity, Spread: pt.Spread, HostPorts: pt.HostPorts}
	if len(spec.NodeSelector) > 0 {
		out.NodeSelector = make(map[string]string, len(spec.NodeSelector))
		for k, v := range spec.NodeSelector {
			out.NodeSelector[k] = v
		}
	}
	if len(terms) > 0 {
		out.Affinity = coreTerms(terms)
	}
	for _, t := range spec.Tolerations {
		out.Tolerations = append(out.Tolerations, core.Toleration{
			Key: t.Key, Operator: core.TolerationOperator(t.Operator), Value: t.Value, Effect: core.TaintEffect(t.Effect)})
	}
	for _, v := range volumes {
		out.VolumeAffinity = append(out.VolumeAffinity, coreTerms(v))
	}
	if len(c.byKey) >= constraintsMax {
		clear(c.byKey)
	}
	c.byKey[key] = out
	return out
}

// constraintsKey is a canonical text of the constraints: equal constraints
// give equal keys whatever the map order.
func constraintsKey(sel map[string]string, terms []corev1.NodeSelectorTerm, tols []corev1.Toleration) string {
	var b strings.Builder
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k + "=" + sel[k] + "\x00")
	}
	b.WriteString("\x01")
	for _, t := range terms {
		for _, e := range t.MatchExpressions {
			b.WriteString(e.Key + " " + string(e.Operator) + " " + strings.Join(e.Values, ",") + "\x00")
		}
		for _, f := range t.MatchFields {
			b.WriteString("field:" + f.Key + " " + string(f.Operator) + " " + strings.Join(f.Values, ",") + "\x00")
		}
		b.WriteString("\x02")
	}
	b.WriteString("\x01")
	for _, t := range tols {
		b.WriteString(t.Key + " " + string(t.Operator) + " " + t.Value + " " + string(t.Effect) + "\x00")
	}
	return b.String()
}

// nodeNameKey holds, among the labels of a node in the core's snapshot
// only, the node's name (SetNode), for matchFields on metadata.name. The
// '@' makes it a key no real label can have.
const nodeNameKey = "phalanx.dev/@metadata.name"

// coreTerms converts node selector terms into the core's: matchFields can
// only name metadata.name, which becomes a requirement on the node's name
// (nodeNameKey), as kube-scheduler matches it, whatever its hostname label
// says.
func coreTerms(terms []corev1.NodeSelectorTerm) []core.NodeSelectorTerm {
	out := make([]core.NodeSelectorTerm, 0, len(terms))
	for _, t := range terms {
		var term core.NodeSelectorTerm
		for _, e := range t.MatchExpressions {
			term.MatchExpressions = append(term.MatchExpressions, core.Requirement{
				Key: e.Key, Operator: core.SelectorOperator(e.Operator), Values: append([]string(nil), e.Values...)})
		}
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" {
				term.MatchExpressions = append(term.MatchExpressions, core.Requirement{
					Key: nodeNameKey, Operator: core.SelectorOperator(f.Operator), Values: append([]string(nil), f.Values...)})
			}
		}
		out = append(out, term)
	}
	return out
}
