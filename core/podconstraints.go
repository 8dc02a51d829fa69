package core

import (
	"cmp"
	"fmt"
	"slices"
)

// Constraints between pods: required pod affinity and anti-affinity, topology
// spread (DoNotSchedule) and host ports, with the semantics kube-scheduler
// gives them, decided inside the gang's transaction.
//
// The cycle keeps a podIndex of every pod on a node: the snapshot's pods,
// then each member as it is placed, tentatively or for good. A member's
// tentative place therefore counts for the members placed after it in the
// same transaction (a gang that must spread one member per node, or fit in
// one rack by affinity to itself), and rolling the transaction back removes
// it again. The index exists only when some pod uses these constraints: a
// cycle without them pays nothing.
//
// Counting is done by counters, one per (term, namespace) a pending member
// asks about, created on first use: a counter keeps, per domain of its
// topology key, how many indexed pods its selector selects. A pod added to
// the index visits only the counters that can select it, found by the first
// label the counter requires (its probe).
//
// Feasibility under these constraints is not monotone within a cycle, as
// resources are: a pod placed may satisfy another's affinity, or raise a
// spread's minimum. The memo of member shapes that found no node
// (place.go) therefore keys such members on how many times the index
// loosened (podIndex.loosened), and members whose labels an indexed pod's
// anti-affinity selects on the set of those terms (podCheck.sig, a number
// for each set).

// pair is a label, as a map key.
type pair struct{ k, v string }

type indexedPod struct {
	node   int32
	ns     string
	labels map[string]string
	cons   *Constraints
}

// topoKey maps nodes to the domains of one topology key: the distinct values
// of the label, numbered in node order; -1 for a node without it.
type topoKey struct {
	of []int32
	n  int32
}

type podIndex struct {
	nodes      []Node
	namespaces map[string]map[string]string
	pods       []indexedPod
	// byPair and byKey list the pods carrying a label, built with the first
	// counter and kept in step after.
	inverted bool
	byPair   map[pair][]int32
	byKey    map[string][]int32
	topo     map[string]*topoKey
	// counters by what they count, and by probe.
	counters  map[counterKey]*counter
	sets      map[consNS]*counterSet
	probes    map[pair][]*counter
	keyProbes map[string][]*counter
	always    []*counter
	// anti groups the indexed pods that have one required anti-affinity
	// term: the pods it keeps away, in the domains where such pods are.
	anti     map[termKey]*antiGroup
	antiList []*antiGroup
	// antiProbes and antiKeyProbes file the anti groups by a label every
	// pod they select carries, as probes do counters; antiAlways holds
	// those whose selector requires none.
	antiProbes    map[pair][]*antiGroup
	antiKeyProbes map[string][]*antiGroup
	antiAlways    []*antiGroup
	seen          []uint32 // anti group -> the prepare that last listed it
	prepares      uint32
	// ports, once a member has host ports, lists the ports in use by node.
	ports [][]HostPort
	// loosened counts the changes that may let a member fit where it did not:
	// an affinity counter's domain getting its first pod, a spread's
	// minimum rising.
	loosened uint32
	check    podCheck
	buf      []byte
	sigs     map[string]int32 // podCheck.sig by set of anti groups
	// bases and baseByText intern the node-level part of constraints
	// (baseOf); eligible keeps the nodes spreads count (eligibility).
	bases      map[*Constraints]*Constraints
	baseByText map[string]*Constraints
	eligible   map[eligibleKey]*eligibleNodes
}

// AboutPods reports whether members with c ask about the pods on nodes:
// pod affinity, anti-affinity, spread or host ports (the cycle then needs
// Snapshot.Pods).
func (c *Constraints) AboutPods() bool {
	return c != nil && (len(c.PodAffinity) > 0 || len(c.PodAntiAffinity) > 0 || len(c.Spread) > 0 || len(c.HostPorts) > 0)
}

// looseTerms reports whether c has terms that more pods may satisfy.
func (c *Constraints) looseTerms() bool {
	return c != nil && (len(c.PodAffinity) > 0 || len(c.Spread) > 0)
}

// newPodIndex returns the index for snap, or nil when no pending member
// and no pod uses pod constraints.
func newPodIndex(snap *Snapshot) *podIndex {
	need := false
	for i := range snap.Pods {
		if c := snap.Pods[i].Constraints; c != nil && len(c.PodAntiAffinity) > 0 {
			need = true
			break
		}
	}
	for _, g := range snap.Gangs {
		if need {
			break
		}
		if g == nil {
			continue
		}
		for i := range g.Pending {
			if g.Pending[i].Constraints.AboutPods() {
				need = true
				break
			}
		}
	}
	if !need {
		return nil
	}
	x := &podIndex{nodes: snap.Nodes, namespaces: snap.Namespaces, topo: map[string]*topoKey{},
		counters: map[counterKey]*counter{}, sets: map[consNS]*counterSet{}, sigs: map[string]int32{},
		probes: map[pair][]*counter{}, keyProbes: map[string][]*counter{},
		anti: map[termKey]*antiGroup{}, antiProbes: map[pair][]*antiGroup{}, antiKeyProbes: map[string][]*antiGroup{},
		bases: map[*Constraints]*Constraints{}, baseByText: map[string]*Constraints{}, eligible: map[eligibleKey]*eligibleNodes{}}
	x.pods = make([]indexedPod, 0, len(snap.Pods)+64)
	for i := range snap.Pods {
		p := &snap.Pods[i]
		if p.Node < 0 || p.Node >= len(snap.Nodes) {
			continue
		}
		x.add(indexedPod{node: int32(p.Node), ns: p.Namespace, labels: p.Labels, cons: p.Constraints})
	}
	return x
}

func (x *podIndex) topology(key string) *topoKey {
	if t := x.topo[key]; t != nil {
		return t
	}
	t := &topoKey{of: make([]int32, len(x.nodes))}
	ids := map[string]int32{}
	for n := range x.nodes {
		v, ok := x.nodes[n].Labels[key]
		if !ok {
			t.of[n] = -1
			continue
		}
		id, seen := ids[v]
		if !seen {
			id = t.n
			ids[v] = id
			t.n++
		}
		t.of[n] = id
	}
	x.topo[key] = t
	return t
}

// add indexes a pod now on a node.
func (x *podIndex) add(p indexedPod) {
	i := int32(len(x.pods))
	x.pods = append(x.pods, p)
	if x.inverted {
		for k, v := range p.labels {
			x.byPair[pair{k, v}] = append(x.byPair[pair{k, v}], i)
			x.byKey[k] = append(x.byKey[k], i)
		}
	}
	x.count(&p, 1)
	if p.cons == nil {
		return
	}
	for t := range p.cons.PodAntiAffinity {
		g := x.antiGroupOf(&p.cons.PodAntiAffinity[t], p.ns)
		if d := g.topo.of[p.node]; d >= 0 {
			g.count.add(d, 1)
		}
	}
	if x.ports != nil && len(p.cons.HostPorts) > 0 {
		x.ports[p.node] = append(x.ports[p.node], p.cons.HostPorts...)
	}
}

// pop removes the pod indexed last: transactions roll back in reverse.
func (x *podIndex) pop() {
	last := len(x.pods) - 1
	p := x.pods[last]
	x.pods = x.pods[:last]
	if x.inverted {
		for k, v := range p.labels {
			l := x.byPair[pair{k, v}]
			x.byPair[pair{k, v}] = l[:len(l)-1]
			l = x.byKey[k]
			x.byKey[k] = l[:len(l)-1]
		}
	}
	x.count(&p, -1)
	if p.cons == nil {
		return
	}
	for t := range p.cons.PodAntiAffinity {
		g := x.anti[termKey{&p.cons.PodAntiAffinity[t], p.ns}]
		if d := g.topo.of[p.node]; d >= 0 {
			g.count.add(d, -1)
		}
	}
	if x.ports != nil && len(p.cons.HostPorts) > 0 {
		x.ports[p.node] = x.ports[p.node][:len(x.ports[p.node])-len(p.cons.HostPorts)]
	}
}

// count adds delta for p to every counter that selects it.
func (x *podIndex) count(p *indexedPod, delta int32) {
	if len(x.counters) == 0 {
		return
	}
	for k, v := range p.labels {
		for _, c := range x.probes[pair{k, v}] {
			c.visit(x, p, delta)
		}
		for _, c := range x.keyProbes[k] {
			c.visit(x, p, delta)
		}
	}
	for _, c := range x.always {
		c.visit(x, p, delta)
	}
}

// termKey is a term as declared by a pod of a namespace.
type termKey struct {
	t  *PodAffinityTerm
	ns string
}

// counterKey identifies a counter: an affinity term of a namespace, or a
// spread constraint of a member's constraints in its namespace.
type counterKey struct {
	term   *PodAffinityTerm
	spread *SpreadConstraint
	cons   *Constraints
	ns     string
}

type counter struct {
	sel *LabelSelector
	// term covers the namespaces of an affinity term, relative to own; a
	// spread counts own's pods only. affinity: the term is required
	// affinity, which more pods may satisfy.
	term     *PodAffinityTerm
	affinity bool
	// conj, for affinity, is every affinity term of the member: a pod
	// counts only if it matches them all.
	conj  []PodAffinityTerm
	own   string
	topo  *topoKey
	count domainCounts
	total int32
	// A spread counts pods on eligible nodes only (okNode, nil: every node
	// with the key) and keeps the minimum over the eligible domains (okDom).
	spread  bool
	okNode  []bool
	okDom   []bool
	domains int32
	min     int32
	atMin   int32
}

func (c *counter) selects(x *podIndex, p *indexedPod) bool {
	if c.conj != nil {
		// A pod counts for required affinity only if it matches every
		// term of the member's, as kube-scheduler counts it.
		for i := range c.conj {
			if !x.covers(&c.conj[i], c.own, p.ns) || !c.conj[i].Selector.matches(p.labels) {
				return false
			}
		}
		return true
	}
	if c.term != nil {
		if !x.covers(c.term, c.own, p.ns) {
			return false
		}
	} else if p.ns != c.own {
		return false
	}
	return c.sel.matches(p.labels)
}

func (c *counter) visit(x *podIndex, p *indexedPod, delta int32) {
	if c.selects(x, p) {
		c.bump(x, p.node, delta)
	}
}

func (c *counter) bump(x *podIndex, node int32, delta int32) {
	d := c.topo.of[node]
	if d < 0 || c.okNode != nil && !c.okNode[node] {
		return
	}
	old := c.count.get(d)
	c.count.add(d, delta)
	c.total += delta
	if !c.spread {
		if c.affinity && old == 0 && delta > 0 {
			x.loosened++
		}
		return
	}
	switch {
	case delta > 0 && old == c.min:
		if c.atMin--; c.atMin == 0 {
			c.min++
			c.recount()
			x.loosened++
		}
	case delta < 0 && old-1 < c.min:
		c.min, c.atMin = old-1, 1
	case delta < 0 && old-1 == c.min:
		c.atMin++
	}
}

// recount finds how many eligible domains hold the minimum.
func (c *counter) recount() {
	c.atMin = 0
	for d, n := range c.count.dense {
		if c.okDom[d] && n == c.min {
			c.atMin++
		}
	}
}

func (x *podIndex) covers(t *PodAffinityTerm, own, ns string) bool {
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		return ns == own
	}
	if slices.Contains(t.Namespaces, ns) {
		return true
	}
	return t.NamespaceSelector != nil && t.NamespaceSelector.matches(x.namespaces[ns])
}

// matches reports whether the selector selects a pod with labels; a nil
// selector selects nothing.
func (s *LabelSelector) matches(labels map[string]string) bool {
	if s == nil {
		return false
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for i := range s.MatchExpressions {
		if !requirementHolds(&s.MatchExpressions[i], labels) {
			return false
		}
	}
	return true
}

// affinityCounter returns the counter of term declared in namespace own: an
// anti-affinity term (conj nil), or an affinity term of the member's
// affinity terms conj.
func (x *podIndex) affinityCounter(t *PodAffinityTerm, own string, conj []PodAffinityTerm) *counter {
	key := counterKey{term: t, ns: own}
	if c := x.counters[key]; c != nil {
		return c
	}
	c := &counter{sel: t.Selector, term: t, affinity: conj != nil, conj: conj, own: own, topo: x.topology(t.TopologyKey)}
	c.count = newDomainCounts(c.topo.n, false)
	x.register(key, c)
	return c
}

// spreadCounter returns the counter of constraint s of a member with
// constraints cons in namespace own.
func (x *podIndex) spreadCounter(s *SpreadConstraint, cons *Constraints, own string) *counter {
	key := counterKey{spread: s, cons: cons, ns: own}
	if c := x.counters[key]; c != nil {
		return c
	}
	c := &counter{sel: s.Selector, own: own, topo: x.topology(s.TopologyKey), spread: true}
	c.count = newDomainCounts(c.topo.n, true)
	e := x.eligibility(cons, s)
	c.okNode, c.okDom, c.domains, c.atMin = e.okNode, e.okDom, e.domains, e.domains
	x.register(key, c)
	return c
}

// eligibleKey identifies the nodes a spread counts: those with all keys
// that pass the node-level constraints base under the policies.
type eligibleKey struct {
	base             *Constraints
	keys             string
	affinity, taints bool
}

// eligibleNodes are the nodes a spread counts (okNode, nil: every node
// with its key) and its domains that have some (okDom).
type eligibleNodes struct {
	okNode  []bool
	okDom   []bool
	domains int32
}

// eligibility returns the nodes and domains a spread s of a member with
// constraints cons counts: the nodes that carry every spread key of the
// member and, unless the policies say otherwise, pass its node affinity
// (not its taints). Members whose node-level constraints are the same
// share them.
func (x *podIndex) eligibility(cons *Constraints, s *SpreadConstraint) *eligibleNodes {
	names := make([]string, len(cons.Spread))
	for i := range cons.Spread {
		names[i] = cons.Spread[i].TopologyKey
	}
	affinity := !s.IgnoreNodeAffinity && (len(cons.NodeSelector) > 0 || len(cons.Affinity) > 0)
	k := eligibleKey{keys: fmt.Sprint(names, s.TopologyKey), affinity: affinity, taints: s.HonorTaints}
	if affinity || s.HonorTaints {
		k.base = x.baseOf(cons)
	}
	if e := x.eligible[k]; e != nil {
		return e
	}
	tk := x.topology(s.TopologyKey)
	e := &eligibleNodes{okDom: make([]bool, tk.n)}
	if !affinity && !s.HonorTaints && len(names) == 1 {
		for d := range e.okDom {
			e.okDom[d] = true // every node with the key counts
		}
		e.domains = tk.n
		x.eligible[k] = e
		return e
	}
	keys := make([]*topoKey, len(names))
	for i, name := range names {
		keys[i] = x.topology(name)
	}
	e.okNode = make([]bool, len(x.nodes))
	for n := range x.nodes {
		ok := true
		for _, key := range keys {
			ok = ok && key.of[n] >= 0
		}
		ok = ok && eligible(&x.nodes[n], cons, k.affinity, k.taints)
		e.okNode[n] = ok
		if ok {
			e.okDom[tk.of[n]] = true
		}
	}
	for _, ok := range e.okDom {
		if ok {
			e.domains++
		}
	}
	x.eligible[k] = e
	return e
}

// eligible applies the parts of filter a spread's policies name.
func eligible(n *Node, c *Constraints, affinity, taints bool) bool {
	if taints {
		for i := range n.Taints {
			if repels(n.Taints[i].Effect) && !tolerated(&n.Taints[i], c.Tolerations) {
				return false
			}
		}
	}
	if affinity {
		for k, v := range c.NodeSelector {
			if got, ok := n.Labels[k]; !ok || got != v {
				return false
			}
		}
		if len(c.Affinity) > 0 && !anyTermMatches(c.Affinity, n.Labels) {
			return false
		}
	}
	return true
}

// register files c under its probe and counts the pods indexed so far.
func (x *podIndex) register(key counterKey, c *counter) {
	x.counters[key] = c
	if !x.inverted {
		x.inverted = true
		x.byPair, x.byKey = map[pair][]int32{}, map[string][]int32{}
		for i := range x.pods {
			for k, v := range x.pods[i].labels {
				x.byPair[pair{k, v}] = append(x.byPair[pair{k, v}], int32(i))
				x.byKey[k] = append(x.byKey[k], int32(i))
			}
		}
	}
	var cands []int32
	all := false
	switch p, vals, ok := probe(c.sel); {
	case c.sel == nil:
		return // selects nothing
	case !ok:
		x.always = append(x.always, c)
		all = true
	case vals == nil:
		x.keyProbes[p] = append(x.keyProbes[p], c)
		cands = x.byKey[p]
	default:
		for _, v := range vals {
			x.probes[pair{p, v}] = append(x.probes[pair{p, v}], c)
			cands = append(cands, x.byPair[pair{p, v}]...)
		}
	}
	if all {
		for i := range x.pods {
			if c.selects(x, &x.pods[i]) {
				c.bump(x, x.pods[i].node, 1)
			}
		}
		return
	}
	for _, i := range cands {
		if c.selects(x, &x.pods[i]) {
			c.bump(x, x.pods[i].node, 1)
		}
	}
}

// probe returns a label every pod the selector selects carries: a key with
// the values it may have (distinct), or with nil values for any value. ok
// is false when the selector requires no label.
func probe(s *LabelSelector) (key string, values []string, ok bool) {
	if s == nil {
		return "", nil, false
	}
	best := ""
	for k := range s.MatchLabels {
		if best == "" || k < best {
			best = k
		}
	}
	if best != "" {
		return best, []string{s.MatchLabels[best]}, true
	}
	for i := range s.MatchExpressions {
		r := &s.MatchExpressions[i]
		if r.Operator == SelectorIn {
			vals := slices.Clone(r.Values)
			slices.Sort(vals)
			return r.Key, slices.Compact(vals), true
		}
	}
	for i := range s.MatchExpressions {
		if r := &s.MatchExpressions[i]; r.Operator == SelectorExists {
			return r.Key, nil, true
		}
	}
	return "", nil, false
}

// antiGroup counts, per domain, the indexed pods that declare one
// anti-affinity term in one namespace.
type antiGroup struct {
	id    int32
	key   termKey
	topo  *topoKey
	count domainCounts
}

func (x *podIndex) antiGroupOf(t *PodAffinityTerm, ns string) *antiGroup {
	k := termKey{t, ns}
	if g := x.anti[k]; g != nil {
		return g
	}
	g := &antiGroup{id: int32(len(x.antiList)), key: k, topo: x.topology(t.TopologyKey)}
	g.count = newDomainCounts(g.topo.n, false)
	x.anti[k] = g
	x.antiList = append(x.antiList, g)
	x.seen = append(x.seen, 0)
	switch p, vals, ok := probe(t.Selector); {
	case t.Selector == nil: // selects nothing
	case !ok:
		x.antiAlways = append(x.antiAlways, g)
	case vals == nil:
		x.antiKeyProbes[p] = append(x.antiKeyProbes[p], g)
	default:
		for _, v := range vals {
			x.antiProbes[pair{p, v}] = append(x.antiProbes[pair{p, v}], g)
		}
	}
	return g
}

// podCheck is what one member must respect on a node, prepared before its
// node search.
type podCheck struct {
	aff    []*counter
	anchor bool // no pod matches any affinity term, and the member its own
	anti   []*counter
	spread []spreadCheck
	sym    []*antiGroup
	ports  []HostPort
	// sig numbers the set of anti groups that select the member, for the
	// memo (0: none).
	sig int32
}

type spreadCheck struct {
	c          *counter
	maxSkew    int32
	minDomains int32
	self       int32
}

// prepare returns the checks m must pass, or nil when it has none.
func (x *podIndex) prepare(m *Member) *podCheck {
	pc := &x.check
	pc.aff, pc.anti, pc.spread, pc.sym, pc.ports, pc.anchor, pc.sig = nil, nil, pc.spread[:0], pc.sym[:0], nil, false, 0
	x.buf = x.buf[:0]
	if len(x.antiList) > 0 {
		x.prepares++
		consider := func(gs []*antiGroup) {
			for _, g := range gs {
				if x.seen[g.id] == x.prepares {
					continue
				}
				x.seen[g.id] = x.prepares
				if x.covers(g.key.t, g.key.ns, m.Namespace) && g.key.t.Selector.matches(m.Labels) {
					pc.sym = append(pc.sym, g)
				}
			}
		}
		for k, v := range m.Labels {
			consider(x.antiProbes[pair{k, v}])
			consider(x.antiKeyProbes[k])
		}
		consider(x.antiAlways)
		if len(pc.sym) > 1 {
			slices.SortFunc(pc.sym, func(a, b *antiGroup) int { return cmp.Compare(a.id, b.id) })
		}
		for _, g := range pc.sym {
			x.buf = append(x.buf, byte(g.id), byte(g.id>>8), byte(g.id>>16), byte(g.id>>24))
		}
	}
	if len(x.buf) > 0 {
		id, ok := x.sigs[string(x.buf)]
		if !ok {
			id = int32(len(x.sigs) + 1)
			x.sigs[string(x.buf)] = id
		}
		pc.sig = id
	}
	c := m.Constraints
	if !c.AboutPods() {
		if len(pc.sym) == 0 {
			return nil
		}
		return pc
	}
	cs := x.countersOf(c, m.Namespace)
	if len(c.PodAffinity) > 0 {
		zero, self := true, true
		for i := range c.PodAffinity {
			t := &c.PodAffinity[i]
			zero = zero && cs.aff[i].total == 0
			self = self && x.covers(t, m.Namespace, m.Namespace) && t.Selector.matches(m.Labels)
		}
		pc.aff, pc.anchor = cs.aff, zero && self
	}
	pc.anti = cs.anti
	for i := range c.Spread {
		s := &c.Spread[i]
		sc := spreadCheck{c: cs.spread[i], maxSkew: max(s.MaxSkew, 1), minDomains: s.MinDomains}
		if s.Selector.matches(m.Labels) {
			sc.self = 1
		}
		pc.spread = append(pc.spread, sc)
	}
	if len(c.HostPorts) > 0 {
		if x.ports == nil {
			x.ports = make([][]HostPort, len(x.nodes))
			for i := range x.pods {
				if pc := x.pods[i].cons; pc != nil && len(pc.HostPorts) > 0 {
					x.ports[x.pods[i].node] = append(x.ports[x.pods[i].node], pc.HostPorts...)
				}
			}
		}
		pc.ports = c.HostPorts
	}
	return pc
}

// consNS is a member's constraints in its namespace.
type consNS struct {
	c  *Constraints
	ns string
}

// counterSet holds the counters of one consNS, in the order of its terms.
type counterSet struct{ aff, anti, spread []*counter }

func (x *podIndex) countersOf(c *Constraints, ns string) *counterSet {
	k := consNS{c, ns}
	if cs := x.sets[k]; cs != nil {
		return cs
	}
	cs := &counterSet{}
	for i := range c.PodAffinity {
		cs.aff = append(cs.aff, x.affinityCounter(&c.PodAffinity[i], ns, c.PodAffinity))
	}
	for i := range c.PodAntiAffinity {
		cs.anti = append(cs.anti, x.affinityCounter(&c.PodAntiAffinity[i], ns, nil))
	}
	for i := range c.Spread {
		cs.spread = append(cs.spread, x.spreadCounter(&c.Spread[i], c, ns))
	}
	x.sets[k] = cs
	return cs
}

// checkNode reports whether a member with checks pc may run on node n as far
// as the other pods are concerned.
func (x *podIndex) checkNode(pc *podCheck, n int) filterResult {
	for _, c := range pc.aff {
		d := c.topo.of[n]
		if d < 0 {
			return filteredPodAffinity
		}
		if c.count.get(d) == 0 && !pc.anchor {
			return filteredPodAffinity
		}
	}
	for _, c := range pc.anti {
		if d := c.topo.of[n]; d >= 0 && c.count.get(d) > 0 {
			return filteredPodAntiAffinity
		}
	}
	for _, g := range pc.sym {
		if d := g.topo.of[n]; d >= 0 && g.count.get(d) > 0 {
			return filteredPodAntiAffinity
		}
	}
	for i := range pc.spread {
		s := &pc.spread[i]
		d := s.c.topo.of[n]
		if d < 0 || s.c.okNode != nil && !s.c.okNode[n] {
			return filteredSpread
		}
		low := s.c.min
		if s.c.domains < s.minDomains {
			low = 0
		}
		if s.c.count.dense[d]+s.self-low > s.maxSkew {
			return filteredSpread
		}
	}
	for _, want := range pc.ports {
		for _, used := range x.ports[n] {
			if portsClash(want, used) {
				return filteredHostPort
			}
		}
	}
	return feasible
}

func portsClash(a, b HostPort) bool {
	if a.Port != b.Port || a.Port == 0 {
		return false
	}
	if cmp.Or(a.Protocol, "TCP") != cmp.Or(b.Protocol, "TCP") {
		return false
	}
	wild := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
	return wild(a.IP) || wild(b.IP) || a.IP == b.IP
}

// placed indexes member m of the gang being placed on node n.
func (c *cycle) placed(m *Member, n int) {
	if c.pods != nil {
		c.pods.add(indexedPod{node: int32(n), ns: m.Namespace, labels: m.Labels, cons: m.Constraints})
	}
}

// unplaced removes the last k members placed from the index.
func (c *cycle) unplaced(k int) {
	if c.pods != nil {
		for ; k > 0; k-- {
			c.pods.pop()
		}
	}
}

// pinned keeps the members with constraints cons within one domain of a
// topology key while an anchored placement is tried (placeAnchored).
type pinned struct {
	cons *Constraints
	topo *topoKey
	dom  int32
}

// pins are the groups an anchored placement pins, one domain each.
type pins []pinned

// admit reports whether member m may go on node n under every pin.
func (ps pins) admit(m *Member, n int) bool {
	for i := range ps {
		if m.Constraints == ps[i].cons && ps[i].topo.of[n] != ps[i].dom {
			return false
		}
	}
	return true
}

// maxAnchorTries bounds the domains placeAnchored tries for one gang.
const maxAnchorTries = 32

// anchorGroup is a group of a gang's members that share the constraints of
// an anchor (a member whose required pod affinity lets it choose its
// domain freely): their key, what they need together, and the free room of
// each domain of the key for them.
type anchorGroup struct {
	cons *Constraints
	topo *topoKey
	need Vector
	free []Vector
	dims int // the dimension domains are compared by
}

// placeAnchored retries a minimum that found no placement when a member's
// required pod affinity let it choose its domain freely (no pod matches its
// terms yet, and it matches them itself: the first of a group that must be
// together). The domain the greedy placement chose may be too small for the
// group while another is large enough. With several such groups (the jobs
// of a JobSet with exclusive placement), each is first pinned to a domain
// of its own at once (pinEach); then the members sharing the first group's
// constraints are pinned to one domain of its first term's key at a time,
// those with the most free accelerators (or cpu) first.
func (c *cycle) placeAnchored(g *Gang, members []Member, t *txn) bool {
	if c.pods == nil || g.RequiredLevel != "" {
		return false // a required level chose the domains already
	}
	var groups []*anchorGroup
	for i := range members {
		m := &members[i]
		if !m.Constraints.looseTerms() || len(m.Constraints.PodAffinity) == 0 {
			continue
		}
		if slices.ContainsFunc(groups, func(a *anchorGroup) bool { return a.cons == m.Constraints }) {
			continue
		}
		if pc := c.pods.prepare(m); pc != nil && pc.anchor {
			groups = append(groups, c.anchorGroup(m, members))
		}
	}
	if len(groups) == 0 {
		return false
	}
	defer func() { c.pins = c.pins[:0] }()
	if len(groups) > 1 && c.pinEach(g, members, t, groups) {
		return true
	}
	a := groups[0]
	var doms []int32
	for d := range a.free {
		if a.need.Fits(a.free[d]) {
			doms = append(doms, int32(d))
		}
	}
	slices.SortStableFunc(doms, func(x, y int32) int { return cmp.Compare(a.free[y][a.dims], a.free[x][a.dims]) })
	if len(doms) > maxAnchorTries {
		doms = doms[:maxAnchorTries]
	}
	for _, d := range doms {
		c.pins = append(c.pins[:0], pinned{cons: a.cons, topo: a.topo, dom: d})
		if _, ok := c.placeAll(g, members, t, nil); ok {
			return true
		}
	}
	return false
}

// anchorGroup describes the group of members that share anchor's
// constraints.
func (c *cycle) anchorGroup(anchor *Member, members []Member) *anchorGroup {
	a := &anchorGroup{cons: anchor.Constraints, topo: c.pods.topology(anchor.Constraints.PodAffinity[0].TopologyKey)}
	for i := range members {
		if members[i].Constraints == a.cons {
			a.need = a.need.Add(podRequest(&members[i]))
		}
	}
	a.free = make([]Vector, a.topo.n)
	for n := range c.snap.Nodes {
		if d := a.topo.of[n]; d >= 0 && c.x.bucket[n] >= 0 && c.verdicts.filter(n, a.cons) == feasible {
			a.free[d] = a.free[d].Add(c.x.free[n])
		}
	}
	a.dims = c.x.gpu
	if a.dims < 0 || a.need[a.dims] == 0 {
		a.dims = CPU
	}
	return a
}

// pinEach pins every group to a domain at once and tries the placement:
// each group in turn, the largest first, to the domain with the most free
// room left for it, preferring domains no group took yet (groups that must
// be together are often kept apart by anti-affinity too). false if some
// group has no domain left, or the placement fails.
func (c *cycle) pinEach(g *Gang, members []Member, t *txn, groups []*anchorGroup) bool {
	order := slices.Clone(groups)
	slices.SortStableFunc(order, func(x, y *anchorGroup) int { return cmp.Compare(y.need[y.dims], x.need[x.dims]) })
	type domain struct {
		topo *topoKey
		dom  int32
	}
	taken := map[domain]Vector{}
	c.pins = c.pins[:0]
	for _, a := range order {
		best, bestTaken := int32(-1), true
		var bestLeft Vector
		for d := range a.free {
			used, was := taken[domain{a.topo, int32(d)}]
			left := a.free[d].Sub(used)
			if !a.need.Fits(left) {
				continue
			}
			if best < 0 || bestTaken && !was || bestTaken == was && left[a.dims] > bestLeft[a.dims] {
				best, bestTaken, bestLeft = int32(d), was, left
			}
		}
		if best < 0 {
			return false
		}
		k := domain{a.topo, best}
		taken[k] = taken[k].Add(a.need)
		c.pins = append(c.pins, pinned{cons: a.cons, topo: a.topo, dom: best})
	}
	_, ok := c.placeAll(g, members, t, nil)
	return ok
}

// alike reports whether the cycle may take the outcome of one gang of
// members for another gang of the same signature: their pod constraints, if
// any, do not depend on who they are.
func (c *cycle) alike(members []Member) bool {
	if c.pods == nil {
		return true
	}
	if members[0].Constraints.AboutPods() {
		return false
	}
	for i := range members {
		if pc := c.pods.prepare(&members[i]); pc != nil {
			return false
		}
	}
	return true
}

// onlyPodTerms reports whether c, if not nil, constrains nothing but the
// member's relation to other pods.
func (c *Constraints) onlyPodTerms() bool {
	return c == nil || len(c.NodeSelector) == 0 && len(c.Affinity) == 0 && len(c.Tolerations) == 0 && len(c.VolumeAffinity) == 0
}

// baseOf returns the canonical constraints with c's node-level parts only
// (nil when it has none): members of one request and base share the memo
// entry that says no node has room for them, whatever their pod terms.
func (x *podIndex) baseOf(c *Constraints) *Constraints {
	if c.onlyPodTerms() {
		return nil
	}
	if b, ok := x.bases[c]; ok {
		return b
	}
	node := Constraints{NodeSelector: c.NodeSelector, Affinity: c.Affinity, Tolerations: c.Tolerations, VolumeAffinity: c.VolumeAffinity}
	text := fmt.Sprint(node.NodeSelector, node.Affinity, node.Tolerations, node.VolumeAffinity)
	b := x.baseByText[text]
	if b == nil {
		if !c.AboutPods() {
			b = c
		} else {
			b = &node
		}
		x.baseByText[text] = b
	}
	x.bases[c] = b
	return b
}

// domainCounts counts pods by domain: in a slice, or, for a key of many
// domains (a node's hostname) where a term counts few pods, in a map.
type domainCounts struct {
	dense  []int32
	sparse map[int32]int32
}

// sparseFrom is the number of domains from which counts that need not be
// dense are kept in a map.
const sparseFrom = 512

func newDomainCounts(n int32, dense bool) domainCounts {
	if dense || n < sparseFrom {
		return domainCounts{dense: make([]int32, n)}
	}
	return domainCounts{sparse: map[int32]int32{}}
}

func (c *domainCounts) get(d int32) int32 {
	if c.dense != nil {
		return c.dense[d]
	}
	return c.sparse[d]
}

func (c *domainCounts) add(d, delta int32) {
	if c.dense != nil {
		c.dense[d] += delta
		return
	}
	if v := c.sparse[d] + delta; v != 0 {
		c.sparse[d] = v
	} else {
		delete(c.sparse, d)
	}
}
