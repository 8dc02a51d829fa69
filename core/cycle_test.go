package core

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func run(t *testing.T, s *Snapshot, o Ordering) (Plan, Diagnostics) {
	t.Helper()
	sched, err := New(Config{Ordering: o})
	if err != nil {
		t.Fatal(err)
	}
	return sched.RunCycle(s, 0)
}

// placed maps gang -> sorted "member@node" strings.
func placed(p Plan) map[string][]string {
	out := map[string][]string{}
	for _, b := range p.Binds {
		out[b.Gang] = append(out[b.Gang], b.Member+"@"+b.Node)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// nodesOf maps gang -> sorted distinct nodes.
func nodesOf(p Plan) map[string][]string {
	seen := map[string]map[string]bool{}
	for _, b := range p.Binds {
		if seen[b.Gang] == nil {
			seen[b.Gang] = map[string]bool{}
		}
		seen[b.Gang][b.Node] = true
	}
	out := map[string][]string{}
	for g, ns := range seen {
		for n := range ns {
			out[g] = append(out[g], n)
		}
		sort.Strings(out[g])
	}
	return out
}

type pendingView struct {
	Reason  Reason
	Message string
}

func pendingOf(d Diagnostics) map[string]pendingView {
	out := map[string]pendingView{}
	for _, s := range d.Pending {
		out[s.Gang] = pendingView{s.Reason, s.Message()}
	}
	return out
}

func oneGPUNode(b *nodeBuilder) *nodeBuilder { return b.GPUs(1).CPUs(4) }

// The first seed experiment: 4 nodes with 1 GPU each. job1 (1 PS + 3
// workers) takes all four GPUs' worth of workers; job2 (1 PS + 2 workers)
// must then wait whole instead of grabbing the last GPU.
func TestSeedTFJobsGangWaitsWhole(t *testing.T) {
	job := func(id string, workers int) *gangBuilder {
		return MakeGang(id).Task("ps", 1, req(CPUs(1)), nil).Task("worker", workers, req(GPUs(1)), nil)
	}
	s := MakeSnapshot().NodesN("gpu", 4, oneGPUNode).Gangs(job("job1", 3).Arrival(0), job("job2", 2).Arrival(1)).Obj()
	plan, diag := run(t, s, FairShare)

	if got := len(placed(plan)["job1"]); got != 4 {
		t.Errorf("job1 placed %d members, want 4", got)
	}
	if got := placed(plan)["job2"]; len(got) != 0 {
		t.Errorf("job2 placed %v, want nothing (all-or-nothing)", got)
	}
	want := map[string]pendingView{"job2": {ReasonUnschedulable, "2/3 members fit; short 1 nvidia.com/gpu"}}
	if diff := cmp.Diff(want, pendingOf(diag)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"job1"}, diag.Scheduled); diff != "" {
		t.Errorf("scheduled (-want +got):\n%s", diff)
	}
}

// ACK's experiment: 4 GPUs, 1 PS + 4 workers of 2 GPUs, minMember 5.
func TestSeedACKWaitsForCapacity(t *testing.T) {
	gang := MakeGang("tf-smoke-gpu").Task("ps", 1, req(CPUs(1)), nil).Task("worker", 4, req(GPUs(2)), nil).Min(5)
	s := MakeSnapshot().NodesN("gpu", 2, func(b *nodeBuilder) *nodeBuilder { return b.GPUs(2).CPUs(8) }).Gangs(gang).Obj()
	plan, diag := run(t, s, FairShare)
	if len(plan.Binds) != 0 {
		t.Fatalf("binds = %v, want none", plan.Binds)
	}
	want := map[string]pendingView{"tf-smoke-gpu": {ReasonExceedsCluster, "can never fit: the cluster has 4 nvidia.com/gpu, the gang needs 8 nvidia.com/gpu"}}
	if diff := cmp.Diff(want, pendingOf(diag)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}

	// Once 4 more GPUs join, all five are placed in one cycle.
	s.Nodes = append(s.Nodes, MakeNode("new-0").GPUs(2).CPUs(8).Obj(), MakeNode("new-1").GPUs(2).CPUs(8).Obj())
	plan, diag = run(t, s, FairShare)
	if got := len(plan.Binds); got != 5 {
		t.Errorf("after the pool joined: %d binds, want 5 (pending: %v)", got, pendingOf(diag))
	}
}

func TestGPUPacking(t *testing.T) {
	eight := func(b *nodeBuilder) *nodeBuilder { return b.GPUs(8) }
	tests := []struct {
		name  string
		nodes []*nodeBuilder
		gang  *gangBuilder
		want  []string // nodes the gang lands on
	}{
		{
			name:  "small gang fills the partly used node",
			nodes: []*nodeBuilder{eight(MakeNode("empty")), eight(MakeNode("half")).UsedGPUs(5)},
			gang:  MakeGang("g").Members(1, GPUs(2)),
			want:  []string{"half"},
		},
		{
			name:  "tightest node that holds the whole gang",
			nodes: []*nodeBuilder{eight(MakeNode("free2")).UsedGPUs(6), eight(MakeNode("free5")).UsedGPUs(3), eight(MakeNode("free8"))},
			gang:  MakeGang("g").Members(4, GPUs(1)),
			want:  []string{"free5"},
		},
		{
			name:  "gang bigger than a node takes whole nodes",
			nodes: []*nodeBuilder{eight(MakeNode("a")).UsedGPUs(1), eight(MakeNode("b")), eight(MakeNode("c")), eight(MakeNode("d")).UsedGPUs(4)},
			gang:  MakeGang("g").Members(2, GPUs(8)),
			want:  []string{"b", "c"},
		},
		{
			name:  "cpu-only member stays off free GPUs",
			nodes: []*nodeBuilder{eight(MakeNode("gpu")), MakeNode("cpu")},
			gang:  MakeGang("g").Members(1, CPUs(2)),
			want:  []string{"cpu"},
		},
		{
			name:  "ps joins its workers' node",
			nodes: []*nodeBuilder{eight(MakeNode("a")), eight(MakeNode("b")).UsedGPUs(4), MakeNode("cpu")},
			gang:  MakeGang("g").Task("ps", 1, req(CPUs(1)), nil).Task("worker", 2, req(GPUs(2)), nil),
			want:  []string{"b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MakeSnapshot().Nodes(tt.nodes...).Gangs(tt.gang).Obj()
			plan, diag := run(t, s, FairShare)
			if diff := cmp.Diff(tt.want, nodesOf(plan)["g"]); diff != "" {
				t.Errorf("nodes (-want +got):\n%s\npending: %v", diff, pendingOf(diag))
			}
		})
	}
}

func TestNodeFilters(t *testing.T) {
	ml := &Constraints{
		NodeSelector: map[string]string{"pool": "ml"},
		Tolerations:  []Toleration{{Key: "dedicated", Operator: TolerationEqual, Value: "ml", Effect: NoSchedule}},
	}
	zoneB := &Constraints{Affinity: []NodeSelectorTerm{{MatchExpressions: []Requirement{{Key: "zone", Operator: SelectorIn, Values: []string{"b"}}}}}}
	s := MakeSnapshot().Nodes(
		MakeNode("plain").GPUs(8).Label("zone", "a"),
		MakeNode("tainted").GPUs(8).Label("pool", "ml").Label("zone", "a").Taint("dedicated", "ml", NoSchedule),
		MakeNode("cordoned").GPUs(8).Label("pool", "ml").Label("zone", "b").Cordoned(),
		MakeNode("zone-b").GPUs(8).Label("zone", "b"),
	).Gangs(
		MakeGang("ml").Task("w", 1, req(GPUs(1)), ml),
		MakeGang("zb").Task("w", 1, req(GPUs(1)), zoneB),
		MakeGang("nowhere").Task("w", 1, req(GPUs(1)), &Constraints{NodeSelector: map[string]string{"pool": "none"}}),
		MakeGang("untolerated").Task("w", 1, req(GPUs(1)), &Constraints{NodeSelector: map[string]string{"pool": "ml"}}),
	).Obj()
	plan, diag := run(t, s, FairShare)
	want := map[string][]string{"ml": {"tainted"}, "zb": {"zone-b"}}
	if diff := cmp.Diff(want, nodesOf(plan)); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	wantPending := map[string]pendingView{
		"nowhere":     {ReasonUnschedulable, "0/1 members fit; a member needing 1 nvidia.com/gpu: 0/4 nodes fit (1 unschedulable (cordoned), 1 untolerated taint, 2 nodeSelector mismatch)"},
		"untolerated": {ReasonUnschedulable, "0/1 members fit; a member needing 1 nvidia.com/gpu: 0/4 nodes fit (1 unschedulable (cordoned), 1 untolerated taint, 2 nodeSelector mismatch)"},
	}
	if diff := cmp.Diff(wantPending, pendingOf(diag)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
}

func TestFilterSemantics(t *testing.T) {
	node := MakeNode("n").Label("zone", "a").Label("gen", "5").Taint("gpu", "", NoExecute).Taint("soft", "x", PreferNoSchedule).Obj()
	expr := func(op SelectorOperator, key string, vals ...string) *Constraints {
		return &Constraints{
			Tolerations: []Toleration{{Key: "gpu", Operator: TolerationExists}},
			Affinity:    []NodeSelectorTerm{{MatchExpressions: []Requirement{{Key: key, Operator: op, Values: vals}}}},
		}
	}
	tests := []struct {
		name string
		c    *Constraints
		want bool
	}{
		{"no constraints, NoExecute taint", nil, false},
		{"exists toleration with empty key tolerates all", &Constraints{Tolerations: []Toleration{{Operator: TolerationExists}}}, true},
		{"toleration for another effect", &Constraints{Tolerations: []Toleration{{Key: "gpu", Operator: TolerationExists, Effect: NoSchedule}}}, false},
		{"In matches", expr(SelectorIn, "zone", "a", "b"), true},
		{"In misses", expr(SelectorIn, "zone", "c"), false},
		{"NotIn on a missing label", expr(SelectorNotIn, "rack", "r1"), true},
		{"Exists", expr(SelectorExists, "zone"), true},
		{"DoesNotExist", expr(SelectorDoesNotExist, "zone"), false},
		{"Gt", expr(SelectorGt, "gen", "4"), true},
		{"Lt", expr(SelectorLt, "gen", "4"), false},
		{"Gt with a non-integer", expr(SelectorGt, "zone", "4"), false},
		{"empty term matches nothing", &Constraints{Tolerations: []Toleration{{Operator: TolerationExists}}, Affinity: []NodeSelectorTerm{{}}}, false},
	}
	for _, tt := range tests {
		if got := Admits(&node, tt.c); got != tt.want {
			t.Errorf("%s: Admits = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestQueues(t *testing.T) {
	fourGPUs := func(b *nodeBuilder) *nodeBuilder { return b.GPUs(4) }
	t.Run("capability", func(t *testing.T) {
		s := MakeSnapshot().NodesN("n", 2, fourGPUs).
			Queues(MakeQueue("research").CapGPUs(4).AllocatedGPUs(2)).
			Gangs(MakeGang("big").Queue("research").Members(1, GPUs(4)), MakeGang("small").Queue("research").Members(1, GPUs(2)).Arrival(1)).Obj()
		plan, diag := run(t, s, FairShare)
		if diff := cmp.Diff([]string{"small"}, keys(placed(plan))); diff != "" {
			t.Errorf("placed (-want +got):\n%s", diff)
		}
		want := map[string]pendingView{"big": {ReasonQueueAtCapability,
			"queue research is at its capability: the gang needs 4 nvidia.com/gpu, the queue holds 2 of its 4"}}
		if diff := cmp.Diff(want, pendingOf(diag)); diff != "" {
			t.Errorf("pending (-want +got):\n%s", diff)
		}
	})
	t.Run("least served queue first", func(t *testing.T) {
		// One free GPU; queue a already holds 3, queue b nothing; a's gang
		// arrived first but b is further below its share.
		s := MakeSnapshot().Nodes(MakeNode("n").GPUs(4).UsedGPUs(3)).
			Queues(MakeQueue("a").AllocatedGPUs(3), MakeQueue("b")).
			Gangs(MakeGang("a1").Queue("a").Members(1, GPUs(1)).Arrival(0), MakeGang("b1").Queue("b").Members(1, GPUs(1)).Arrival(5)).Obj()
		plan, _ := run(t, s, FairShare)
		if diff := cmp.Diff([]string{"b1"}, keys(placed(plan))); diff != "" {
			t.Errorf("placed (-want +got):\n%s", diff)
		}
	})
	t.Run("weights", func(t *testing.T) {
		// 8 GPUs, weights 3:1, both queues want everything: a deserves 6,
		// b 2. a holds 5 (5/6), b holds 1 (1/2): b is served first.
		s := MakeSnapshot().Nodes(MakeNode("n").GPUs(8).UsedGPUs(6)).
			Queues(MakeQueue("a").Weight(3).AllocatedGPUs(5), MakeQueue("b").AllocatedGPUs(1)).
			Gangs(MakeGang("a1").Queue("a").Members(8, GPUs(1)).Min(1), MakeGang("b1").Queue("b").Members(8, GPUs(1)).Min(1).Arrival(1)).Obj()
		plan, diag := run(t, s, FairShare)
		if got := diag.Scheduled; !cmp.Equal(got, []string{"b1", "a1"}) {
			t.Errorf("scheduled order = %v, want [b1 a1]", got)
		}
		if n := len(plan.Binds); n != 2 {
			t.Errorf("%d binds, want 2", n)
		}
	})
	t.Run("priority within a queue", func(t *testing.T) {
		s := MakeSnapshot().Nodes(MakeNode("n").GPUs(1)).
			Gangs(MakeGang("low").Members(1, GPUs(1)).Arrival(0), MakeGang("high").Members(1, GPUs(1)).Priority(10).Arrival(9)).Obj()
		plan, _ := run(t, s, FairShare)
		if diff := cmp.Diff([]string{"high"}, keys(placed(plan))); diff != "" {
			t.Errorf("placed (-want +got):\n%s", diff)
		}
	})
	t.Run("closed and missing queues", func(t *testing.T) {
		s := MakeSnapshot().Nodes(MakeNode("n").GPUs(4)).Queues(MakeQueue("shut").Closed()).
			Gangs(MakeGang("a").Queue("shut").Members(1, GPUs(1)), MakeGang("b").Queue("ghost").Members(1, GPUs(1))).Obj()
		_, diag := run(t, s, FairShare)
		want := map[string]pendingView{
			"a": {ReasonQueueClosed, "queue shut is closed"},
			"b": {ReasonQueueNotFound, `queue "ghost" does not exist`},
		}
		if diff := cmp.Diff(want, pendingOf(diag)); diff != "" {
			t.Errorf("pending (-want +got):\n%s", diff)
		}
	})
}

func TestBadGangs(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("n").GPUs(8)).Gangs(
		MakeGang("zero").Members(2, GPUs(1)).Min(-1),
		MakeGang("short").Members(3, GPUs(1)).Min(5),
		MakeGang("bad").Members(1, GPUs(1)).Invalid(`annotation min-available "x" is not an integer`),
		MakeGang("neg").Task("w", 1, Vector{CPU: -5}, nil),
		MakeGang("fine").Members(2, GPUs(1)).Arrival(9),
	).Obj()
	plan, diag := run(t, s, FairShare)
	if diff := cmp.Diff([]string{"fine"}, keys(placed(plan))); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
	want := map[string]pendingView{
		"zero":  {ReasonInvalid, "minMember is -1; it must be at least 1"},
		"short": {ReasonNotEnoughMembers, "3 of 5 members exist (minMember 5); waiting for 2 more"},
		"bad":   {ReasonInvalid, `annotation min-available "x" is not an integer`},
		"neg":   {ReasonInvalid, "member neg-w-0 requests a negative amount of resource #0"},
	}
	if diff := cmp.Diff(want, pendingOf(diag)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
}

func TestElastic(t *testing.T) {
	// 3 GPUs: a needs 1 of its 3 members, b needs 2 of 2. Both minimums are
	// met before a's extras get what is left, which is nothing.
	s := MakeSnapshot().Nodes(MakeNode("n").GPUs(3)).
		Gangs(MakeGang("a").Members(3, GPUs(1)).Min(1).Arrival(0), MakeGang("b").Members(2, GPUs(1)).Arrival(1)).Obj()
	plan, diag := run(t, s, FairShare)
	got := map[string]int{}
	for _, b := range plan.Binds {
		got[b.Gang]++
	}
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 2}, got); diff != "" {
		t.Errorf("binds per gang (-want +got):\n%s\npending %v", diff, pendingOf(diag))
	}

	// A running gang (Bound == MinMember) with pending extras gets them when
	// there is room, and is not reported as pending.
	s = MakeSnapshot().Nodes(MakeNode("n").GPUs(4).UsedGPUs(2)).Gangs(MakeGang("r").Bound(2).Min(2).Members(3, GPUs(1))).Obj()
	plan, diag = run(t, s, FairShare)
	if len(plan.Binds) != 2 || len(diag.Pending) != 0 {
		t.Errorf("binds %v pending %v, want 2 binds and nothing pending", plan.Binds, pendingOf(diag))
	}
}

func TestStrictFIFOBlocks(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("n").GPUs(4)).Gangs(
		MakeGang("small1").Members(1, GPUs(1)).Arrival(0),
		MakeGang("big").Members(4, GPUs(1)).Arrival(1),
		MakeGang("small2").Members(1, GPUs(1)).Arrival(2),
	).Obj()
	plan, diag := run(t, s, StrictFIFO)
	if diff := cmp.Diff([]string{"small1"}, keys(placed(plan))); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
	want := map[string]pendingView{
		"big":    {ReasonUnschedulable, "3/4 members fit; short 1 nvidia.com/gpu"},
		"small2": {ReasonBlocked, "waiting behind gang big, which does not fit (strict FIFO)"},
	}
	if diff := cmp.Diff(want, pendingOf(diag)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	// Fair share lets small2 pass the big gang.
	plan, _ = run(t, s, FairShare)
	if diff := cmp.Diff([]string{"small1", "small2"}, keys(placed(plan))); diff != "" {
		t.Errorf("fair share placed (-want +got):\n%s", diff)
	}
}

func TestRunCycleDoesNotModifySnapshot(t *testing.T) {
	s := MakeSnapshot().NodesN("n", 3, func(b *nodeBuilder) *nodeBuilder { return b.GPUs(2) }).
		Gangs(MakeGang("b").Members(3, GPUs(1)).Arrival(2), MakeGang("a").Members(5, GPUs(1)).Arrival(1)).Obj()
	before := cloneSnapshot(s)
	run(t, s, FairShare)
	if diff := cmp.Diff(before, s, cmp.AllowUnexported(Gang{}, gangSummary{}, gangSignature{}, shapeKey{})); diff != "" {
		t.Errorf("snapshot changed (-before +after):\n%s", diff)
	}
}

func cloneSnapshot(s *Snapshot) *Snapshot {
	c := *s
	c.Nodes = append([]Node(nil), s.Nodes...)
	c.Queues = append([]Queue(nil), s.Queues...)
	c.Gangs = nil
	for _, g := range s.Gangs {
		gg := *g
		gg.Pending = append([]Member(nil), g.Pending...)
		c.Gangs = append(c.Gangs, &gg)
	}
	return &c
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestMessageMentionsNodes(t *testing.T) {
	// Enough GPUs in total, but scattered: fragmentation, not shortage.
	s := MakeSnapshot().NodesN("n", 4, func(b *nodeBuilder) *nodeBuilder { return b.GPUs(4).UsedGPUs(2) }).
		Gangs(MakeGang("g").Members(1, GPUs(4))).Obj()
	_, diag := run(t, s, FairShare)
	msg := pendingOf(diag)["g"].Message
	if !strings.Contains(msg, "0/4 nodes fit (4 insufficient nvidia.com/gpu)") {
		t.Errorf("message %q does not explain fragmentation", msg)
	}
}

// Spread (the least-requested baseline) puts a member on the node with the
// most free GPUs, where best fit fills the fullest node that holds it.
func TestSpread(t *testing.T) {
	s := MakeSnapshot().Nodes(MakeNode("a").GPUs(8), MakeNode("b").GPUs(8).UsedGPUs(6)).
		Gangs(MakeGang("g").Members(2, GPUs(1))).Obj()
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{{Config{}, []string{"b"}}, {Config{Spread: true}, []string{"a"}}} {
		plan, _ := runAt(t, s, tc.cfg, 0)
		if diff := cmp.Diff(map[string][]string{"g": tc.want}, nodesOf(plan)); diff != "" {
			t.Errorf("spread %v (-want +got):\n%s", tc.cfg.Spread, diff)
		}
	}
}

// TestPartialGangsFirst: a gang left holding some members but not its
// minimum (a crash in the middle of binding it) is completed before any
// other gang, even one of higher priority or of a queue with a lower share.
func TestPartialGangsFirst(t *testing.T) {
	for _, cfg := range []Config{{}, {ShortestFirst: true}, {Preemption: true}, {ReserveAfter: 1}} {
		snap := MakeSnapshot().Nodes(MakeNode("a").GPUs(8).UsedGPUs(4), MakeNode("b").GPUs(8)).
			Queues(MakeQueue("q1"), MakeQueue("q2")).
			Gangs(
				MakeGang("big").Queue("q1").Members(6, GPUs(1)).Bound(4).Min(10).Arrival(10),
				MakeGang("urgent").Queue("q1").Members(8, GPUs(1)).Priority(100).Arrival(20),
				MakeGang("other").Queue("q2").Members(8, GPUs(1)).Arrival(5),
			).Obj()
		plan, diag := runAt(t, snap, cfg, 100)
		placed := map[string]int{}
		for _, b := range plan.Binds {
			placed[b.Gang]++
		}
		if diff := cmp.Diff(map[string]int{"big": 6}, placed); diff != "" {
			t.Errorf("%+v: members placed by gang (-want +got); 12 GPUs were free:\n%s", cfg, diff)
		}
		if st := pendingOf(diag)["urgent"]; st.Reason != ReasonUnschedulable {
			t.Errorf("%+v: urgent: %v", cfg, st)
		}
	}
}
