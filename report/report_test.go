package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gonum.org/v1/plot/plotter"

	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// tinyWorkload is job2 of the TFJob seed on 2 one-GPU nodes: a PS and two
// GPU workers.
func tinyWorkload() *workload.Workload {
	gpu := map[string]int64{workload.GPU: 1}
	return &workload.Workload{
		Name:   "tiny",
		Pools:  []workload.NodePool{{Name: "gpu", Count: 2, Allocatable: map[string]int64{"cpu": 4000, workload.GPU: 1}}},
		Queues: []workload.Queue{{Name: "default", Weight: 1}},
		Jobs: []workload.Job{{
			ID: "job2", Queue: "default", Submit: 30, Duration: 600, MinMember: 3,
			Tasks: []workload.Task{
				{Role: "ps", Replicas: 1, Requests: map[string]int64{"cpu": 1000}},
				{Role: "worker", Replicas: 2, Requests: gpu},
			},
		}},
	}
}

// tinyResults is what a gang policy and a pod-by-pod policy could return on
// tinyWorkload with one GPU taken until 300 s by something outside it.
func tinyResults() []*sim.Result {
	return []*sim.Result{
		{
			Policy: "phalanx",
			Metrics: sim.Metrics{JobsTotal: 1, JobsCompleted: 1, MeanJCT: fig(870), P50JCT: fig(870), P99JCT: fig(870),
				MeanWait: fig(270), P99Wait: fig(270), GPUUtilization: fig(0.5), Makespan: fig(870),
				FairnessMean: fig(1), FairnessWorst: fig(1), FairnessLeastServed: fig(1), FairnessWindow: 87},
			Jobs: []sim.JobOutcome{{ID: "job2", Queue: "default", GPUs: 2, Submit: 30, Start: 300, Finish: 900,
				State: sim.JobCompleted, Placed: 3, Members: 3}},
			GPUs:    []sim.Sample{{Time: 30}, {Time: 300, Running: 2, Held: 2}, {Time: 900}},
			Waiting: []sim.Waiting{{Time: 30, Jobs: 1}, {Time: 300, Jobs: 0}},
			Events: []sim.PodEvent{
				{Time: 300, Job: "job2", Pod: "job2-ps-0", Kind: "running", Node: "gpu-0"},
				{Time: 300, Job: "job2", Pod: "job2-worker-0", Kind: "running", Node: "gpu-0"},
				{Time: 300, Job: "job2", Pod: "job2-worker-1", Kind: "running", Node: "gpu-1"},
			},
		},
		{
			Policy: "pod-by-pod",
			Metrics: sim.Metrics{JobsTotal: 1, JobsCompleted: 1, MeanJCT: fig(870), P50JCT: fig(870), P99JCT: fig(870),
				MeanWait: fig(270), P99Wait: fig(270), GPUUtilization: fig(0.5), WastedGPUSeconds: 270, Makespan: fig(870),
				FairnessMean: fig(1), FairnessWorst: fig(1), FairnessLeastServed: fig(1), FairnessWindow: 87},
			Jobs: []sim.JobOutcome{{ID: "job2", Queue: "default", GPUs: 2, Submit: 30, Start: 300, Finish: 900,
				State: sim.JobCompleted, Placed: 3, Members: 3}},
			GPUs:    []sim.Sample{{Time: 30, Held: 1}, {Time: 300, Running: 2, Held: 2}, {Time: 900}},
			Waiting: []sim.Waiting{{Time: 30, Jobs: 1}, {Time: 300, Jobs: 0}},
			Events: []sim.PodEvent{
				{Time: 30, Job: "job2", Pod: "job2-ps-0", Kind: "bound", Node: "gpu-0"},
				{Time: 30, Job: "job2", Pod: "job2-worker-0", Kind: "bound", Node: "gpu-0"},
				{Time: 300, Job: "job2", Pod: "job2-worker-1", Kind: "bound", Node: "gpu-1"},
				{Time: 300, Job: "job2", Pod: "job2-ps-0", Kind: "running", Node: "gpu-0"},
				{Time: 300, Job: "job2", Pod: "job2-worker-0", Kind: "running", Node: "gpu-0"},
				{Time: 300, Job: "job2", Pod: "job2-worker-1", Kind: "running", Node: "gpu-1"},
			},
		},
	}
}

// fig returns a figure of value x.
func fig(x float64) *float64 { return &x }

func tinyComparison() Comparison {
	return Comparison{Workload: tinyWorkload(), Results: tinyResults()}
}

func TestWriteJSON(t *testing.T) {
	var out bytes.Buffer
	in := &Inputs{Source: "scenario tiny.yaml", Policies: []string{"phalanx", "pod-by-pod"}, Options: map[string]string{"reserve-after": "1h0m0s"}}
	if err := WriteJSON(&out, in, []Comparison{tinyComparison()}); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var got map[string]any
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("output is not a JSON object: %v\n%s", err, out.String())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Errorf("more than one JSON value on stdout (next token err %v)", err)
	}
	row := func(policy string, wasted float64) map[string]any {
		return map[string]any{
			"input": "tiny", "policy": policy,
			"jobs_total": 1.0, "jobs_completed": 1.0, "stuck_jobs": 0.0, "unschedulable_jobs": 0.0,
			"mean_jct_s": 870.0, "p50_jct_s": 870.0, "p99_jct_s": 870.0,
			"mean_wait_s": 270.0, "p99_wait_s": 270.0, "p99_wait_big_s": nil, "max_wait_big_s": nil,
			"gpu_utilization": 0.5, "gpu_utilization_arriving": nil, // one job: no time between arrivals
			"wasted_gpu_s": wasted, "held_idle_at_end_gpus": 0.0, "makespan_s": 870.0,
			"fairness_mean": 1.0, "fairness_worst": 1.0, "fairness_least_served": 1.0, "fairness_window_s": 87.0,
			"rack_locality": nil, "preempted_gangs": 0.0, "evicted_members": 0.0, "preemption_lost_gpu_s": 0.0,
			"member_failures": 0.0, "mean_replacement_wait_s": nil, "max_replacement_wait_s": nil,
		}
	}
	want := map[string]any{
		// The inputs echoed: what was asked, and the cluster each input
		// states (2 nodes of 1 GPU, one queue, one job).
		"source":   "scenario tiny.yaml",
		"policies": []any{"phalanx", "pod-by-pod"},
		"options":  map[string]any{"reserve-after": "1h0m0s"},
		"inputs": []any{map[string]any{
			"input": "tiny", "nodes": 2.0, "gpus": 2.0, "jobs": 1.0, "topology": []any{},
			"pools":  []any{map[string]any{"name": "gpu", "count": 2.0, "at_s": 0.0, "allocatable": map[string]any{"cpu": 4000.0, workload.GPU: 1.0}}},
			"queues": []any{map[string]any{"name": "default", "weight": 1.0}},
		}},
		"results": []any{row("phalanx", 0), row("pod-by-pod", 270)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestWriteJSONKeepsMetricsKeys(t *testing.T) {
	// Every key of sim.Metrics appears in each element, whatever fields are
	// added to it later.
	all, err := json.Marshal(sim.Metrics{})
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(all, &keys); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteJSON(&out, nil, []Comparison{tinyComparison()}); err != nil {
		t.Fatal(err)
	}
	var got struct{ Results []map[string]any }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Results) == 0 {
		t.Fatalf("no results in the JSON:\n%s", out.String())
	}
	for _, r := range got.Results {
		for k := range keys {
			if _, ok := r[k]; !ok {
				t.Errorf("result of %v lacks key %q", r["policy"], k)
			}
		}
	}
}

func TestPods(t *testing.T) {
	w, res := tinyWorkload(), tinyResults()
	tests := []struct {
		name   string
		result *sim.Result
		at     int64
		want   []PodRow
	}{{
		name: "gang waits whole", result: res[0], at: 30,
		want: []PodRow{
			{Name: "job2-ps-0", Job: "job2", Phase: Pending, Members: 3},
			{Name: "job2-worker-0", Job: "job2", Phase: Pending, GPUs: 1, Members: 3},
			{Name: "job2-worker-1", Job: "job2", Phase: Pending, GPUs: 1, Members: 3},
		},
	}, {
		name: "pod by pod binds part of the gang", result: res[1], at: 30,
		want: []PodRow{
			{Name: "job2-ps-0", Job: "job2", Phase: Idle, Node: "gpu-0", Bound: 2, Members: 3},
			{Name: "job2-worker-0", Job: "job2", Phase: Idle, Node: "gpu-0", GPUs: 1, Bound: 2, Members: 3},
			{Name: "job2-worker-1", Job: "job2", Phase: Pending, GPUs: 1, Bound: 2, Members: 3},
		},
	}, {
		name: "whole gang runs", result: res[1], at: 300,
		want: []PodRow{
			{Name: "job2-ps-0", Job: "job2", Phase: Running, Node: "gpu-0", Age: 270, Bound: 3, Members: 3},
			{Name: "job2-worker-0", Job: "job2", Phase: Running, Node: "gpu-0", GPUs: 1, Age: 270, Bound: 3, Members: 3},
			{Name: "job2-worker-1", Job: "job2", Phase: Running, Node: "gpu-1", GPUs: 1, Age: 270, Bound: 3, Members: 3},
		},
	}, {
		name: "not submitted yet", result: res[0], at: 10,
	}, {
		name: "completed", result: res[0], at: 900,
		want: []PodRow{
			{Name: "job2-ps-0", Job: "job2", Phase: Completed, Node: "gpu-0", Age: 870, Members: 3},
			{Name: "job2-worker-0", Job: "job2", Phase: Completed, Node: "gpu-0", GPUs: 1, Age: 870, Members: 3},
			{Name: "job2-worker-1", Job: "job2", Phase: Completed, Node: "gpu-1", GPUs: 1, Age: 870, Members: 3},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Pods(w, tt.result, tt.at)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Pods at %d (-want +got):\n%s", tt.at, diff)
			}
		})
	}
}

func TestTimelineShowsPartialGang(t *testing.T) {
	var got []string
	for _, s := range Timeline(tinyWorkload(), tinyResults()[1]) {
		got = append(got, Instant(s.At)+" "+s.Text)
	}
	want := []string{
		"30s job2 submitted (3 pods, 2 GPUs)",
		"30s job2: 2/3 pods bound, holding 1 GPU idle; the job cannot start",
		"5m job2 starts (3/3 pods bound)",
		"15m job2 completes",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}

func TestWriteStory(t *testing.T) {
	var out bytes.Buffer
	if err := WriteStory(&out, tinyComparison()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Pods at 30s, just after the submission of every job:",
		"phalanx: GPUs 0 running, 0 held idle, 2 free",
		"pod-by-pod: GPUs 0 running, 1 held idle, 1 free",
		"job2-worker-0   Running (idle: only 2/3 pods of job2 bound)",
		"GPU time held idle by incomplete gangs",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("story lacks %q:\n%s", want, out.String())
		}
	}
}

func TestWriteTable(t *testing.T) {
	var out bytes.Buffer
	if err := WriteTable(&out, tinyComparison()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if got := strings.Fields(lines[0]); !cmp.Equal(got, []string{"phalanx", "pod-by-pod"}) {
		t.Errorf("header = %q, want the policies", got)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		if label, cells, ok := strings.Cut(strings.TrimSpace(l), "   "); ok {
			rows[label] = strings.Fields(cells)
		}
	}
	for label, want := range map[string][]string{
		"job completion time, mean":              {"14m30s", "14m30s"},
		"GPU utilisation":                        {"50.0%", "50.0%"},
		"GPU time held idle by incomplete gangs": {"none", "4m30s"},
	} {
		if diff := cmp.Diff(want, rows[label]); diff != "" {
			t.Errorf("row %q (-want +got):\n%s\n%s", label, diff, out.String())
		}
	}
}

func TestDuration(t *testing.T) {
	for s, want := range map[float64]string{
		0: "0s", 45: "45s", 59.6: "1m", 600: "10m", 630: "10m30s", 3600: "1h", 11520: "3h12m",
		86399: "1d", 86400: "1d", 187200: "2d4h", -30: "-30s",
	} {
		if got := Duration(s); got != want {
			t.Errorf("Duration(%v) = %q, want %q", s, got, want)
		}
	}
}

func TestDownsampleKeepsPeaks(t *testing.T) {
	var samples []sim.Sample
	for i := int64(0); i < 10000; i++ {
		v := i % 7
		if i == 5003 {
			v = 1000 // a one-step spike must survive
		}
		samples = append(samples, sim.Sample{Time: i * 10, Running: v})
	}
	pts := Downsample(samples, func(s sim.Sample) int64 { return s.Running }, 100000, 100)
	if len(pts) > 102 {
		t.Errorf("%d points, want at most 102", len(pts))
	}
	peak := 0.0
	for i, p := range pts {
		peak = max(peak, p.Y)
		if i > 0 && p.X <= pts[i-1].X {
			t.Fatalf("x not increasing at %d: %v", i, pts[i-1:i+1])
		}
	}
	if peak != 1000 {
		t.Errorf("peak %v, want 1000", peak)
	}
	if last := pts[len(pts)-1]; last.X != 100000 {
		t.Errorf("series ends at %v, want 100000", last.X)
	}
}

func TestPlotSVG(t *testing.T) {
	var out bytes.Buffer
	if err := Plot(&out, "svg", []Comparison{tinyComparison(), tinyComparison()}); err != nil {
		t.Fatal(err)
	}
	if err := xmlWellFormed(out.Bytes()); err != nil {
		t.Errorf("SVG is not XML: %v", err)
	}
	// Two panels per comparison: GPUs in use, then jobs waiting.
	for _, title := range []string{"GPUs in use: tiny", "Jobs waiting (submitted, not started): tiny"} {
		if n := strings.Count(out.String(), title); n != 2 {
			t.Errorf("SVG has %d panels titled %q, want 2", n, title)
		}
	}
}

// The waiting series is a step function extended to the end of the axis.
func TestWaitingSeries(t *testing.T) {
	got := waitingSeries([]sim.Waiting{{Time: 30, Jobs: 1}, {Time: 60, Jobs: 3}, {Time: 300, Jobs: 0}}, 900)
	want := plotter.XYs{{X: 30, Y: 1}, {X: 60, Y: 3}, {X: 300, Y: 0}, {X: 900, Y: 0}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
}

func TestPlotFileRejectsExtension(t *testing.T) {
	err := PlotFile(t.TempDir()+"/plot.pdf", []Comparison{tinyComparison()})
	if err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("err = %v, want a message naming .svg and .png", err)
	}
}

// xmlWellFormed reads data to the end as XML.
func xmlWellFormed(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// The rack locality row appears only for workloads with racks.
func TestWriteTableRackRow(t *testing.T) {
	const label = "multi-node jobs within one rack"
	for _, racks := range []bool{false, true} {
		w := tinyWorkload()
		results := tinyResults()
		if racks {
			w.Topology = []string{workload.DefaultRackLabel}
			results[0].Metrics.RackLocality = fig(0.75)
		}
		var out bytes.Buffer
		if err := WriteTable(&out, Comparison{Workload: w, Results: results}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), label); got != racks {
			t.Errorf("racks %v: row shown = %v:\n%s", racks, got, out.String())
		}
		if racks && !strings.Contains(out.String(), "75") {
			t.Errorf("rack locality 0.75 not shown:\n%s", out.String())
		}
	}
}

// TestTableNoCompletedJob: figures over no sample (completion times when no
// job completed, waits when none started, the p99 wait of 8+ GPU jobs when
// there is none, fairness) print "—", never 0 s, which would read as the
// best column.
func TestTableNoCompletedJob(t *testing.T) {
	c := tinyComparison()
	m := &c.Results[1].Metrics
	m.JobsCompleted, m.MeanJCT, m.P50JCT, m.P99JCT = 0, nil, nil, nil
	m.MeanWait, m.P99Wait, m.FairnessMean, m.FairnessWorst, m.FairnessLeastServed = nil, nil, nil, nil, nil
	c.Results[0].Metrics.P99WaitBig, c.Results[0].Metrics.MaxWaitBig = fig(60), fig(90)
	var out bytes.Buffer
	if err := WriteTable(&out, c); err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"job completion time, mean", "job completion time, p50", "job completion time, p99",
		"wait before start, mean", "wait before start, p99", "wait before start, p99 of 8+ GPU jobs", "longest of 8+ GPU jobs",
		"fair share honoured per window, mean (worst); 1 = fair", "least-served queue's share of its due, mean"} {
		var cells []string
		for _, l := range strings.Split(out.String(), "\n") {
			// Columns are apart by at least 3 spaces, words by one.
			if c := regexp.MustCompile(` {3,}`).Split(strings.TrimSpace(l), -1); c[0] == label {
				cells = c[1:]
			}
		}
		if len(cells) != 2 || cells[0] == "—" || cells[1] != "—" {
			t.Errorf("row %q: %q; want a figure for the first policy and — for the other", label, cells)
		}
	}
}
