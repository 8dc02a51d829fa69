package core

import "strconv"

// This file decides whether a member may run on a node at all, apart from
// resources and other pods: cordon, taints and tolerations, nodeSelector,
// required node affinity and the node affinity of bound volumes, with the
// semantics Kubernetes gives them.

// filterResult is why a node is not feasible for a member.
type filterResult uint8

// The filters of the node alone, whatever runs on it, come first, from
// filteredUnschedulable to filteredVolume (nodeReport.hopeless counts them).
const (
	feasible filterResult = iota
	filteredUnschedulable
	filteredTaint
	filteredSelector
	filteredAffinity
	filteredVolume
	filteredPodAffinity
	filteredPodAntiAffinity
	filteredSpread
	filteredHostPort
	filteredReserved // not a filter: the node is reserved for another gang
)

var filterText = [...]string{
	feasible:                "",
	filteredUnschedulable:   "unschedulable (cordoned)",
	filteredTaint:           "untolerated taint",
	filteredSelector:        "nodeSelector mismatch",
	filteredAffinity:        "node affinity mismatch",
	filteredVolume:          "volume node affinity conflict",
	filteredPodAffinity:     "pod affinity not satisfied",
	filteredPodAntiAffinity: "pod anti-affinity",
	filteredSpread:          "topology spread constraint",
	filteredHostPort:        "host port in use",
	filteredReserved:        "reserved for a waiting gang",
}

// Admits reports whether a member with constraints c may run on n, leaving
// resources aside. A nil c has no constraints (but tolerates no taint).
func Admits(n *Node, c *Constraints) bool { return filter(n, c) == feasible }

func filter(n *Node, c *Constraints) filterResult {
	if n.Unschedulable {
		return filteredUnschedulable
	}
	if c == nil {
		for i := range n.Taints {
			if repels(n.Taints[i].Effect) {
				return filteredTaint
			}
		}
		return feasible
	}
	for i := range n.Taints {
		if repels(n.Taints[i].Effect) && !tolerated(&n.Taints[i], c.Tolerations) {
			return filteredTaint
		}
	}
	for k, v := range c.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return filteredSelector
		}
	}
	if len(c.Affinity) > 0 && !anyTermMatches(c.Affinity, n.Labels) {
		return filteredAffinity
	}
	for _, terms := range c.VolumeAffinity {
		if !anyTermMatches(terms, n.Labels) {
			return filteredVolume
		}
	}
	return feasible
}

// verdicts remembers, for one cycle, filter's verdict on each node for each
// constraints a member asked with: neither the nodes nor the constraints
// change within a cycle, and a cycle asks about the same few constraints
// over and over. Constraints are told apart by pointer, as the memos of the
// cycle do; each one asked about costs a byte per node.
type verdicts struct {
	nodes  []Node
	byCons map[*Constraints][]uint8 // filterResult+1 by node; 0 is not known yet
	last   *Constraints
	lastV  []uint8
}

func newVerdicts(nodes []Node) *verdicts {
	return &verdicts{nodes: nodes, byCons: make(map[*Constraints][]uint8)}
}

// of returns the verdicts of members with constraints c, for at.
func (v *verdicts) of(c *Constraints) []uint8 {
	if v.lastV != nil && c == v.last {
		return v.lastV
	}
	vs, ok := v.byCons[c]
	if !ok {
		vs = make([]uint8, len(v.nodes))
		v.byCons[c] = vs
	}
	v.last, v.lastV = c, vs
	return vs
}

// at returns filter(node n, c), where vs is v.of(c).
func (v *verdicts) at(vs []uint8, n int, c *Constraints) filterResult {
	if f := vs[n]; f != 0 {
		return filterResult(f - 1)
	}
	f := filter(&v.nodes[n], c)
	vs[n] = uint8(f) + 1
	return f
}

// filter returns filter(node n, c), remembered.
func (v *verdicts) filter(n int, c *Constraints) filterResult { return v.at(v.of(c), n, c) }

func repels(e TaintEffect) bool { return e == NoSchedule || e == NoExecute }

func tolerated(t *Taint, tols []Toleration) bool {
	for i := range tols {
		tol := &tols[i]
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		switch tol.Operator {
		case TolerationExists:
			if tol.Key == "" || tol.Key == t.Key {
				return true
			}
		case TolerationEqual, "":
			if tol.Key == t.Key && tol.Value == t.Value {
				return true
			}
		}
	}
	return false
}

func anyTermMatches(terms []NodeSelectorTerm, labels map[string]string) bool {
	for i := range terms {
		if termMatches(&terms[i], labels) {
			return true
		}
	}
	return false
}

// termMatches follows Kubernetes: a term with no expressions matches nothing.
func termMatches(t *NodeSelectorTerm, labels map[string]string) bool {
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

func requirementHolds(r *Requirement, labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case SelectorIn:
		return ok && contains(r.Values, v)
	case SelectorNotIn:
		return !ok || !contains(r.Values, v)
	case SelectorExists:
		return ok
	case SelectorDoesNotExist:
		return !ok
	case SelectorGt, SelectorLt:
		if !ok || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == SelectorGt {
			return have > want
		}
		return have < want
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
