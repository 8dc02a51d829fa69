package sim

// This file decides whether a member may run on a node apart from resources,
// with the semantics Kubernetes gives them: a cordoned node takes nothing; a
// NoSchedule or NoExecute taint keeps off members that do not tolerate it
// (PreferNoSchedule is ignored); every nodeSelector label must be present
// with its value; required affinity holds if one of its terms holds, a term
// holds if all of its expressions do, and a term with no expressions matches
// nothing. Gt and Lt compare integers and fail on anything else.
//
// The pod-by-pod policy, the plan checks and the empty-cluster fit test use
// it. It duplicates the core's own filter on purpose for now (sim must not
// depend on unexported core code); it belongs in core as an exported helper.

import (
	"slices"
	"strconv"

	"github.com/phalanx-sched/phalanx/core"
)

// admits reports whether a member with constraints c may run on n, leaving
// resources aside. A nil c has no constraints and tolerates no taint.
func admits(n *core.Node, c *core.Constraints) bool {
	if n.Unschedulable {
		return false
	}
	var tols []core.Toleration
	if c != nil {
		tols = c.Tolerations
	}
	for i := range n.Taints {
		t := &n.Taints[i]
		if (t.Effect == core.NoSchedule || t.Effect == core.NoExecute) && !tolerates(tols, t) {
			return false
		}
	}
	if c == nil {
		return true
	}
	for k, v := range c.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	if len(c.Affinity) == 0 {
		return true
	}
	for i := range c.Affinity {
		if termHolds(&c.Affinity[i], n.Labels) {
			return true
		}
	}
	return false
}

func tolerates(tols []core.Toleration, t *core.Taint) bool {
	for i := range tols {
		tol := &tols[i]
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		switch tol.Operator {
		case core.TolerationExists:
			if tol.Key == "" || tol.Key == t.Key {
				return true
			}
		case core.TolerationEqual, "":
			if tol.Key == t.Key && tol.Value == t.Value {
				return true
			}
		}
	}
	return false
}

func termHolds(t *core.NodeSelectorTerm, labels map[string]string) bool {
	if len(t.MatchExpressions) == 0 {
		return false
	}
	for i := range t.MatchExpressions {
		if !requirementHolds(&t.MatchExpressions[i], labels) {
			return false
		}
	}
	return true
}

func requirementHolds(r *core.Requirement, labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case core.SelectorIn:
		return ok && slices.Contains(r.Values, v)
	case core.SelectorNotIn:
		return !ok || !slices.Contains(r.Values, v)
	case core.SelectorExists:
		return ok
	case core.SelectorDoesNotExist:
		return !ok
	case core.SelectorGt, core.SelectorLt:
		if !ok || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == core.SelectorGt {
			return have > want
		}
		return have < want
	}
	return false
}
