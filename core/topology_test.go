package core

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	zone = "topology.kubernetes.io/zone"
	rack = "phalanx.dev/rack"
)

func runTopology(t *testing.T, s *Snapshot, levels ...string) (Plan, Diagnostics) {
	t.Helper()
	sched, err := New(Config{Topology: levels})
	if err != nil {
		t.Fatal(err)
	}
	return sched.RunCycle(s, 0)
}

// inRack is an 8-GPU node in zone z, rack r.
func inRack(name, z, r string) *nodeBuilder {
	return MakeNode(name).GPUs(8).Label(zone, z).Label(rack, r)
}

func TestTopologyPreference(t *testing.T) {
	tests := []struct {
		name   string
		nodes  []*nodeBuilder
		levels []string
		gang   *gangBuilder
		want   []string // nodes the gang lands on
	}{
		{
			name: "one rack, the best-fitting one",
			// Racks interleaved in node order; rack a has 16 GPUs free, b 24:
			// the gang fits both and takes a, the tighter.
			nodes: []*nodeBuilder{inRack("b0", "z", "b"), inRack("a0", "z", "a"), inRack("b1", "z", "b"),
				inRack("a1", "z", "a"), inRack("b2", "z", "b")},
			levels: []string{zone, rack},
			gang:   MakeGang("g").Members(2, GPUs(8)),
			want:   []string{"a0", "a1"},
		},
		{
			name: "ties between racks go by name",
			nodes: []*nodeBuilder{inRack("d0", "z", "d"), inRack("c0", "z", "c"), inRack("d1", "z", "d"),
				inRack("c1", "z", "c")},
			levels: []string{rack},
			gang:   MakeGang("g").Members(2, GPUs(8)),
			want:   []string{"c0", "c1"},
		},
		{
			name: "no rack holds it: two racks of one zone",
			nodes: []*nodeBuilder{
				inRack("a0", "z1", "a"), inRack("a1", "z1", "a").UsedGPUs(8),
				inRack("x0", "z2", "x").UsedGPUs(4),
				inRack("b0", "z1", "b"), inRack("b1", "z1", "b").UsedGPUs(8),
				inRack("y0", "z2", "y").UsedGPUs(4),
			},
			levels: []string{zone, rack},
			gang:   MakeGang("g").Members(2, GPUs(8)),
			want:   []string{"a0", "b0"},
		},
		{
			name: "no zone holds it: the whole cluster",
			nodes: []*nodeBuilder{
				inRack("a0", "z1", "a"), inRack("a1", "z1", "a").UsedGPUs(8),
				inRack("b0", "z2", "b"), inRack("b1", "z2", "b").UsedGPUs(8),
			},
			levels: []string{zone, rack},
			gang:   MakeGang("g").Members(2, GPUs(8)),
			want:   []string{"a0", "b0"},
		},
		{
			name:   "a gang that fits one node stays on one node",
			nodes:  []*nodeBuilder{inRack("a0", "z", "a").UsedGPUs(2), inRack("b0", "z", "b").UsedGPUs(4)},
			levels: []string{rack},
			gang:   MakeGang("g").Members(2, GPUs(2)),
			want:   []string{"b0"},
		},
		{
			name: "unlabelled nodes serve only the whole-cluster attempt",
			nodes: []*nodeBuilder{MakeNode("bare0").GPUs(8), inRack("a0", "z", "a"), MakeNode("bare1").GPUs(8),
				inRack("b0", "z", "b")},
			levels: []string{rack},
			gang:   MakeGang("g").Members(3, GPUs(8)),
			want:   []string{"b0", "bare0", "bare1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MakeSnapshot().Nodes(tt.nodes...).Gangs(tt.gang).Obj()
			plan, diag := runTopology(t, s, tt.levels...)
			if diff := cmp.Diff(tt.want, nodesOf(plan)["g"]); diff != "" {
				t.Errorf("nodes (-want +got):\n%s\npending: %v", diff, pendingOf(diag))
			}
		})
	}
}

// Without a topology the same cluster spreads the gang over two racks: the
// preference is what keeps it in one.
func TestTopologyOffSpreads(t *testing.T) {
	s := MakeSnapshot().Nodes(inRack("b0", "z", "b"), inRack("a0", "z", "a"), inRack("b1", "z", "b"),
		inRack("a1", "z", "a"), inRack("b2", "z", "b")).Gangs(MakeGang("g").Members(2, GPUs(8))).Obj()
	plan, _ := run(t, s, FairShare)
	if diff := cmp.Diff([]string{"b0", "b2"}, nodesOf(plan)["g"]); diff != "" {
		t.Errorf("nodes without topology (-want +got):\n%s", diff)
	}
}

func TestTopologyRequired(t *testing.T) {
	tests := []struct {
		name    string
		nodes   []*nodeBuilder
		gang    *gangBuilder
		want    []string
		pending map[string]pendingView
	}{
		{
			name:  "no rack has enough free",
			nodes: []*nodeBuilder{inRack("a0", "z", "a"), inRack("b0", "z", "b")},
			gang:  MakeGang("g").Members(2, GPUs(8)).Required(rack),
			pending: map[string]pendingView{"g": {ReasonUnschedulable,
				"no single phalanx.dev/rack can hold the gang: 16 nvidia.com/gpu needed, at most 8 free in one"}},
		},
		{
			name: "a rack has enough free in total but not per node",
			nodes: []*nodeBuilder{inRack("a0", "z", "a").UsedGPUs(4), inRack("a1", "z", "a").UsedGPUs(4),
				inRack("a2", "z", "a").UsedGPUs(4), inRack("a3", "z", "a").UsedGPUs(4), inRack("b0", "z", "b")},
			gang: MakeGang("g").Members(2, GPUs(8)).Required(rack),
			pending: map[string]pendingView{"g": {ReasonUnschedulable,
				"no single phalanx.dev/rack can hold the gang: those with 16 nvidia.com/gpu free in total cannot fit every member"}},
		},
		{
			name:  "required zone, racks across it",
			nodes: []*nodeBuilder{inRack("a0", "z1", "a"), inRack("c0", "z2", "c"), inRack("b0", "z1", "b")},
			gang:  MakeGang("g").Members(2, GPUs(8)).Required(zone),
			want:  []string{"a0", "b0"},
		},
		{
			name:  "one member, but not on a node outside every rack",
			nodes: []*nodeBuilder{MakeNode("bare").GPUs(8).UsedGPUs(4), inRack("a0", "z", "a")},
			gang:  MakeGang("g").Members(1, GPUs(4)).Required(rack),
			want:  []string{"a0"},
		},
		{
			name:  "the cluster is short in total: say so",
			nodes: []*nodeBuilder{inRack("a0", "z", "a"), inRack("a1", "z", "a").UsedGPUs(4)},
			gang:  MakeGang("g").Members(2, GPUs(8)).Required(rack),
			pending: map[string]pendingView{"g": {ReasonUnschedulable,
				"no single phalanx.dev/rack can hold the gang: 16 nvidia.com/gpu needed, at most 12 free in one"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MakeSnapshot().Nodes(tt.nodes...).Gangs(tt.gang).Obj()
			plan, diag := runTopology(t, s, zone, rack)
			if diff := cmp.Diff(tt.want, nodesOf(plan)["g"]); diff != "" {
				t.Errorf("nodes (-want +got):\n%s\npending: %v", diff, pendingOf(diag))
			}
			if tt.pending == nil {
				tt.pending = map[string]pendingView{}
			}
			if diff := cmp.Diff(tt.pending, pendingOf(diag)); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
		})
	}
}

// A required gang that fails must not make an identical gang without the
// requirement fail too: the failed-shape memo tells them apart.
func TestTopologyMemoKeepsRequirementApart(t *testing.T) {
	s := MakeSnapshot().Nodes(inRack("a0", "z", "a"), inRack("b0", "z", "b")).Gangs(
		MakeGang("strict").Members(2, GPUs(8)).Required(rack).Arrival(0),
		MakeGang("loose").Members(2, GPUs(8)).Arrival(1),
	).Obj()
	plan, diag := runTopology(t, s, rack)
	if diff := cmp.Diff([]string{"loose"}, keys(placed(plan))); diff != "" {
		t.Errorf("placed (-want +got):\n%s\npending: %v", diff, pendingOf(diag))
	}
}

func TestTopologyInvalid(t *testing.T) {
	s := MakeSnapshot().Nodes(inRack("a0", "z", "a")).Gangs(MakeGang("g").Members(1, GPUs(1)).Required(zone)).Obj()
	_, diag := runTopology(t, s, rack)
	want := map[string]pendingView{"g": {ReasonInvalid,
		"the gang requires one topology.kubernetes.io/zone, which is not a topology level of the scheduler (phalanx.dev/rack)"}}
	if diff := cmp.Diff(want, pendingOf(diag)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	_, diag = runTopology(t, s)
	want = map[string]pendingView{"g": {ReasonInvalid,
		"the gang requires one topology.kubernetes.io/zone, but the scheduler has no topology levels"}}
	if diff := cmp.Diff(want, pendingOf(diag)); diff != "" {
		t.Errorf("pending without topology (-want +got):\n%s", diff)
	}
}

func TestTopologyConfig(t *testing.T) {
	for _, tt := range []struct {
		levels []string
		err    string
	}{
		{[]string{zone, ""}, "core: topology level 1 is an empty label key"},
		{[]string{rack, zone, rack}, `core: topology label "phalanx.dev/rack" is given twice (levels 0 and 2)`},
	} {
		_, err := New(Config{Topology: tt.levels})
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("New(%v) = %v, want %q", tt.levels, err, tt.err)
		}
	}
}
