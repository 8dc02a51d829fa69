package core

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// Builders for pod constraints.

func sel(kv ...string) *LabelSelector {
	s := &LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func term(key string, s *LabelSelector) PodAffinityTerm {
	return PodAffinityTerm{Selector: s, TopologyKey: key}
}

// Labelled sets the namespace and labels of every pending member so far.
func (b *gangBuilder) Labelled(ns string, kv ...string) *gangBuilder {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	for i := range b.g.Pending {
		b.g.Pending[i].Namespace, b.g.Pending[i].Labels = ns, l
	}
	return b
}

// Pod adds a pod bound to node n.
func (b *snapBuilder) Pod(n int, ns string, c *Constraints, kv ...string) *snapBuilder {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	b.s.Pods = append(b.s.Pods, Pod{Node: n, Namespace: ns, Labels: l, Constraints: c})
	return b
}

// memberNodes maps "gang/member" to its node.
func memberNodes(p Plan) map[string]string {
	out := map[string]string{}
	for _, b := range p.Binds {
		out[b.Gang+"/"+b.Member] = b.Node
	}
	return out
}

func distinct(xs []string) int {
	seen := map[string]bool{}
	for _, x := range xs {
		seen[x] = true
	}
	return len(seen)
}

func nodesOfGang(p Plan, gang string) []string {
	var out []string
	for _, b := range p.Binds {
		if b.Gang == gang {
			out = append(out, b.Node)
		}
	}
	sort.Strings(out)
	return out
}

func TestPodConstraints(t *testing.T) {
	antiSelf := &Constraints{PodAntiAffinity: []PodAffinityTerm{term("kubernetes.io/hostname", sel("app", "a"))}}
	node := func(name string, gpus int64, kv ...string) *nodeBuilder {
		b := MakeNode(name).GPUs(gpus).Label("kubernetes.io/hostname", name)
		for i := 0; i+1 < len(kv); i += 2 {
			b.Label(kv[i], kv[i+1])
		}
		return b
	}
	cases := []struct {
		name string
		snap *Snapshot
		// check inspects the outcome; it returns what is wrong, or "".
		check func(p Plan, d Diagnostics) string
	}{{
		name: "a gang whose members must spread one per node takes four nodes",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8), node("n3", 8), node("n4", 8)).
			Gangs(MakeGang("g").Task("w", 4, req(GPUs(1)), antiSelf).Labelled("ns", "app", "a")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); len(ns) != 4 || distinct(ns) != 4 {
				return fmt.Sprintf("want 4 members on 4 nodes, got %v", ns)
			}
			return ""
		},
	}, {
		name: "one per node with three nodes for four members waits, saying why, holding nothing",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8), node("n3", 8)).
			Gangs(MakeGang("g").Task("w", 4, req(GPUs(1)), antiSelf).Labelled("ns", "app", "a"),
				MakeGang("h").Members(3, GPUs(8)).Arrival(1)).Obj(),
		check: func(p Plan, d Diagnostics) string {
			st := pendingOf(d)["g"]
			if st.Reason != ReasonUnschedulable || !strings.Contains(st.Message, "3 pod anti-affinity") {
				return fmt.Sprintf("g: want Unschedulable naming 3 nodes refused by pod anti-affinity, got %+v", st)
			}
			if ns := nodesOfGang(p, "h"); len(ns) != 3 {
				return fmt.Sprintf("h should take the three nodes g rolled back, got %v", ns)
			}
			return ""
		},
	}, {
		name: "a gang that must fit in one rack by pod affinity to itself goes to the rack that holds it",
		// The best-fitting first node is in rack r1, which holds only two
		// of the four members: the gang must end in r2.
		snap: MakeSnapshot().Nodes(node("n1", 8, "rack", "r1").UsedGPUs(6), node("n2", 8, "rack", "r1"),
			node("n3", 8, "rack", "r2"), node("n4", 8, "rack", "r2")).
			Gangs(MakeGang("g").Task("w", 4, req(GPUs(4)),
				&Constraints{PodAffinity: []PodAffinityTerm{term("rack", sel("job", "g"))}}).Labelled("ns", "job", "g")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "n3,n3,n4,n4" {
				return fmt.Sprintf("want g on n3,n3,n4,n4, got %v (pending %v)", ns, pendingOf(d))
			}
			return ""
		},
	}, {
		name: "pod affinity to a running pod puts the member in that pod's zone",
		snap: MakeSnapshot().Nodes(node("n1", 8, "zone", "a"), node("n2", 8, "zone", "b"), node("n3", 8, "zone", "b")).
			Pod(2, "ns", nil, "app", "db").
			Gangs(MakeGang("g").Task("w", 2, req(GPUs(8)),
				&Constraints{PodAffinity: []PodAffinityTerm{term("zone", sel("app", "db"))}}).Labelled("ns", "app", "web")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "n2,n3" {
				return fmt.Sprintf("want g on n2,n3 (zone b), got %v", ns)
			}
			return ""
		},
	}, {
		name: "pod affinity with no pod to join and a member that does not match its own term waits",
		snap: MakeSnapshot().Nodes(node("n1", 8, "zone", "a")).
			Gangs(MakeGang("g").Task("w", 1, req(GPUs(1)),
				&Constraints{PodAffinity: []PodAffinityTerm{term("zone", sel("app", "db"))}}).Labelled("ns", "app", "web")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if st := pendingOf(d)["g"]; !strings.Contains(st.Message, "1 pod affinity not satisfied") {
				return fmt.Sprintf("want g pending on pod affinity, got %+v", st)
			}
			return ""
		},
	}, {
		name: "a node without the topology key does not satisfy affinity",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8, "zone", "a")).
			Pod(0, "ns", nil, "app", "db").Pod(1, "ns", nil, "app", "db").
			Gangs(MakeGang("g").Task("w", 1, req(GPUs(8)),
				&Constraints{PodAffinity: []PodAffinityTerm{term("zone", sel("app", "db"))}}).Labelled("ns")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "n2" {
				return fmt.Sprintf("want g on n2, got %v", ns)
			}
			return ""
		},
	}, {
		name: "anti-affinity keeps a member off the node of the pod it avoids, in its namespace only",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8), node("n3", 8)).
			Pod(0, "ns", nil, "app", "db").Pod(1, "other", nil, "app", "db").
			Gangs(MakeGang("g").Task("w", 2, req(GPUs(8)),
				&Constraints{PodAntiAffinity: []PodAffinityTerm{term("kubernetes.io/hostname", sel("app", "db"))}}).Labelled("ns")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "n2,n3" {
				return fmt.Sprintf("want g on n2,n3, got %v", ns)
			}
			return ""
		},
	}, {
		name: "an empty namespaceSelector covers every namespace",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8), node("n3", 8)).
			Pod(0, "ns", nil, "app", "db").Pod(1, "other", nil, "app", "db").
			Gangs(MakeGang("g").Task("w", 1, req(GPUs(8)),
				&Constraints{PodAntiAffinity: []PodAffinityTerm{{Selector: sel("app", "db"),
					NamespaceSelector: &LabelSelector{}, TopologyKey: "kubernetes.io/hostname"}}}).Labelled("ns")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "n3" {
				return fmt.Sprintf("want g on n3, got %v", ns)
			}
			return ""
		},
	}, {
		name: "a namespaceSelector selects namespaces by their labels",
		snap: func() *Snapshot {
			s := MakeSnapshot().Nodes(node("n1", 8), node("n2", 8), node("n3", 8)).
				Pod(0, "team-a", nil, "app", "db").Pod(1, "team-b", nil, "app", "db").
				Gangs(MakeGang("g").Task("w", 1, req(GPUs(8)),
					&Constraints{PodAntiAffinity: []PodAffinityTerm{{Selector: sel("app", "db"),
						NamespaceSelector: sel("tier", "prod"), TopologyKey: "kubernetes.io/hostname"}}}).Labelled("ns")).Obj()
			s.Namespaces = map[string]map[string]string{"team-a": {"tier": "dev"}, "team-b": {"tier": "prod"}}
			// n1 is refused only if team-a were covered: fill n3 so that
			// the member must choose between n1 and n2.
			s.Nodes[2].Used = s.Nodes[2].Allocatable
			return s
		}(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "n1" {
				return fmt.Sprintf("want g on n1 (team-b's pod is on n2), got %v", ns)
			}
			return ""
		},
	}, {
		name: "a running pod's anti-affinity keeps the members it selects away (symmetry)",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8)).
			Pod(0, "ns", &Constraints{PodAntiAffinity: []PodAffinityTerm{term("kubernetes.io/hostname", sel("app", "web"))}}, "app", "db").
			Gangs(MakeGang("web").Task("w", 1, req(GPUs(8)), nil).Labelled("ns", "app", "web"),
				MakeGang("batch").Task("w", 1, req(GPUs(8)), nil).Labelled("ns", "app", "batch").Arrival(1)).Obj(),
		check: func(p Plan, d Diagnostics) string {
			m := memberNodes(p)
			if m["web/web-w-0"] != "n2" || m["batch/batch-w-0"] != "n1" {
				return fmt.Sprintf("want web on n2 and batch on n1, got %v", m)
			}
			return ""
		},
	}, {
		name: "spread with maxSkew 1 over two zones puts two members in each",
		snap: MakeSnapshot().Nodes(node("a1", 8, "zone", "a"), node("b1", 8, "zone", "b")).
			Gangs(MakeGang("g").Task("w", 4, req(GPUs(1)),
				&Constraints{Spread: []SpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", Selector: sel("job", "g")}}}).
				Labelled("ns", "job", "g")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "a1,a1,b1,b1" {
				return fmt.Sprintf("want two members per zone, got %v", ns)
			}
			return ""
		},
	}, {
		name: "spread counts running pods: the emptier zone takes the first members",
		snap: MakeSnapshot().Nodes(node("a1", 8, "zone", "a"), node("b1", 8, "zone", "b")).
			Pod(0, "ns", nil, "job", "g").Pod(0, "ns", nil, "job", "g").
			Gangs(MakeGang("g").Task("w", 2, req(GPUs(1)),
				&Constraints{Spread: []SpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", Selector: sel("job", "g")}}}).
				Labelled("ns", "job", "g")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "b1,b1" {
				return fmt.Sprintf("want both members in zone b, got %v", ns)
			}
			return ""
		},
	}, {
		name: "minDomains above the domains there are holds each domain to maxSkew",
		snap: MakeSnapshot().Nodes(node("a1", 8, "zone", "a"), node("b1", 8, "zone", "b")).
			Gangs(MakeGang("g").Task("w", 3, req(GPUs(1)),
				&Constraints{Spread: []SpreadConstraint{{MaxSkew: 1, MinDomains: 3, TopologyKey: "zone", Selector: sel("job", "g")}}}).
				Labelled("ns", "job", "g")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if st := pendingOf(d)["g"]; len(p.Binds) != 0 || !strings.Contains(st.Message, "topology spread") {
				return fmt.Sprintf("want g pending on spread and nothing bound, got %v / %+v", p.Binds, st)
			}
			return ""
		},
	}, {
		name: "spread honours node affinity by default: a zone the member may not use is not a domain",
		snap: MakeSnapshot().Nodes(node("a1", 8, "zone", "a", "pool", "gpu"), node("b1", 8, "zone", "b", "pool", "cpu")).
			Gangs(MakeGang("g").Task("w", 3, req(GPUs(1)),
				&Constraints{NodeSelector: map[string]string{"pool": "gpu"},
					Spread: []SpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", Selector: sel("job", "g")}}}).
				Labelled("ns", "job", "g")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "a1,a1,a1" {
				return fmt.Sprintf("want all on a1, got %v (%v)", ns, pendingOf(d))
			}
			return ""
		},
	}, {
		name: "with nodeAffinityPolicy Ignore the refused zone counts, and holds the skew",
		snap: MakeSnapshot().Nodes(node("a1", 8, "zone", "a", "pool", "gpu"), node("b1", 8, "zone", "b", "pool", "cpu")).
			Gangs(MakeGang("g").Task("w", 3, req(GPUs(1)),
				&Constraints{NodeSelector: map[string]string{"pool": "gpu"},
					Spread: []SpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", Selector: sel("job", "g"), IgnoreNodeAffinity: true}}}).
				Labelled("ns", "job", "g")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if len(p.Binds) != 0 {
				return fmt.Sprintf("want nothing bound (zone b stays at 0), got %v", p.Binds)
			}
			return ""
		},
	}, {
		name: "two members asking for the same host port take two nodes; UDP shares with TCP",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8)).
			Gangs(MakeGang("g").Task("w", 2, req(GPUs(1)), &Constraints{HostPorts: []HostPort{{Port: 8080}}}).Labelled("ns"),
				MakeGang("u").Task("w", 1, req(GPUs(1)), &Constraints{HostPorts: []HostPort{{Port: 8080, Protocol: "UDP"}}}).Labelled("ns").Arrival(1)).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "n1,n2" {
				return fmt.Sprintf("want g on n1,n2, got %v", ns)
			}
			if len(nodesOfGang(p, "u")) != 1 {
				return fmt.Sprintf("want u placed, got %v", pendingOf(d))
			}
			return ""
		},
	}, {
		name: "a host port in use by a running pod keeps the member off that node",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8)).
			Pod(0, "kube-system", &Constraints{HostPorts: []HostPort{{Port: 9100, IP: "10.0.0.1"}}}).
			Gangs(MakeGang("g").Task("w", 1, req(GPUs(8)), &Constraints{HostPorts: []HostPort{{Port: 9100}}}).Labelled("ns")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); strings.Join(ns, ",") != "n2" {
				return fmt.Sprintf("want g on n2, got %v", ns)
			}
			return ""
		},
	}, {
		name: "host ports of one node for two members: the gang waits saying so",
		snap: MakeSnapshot().Nodes(node("n1", 8)).
			Gangs(MakeGang("g").Task("w", 2, req(GPUs(1)), &Constraints{HostPorts: []HostPort{{Port: 8080}}}).Labelled("ns")).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if st := pendingOf(d)["g"]; !strings.Contains(st.Message, "1 host port in use") {
				return fmt.Sprintf("want g pending on the host port, got %+v", st)
			}
			return ""
		},
	}, {
		name: "elastic members keep anti-affinity with the minimum placed before them",
		snap: MakeSnapshot().Nodes(node("n1", 8), node("n2", 8), node("n3", 8)).
			Gangs(MakeGang("g").Task("w", 5, req(GPUs(1)), antiSelf).Labelled("ns", "app", "a").Min(2)).Obj(),
		check: func(p Plan, d Diagnostics) string {
			if ns := nodesOfGang(p, "g"); len(ns) != 3 || distinct(ns) != 3 {
				return fmt.Sprintf("want 3 members on 3 nodes, got %v", ns)
			}
			return ""
		},
	}, {
		name: "exclusive placement: two jobs of one gang, one rack each, never sharing one",
		snap: func() *Snapshot {
			job := func(key string) *Constraints {
				return &Constraints{
					PodAffinity: []PodAffinityTerm{term("rack", &LabelSelector{MatchExpressions: []Requirement{
						{Key: "job-key", Operator: SelectorIn, Values: []string{key}}}})},
					PodAntiAffinity: []PodAffinityTerm{term("rack", &LabelSelector{MatchExpressions: []Requirement{
						{Key: "job-key", Operator: SelectorExists}, {Key: "job-key", Operator: SelectorNotIn, Values: []string{key}}}})},
				}
			}
			g := MakeGang("js").Task("a", 2, req(GPUs(4)), job("a")).Labelled("ns", "job-key", "a")
			g.Task("b", 2, req(GPUs(4)), job("b"))
			for i := 2; i < 4; i++ {
				g.g.Pending[i].Namespace, g.g.Pending[i].Labels = "ns", map[string]string{"job-key": "b"}
			}
			return MakeSnapshot().Nodes(node("n1", 8, "rack", "r1"), node("n2", 8, "rack", "r1"),
				node("n3", 8, "rack", "r2"), node("n4", 8, "rack", "r2"), node("n5", 8, "rack", "r3")).Gangs(g).Obj()
		}(),
		check: func(p Plan, d Diagnostics) string {
			rack := map[string]string{"n1": "r1", "n2": "r1", "n3": "r2", "n4": "r2", "n5": "r3"}
			byJob := map[string]map[string]bool{}
			for _, b := range p.Binds {
				j := b.Member[3:4]
				if byJob[j] == nil {
					byJob[j] = map[string]bool{}
				}
				byJob[j][rack[b.Node]] = true
			}
			if len(p.Binds) != 4 || len(byJob["a"]) != 1 || len(byJob["b"]) != 1 {
				return fmt.Sprintf("want each job in one rack, got %v", memberNodes(p))
			}
			for r := range byJob["a"] {
				if byJob["b"][r] {
					return fmt.Sprintf("jobs share rack %s: %v", r, memberNodes(p))
				}
			}
			return ""
		},
	}, {
		name: "exclusive placement: two jobs of one gang, with a rack that fits one member of either",
		// Nodes of one cpu, one member's. Rack r1 has room for one member
		// (n2): the first member of either job may choose it, and then
		// its job cannot be whole there. Each job must be pinned to a
		// rack of its own, r2 and r3, at once: pinning one job alone
		// leaves the other free to choose r1.
		snap: func() *Snapshot {
			job := func(key string) *Constraints {
				return &Constraints{
					PodAffinity: []PodAffinityTerm{term("rack", &LabelSelector{MatchExpressions: []Requirement{
						{Key: "job-key", Operator: SelectorIn, Values: []string{key}}}})},
					PodAntiAffinity: []PodAffinityTerm{term("rack", &LabelSelector{MatchExpressions: []Requirement{
						{Key: "job-key", Operator: SelectorExists}, {Key: "job-key", Operator: SelectorNotIn, Values: []string{key}}}})},
				}
			}
			// The members of the two jobs alternate, as the scheduler
			// lists a JobSet's followers to come before its leaders.
			ca, cb := job("a"), job("b")
			g := MakeGang("js")
			for i := range 2 {
				g.Task(fmt.Sprintf("a%d", i), 1, req(CPUs(1)), ca).Task(fmt.Sprintf("b%d", i), 1, req(CPUs(1)), cb)
			}
			for i := range g.g.Pending {
				g.g.Pending[i].Namespace, g.g.Pending[i].Labels = "ns", map[string]string{"job-key": g.g.Pending[i].Name[3:4]}
			}
			cpuNode := func(name, rack string) *nodeBuilder { return node(name, 0, "rack", rack).CPUs(1) }
			return MakeSnapshot().Nodes(cpuNode("n1", "r1").Used(req(CPUs(1))), cpuNode("n2", "r1"),
				cpuNode("n3", "r2"), cpuNode("n4", "r2"), cpuNode("n5", "r3"), cpuNode("n6", "r3")).Gangs(g).Obj()
		}(),
		check: func(p Plan, d Diagnostics) string {
			rack := map[string]string{"n2": "r1", "n3": "r2", "n4": "r2", "n5": "r3", "n6": "r3"}
			byJob := map[string]map[string]bool{}
			for _, b := range p.Binds {
				j := b.Member[3:4]
				if byJob[j] == nil {
					byJob[j] = map[string]bool{}
				}
				byJob[j][rack[b.Node]] = true
			}
			if len(p.Binds) != 4 || len(byJob["a"]) != 1 || len(byJob["b"]) != 1 || byJob["a"]["r1"] || byJob["b"]["r1"] {
				return fmt.Sprintf("want each job in a rack of its own, r2 and r3, got %v (pending %v)", memberNodes(p), pendingOf(d))
			}
			return ""
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, d := run(t, tc.snap, FairShare)
			if msg := tc.check(p, d); msg != "" {
				t.Error(msg)
			}
			checkPodConstraints(t, tc.snap, p)
		})
	}
}
