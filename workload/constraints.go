package workload

// Placement constraints of scenario files: node taints, and the tolerations,
// node selectors and required node affinity of tasks, validated as
// Kubernetes validates them.

import (
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/phalanx-sched/phalanx/core"
)

var taintEffects = []string{string(core.NoSchedule), string(core.PreferNoSchedule), string(core.NoExecute)}

func (p *scenarioReader) taints(n *yaml.Node) ([]core.Taint, error) {
	list, err := p.sequence(n, "taints")
	if err != nil {
		return nil, err
	}
	var out []core.Taint
	for _, item := range list {
		m, err := p.mapping(item, "taint", "key", "value", "effect")
		if err != nil {
			return nil, err
		}
		var t core.Taint
		if t.Key, err = p.optStr(m, "key", "taint key"); err != nil {
			return nil, err
		}
		if t.Key == "" {
			return nil, p.errorf(item, "taint has no key")
		}
		if t.Value, err = p.optStr(m, "value", "taint value"); err != nil {
			return nil, err
		}
		effect, err := p.optStr(m, "effect", "taint effect")
		if err != nil {
			return nil, err
		}
		if !slices.Contains(taintEffects, effect) {
			return nil, p.errorf(item, "taint effect must be one of %s, got %q", strings.Join(taintEffects, ", "), effect)
		}
		t.Effect = core.TaintEffect(effect)
		out = append(out, t)
	}
	return out, nil
}

func (p *scenarioReader) tolerations(n *yaml.Node) ([]core.Toleration, error) {
	list, err := p.sequence(n, "tolerations")
	if err != nil {
		return nil, err
	}
	var out []core.Toleration
	for _, item := range list {
		m, err := p.mapping(item, "toleration", "key", "operator", "value", "effect")
		if err != nil {
			return nil, err
		}
		var t core.Toleration
		if t.Key, err = p.optStr(m, "key", "toleration key"); err != nil {
			return nil, err
		}
		if t.Value, err = p.optStr(m, "value", "toleration value"); err != nil {
			return nil, err
		}
		op, err := p.optStr(m, "operator", "toleration operator")
		if err != nil {
			return nil, err
		}
		t.Operator = core.TolerationOperator(op)
		switch {
		case op == "":
			t.Operator = core.TolerationEqual // the Kubernetes default
		case t.Operator != core.TolerationEqual && t.Operator != core.TolerationExists:
			return nil, p.errorf(item, "toleration operator must be Equal or Exists, got %q", op)
		}
		if t.Operator == core.TolerationExists && t.Value != "" {
			return nil, p.errorf(item, "toleration with operator Exists must have no value, got %q", t.Value)
		}
		if t.Key == "" && t.Operator != core.TolerationExists {
			return nil, p.errorf(item, "toleration without a key must have operator Exists")
		}
		effect, err := p.optStr(m, "effect", "toleration effect")
		if err != nil {
			return nil, err
		}
		if effect != "" && !slices.Contains(taintEffects, effect) {
			return nil, p.errorf(item, "toleration effect must be empty or one of %s, got %q", strings.Join(taintEffects, ", "), effect)
		}
		t.Effect = core.TaintEffect(effect)
		out = append(out, t)
	}
	return out, nil
}

func (p *scenarioReader) optStr(m map[string]*yaml.Node, key, what string) (string, error) {
	if m[key] == nil {
		return "", nil
	}
	return p.str(m[key], what)
}

var selectorOperators = []string{
	string(core.SelectorIn), string(core.SelectorNotIn), string(core.SelectorExists),
	string(core.SelectorDoesNotExist), string(core.SelectorGt), string(core.SelectorLt),
}

// affinity reads required node affinity: a list of terms, at least one of
// which must hold, each a list of requirements that must all hold.
func (p *scenarioReader) affinity(n *yaml.Node) ([]core.NodeSelectorTerm, error) {
	list, err := p.sequence(n, "affinity")
	if err != nil {
		return nil, err
	}
	var out []core.NodeSelectorTerm
	for _, item := range list {
		m, err := p.mapping(item, "affinity term", "matchExpressions")
		if err != nil {
			return nil, err
		}
		if m["matchExpressions"] == nil {
			return nil, p.errorf(item, "affinity term has no matchExpressions")
		}
		exprs, err := p.sequence(m["matchExpressions"], "matchExpressions")
		if err != nil {
			return nil, err
		}
		if len(exprs) == 0 {
			return nil, p.errorf(m["matchExpressions"], "affinity term has no matchExpressions")
		}
		var term core.NodeSelectorTerm
		for _, e := range exprs {
			r, err := p.requirement(e)
			if err != nil {
				return nil, err
			}
			term.MatchExpressions = append(term.MatchExpressions, r)
		}
		out = append(out, term)
	}
	return out, nil
}

func (p *scenarioReader) requirement(n *yaml.Node) (core.Requirement, error) {
	m, err := p.mapping(n, "match expression", "key", "operator", "values")
	if err != nil {
		return core.Requirement{}, err
	}
	var r core.Requirement
	if r.Key, err = p.optStr(m, "key", "match expression key"); err != nil {
		return r, err
	}
	if r.Key == "" {
		return r, p.errorf(n, "match expression has no key")
	}
	op, err := p.optStr(m, "operator", "match expression operator")
	if err != nil {
		return r, err
	}
	if !slices.Contains(selectorOperators, op) {
		return r, p.errorf(n, "match expression operator must be one of %s, got %q", strings.Join(selectorOperators, ", "), op)
	}
	r.Operator = core.SelectorOperator(op)
	if v := m["values"]; v != nil {
		items, err := p.sequence(v, "values")
		if err != nil {
			return r, err
		}
		for _, item := range items {
			s, err := p.str(item, "value")
			if err != nil {
				return r, err
			}
			r.Values = append(r.Values, s)
		}
	}
	switch r.Operator {
	case core.SelectorIn, core.SelectorNotIn:
		if len(r.Values) == 0 {
			return r, p.errorf(n, "operator %s needs at least one value", op)
		}
	case core.SelectorExists, core.SelectorDoesNotExist:
		if len(r.Values) != 0 {
			return r, p.errorf(n, "operator %s takes no values", op)
		}
	case core.SelectorGt, core.SelectorLt:
		if len(r.Values) != 1 {
			return r, p.errorf(n, "operator %s needs exactly one value", op)
		}
		if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
			return r, p.errorf(n, "operator %s needs an integer value, got %q", op, r.Values[0])
		}
	}
	return r, nil
}
