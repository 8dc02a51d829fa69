package core

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// randomSnapshot builds a cluster of the given size, partly used, with
// gangs of 1..maxMembers members spread over a few queues. The same seed
// gives the same snapshot.
func randomSnapshot(seed uint64, nodes, pods, maxMembers int) *Snapshot {
	r := rand.New(rand.NewPCG(seed, 7))
	b := MakeSnapshot()
	for i := 0; i < nodes; i++ {
		n := MakeNode(fmt.Sprintf("n%05d", i)).GPUs(8).Label("rack", fmt.Sprintf("r%d", i%16)).
			Label(zone, fmt.Sprintf("z%d", i/48))
		if i%23 != 22 { // a few nodes outside every rack
			n.Label(rack, fmt.Sprintf("r%d", i/8%6))
		}
		if used := r.IntN(9); used > 0 && r.IntN(2) == 0 {
			n.Used(Vector{CPU: int64(used) * 4000, Memory: int64(used) << 33, Pods: int64(used), gpuDim: int64(used)})
		}
		if r.IntN(50) == 0 {
			n.Taint("maintenance", "", NoSchedule)
		}
		b.Nodes(n)
	}
	queues := []string{"alpha", "beta", "gamma", "delta"}
	for i, q := range queues {
		qb := MakeQueue(q).Weight(int64(i + 1))
		if q == "delta" {
			qb.CapGPUs(int64(nodes))
		}
		b.Queues(qb)
	}
	rackA := &Constraints{NodeSelector: map[string]string{"rack": "r3"}}
	sizes := []int64{1, 1, 1, 2, 4, 8}
	for id := 0; pods > 0; id++ {
		members := min(1+r.IntN(maxMembers), pods)
		pods -= members
		g := MakeGang(fmt.Sprintf("g%05d", id)).Queue(queues[r.IntN(len(queues))]).Arrival(int64(id)).Priority(int32(r.IntN(3)))
		gpus := sizes[r.IntN(len(sizes))]
		var c *Constraints
		if r.IntN(20) == 0 {
			c = rackA
		}
		g.Task("w", members, Vector{CPU: gpus * 4000, Memory: gpus << 33, gpuDim: gpus}, c)
		if r.IntN(4) == 0 {
			g.Min(1 + r.IntN(members))
		}
		b.Gangs(g)
	}
	return b.Obj()
}

// randomTopology is the topology of randomSnapshot's nodes: zones of 48
// nodes, racks of 8 within them, and a few nodes in no rack.
var randomTopology = []string{zone, rack}

// requireTopology makes about one gang in five of s require one zone or one
// rack.
func requireTopology(s *Snapshot, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 11))
	for _, g := range s.Gangs {
		if r.IntN(5) == 0 {
			g.RequiredLevel = randomTopology[r.IntN(len(randomTopology))]
		}
	}
}

// TestCycleInvariants checks, over random clusters, what every plan must
// satisfy: no node over its allocatable, no queue over its capability, every
// gang all-or-nothing up to MinMember, no member bound twice, pending gangs
// bound nothing, a gang's minimum within one domain of its required level;
// and the same input gives the same plan.
func TestCycleInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		for _, cfg := range []Config{{Ordering: FairShare}, {Ordering: StrictFIFO},
			{Ordering: FairShare, Topology: randomTopology}, {Ordering: StrictFIFO, Topology: randomTopology},
			{Ordering: FairShare, ReserveAfter: 1}} {
			o := cfg.Ordering
			s := randomSnapshot(seed, 30+int(seed)*3, 150, 9)
			if cfg.Topology != nil {
				requireTopology(s, seed)
				o += 2 // for the messages
			}
			if cfg.ReserveAfter > 0 {
				addReleases(s, seed)
				o += 4
			}
			sched, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			run := func(*testing.T, *Snapshot, Ordering) (Plan, Diagnostics) { return sched.RunCycle(s, 1000) }
			plan, diag := run(t, s, o)
			checkPlan(t, fmt.Sprintf("seed %d ordering %d", seed, o), s, plan, diag)
			plan2, diag2 := run(t, s, o)
			if diff := cmp.Diff(plan, plan2); diff != "" {
				t.Fatalf("seed %d: plans differ between two runs:\n%s", seed, diff)
			}
			if diff := cmp.Diff(messages(diag), messages(diag2)); diff != "" {
				t.Fatalf("seed %d: diagnostics differ between two runs:\n%s", seed, diff)
			}
		}
	}
}

func messages(d Diagnostics) []string {
	var out []string
	for _, s := range d.Pending {
		out = append(out, s.Gang+": "+string(s.Reason)+": "+s.Message())
	}
	return append(out, d.Scheduled...)
}

func checkPlan(t *testing.T, name string, s *Snapshot, plan Plan, diag Diagnostics) {
	t.Helper()
	nodes := map[string]*Node{}
	used := map[string]Vector{}
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
		used[s.Nodes[i].Name] = s.Nodes[i].Used
	}
	gangs := map[string]*Gang{}
	for _, g := range s.Gangs {
		gangs[g.ID] = g
	}
	alloc := map[string]Vector{}
	for _, q := range s.Queues {
		alloc[q.Name] = q.Allocated
	}
	bound := map[string]int{}
	seen := map[string]bool{}
	for _, b := range plan.Binds {
		g := gangs[b.Gang]
		var m *Member
		for i := range g.Pending {
			if g.Pending[i].Name == b.Member {
				m = &g.Pending[i]
			}
		}
		if m == nil || seen[b.Member] {
			t.Fatalf("%s: bind %v names an unknown or already bound member", name, b)
		}
		seen[b.Member] = true
		n := nodes[b.Node]
		if !Admits(n, m.Constraints) {
			t.Fatalf("%s: %s placed on %s, which it may not use", name, b.Member, b.Node)
		}
		r := podRequest(m)
		used[b.Node] = used[b.Node].Add(r)
		alloc[g.Queue] = alloc[g.Queue].Add(r)
		bound[b.Gang]++
	}
	for name2, u := range used {
		if u != nodes[name2].Used && !u.Fits(nodes[name2].Allocatable) {
			t.Fatalf("%s: node %s overcommitted: used %v of %v", name, name2, u, nodes[name2].Allocatable)
		}
	}
	for _, q := range s.Queues {
		if alloc[q.Name] != q.Allocated && !alloc[q.Name].Fits(q.Capability) {
			t.Fatalf("%s: queue %s over capability", name, q.Name)
		}
	}
	for id, n := range bound {
		g := gangs[id]
		if g.Bound < g.MinMember && g.Bound+n < g.MinMember {
			t.Fatalf("%s: gang %s partially placed: %d bound + %d new < minMember %d", name, id, g.Bound, n, g.MinMember)
		}
	}
	// A gang's first binds are its minimum; a required level holds them in
	// one domain, whose nodes share the values of that level and the broader
	// ones.
	domain := map[string]string{}
	minimum := map[string]int{}
	for _, b := range plan.Binds {
		g := gangs[b.Gang]
		if minimum[b.Gang]++; g.RequiredLevel == "" || minimum[b.Gang] > g.MinMember-g.Bound {
			continue
		}
		path := ""
		for _, key := range randomTopology {
			v, ok := nodes[b.Node].Labels[key]
			if !ok {
				t.Fatalf("%s: gang %s requires one %s but %s is on %s, which lacks label %s", name, b.Gang, g.RequiredLevel, b.Member, b.Node, key)
			}
			path += "/" + v
			if key == g.RequiredLevel {
				break
			}
		}
		if d, ok := domain[b.Gang]; ok && d != path {
			t.Fatalf("%s: gang %s requires one %s but spans %s and %s", name, b.Gang, g.RequiredLevel, d, path)
		}
		domain[b.Gang] = path
	}
	for _, st := range diag.Pending {
		if bound[st.Gang] > 0 {
			t.Fatalf("%s: gang %s is reported pending (%s) but got %d binds", name, st.Gang, st.Message(), bound[st.Gang])
		}
	}
}

// BenchmarkCycle5000Nodes is the target: one cycle over 5,000 nodes
// of 8 GPUs, half of them partly used, with 20,000 pending pods in gangs of
// 1 to 16 members.
func BenchmarkCycle5000Nodes(b *testing.B) {
	benchCycle(b, Config{}, randomSnapshot(42, 5000, 20000, 16))
}

// BenchmarkCycle5000NodesTopology is BenchmarkCycle5000Nodes with zones and
// racks configured and one gang in five requiring one zone or one rack.
func BenchmarkCycle5000NodesTopology(b *testing.B) {
	s := randomSnapshot(42, 5000, 20000, 16)
	requireTopology(s, 42)
	benchCycle(b, Config{Topology: randomTopology}, s)
}

func benchCycle(b *testing.B, cfg Config, s *Snapshot) {
	sched, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var plan Plan
	var diag Diagnostics
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plan, diag = sched.RunCycle(s, 0)
	}
	b.StopTimer()
	b.ReportMetric(float64(len(plan.Binds)), "binds")
	b.ReportMetric(float64(len(diag.Pending)), "pending-gangs")
	b.ReportMetric(float64(len(s.Gangs)), "gangs")
}

func TestMulDivDoesNotOverflow(t *testing.T) {
	const petabytes = int64(5) << 50
	if got, want := mulDiv(petabytes, 30000, 40000), petabytes/4*3; got != want {
		t.Errorf("mulDiv = %d, want %d", got, want)
	}
	if got := mulDiv(7, 1, 2); got != 3 {
		t.Errorf("mulDiv(7,1,2) = %d, want 3", got)
	}
}

// addReleases gives the used nodes of s releases at various times (some
// unknown) and its gangs estimates (some unknown), so that reservations and
// backfill happen.
func addReleases(s *Snapshot, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 11))
	for i := range s.Nodes {
		if s.Nodes[i].Used.IsZero() {
			continue
		}
		at := int64(1000 + r.IntN(5000))
		if r.IntN(5) == 0 {
			at = 0
		}
		s.Releases = append(s.Releases, Release{Node: i, Amount: s.Nodes[i].Used, At: at})
	}
	for _, g := range s.Gangs {
		if r.IntN(3) > 0 {
			g.Estimate = int64(1 + r.IntN(6000))
		}
	}
}
