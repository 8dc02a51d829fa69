package core

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// This file checks plans against the pod constraints (required pod affinity
// and anti-affinity, topology spread, host ports) independently of
// podconstraints.go: it follows the Filter plugins of kube-scheduler
// (InterPodAffinity, PodTopologySpread, NodePorts) directly over the pods of
// the snapshot and the binds of the plan, with no index.
//
// A plan's binds are decided one after the other, so the checker replays
// them in plan order: each member must pass against the snapshot's pods and
// the members bound before it, as kube-scheduler would check it. The core
// places a gang's minimum as one transaction, in an order of its own, and
// its elastic members after every gang has had its turn; so within each run
// of consecutive binds of one gang the checker accepts any order of the
// members that passes.

// checkPodConstraints fails t when a bind of p breaks a pod constraint, a
// node filter, or a node's allocatable.
func checkPodConstraints(t *testing.T, s *Snapshot, p Plan) {
	t.Helper()
	if msg := podConstraintViolation(s, p); msg != "" {
		t.Errorf("%s", msg)
	}
}

const hostnameKey = "kubernetes.io/hostname"

// checkedPod is a pod of the replayed state: one of the snapshot or a bound
// member.
type checkedPod struct {
	name   string
	node   int
	ns     string
	labels map[string]string
	c      *Constraints
}

// podChecker holds the replayed state: the snapshot's pods, then every
// member bound so far.
type podChecker struct {
	s    *Snapshot
	pods []checkedPod
}

func newPodChecker(s *Snapshot) *podChecker {
	ch := &podChecker{s: s}
	for i, p := range s.Pods {
		ch.pods = append(ch.pods, checkedPod{name: fmt.Sprintf("pod#%d", i), node: p.Node, ns: p.Namespace, labels: p.Labels, c: p.Constraints})
	}
	return ch
}

// podConstraintViolation returns what is wrong with p, or "".
func podConstraintViolation(s *Snapshot, p Plan) string {
	nodeIdx := map[string]int{}
	for i := range s.Nodes {
		nodeIdx[s.Nodes[i].Name] = i
	}
	gangs := map[string]*Gang{}
	for _, g := range s.Gangs {
		gangs[g.ID] = g
	}
	ch := newPodChecker(s)
	used := make([]Vector, len(s.Nodes))
	for i := range s.Nodes {
		used[i] = s.Nodes[i].Used
	}
	touched := map[int]bool{}
	bound := map[string]bool{}
	for start := 0; start < len(p.Binds); {
		id := p.Binds[start].Gang
		g := gangs[id]
		if g == nil {
			return fmt.Sprintf("bind %+v names an unknown gang", p.Binds[start])
		}
		var run []checkedPod
		end := start
		for ; end < len(p.Binds) && p.Binds[end].Gang == id; end++ {
			b := p.Binds[end]
			var m *Member
			for i := range g.Pending {
				if g.Pending[i].Name == b.Member {
					m = &g.Pending[i]
				}
			}
			n, ok := nodeIdx[b.Node]
			if m == nil || !ok || bound[id+"/"+b.Member] {
				return fmt.Sprintf("bind %+v names an unknown member or node, or binds a member twice", b)
			}
			bound[id+"/"+b.Member] = true
			if !admitsIndependently(&s.Nodes[n], m.Constraints) || !Admits(&s.Nodes[n], m.Constraints) {
				return fmt.Sprintf("%s/%s is bound to %s, which its node filters (cordon, taints, node affinity) refuse", id, b.Member, b.Node)
			}
			r := m.Request
			r[Pods] = 1
			used[n] = used[n].Add(r)
			touched[n] = true
			run = append(run, checkedPod{name: id + "/" + b.Member, node: n, ns: m.Namespace, labels: m.Labels, c: m.Constraints})
		}
		if msg := ch.replay(run); msg != "" {
			return fmt.Sprintf("gang %s: %s", id, msg)
		}
		start = end
	}
	for n := range touched {
		if !used[n].Fits(s.Nodes[n].Allocatable) {
			return fmt.Sprintf("node %s is overcommitted: %v used of %v", s.Nodes[n].Name, used[n], s.Nodes[n].Allocatable)
		}
	}
	return ""
}

// replay adds the members of one gang's run to the state, in some order in
// which each passes against the state before it; it returns why none
// exists. The state after a set of members is the same whatever their
// order, so the sets from which no order completes are remembered.
func (ch *podChecker) replay(run []checkedPod) string {
	added := make([]byte, len(run))
	dead := map[string]bool{}
	depth, why := -1, ""
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == len(run) {
			return true
		}
		if dead[string(added)] {
			return false
		}
		for i := range run {
			if added[i] == 1 {
				continue
			}
			if v := ch.violation(&run[i]); v != "" {
				if k > depth {
					depth, why = k, fmt.Sprintf("%s on %s: %s", run[i].name, ch.s.Nodes[run[i].node].Name, v)
				}
				continue
			}
			added[i] = 1
			ch.pods = append(ch.pods, run[i])
			if rec(k + 1) {
				return true
			}
			added[i] = 0
			ch.pods = ch.pods[:len(ch.pods)-1]
		}
		dead[string(added)] = true
		return false
	}
	if !rec(0) {
		return fmt.Sprintf("no order of its %d binds keeps the pod constraints; with %d of them placed first, %s", len(run), depth, why)
	}
	return ""
}

// violation says which constraint m breaks on its node against the current
// state (which does not hold m), or "".
func (ch *podChecker) violation(m *checkedPod) string {
	s := ch.s
	node := &s.Nodes[m.node]
	c := m.c
	// NodePorts: a (protocol, port) taken on the node on an overlapping IP.
	if c != nil {
		for _, hp := range c.HostPorts {
			for _, p := range ch.pods {
				if p.node != m.node || p.c == nil {
					continue
				}
				for _, q := range p.c.HostPorts {
					if hostPortsConflict(hp, q) {
						return fmt.Sprintf("host port %d/%s/%q is taken by %s (%q)", hp.Port, hp.Protocol, hp.IP, p.name, q.IP)
					}
				}
			}
		}
	}
	// InterPodAffinity, existing pods' anti-affinity: a term of a placed pod
	// that selects m forbids the placed pod's domain.
	for _, p := range ch.pods {
		if p.c == nil {
			continue
		}
		for _, term := range p.c.PodAntiAffinity {
			if ch.termSelects(&term, p.ns, m.ns, m.labels) && sameDomain(node, &s.Nodes[p.node], term.TopologyKey) {
				return fmt.Sprintf("the anti-affinity of %s (on %s) per %s selects it", p.name, s.Nodes[p.node].Name, term.TopologyKey)
			}
		}
	}
	if c == nil {
		return ""
	}
	// The member's own anti-affinity, term by term.
	for _, term := range c.PodAntiAffinity {
		for _, p := range ch.pods {
			if ch.termSelects(&term, m.ns, p.ns, p.labels) && sameDomain(node, &s.Nodes[p.node], term.TopologyKey) {
				return fmt.Sprintf("its anti-affinity per %s selects %s on %s", term.TopologyKey, p.name, s.Nodes[p.node].Name)
			}
		}
	}
	// The member's affinity: the node has every term's key, and each term's
	// domain holds a pod that matches all the terms; or no pod matching all
	// the terms is on a node with any of their keys and the member matches
	// all its terms itself (the first of a self-affine group).
	if terms := c.PodAffinity; len(terms) > 0 {
		matchesAll := func(ns string, labels map[string]string) bool {
			for i := range terms {
				if !ch.termSelects(&terms[i], m.ns, ns, labels) {
					return false
				}
			}
			return true
		}
		for _, term := range terms {
			if _, ok := node.Labels[term.TopologyKey]; !ok {
				return fmt.Sprintf("its node lacks the pod affinity key %s", term.TopologyKey)
			}
		}
		satisfied := true
		for _, term := range terms {
			found := false
			for _, p := range ch.pods {
				if matchesAll(p.ns, p.labels) && sameDomain(node, &s.Nodes[p.node], term.TopologyKey) {
					found = true
					break
				}
			}
			if !found {
				satisfied = false
				break
			}
		}
		if !satisfied {
			anywhere := false
			for _, p := range ch.pods {
				if !matchesAll(p.ns, p.labels) {
					continue
				}
				for _, term := range terms {
					if _, ok := s.Nodes[p.node].Labels[term.TopologyKey]; ok {
						anywhere = true
					}
				}
			}
			if anywhere || !matchesAll(m.ns, m.labels) {
				return fmt.Sprintf("pod affinity unsatisfied (pods matching all terms elsewhere: %v; matches its own terms: %v)", anywhere, matchesAll(m.ns, m.labels))
			}
		}
	}
	// PodTopologySpread, DoNotSchedule.
	for _, sc := range c.Spread {
		val, ok := node.Labels[sc.TopologyKey]
		if !ok {
			return fmt.Sprintf("its node lacks the spread key %s", sc.TopologyKey)
		}
		eligible := make([]bool, len(s.Nodes))
		counts := map[string]int{}
		for i := range s.Nodes {
			n := &s.Nodes[i]
			if !hasSpreadKeys(n, c.Spread) ||
				(!sc.IgnoreNodeAffinity && !nodeAffinityHolds(n, c)) ||
				(sc.HonorTaints && !taintsTolerated(n, c.Tolerations)) {
				continue
			}
			eligible[i] = true
			counts[n.Labels[sc.TopologyKey]] += 0
		}
		for _, p := range ch.pods {
			if eligible[p.node] && p.ns == m.ns && labelsSelected(sc.Selector, p.labels) {
				counts[s.Nodes[p.node].Labels[sc.TopologyKey]]++
			}
		}
		lowest := -1
		for _, n := range counts {
			if lowest < 0 || n < lowest {
				lowest = n
			}
		}
		if len(counts) < int(sc.MinDomains) || lowest < 0 {
			lowest = 0
		}
		self := 0
		if labelsSelected(sc.Selector, m.labels) {
			self = 1
		}
		if skew := counts[val] + self - lowest; skew > int(sc.MaxSkew) {
			return fmt.Sprintf("spread per %s: %d in %s + %d - min %d = skew %d > %d (domains %v)",
				sc.TopologyKey, counts[val], val, self, lowest, skew, sc.MaxSkew, counts)
		}
	}
	return ""
}

// termSelects reports whether term, declared by a pod of namespace owner,
// selects a pod of namespace ns with labels.
func (ch *podChecker) termSelects(term *PodAffinityTerm, owner, ns string, labels map[string]string) bool {
	if term.Selector == nil {
		return false
	}
	inNS := false
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		inNS = ns == owner
	} else {
		for _, x := range term.Namespaces {
			if x == ns {
				inNS = true
			}
		}
		if term.NamespaceSelector != nil && labelsSelected(term.NamespaceSelector, ch.s.Namespaces[ns]) {
			inNS = true
		}
	}
	return inNS && labelsSelected(term.Selector, labels)
}

// labelsSelected: a nil selector selects nothing, an empty one everything.
func labelsSelected(sel *LabelSelector, labels map[string]string) bool {
	if sel == nil {
		return false
	}
	for k, v := range sel.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range sel.MatchExpressions {
		if !labelRequirement(r, labels) {
			return false
		}
	}
	return true
}

func labelRequirement(r Requirement, labels map[string]string) bool {
	v, ok := labels[r.Key]
	in := false
	for _, x := range r.Values {
		if x == v {
			in = true
		}
	}
	switch r.Operator {
	case SelectorIn:
		return ok && in
	case SelectorNotIn:
		return !ok || !in
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
		return (r.Operator == SelectorGt && have > want) || (r.Operator == SelectorLt && have < want)
	}
	return false
}

// sameDomain: both nodes have key, with the same value.
func sameDomain(a, b *Node, key string) bool {
	va, ok1 := a.Labels[key]
	vb, ok2 := b.Labels[key]
	return ok1 && ok2 && va == vb
}

func hostPortsConflict(a, b HostPort) bool {
	if a.Port <= 0 || a.Port != b.Port {
		return false
	}
	proto := func(p string) string {
		if p == "" {
			return "TCP"
		}
		return p
	}
	if proto(a.Protocol) != proto(b.Protocol) {
		return false
	}
	any := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
	return any(a.IP) || any(b.IP) || a.IP == b.IP
}

// nodeAffinityHolds: the member's nodeSelector and required node affinity,
// without taints, cordon or volumes (what a spread constraint honors).
func nodeAffinityHolds(n *Node, c *Constraints) bool {
	if c == nil {
		return true
	}
	for k, v := range c.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	return nodeTermsHold(c.Affinity, n.Labels)
}

// nodeTermsHold: no terms hold; otherwise one term, whose expressions all
// hold, must (a term without expressions holds for no node).
func nodeTermsHold(terms []NodeSelectorTerm, labels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		ok := len(t.MatchExpressions) > 0
		for _, r := range t.MatchExpressions {
			ok = ok && labelRequirement(r, labels)
		}
		if ok {
			return true
		}
	}
	return false
}

// taintsTolerated: every NoSchedule or NoExecute taint of n is tolerated.
func taintsTolerated(n *Node, tols []Toleration) bool {
	for _, t := range n.Taints {
		if t.Effect != NoSchedule && t.Effect != NoExecute {
			continue
		}
		ok := false
		for _, tol := range tols {
			if tol.Effect != "" && tol.Effect != t.Effect {
				continue
			}
			switch tol.Operator {
			case TolerationExists:
				ok = ok || tol.Key == "" || tol.Key == t.Key
			case TolerationEqual, "":
				ok = ok || (tol.Key == t.Key && tol.Value == t.Value)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// admitsIndependently is Admits written from the Kubernetes semantics.
func admitsIndependently(n *Node, c *Constraints) bool {
	if n.Unschedulable {
		return false
	}
	var tols []Toleration
	if c != nil {
		tols = c.Tolerations
	}
	if !taintsTolerated(n, tols) || !nodeAffinityHolds(n, c) {
		return false
	}
	if c != nil {
		for _, terms := range c.VolumeAffinity {
			if len(terms) == 0 || !nodeTermsHold(terms, n.Labels) {
				return false
			}
		}
	}
	return true
}

func hasSpreadKeys(n *Node, spread []SpreadConstraint) bool {
	for _, sc := range spread {
		if _, ok := n.Labels[sc.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

// Random clusters.

var (
	podApps       = []string{"a", "b", "c"}
	podNamespaces = []string{"a", "b"}
	podPorts      = []int32{80, 8080, 9100}
	podProtocols  = []string{"", "TCP", "UDP"}
)

// randomAppSelector selects pods by app, in one of several forms.
func randomAppSelector(r *rand.Rand) *LabelSelector {
	x, y := podApps[r.IntN(3)], podApps[r.IntN(3)]
	switch r.IntN(5) {
	case 0:
		return &LabelSelector{MatchExpressions: []Requirement{{Key: "app", Operator: SelectorIn, Values: []string{x, y}}}}
	case 1:
		return &LabelSelector{MatchLabels: map[string]string{"app": x}, MatchExpressions: []Requirement{{Key: "job", Operator: SelectorDoesNotExist}}}
	case 2:
		return &LabelSelector{MatchExpressions: []Requirement{{Key: "app", Operator: SelectorNotIn, Values: []string{x}}, {Key: "app", Operator: SelectorExists}}}
	}
	return sel("app", x)
}

// randomTermNamespaces sets the namespaces of term in one of the ways
// Kubernetes allows.
func randomTermNamespaces(r *rand.Rand, term *PodAffinityTerm) {
	switch r.IntN(6) {
	case 0:
		term.Namespaces = []string{podNamespaces[r.IntN(2)]}
	case 1:
		term.NamespaceSelector = sel("team", "x")
	case 2:
		term.NamespaceSelector = &LabelSelector{} // every namespace
	case 3:
		term.Namespaces = []string{"a"}
		term.NamespaceSelector = sel("tier", "prod")
	}
}

func randomTopologyKey(r *rand.Rand, keys ...string) string { return keys[r.IntN(len(keys))] }

// randomPodConstraints draws the constraints a job's members share; id is
// the job, whose members carry the label job=<id>.
func randomPodConstraints(r *rand.Rand, id string, labels map[string]string, zones int) *Constraints {
	c := &Constraints{}
	if r.IntN(6) == 0 {
		c.Tolerations = []Toleration{{Key: "dedicated", Operator: TolerationExists}}
	}
	if r.IntN(3) == 0 { // one per node or per rack
		c.PodAntiAffinity = append(c.PodAntiAffinity, term(randomTopologyKey(r, hostnameKey, hostnameKey, rack), sel("job", id)))
	}
	if r.IntN(6) == 0 { // away from an app
		t := term(randomTopologyKey(r, hostnameKey, rack, zone), randomAppSelector(r))
		randomTermNamespaces(r, &t)
		c.PodAntiAffinity = append(c.PodAntiAffinity, t)
	}
	if r.IntN(4) == 0 { // the job together in one rack or zone
		c.PodAffinity = append(c.PodAffinity, term(randomTopologyKey(r, rack, zone), sel("job", id)))
	}
	if r.IntN(5) == 0 { // near an app
		t := term(randomTopologyKey(r, hostnameKey, rack, zone, zone), randomAppSelector(r))
		randomTermNamespaces(r, &t)
		c.PodAffinity = append(c.PodAffinity, t)
	}
	if r.IntN(3) == 0 {
		keys := []string{zone, hostnameKey}
		if r.IntN(2) == 0 {
			keys[0], keys[1] = keys[1], keys[0]
		}
		if r.IntN(3) > 0 {
			keys = keys[:1]
		}
		for _, key := range keys {
			sc := SpreadConstraint{MaxSkew: int32(1 + r.IntN(2)), TopologyKey: key, Selector: sel("job", id)}
			if app, ok := labels["app"]; ok && r.IntN(4) == 0 {
				sc.Selector = sel("app", app)
			}
			if r.IntN(4) == 0 {
				sc.MinDomains = int32(2 + r.IntN(3))
			}
			sc.IgnoreNodeAffinity = r.IntN(3) == 0
			sc.HonorTaints = r.IntN(3) == 0
			c.Spread = append(c.Spread, sc)
		}
	}
	switch r.IntN(8) {
	case 0:
		c.NodeSelector = map[string]string{zone: fmt.Sprintf("z%d", r.IntN(zones))}
	case 1:
		c.Affinity = []NodeSelectorTerm{{MatchExpressions: []Requirement{{Key: zone, Operator: SelectorIn, Values: []string{"z0", "z1"}}}}}
	}
	if r.IntN(4) == 0 {
		c.HostPorts = []HostPort{{Port: podPorts[r.IntN(3)], Protocol: podProtocols[r.IntN(3)]}}
		if r.IntN(5) == 0 {
			c.HostPorts[0].IP = "10.0.0.1"
		}
	}
	return c
}

// randomPodSnapshot is a small cluster of zones, racks (a few nodes have
// none) and hostnames, with pods of apps a, b, c (some keeping others away,
// some holding host ports), and gangs whose members carry random pod
// constraints.
func randomPodSnapshot(seed uint64) *Snapshot {
	r := rand.New(rand.NewPCG(seed, 23))
	b := MakeSnapshot()
	nodes := 5 + r.IntN(36)
	zones := 2 + r.IntN(2)
	racksPerZone := 1 + r.IntN(2)
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("n%02d", i)
		z := i % zones
		n := MakeNode(name).GPUs(int64(4<<r.IntN(2))).Label(hostnameKey, name).Label(zone, fmt.Sprintf("z%d", z))
		if r.IntN(12) > 0 {
			n.Label(rack, fmt.Sprintf("z%d-r%d", z, (i/zones)%racksPerZone))
		}
		if u := int64(r.IntN(4)); u > 0 && r.IntN(3) == 0 {
			n.Used(Vector{CPU: u * 2000, Memory: u << 32, Pods: u, gpuDim: u})
		}
		if r.IntN(10) == 0 {
			n.Taint("dedicated", "infra", NoSchedule)
		}
		b.Nodes(n)
	}
	b.s.Namespaces = map[string]map[string]string{"a": {"team": "x"}, "b": {"team": "y", "tier": "prod"}}
	for i, pods := 0, r.IntN(nodes+1); i < pods; i++ {
		labels := map[string]string{"app": podApps[r.IntN(3)]}
		if r.IntN(4) == 0 {
			labels["job"] = fmt.Sprintf("old%d", i)
		}
		var c *Constraints
		switch r.IntN(6) {
		case 0:
			t := term(randomTopologyKey(r, hostnameKey, rack), randomAppSelector(r))
			randomTermNamespaces(r, &t)
			c = &Constraints{PodAntiAffinity: []PodAffinityTerm{t}}
		case 1:
			c = &Constraints{HostPorts: []HostPort{{Port: podPorts[r.IntN(3)], Protocol: podProtocols[r.IntN(3)]}}}
		}
		b.s.Pods = append(b.s.Pods, Pod{Node: r.IntN(nodes), Namespace: podNamespaces[r.IntN(2)], Labels: labels, Constraints: c})
	}
	for gi, gangs := 0, 2+r.IntN(8); gi < gangs; gi++ {
		id := fmt.Sprintf("g%d", gi)
		g := MakeGang(id).Arrival(int64(gi)).Priority(int32(r.IntN(4)))
		roles := 1
		if r.IntN(5) == 0 {
			roles = 2
		}
		total := 0
		for role := 0; role < roles; role++ {
			labels := map[string]string{"job": id}
			if r.IntN(2) == 0 {
				labels["app"] = podApps[r.IntN(3)]
			}
			ns := podNamespaces[r.IntN(2)]
			c := randomPodConstraints(r, id, labels, zones)
			n := 1 + r.IntN(6)
			gpus := int64(r.IntN(5))
			first := len(g.g.Pending)
			g.Task(fmt.Sprintf("r%d", role), n, Vector{CPU: 1000 + gpus*2000, Memory: 1<<30 + gpus<<32, gpuDim: gpus}, c)
			for i := first; i < len(g.g.Pending); i++ {
				g.g.Pending[i].Namespace, g.g.Pending[i].Labels = ns, labels
			}
			total += n
		}
		if r.IntN(4) == 0 {
			g.Min(1 + r.IntN(total))
		}
		b.Gangs(g)
	}
	return b.Obj()
}

// podConstraintKinds counts, for each bind of p, the kinds of pod
// constraint that bound it.
func podConstraintKinds(s *Snapshot, p Plan, kinds map[string]int) {
	ch := newPodChecker(s)
	members := map[string]checkedPod{}
	for _, g := range s.Gangs {
		for _, m := range g.Pending {
			members[g.ID+"/"+m.Name] = checkedPod{name: g.ID + "/" + m.Name, ns: m.Namespace, labels: m.Labels, c: m.Constraints}
		}
	}
	var bound []checkedPod
	for _, b := range p.Binds {
		bound = append(bound, members[b.Gang+"/"+b.Member])
	}
	for _, m := range bound {
		c := m.c
		if c == nil {
			continue
		}
		if len(c.PodAntiAffinity) > 0 {
			kinds["anti-affinity"]++
		}
		if len(c.PodAffinity) > 0 {
			kinds["affinity"]++
		}
		if len(c.PodAffinity) > 1 {
			kinds["affinity with two terms"]++
		}
		if len(c.Spread) > 0 {
			kinds["spread"]++
		}
		for _, sc := range c.Spread {
			if sc.MinDomains > 1 {
				kinds["spread with minDomains"]++
			}
			if sc.IgnoreNodeAffinity && (len(c.NodeSelector) > 0 || len(c.Affinity) > 0) {
				kinds["spread ignoring node affinity"]++
			}
		}
		if len(c.HostPorts) > 0 {
			kinds["host ports"]++
		}
		for _, t := range append(c.PodAffinity[:len(c.PodAffinity):len(c.PodAffinity)], c.PodAntiAffinity...) {
			if t.NamespaceSelector != nil {
				kinds["namespace selector"]++
				break
			}
		}
		// Symmetry: a pod's anti-affinity selects the member.
		symmetric := false
		for _, p := range append(ch.pods[:len(ch.pods):len(ch.pods)], bound...) {
			if p.c == nil || p.name == m.name {
				continue
			}
			for _, t := range p.c.PodAntiAffinity {
				symmetric = symmetric || ch.termSelects(&t, p.ns, m.ns, m.labels)
			}
		}
		if symmetric {
			kinds["selected by another's anti-affinity"]++
		}
	}
}

// TestRandomPodConstraints checks every plan over random small clusters
// with pod constraints against the independent checker, under several
// configurations.
func TestRandomPodConstraints(t *testing.T) {
	configs := []struct {
		name    string
		cfg     Config
		running bool
	}{
		{"default", Config{}, false},
		{"preemption", Config{Preemption: true}, true},
		{"spread", Config{Spread: true}, false},
		{"topology", Config{Topology: []string{zone, rack}}, false},
		{"strict-fifo", Config{Ordering: StrictFIFO}, false},
	}
	kinds := map[string]int{}
	binds, failures := 0, 0
	for seed := uint64(1); seed <= 300; seed++ {
		for _, tc := range configs {
			s := randomPodSnapshot(seed)
			if tc.running {
				addRunning(s, seed)
			}
			sched, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := sched.RunCycle(s, 0)
			binds += len(p.Binds)
			if msg := podConstraintViolation(s, p); msg != "" {
				if failures++; failures <= 10 {
					t.Errorf("seed %d, config %s: %s", seed, tc.name, msg)
				}
				continue
			}
			podConstraintKinds(s, p, kinds)
		}
	}
	if failures > 0 {
		t.Errorf("%d plans broke pod constraints", failures)
	}
	t.Logf("%d binds; binds by kind of constraint: %v", binds, kinds)
	for _, kind := range []string{"anti-affinity", "affinity", "affinity with two terms", "spread", "spread with minDomains",
		"spread ignoring node affinity", "host ports", "namespace selector", "selected by another's anti-affinity"} {
		if kinds[kind] < 20 {
			t.Errorf("only %d binds had %s: the random clusters do not exercise it", kinds[kind], kind)
		}
	}
}

// TestPodConstraintsObviousPlacements: gangs whose constraints leave plenty
// of room are placed.
func TestPodConstraintsObviousPlacements(t *testing.T) {
	node := func(name string, gpus int64, kv ...string) *nodeBuilder {
		b := MakeNode(name).GPUs(gpus).Label(hostnameKey, name)
		for i := 0; i+1 < len(kv); i += 2 {
			b.Label(kv[i], kv[i+1])
		}
		return b
	}
	six := MakeSnapshot().Nodes(node("n1", 8, zone, "z1", rack, "r1"), node("n2", 8, zone, "z1", rack, "r1"),
		node("n3", 8, zone, "z2", rack, "r2"), node("n4", 8, zone, "z2", rack, "r2"),
		node("n5", 8, zone, "z3", rack, "r3"), node("n6", 8, zone, "z3", rack, "r3"))
	cases := []struct {
		name  string
		gangs []*gangBuilder
		want  int
	}{{
		name: "five members one per node on six empty nodes",
		gangs: []*gangBuilder{MakeGang("g").Task("w", 5, req(GPUs(2)),
			&Constraints{PodAntiAffinity: []PodAffinityTerm{term(hostnameKey, sel("job", "g"))}}).Labelled("a", "job", "g")},
		want: 5,
	}, {
		name: "six members spread over three zones with skew 1",
		gangs: []*gangBuilder{MakeGang("g").Task("w", 6, req(GPUs(8)),
			&Constraints{Spread: []SpreadConstraint{{MaxSkew: 1, TopologyKey: zone, Selector: sel("job", "g")}}}).Labelled("a", "job", "g")},
		want: 6,
	}, {
		name: "four members together in one rack",
		gangs: []*gangBuilder{MakeGang("g").Task("w", 4, req(GPUs(4)),
			&Constraints{PodAffinity: []PodAffinityTerm{term(rack, sel("job", "g"))}}).Labelled("a", "job", "g")},
		want: 4,
	}, {
		name: "two gangs of three on host port 80",
		gangs: []*gangBuilder{
			MakeGang("g").Task("w", 3, req(GPUs(1)), &Constraints{HostPorts: []HostPort{{Port: 80}}}).Labelled("a", "job", "g"),
			MakeGang("h").Task("w", 3, req(GPUs(1)), &Constraints{HostPorts: []HostPort{{Port: 80, Protocol: "TCP"}}}).Labelled("a", "job", "h").Arrival(1),
		},
		want: 6,
	}, {
		name: "one per rack and spread per zone with minDomains 3",
		gangs: []*gangBuilder{MakeGang("g").Task("w", 3, req(GPUs(1)),
			&Constraints{PodAntiAffinity: []PodAffinityTerm{term(rack, sel("job", "g"))},
				Spread: []SpreadConstraint{{MaxSkew: 1, TopologyKey: zone, Selector: sel("job", "g"), MinDomains: 3}}}).Labelled("a", "job", "g")},
		want: 3,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := *six
			b.s.Nodes = append([]Node(nil), six.s.Nodes...)
			s := b.Gangs(tc.gangs...).Obj()
			sched, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			p, d := sched.RunCycle(s, 0)
			if len(p.Binds) != tc.want {
				t.Errorf("want %d binds, got %v (pending %v)", tc.want, p.Binds, messages(d))
			}
			checkPodConstraints(t, s, p)
		})
	}
}

// TestPodCheckCatchesViolations: the checker refuses plans that break each
// constraint, and accepts a gang's binds in an order other than the one
// that keeps the constraints.
func TestPodCheckCatchesViolations(t *testing.T) {
	nodes := func() *snapBuilder {
		b := MakeSnapshot()
		for i, z := range []string{"z1", "z1", "z2", "z2"} {
			name := fmt.Sprintf("n%d", i+1)
			b.Nodes(MakeNode(name).GPUs(8).Label(hostnameKey, name).Label(zone, z))
		}
		b.s.Namespaces = map[string]map[string]string{"a": {"team": "x"}, "b": {"team": "y"}}
		return b
	}
	bind := func(gang string, mn ...string) Plan {
		var p Plan
		for i := 0; i+1 < len(mn); i += 2 {
			p.Binds = append(p.Binds, Bind{Gang: gang, Member: mn[i], Node: mn[i+1]})
		}
		return p
	}
	antiSelf := &Constraints{PodAntiAffinity: []PodAffinityTerm{term(hostnameKey, sel("job", "g"))}}
	spread := &Constraints{Spread: []SpreadConstraint{{MaxSkew: 1, TopologyKey: zone, Selector: sel("job", "g")}}}
	together := &Constraints{PodAffinity: []PodAffinityTerm{term(zone, sel("job", "g"))}}
	nearDB := &Constraints{PodAffinity: []PodAffinityTerm{term(zone, sel("app", "db"))}}
	twoTerms := &Constraints{PodAffinity: []PodAffinityTerm{term(zone, sel("app", "db")), term(zone, sel("tier", "x"))}}
	port := func(p int32, proto, ip string) *Constraints {
		return &Constraints{HostPorts: []HostPort{{Port: p, Protocol: proto, IP: ip}}}
	}
	awayFromWeb := &Constraints{PodAntiAffinity: []PodAffinityTerm{{Selector: sel("app", "web"), TopologyKey: zone, NamespaceSelector: sel("team", "x")}}}
	cases := []struct {
		name string
		snap *Snapshot
		plan Plan
		ok   bool
	}{
		{"two members of one per node on one node",
			nodes().Gangs(MakeGang("g").Task("w", 2, req(GPUs(1)), antiSelf).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1", "g-w-1", "n1"), false},
		{"two members of one per node on two nodes",
			nodes().Gangs(MakeGang("g").Task("w", 2, req(GPUs(1)), antiSelf).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1", "g-w-1", "n2"), true},
		{"a member in the zone of a pod whose anti-affinity selects it",
			nodes().Pod(0, "a", awayFromWeb, "app", "db").
				Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), nil).Labelled("a", "app", "web")).Obj(),
			bind("g", "g-w-0", "n2"), false},
		{"a member of a namespace the pod's anti-affinity does not cover",
			nodes().Pod(0, "a", awayFromWeb, "app", "db").
				Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), nil).Labelled("b", "app", "web")).Obj(),
			bind("g", "g-w-0", "n2"), true},
		{"three in one zone with skew 1",
			nodes().Gangs(MakeGang("g").Task("w", 3, req(GPUs(1)), spread).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1", "g-w-1", "n2", "g-w-2", "n1"), false},
		{"two then one, listed in an order that alone would break skew 1",
			nodes().Gangs(MakeGang("g").Task("w", 3, req(GPUs(1)), spread).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1", "g-w-1", "n2", "g-w-2", "n3"), true},
		{"minDomains 3 over two zones keeps the minimum at 0",
			nodes().Gangs(MakeGang("g").Task("w", 4, req(GPUs(1)), &Constraints{Spread: []SpreadConstraint{
				{MaxSkew: 1, TopologyKey: zone, Selector: sel("job", "g"), MinDomains: 3}}}).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1", "g-w-1", "n3", "g-w-2", "n2", "g-w-3", "n4"), false},
		{"a self-affine gang split over two zones",
			nodes().Gangs(MakeGang("g").Task("w", 2, req(GPUs(1)), together).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1", "g-w-1", "n3"), false},
		{"a self-affine gang in one zone",
			nodes().Gangs(MakeGang("g").Task("w", 2, req(GPUs(1)), together).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1", "g-w-1", "n2"), true},
		{"affinity to a pod of another zone",
			nodes().Pod(0, "a", nil, "app", "db").Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), nearDB).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n3"), false},
		{"affinity to a pod of another namespace",
			nodes().Pod(0, "b", nil, "app", "db").Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), nearDB).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1"), false},
		{"two affinity terms met by two pods, none matching both",
			nodes().Pod(0, "a", nil, "app", "db").Pod(1, "a", nil, "tier", "x").
				Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), twoTerms).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1"), false},
		{"two affinity terms met by one pod matching both",
			nodes().Pod(2, "a", nil, "app", "db", "tier", "x").
				Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), twoTerms).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n4"), true},
		{"the same host port and protocol on one node",
			nodes().Pod(0, "a", port(80, "UDP", ""), "app", "x").
				Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), port(80, "UDP", "10.0.0.1")).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1"), false},
		{"one port over two protocols on one node",
			nodes().Pod(0, "a", port(80, "UDP", ""), "app", "x").
				Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), port(80, "", "")).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1"), true},
		{"one port on two addresses of one node",
			nodes().Pod(0, "a", port(80, "", "10.0.0.2"), "app", "x").
				Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), port(80, "TCP", "10.0.0.1")).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1"), true},
		{"a node over its allocatable",
			nodes().Gangs(MakeGang("g").Task("w", 3, req(GPUs(4)), nil).Labelled("a", "job", "g")).Obj(),
			bind("g", "g-w-0", "n1", "g-w-1", "n1", "g-w-2", "n1"), false},
	}
	for _, tc := range cases {
		msg := podConstraintViolation(tc.snap, tc.plan)
		if tc.ok && msg != "" {
			t.Errorf("%s: the checker refuses a valid plan: %s", tc.name, msg)
		}
		if !tc.ok && msg == "" {
			t.Errorf("%s: the checker accepts a plan that breaks a constraint", tc.name)
		}
		if testing.Verbose() && msg != "" {
			t.Logf("%s: %s", tc.name, strings.TrimSpace(msg))
		}
	}
}

// TestPodAffinityTermsMatchOnePod follows kube-scheduler's InterPodAffinity
// filter where a member has several required affinity terms: a pod counts
// for them only if it matches all of them (podMatchesAllAffinityTerms), and
// only on a node that has the terms' topology keys; each term's domain must
// hold such a pod, unless there is none at all and the member matches all
// its terms itself.
func TestPodAffinityTermsMatchOnePod(t *testing.T) {
	node := func(name, z string) *nodeBuilder {
		return MakeNode(name).GPUs(8).Label(hostnameKey, name).Label(zone, z)
	}
	dbAndCache := &Constraints{PodAffinity: []PodAffinityTerm{term(zone, sel("app", "db")), term(zone, sel("tier", "cache"))}}
	cases := []struct {
		name string
		snap *Snapshot
		want int
	}{{
		name: "two terms met in one zone by two pods, neither matching both: no node",
		snap: MakeSnapshot().Nodes(node("n1", "z1"), node("n2", "z1"), node("n3", "z2")).
			Pod(0, "a", nil, "app", "db").Pod(1, "a", nil, "tier", "cache").
			Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), dbAndCache).Labelled("a", "app", "web")).Obj(),
		want: 0,
	}, {
		name: "two terms met by one pod matching both: its zone",
		snap: MakeSnapshot().Nodes(node("n1", "z1"), node("n2", "z1"), node("n3", "z2")).
			Pod(2, "a", nil, "app", "db", "tier", "cache").
			Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), dbAndCache).Labelled("a", "app", "web")).Obj(),
		want: 1,
	}, {
		name: "no pod matches both terms and the member does: the first of its group goes anywhere",
		snap: MakeSnapshot().Nodes(node("n1", "z1"), node("n2", "z2")).
			Pod(0, "a", nil, "app", "db").
			Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)), dbAndCache).Labelled("a", "app", "db", "tier", "cache")).Obj(),
		want: 1,
	}, {
		name: "a matching pod on a node without the key does not count: the first of its group goes anywhere",
		snap: MakeSnapshot().Nodes(node("n1", "z1"), MakeNode("n2").GPUs(8).Label(hostnameKey, "n2")).
			Pod(1, "a", nil, "job", "g").
			Gangs(MakeGang("g").Task("w", 1, req(GPUs(8)), &Constraints{PodAffinity: []PodAffinityTerm{term(zone, sel("job", "g"))}}).
				Labelled("a", "job", "g")).Obj(),
		want: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sched, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			p, d := sched.RunCycle(tc.snap, 0)
			if len(p.Binds) != tc.want {
				t.Errorf("want %d binds, got %v (pending %v)", tc.want, p.Binds, messages(d))
			}
			checkPodConstraints(t, tc.snap, p)
		})
	}
}
