package core

import "testing"

// TestDeserved: what Deserved reports for queues sharing 8 GPUs by weight,
// one capped, one guaranteed, one with nothing to ask for.
func TestDeserved(t *testing.T) {
	const gpu = 3 // a dimension past cpu, memory and pods
	gpus := func(n int64) Vector { var v Vector; v[gpu] = n; return v }
	capped := Unbounded()
	capped[gpu] = 1
	snap := &Snapshot{
		Nodes: []Node{{Name: "a", Allocatable: gpus(4)}, {Name: "b", Allocatable: gpus(4)},
			{Name: "cordoned", Allocatable: gpus(4), Unschedulable: true}},
		Queues: []Queue{
			{Name: "light", Weight: 1, Capability: Unbounded()},
			{Name: "heavy", Weight: 3, Capability: Unbounded(), Allocated: gpus(2)},
			{Name: "capped", Weight: 4, Capability: capped},
			{Name: "idle", Weight: 4, Capability: Unbounded(), Guarantee: gpus(1)},
		},
		Gangs: []*Gang{
			{ID: "l", Queue: "light", MinMember: 1, Pending: []Member{{Name: "l-0", Request: gpus(8)}}},
			{ID: "h", Queue: "heavy", MinMember: 1, Pending: []Member{{Name: "h-0", Request: gpus(8)}}},
			{ID: "c", Queue: "capped", MinMember: 1, Pending: []Member{{Name: "c-0", Request: gpus(8)}}},
			{ID: "bad", Queue: "idle", MinMember: 1, Invalid: "broken", Pending: []Member{{Name: "bad-0", Request: gpus(8)}}},
			nil,
		},
	}
	got := Deserved(snap)
	// 8 schedulable GPUs. Round 1 by weights 1:3:4 gives light 1, heavy 3,
	// capped 1 (its cap; 4 was its due). Round 2 deals the 3 left 1:3:
	// light 0 (3/4 rounds down), heavy 2. Round 3 would give the last GPU
	// 1/4 and 3/4: both round down, and dealing stops there. idle asks for
	// nothing (its only gang is invalid) but is guaranteed 1.
	want := map[string]int64{"light": 1, "heavy": 5, "capped": 1, "idle": 1}
	for name, n := range want {
		if got[name][gpu] != n {
			t.Errorf("%s deserves %d GPUs, want %d (all: %v)", name, got[name][gpu], n, got)
		}
	}
	var dealt int64
	for name, v := range got {
		if name != "idle" {
			dealt += v[gpu]
		}
	}
	if dealt > 8 {
		t.Errorf("%d GPUs dealt out of 8", dealt)
	}
}
