package report

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/sim"
)

// One record per job and policy; a job that never started has no start,
// end, wait or completion time (empty cells, not 0), and its reason keeps
// its commas.
func TestWriteJobsCSV(t *testing.T) {
	c := Comparison{Workload: tinyWorkload(), Results: []*sim.Result{{
		Policy: "pod-by-pod",
		Jobs: []sim.JobOutcome{
			{ID: "a", Queue: "q1", GPUs: 2, Submit: 30, Start: 300, Finish: 900, Duration: 600, State: sim.JobCompleted,
				Placed: 3, Members: 3, GPUSeconds: 1800, Preemptions: 1, Reserved: 120,
				ForecastAt: 60, ForecastStart: 240, ForecastReserved: 180},
			{ID: "b", Queue: "q2", GPUs: 4, Submit: 60, Start: -1, Finish: -1, Duration: 100, State: sim.JobStuck,
				Placed: 2, Members: 4, Reason: "2/4 pods placed; 2 pending: no node has 1 nvidia.com/gpu, 4 cpu free", Reserved: -1,
				ForecastAt: 60, ForecastStart: -1, ForecastReserved: -1},
		},
	}}}
	var out bytes.Buffer
	if err := WriteJobsCSV(&out, []Comparison{c}); err != nil {
		t.Fatal(err)
	}
	got, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v", err)
	}
	want := [][]string{
		JobColumns,
		// wait 300 - 30, jct 900 - 30.
		{"tiny", "pod-by-pod", "a", "q1", "2", "3", "3", "30", "300", "900", "600", "Completed", "270", "870", "1", "1800", "", "120", "60", "240", "180"},
		{"tiny", "pod-by-pod", "b", "q2", "4", "4", "2", "60", "", "", "100", "Stuck", "", "", "0", "0",
			"2/4 pods placed; 2 pending: no node has 1 nvidia.com/gpu, 4 cpu free", "", "60", "", ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
}

// GPU time held idle: "none" only when nothing was held idle; GPUs never
// freed make the figure a lower bound, and the cell says so.
func TestHeldIdle(t *testing.T) {
	for _, tc := range []struct {
		wasted float64
		atEnd  int64
		want   string
	}{
		{0, 0, "none"},
		{270, 0, "4m30s"},
		{8 * 3600, 8, "8h+, 8 GPUs never freed"},
		{3600, 1, "1h+, 1 GPU never freed"},
	} {
		if got := heldIdle(&sim.Metrics{WastedGPUSeconds: tc.wasted, HeldIdleAtEnd: tc.atEnd}); got != tc.want {
			t.Errorf("%v GPU-s, %d GPUs at the end: %q, want %q", tc.wasted, tc.atEnd, got, tc.want)
		}
	}
}
