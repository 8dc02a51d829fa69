package sim

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/workload"
)

// TestPhillySlice runs the first 3,000 jobs of the real Philly trace on a
// small cluster (16 nodes x 8 GPUs, busy enough for jobs to queue) under
// every policy and checks what must hold whatever the numbers: every job is
// accounted for, the gang policies never strand a job nor hold GPUs for an
// incomplete gang, figures are in range, and a second run is identical.
func TestPhillySlice(t *testing.T) {
	if testing.Short() {
		t.Skip("long, and single-threaded: run by `make unit`, skipped by the -short race pass")
	}
	if _, err := os.Stat(phillyTrace); err != nil {
		t.Fatalf("the Philly trace is expected beside the repository (../shared/traces): %v", err)
	}
	w, err := workload.ReadTraceFile(phillyTrace, workload.TraceOptions{Nodes: 16, GPUsPerNode: 8, MaxJobs: 3000})
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range Policies {
		r, err := Run(w, policy, Options{})
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		m := r.Metrics
		if m.JobsTotal != 3000 || m.JobsCompleted+m.StuckJobs+m.UnschedulableJobs != m.JobsTotal {
			t.Errorf("%s: %d jobs, %d completed + %d stuck + %d unschedulable", policy, m.JobsTotal, m.JobsCompleted, m.StuckJobs, m.UnschedulableJobs)
		}
		if u := Value(m.GPUUtilization); !(u > 0 && u <= 1) {
			t.Errorf("%s: utilisation %v out of (0, 1]", policy, u)
		}
		if !(Value(m.P50JCT) <= Value(m.P99JCT) && Value(m.MeanWait) >= 0 && Value(m.P99Wait) >= Value(m.MeanWait)/100) {
			t.Errorf("%s: inconsistent times %+v", policy, m)
		}
		if policy != PolicyPodByPod {
			if m.StuckJobs != 0 || m.WastedGPUSeconds != 0 {
				t.Errorf("%s: %d stuck jobs and %.0f GPU-s held by incomplete gangs, want none", policy, m.StuckJobs, m.WastedGPUSeconds)
			}
		}
		again, err := Run(w, policy, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Errorf("%s: a second run differs:\n%s", policy, diff)
		}
	}
}
