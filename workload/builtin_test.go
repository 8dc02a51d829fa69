package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBuiltin parses the embedded scenarios and checks that they state the
// seed experiments.
func TestBuiltin(t *testing.T) {
	ws := Builtin()
	if len(ws) != 3 {
		t.Fatalf("%d built-in scenarios, want 3", len(ws))
	}
	type job struct {
		ID                string
		Submit, Duration  int64
		MinMember, Member int
		GPUs              int64
	}
	type pool struct {
		Name      string
		Count     int
		At        int64
		GPUs, CPU int64
		Memory    int64
	}
	for _, tc := range []struct {
		name  string
		pools []pool
		jobs  []job
	}{
		{"seed-tfjob",
			[]pool{{"gpu", 4, 0, 1, 4000, 16 << 30}},
			[]job{{"job1", 0, 600, 4, 4, 3}, {"job2", 30, 600, 3, 3, 2}}},
		{"seed-ack",
			[]pool{{"gpu", 2, 0, 2, 8000, 32 << 30}, {"gpu-added", 2, 300, 2, 8000, 32 << 30}},
			[]job{{"tf-smoke-gpu", 0, 600, 5, 5, 8}}},
		// Two gangs of 6 GPUs submitted together on 8: only one fits.
		{"deadlock",
			[]pool{{"gpu", 2, 0, 4, 32000, 128 << 30}},
			[]job{{"train-a", 0, 3600, 6, 6, 6}, {"train-b", 0, 3600, 6, 6, 6}}},
	} {
		var w *Workload
		for _, x := range ws {
			if x.Name == tc.name {
				w = x
			}
		}
		if w == nil {
			t.Errorf("no built-in scenario %q", tc.name)
			continue
		}
		checkInvariants(t, w)
		if w.Description == "" {
			t.Errorf("%s: no description", tc.name)
		}
		var pools []pool
		for _, p := range w.Pools {
			a := p.Allocatable
			pools = append(pools, pool{p.Name, p.Count, p.At, a[GPU], a["cpu"], a["memory"]})
		}
		var jobs []job
		for _, j := range w.Jobs {
			jobs = append(jobs, job{j.ID, j.Submit, j.Duration, j.MinMember, j.Members(), j.Total(GPU)})
		}
		if d := cmp.Diff(tc.pools, pools); d != "" {
			t.Errorf("%s: pools (-want +got):\n%s", tc.name, d)
		}
		if d := cmp.Diff(tc.jobs, jobs); d != "" {
			t.Errorf("%s: jobs (-want +got):\n%s", tc.name, d)
		}
	}
	// Each call returns fresh workloads that callers may change.
	ws[0].Jobs[0].ID = "changed"
	if Builtin()[0].Jobs[0].ID == "changed" {
		t.Error("Builtin returns shared workloads")
	}
}
