package core

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
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
	preempting := 0 // plans with evictions or holds, which checkPreemption checks
	defer func() {
		if preempting == 0 && !t.Failed() {
			t.Errorf("no plan evicted or held anything: checkPreemption checked nothing")
		}
	}()
	for seed := uint64(1); seed <= 40; seed++ {
		for _, cfg := range []Config{{Ordering: FairShare}, {Ordering: StrictFIFO},
			{Ordering: FairShare, Topology: randomTopology}, {Ordering: StrictFIFO, Topology: randomTopology},
			{Ordering: FairShare, ReserveAfter: 1}, {Ordering: FairShare, Preemption: true}, {Ordering: FairShare, Spread: true}, {Ordering: FairShare, Pack: true},
			{Ordering: FairShare, Preemption: true, ReserveAfter: 1, Topology: randomTopology},
			{Ordering: FairShare, ReserveAfter: 1, Reservations: 3, ShortestFirst: true},
			{Ordering: FairShare, Preemption: true, ReserveAfter: 1, Reservations: 2, ShortestFirst: true}} {
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
			if cfg.Preemption {
				addRunning(s, seed)
				o += 8
			}
			sched, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			run := func(*testing.T, *Snapshot, Ordering) (Plan, Diagnostics) { return sched.RunCycle(s, 1000) }
			plan, diag := run(t, s, o)
			checkPlan(t, fmt.Sprintf("seed %d ordering %d", seed, o), s, plan, diag)
			checkPreemption(t, fmt.Sprintf("seed %d ordering %d", seed, o), s, plan, diag)
			if len(plan.Evictions) > 0 || len(plan.Holds) > 0 {
				preempting++
			}
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
	benchCycle(b, Config{}, randomSnapshot(42, 5000, 20000, 16), 0)
}

// BenchmarkCycle5000NodesTopology is BenchmarkCycle5000Nodes with zones and
// racks configured and one gang in five requiring one zone or one rack.
func BenchmarkCycle5000NodesTopology(b *testing.B) {
	s := randomSnapshot(42, 5000, 20000, 16)
	requireTopology(s, 42)
	benchCycle(b, Config{Topology: randomTopology}, s, 0)
}

// BenchmarkCycle5000NodesPreemption adds running gangs of random priority
// and queue on the used nodes, and preemption.
func BenchmarkCycle5000NodesPreemption(b *testing.B) {
	s := randomSnapshot(42, 5000, 20000, 16)
	addRunning(s, 42)
	benchCycle(b, Config{Preemption: true}, s, 0)
}

// BenchmarkCycle5000NodesReservations gives every gang an estimate and
// every used node a release within a day, and runs a cycle a day after all
// arrived, shortest first, with two reservations.
func BenchmarkCycle5000NodesReservations(b *testing.B) {
	benchCycle(b, Config{ReserveAfter: 3600, Reservations: 2, ShortestFirst: true}, estimatedSnapshot(), 86400)
}

// BenchmarkCycle5000NodesReserveAhead is BenchmarkCycle5000NodesReservations
// with gangs due two days after they arrive and reserved up to two days
// ahead: every waiting gang is a candidate, none is due yet, and each
// reservation starts at its gang's due time.
func BenchmarkCycle5000NodesReserveAhead(b *testing.B) {
	benchCycle(b, Config{ReserveAfter: 2 * 86400, ReserveAhead: 2 * 86400, Reservations: 2, ShortestFirst: true}, estimatedSnapshot(), 86400)
}

// BenchmarkCycle5000NodesBacklog is BenchmarkCycle5000NodesReservations
// with the defaults' thresholds: a day, and nine tenths of the time the
// waiting work takes on what is free and what the running members free
// (backlog.wait over every release), reserved up to two days ahead of the
// backlog's part, for up to four gangs, in line by arrival moved back by
// their work by at most a day.
func BenchmarkCycle5000NodesBacklog(b *testing.B) {
	benchCycle(b, Config{ReserveAfter: 86400, ReserveAfterBacklog: true, ReserveAhead: 2 * 86400, Reservations: 4, ShortestFirst: true, ReserveByWork: 86400}, estimatedSnapshot(), 86400)
}

// BenchmarkCycle5000NodesOverrun is BenchmarkCycle5000NodesReservations
// half a day later: about half the running members are past their
// estimated ends, and the cycle expects each to run as long again.
func BenchmarkCycle5000NodesOverrun(b *testing.B) {
	benchCycle(b, Config{ReserveAfter: 3600, Reservations: 2, ShortestFirst: true}, estimatedSnapshot(), 86400+43200)
}

// BenchmarkCycle5000NodesEstimates is BenchmarkCycle5000NodesReservations
// with a threshold no gang has waited: no reservation, so the gangs of a
// whole node's GPUs or more (8) are tried before the queues' turns
// (wholenodes.go), and placement weighs when nodes come free (ends.go).
func BenchmarkCycle5000NodesEstimates(b *testing.B) {
	benchCycle(b, Config{ReserveAfter: 30 * 86400, ShortestFirst: true}, estimatedSnapshot(), 86400)
}

// estimatedSnapshot is randomSnapshot's 5,000 nodes and 20,000 pending pods
// with estimates: each gang's run time is up to a day, and what runs on a
// node frees within the day after 86400.
func estimatedSnapshot() *Snapshot {
	s := randomSnapshot(42, 5000, 20000, 16)
	r := rand.New(rand.NewPCG(42, 9))
	for _, g := range s.Gangs {
		g.Estimate = 60 + r.Int64N(86400)
	}
	for n := range s.Nodes {
		if u := s.Nodes[n].Used; !u.IsZero() {
			s.Releases = append(s.Releases, Release{Node: n, Amount: u, At: 86400 + r.Int64N(86400), Queue: "default"})
		}
	}
	return s
}

// BenchmarkCycle5000NodesPodConstraints is BenchmarkCycle5000Nodes with the
// pods on the nodes listed (a few with anti-affinity of their own) and one
// gang in five (of two members or more) keeping one member per node by pod
// anti-affinity and spreading over zones with maxSkew 1.
func BenchmarkCycle5000NodesPodConstraints(b *testing.B) {
	s := randomSnapshot(42, 5000, 20000, 16)
	addPodConstraints(s, 42, 5)
	benchCycle(b, Config{}, s, 0)
}

// BenchmarkCycle5000NodesPodsListed lists the pods on the nodes, as the
// adapter does when some pod asks about them, but gives none any pod
// constraint: the cycle builds no pod index and costs what the plain one
// does.
func BenchmarkCycle5000NodesPodsListed(b *testing.B) {
	s := randomSnapshot(42, 5000, 20000, 16)
	addPodConstraints(s, 42, 0)
	benchCycle(b, Config{}, s, 0)
}

// addPodConstraints lists pods on the used nodes of s, gives every node its
// hostname label, and gives one gang in every (of two members or more)
// one member per node and spread over zones; with every 0, no pod has any
// pod constraint.
func addPodConstraints(s *Snapshot, seed uint64, every int) {
	r := rand.New(rand.NewPCG(seed, 13))
	avoid := &Constraints{PodAntiAffinity: []PodAffinityTerm{{Selector: &LabelSelector{
		MatchLabels: map[string]string{"app": "metrics"}}, TopologyKey: "kubernetes.io/hostname"}}}
	for n := range s.Nodes {
		labels := maps.Clone(s.Nodes[n].Labels)
		labels["kubernetes.io/hostname"] = s.Nodes[n].Name
		s.Nodes[n].Labels = labels
		for i := int64(0); i < s.Nodes[n].Used[Pods]; i++ {
			p := Pod{Node: n, Namespace: "ns", Labels: map[string]string{"job": fmt.Sprintf("run%d", r.IntN(2000))}}
			if r.IntN(20) == 0 && every > 0 {
				p.Labels["app"], p.Constraints = "metrics", avoid
			}
			s.Pods = append(s.Pods, p)
		}
	}
	for _, g := range s.Gangs {
		if every == 0 || len(g.Pending) < 2 || r.IntN(every) != 0 {
			continue
		}
		sel := &LabelSelector{MatchLabels: map[string]string{"job": g.ID}}
		c := &Constraints{
			PodAntiAffinity: []PodAffinityTerm{{Selector: sel, TopologyKey: "kubernetes.io/hostname"}},
			Spread:          []SpreadConstraint{{MaxSkew: 1, TopologyKey: zone, Selector: sel}},
		}
		if old := g.Pending[0].Constraints; old != nil {
			c.NodeSelector = old.NodeSelector
		}
		labels := map[string]string{"job": g.ID}
		for i := range g.Pending {
			g.Pending[i].Constraints, g.Pending[i].Namespace, g.Pending[i].Labels = c, "ns", labels
		}
	}
}

func benchCycle(b *testing.B, cfg Config, s *Snapshot, now int64) {
	sched, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var plan Plan
	var diag Diagnostics
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plan, diag = sched.RunCycle(s, now)
	}
	b.StopTimer()
	b.ReportMetric(float64(len(plan.Binds)), "binds")
	b.ReportMetric(float64(len(diag.Pending)), "pending-gangs")
	b.ReportMetric(float64(len(s.Gangs)), "gangs")
	if cfg.Preemption {
		b.ReportMetric(float64(len(plan.Evictions)), "evictions")
	}
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
		var queue string
		if len(s.Queues) > 0 {
			queue = s.Queues[r.IntN(len(s.Queues))].Name
		}
		s.Releases = append(s.Releases, Release{Node: i, Amount: s.Nodes[i].Used, At: at, Queue: queue})
	}
	for _, g := range s.Gangs {
		if r.IntN(3) > 0 {
			g.Estimate = int64(1 + r.IntN(6000))
		}
	}
}

// addRunning turns what randomSnapshot's nodes use into running gangs of one
// to three members, in random queues with random priorities, a few of them
// terminating, and adds holds.
func addRunning(s *Snapshot, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 13))
	queue := map[string]int{}
	for i, q := range s.Queues {
		queue[q.Name] = i
	}
	var cur *Running
	for i := range s.Nodes {
		used := s.Nodes[i].Used
		if used.IsZero() {
			continue
		}
		if cur == nil || len(cur.Members) == 3 || r.IntN(2) == 0 {
			q := s.Queues[r.IntN(len(s.Queues))].Name
			s.Running = append(s.Running, Running{Gang: fmt.Sprintf("run%04d", len(s.Running)), Queue: q, Priority: int32(r.IntN(3))})
			cur = &s.Running[len(s.Running)-1]
		}
		req := used
		req[Pods] = 0
		cur.Members = append(cur.Members, Placed{Name: fmt.Sprintf("%s-%d", cur.Gang, len(cur.Members)), Node: i,
			Request: req, Start: int64(r.IntN(1000)), Terminating: r.IntN(10) == 0})
		cur.MinMember = 1 + r.IntN(len(cur.Members))
		s.Queues[queue[cur.Queue]].Allocated = s.Queues[queue[cur.Queue]].Allocated.Add(withPod(req))
	}
	// Holds for some gangs, several on the same nodes.
	for i, g := range s.Gangs {
		if i%7 == 0 {
			s.Holds = append(s.Holds, Hold{Gang: g.ID, Node: r.IntN(min(len(s.Nodes), 12)), Amount: Vector{Pods: 1, gpuDim: int64(1 + r.IntN(4))}})
		}
	}
}

// checkPreemption checks the evictions and holds of plan: victims are
// running, evictable members; no gang is left below its minimum; victims are
// of lower priority in the preemptor's queue, elastic members of equal
// priority, or of another queue (reclaim); and every preemptor's holds fit on
// its nodes once its victims and the terminating members are gone.
func checkPreemption(t *testing.T, name string, s *Snapshot, plan Plan, diag Diagnostics) {
	t.Helper()
	if len(plan.Evictions) == 0 && len(plan.Holds) == 0 {
		return
	}
	gangs := map[string]*Gang{}
	for _, g := range s.Gangs {
		gangs[g.ID] = g
	}
	running := map[string]*Running{}
	for i := range s.Running {
		running[s.Running[i].Gang] = &s.Running[i]
	}
	nodeIdx := map[string]int{}
	for i := range s.Nodes {
		nodeIdx[s.Nodes[i].Name] = i
	}
	free := make([]Vector, len(s.Nodes))
	for i := range s.Nodes {
		free[i] = s.Nodes[i].Allocatable.Sub(s.Nodes[i].Used)
	}
	for _, r := range s.Running {
		for _, m := range r.Members {
			if m.Terminating {
				free[m.Node] = free[m.Node].Add(withPod(m.Request))
			}
		}
	}
	evicted, by := map[string]int{}, map[string]string{}
	seen := map[string]bool{}
	for _, e := range plan.Evictions {
		r, g := running[e.Gang], gangs[e.Preemptor]
		if r == nil || g == nil {
			t.Fatalf("%s: eviction %+v names an unknown gang", name, e)
		}
		i := slices.IndexFunc(r.Members, func(m Placed) bool { return m.Name == e.Member })
		if i < 0 || r.Members[i].Terminating || seen[e.Member] || s.Nodes[r.Members[i].Node].Name != e.Node {
			t.Fatalf("%s: eviction %+v is not of a running member on its node, or repeats", name, e)
		}
		seen[e.Member] = true
		evicted[e.Gang]++
		by[e.Gang] = e.Preemptor
		free[r.Members[i].Node] = free[r.Members[i].Node].Add(withPod(r.Members[i].Request))
		switch {
		case r.Queue != g.Queue:
			if !e.Reclaim {
				t.Fatalf("%s: eviction %+v crosses queues but is not a reclaim", name, e)
			}
		case r.Priority >= g.Priority:
			t.Fatalf("%s: %s (priority %d) preempts %s of priority %d", name, g.ID, g.Priority, e.Gang, r.Priority)
		}
		if e.PreemptorPriority != g.Priority || e.VictimPriority != r.Priority {
			t.Fatalf("%s: eviction %+v reports priorities %d over %d, not %d over %d", name, e,
				e.PreemptorPriority, e.VictimPriority, g.Priority, r.Priority)
		}
	}
	for id, n := range evicted {
		r := running[id]
		alive := 0
		for _, m := range r.Members {
			if !m.Terminating {
				alive++
			}
		}
		if n < alive && alive-n < r.MinMember {
			t.Fatalf("%s: gang %s left with %d of minMember %d", name, id, alive-n, r.MinMember)
		}
		if g := gangs[by[id]]; n == alive && r.Queue == g.Queue && r.Priority == g.Priority {
			t.Fatalf("%s: %s evicts the whole of %s, of equal priority", name, g.ID, id)
		}
	}
	for _, b := range plan.Binds {
		g := gangs[b.Gang]
		for _, m := range g.Pending {
			if m.Name == b.Member {
				free[nodeIdx[b.Node]] = free[nodeIdx[b.Node]].Sub(podRequest(&m))
			}
		}
	}
	status := map[string]GangStatus{}
	for _, st := range diag.Pending {
		status[st.Gang] = st
	}
	for _, h := range plan.Holds {
		if st := status[h.Gang]; st.Reason != ReasonPreempting {
			t.Fatalf("%s: hold for %s, whose status is %v", name, h.Gang, st.Reason)
		}
		free[h.Node] = free[h.Node].Sub(h.Amount)
		if !(Vector{}).Fits(free[h.Node]) {
			t.Fatalf("%s: holds on %s exceed what is free once the victims are gone: %v", name, s.Nodes[h.Node].Name, free[h.Node])
		}
	}
}
