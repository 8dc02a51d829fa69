package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/report"
)

// tableRow returns the cells of the metrics table row labelled label in
// out (columns are at least 3 spaces apart, words one), nil if none.
func tableRow(out, label string) []string {
	for _, l := range strings.Split(out, "\n") {
		if c := regexp.MustCompile(` {3,}`).Split(strings.TrimSpace(l), -1); c[0] == label {
			return c[1:]
		}
	}
	return nil
}

// TestBuiltinDeadlock: the default run shows the deadlock of two gangs
// racing for the same GPUs: pod by pod neither job completes and 8 GPUs are
// held idle for ever, which the table says rather than "none"; every gang
// policy completes both.
func TestBuiltinDeadlock(t *testing.T) {
	code, stdout, stderr := runArgs(t, "simulate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	section := between(stdout, "Scenario deadlock", "simulated in")
	if section == "" {
		t.Fatalf("no deadlock scenario in the default run:\n%s", stdout)
	}
	// Columns: phalanx, pod-by-pod, fifo-gang, volcano.
	want := map[string][]string{
		"  completed":                            {"2", "0", "2", "2"},
		"  stuck (fit the cluster, never ran)":   {"0", "2", "0", "0"},
		"job completion time, mean":              {"1h30m", "—", "1h30m", "1h30m"},
		"GPU time held idle by incomplete gangs": {"none", "8h+, 8 GPUs never freed", "none", "none"},
	}
	for label, cells := range want {
		got := tableRow(section, strings.TrimSpace(label))
		if strings.Join(got, "|") != strings.Join(cells, "|") {
			t.Errorf("row %q: %q, want %q", label, got, cells)
		}
	}
}

// Every output file is checked before the run: a bad path fails at once,
// with nothing on stdout.
func TestOutputsCheckedBeforeRun(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-folder", "jobs.csv")
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"jobs-out into a missing folder", []string{"simulate", "--jobs-out", missing}, 1, missing},
		{"jobs-out is a folder", []string{"simulate", "--jobs-out", dir}, 1, dir + " is a folder"},
		{"good plot, bad jobs-out", []string{"simulate", "--plot", filepath.Join(dir, "gpus.svg"), "--jobs-out", missing}, 1, missing},
		{"one file for both", []string{"simulate", "--plot", filepath.Join(dir, "out.svg"), "--jobs-out", filepath.Join(dir, ".", "out.svg")}, 2,
			"--plot and --jobs-out name the same file"},
		{"empty jobs-out", []string{"simulate", "--jobs-out", ""}, 2, "need a file name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runArgs(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %d bytes; want exit %d, %q in stderr, nothing on stdout", code, stderr, len(stdout), tt.code, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "gpus.svg")); err == nil {
		t.Errorf("the plot was written although --jobs-out was bad")
	}
}

// --output json echoes what was simulated: the input, the policies, every
// option as it applied, and each input's cluster.
func TestJSONEchoesInputs(t *testing.T) {
	dir := t.TempDir()
	scenario := writeFile(t, dir, "two.yaml", `
nodePools:
- {name: gpu, count: 3, resources: {cpu: "8", nvidia.com/gpu: 4}}
queues:
- {name: a, weight: 2}
- {name: b}
jobs:
- {name: j, queue: a, duration: 10m, tasks: [{role: w, replicas: 2, requests: {nvidia.com/gpu: 1}}]}
`)
	code, stdout, stderr := runArgs(t, "simulate", "--scenario", scenario, "--policy", "phalanx,volcano", "--reserve-after", "30m", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Source   string
		Policies []string
		Options  map[string]string
		Inputs   []struct {
			Input       string
			Nodes, Jobs int
			GPUs        int64
			Queues      []struct {
				Name   string
				Weight int64
			}
		}
		Results []map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if got.Source != "scenario "+scenario || strings.Join(got.Policies, ",") != "phalanx,volcano" {
		t.Errorf("source %q, policies %v", got.Source, got.Policies)
	}
	// Given on the command line, left to its default, and the output itself.
	for flag, want := range map[string]string{"reserve-after": "30m0s", "grace-period": "30s", "output": "json", "scenario": scenario} {
		if got.Options[flag] != want {
			t.Errorf("option %s = %q, want %q", flag, got.Options[flag], want)
		}
	}
	if len(got.Inputs) != 1 {
		t.Fatalf("%d inputs, want 1", len(got.Inputs))
	}
	in := got.Inputs[0]
	if in.Input != "two.yaml" || in.Nodes != 3 || in.GPUs != 12 || in.Jobs != 1 || len(in.Queues) != 2 || in.Queues[0].Weight != 2 {
		t.Errorf("input %+v, want two.yaml: 3 nodes, 12 GPUs, 1 job, queues a (weight 2) and b", in)
	}
	if len(got.Results) != 2 {
		t.Errorf("%d results, want 2", len(got.Results))
	}
}

// --jobs-out writes a record per job and policy; a job that never started
// has empty times.
func TestJobsOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.csv")
	code, stdout, stderr := runArgs(t, "simulate", "--jobs-out", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Per-job records: "+path) {
		t.Errorf("stdout does not say where the records are")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) == 0 || strings.Join(records[0], ",") != strings.Join(report.JobColumns, ",") {
		t.Fatalf("header %v, want %v", records[0], report.JobColumns)
	}
	// seed-tfjob 2 jobs, seed-ack 1, deadlock 2; 4 policies each.
	if n := len(records) - 1; n != 4*(2+1+2) {
		t.Errorf("%d records, want 20", n)
	}
	col := map[string]int{}
	for i, name := range records[0] {
		col[name] = i
	}
	find := func(input, policy, job string) []string {
		for _, r := range records[1:] {
			if r[col["input"]] == input && r[col["policy"]] == policy && r[col["job"]] == job {
				return r
			}
		}
		t.Fatalf("no record of %s under %s in %s", job, policy, input)
		return nil
	}
	// Under phalanx train-b waits for train-a (1 h) and runs 1 h.
	if r := find("deadlock", "phalanx", "train-b"); r[col["state"]] != "Completed" || r[col["start_s"]] != "3600" ||
		r[col["wait_s"]] != "3600" || r[col["jct_s"]] != "7200" || r[col["gpus"]] != "6" || r[col["gpu_s"]] != "21600" {
		t.Errorf("phalanx train-b: %v", r)
	}
	// Pod by pod it never starts: 4 of its 6 pods hold GPUs.
	if r := find("deadlock", "pod-by-pod", "train-b"); r[col["state"]] != "Stuck" || r[col["start_s"]] != "" ||
		r[col["wait_s"]] != "" || r[col["jct_s"]] != "" || r[col["placed"]] != "4" || r[col["reason"]] == "" {
		t.Errorf("pod-by-pod train-b: %v", r)
	}
}

func TestHelpNamesJobsOut(t *testing.T) {
	_, stdout, _ := runArgs(t, "help", "simulate")
	if !strings.Contains(stdout, "  --jobs-out FILE") {
		t.Errorf("help simulate does not document --jobs-out:\n%s", stdout)
	}
}

// volcano-binpack runs only when named, and then under its own name. Of two
// one-GPU jobs on two nodes of 8 GPUs, volcano puts one on each node, and
// volcano-binpack the second beside the first, so that the job of a whole
// node that follows starts at once.
func TestSimulateVolcanoBinpack(t *testing.T) {
	dir := t.TempDir()
	scenario := writeFile(t, dir, "pack.yaml", `
nodePools:
- {name: gpu, count: 2, resources: {cpu: "64", nvidia.com/gpu: 8}}
jobs:
- {name: a, duration: 10h, tasks: [{role: w, replicas: 1, requests: {nvidia.com/gpu: 1}}]}
- {name: b, submit: 10s, duration: 10h, tasks: [{role: w, replicas: 1, requests: {nvidia.com/gpu: 1}}]}
- {name: big, submit: 20s, duration: 1h, tasks: [{role: w, replicas: 1, requests: {nvidia.com/gpu: 8}}]}
`)
	code, stdout, stderr := runArgs(t, "simulate", "--scenario", scenario, "--policy", "volcano,volcano-binpack", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Results []struct {
			Policy  string
			MaxWait float64 `json:"max_wait_big_s"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	// big waits until a ends under volcano (10 h less its 20 s), not at all packed.
	want := []struct {
		policy string
		wait   float64
	}{{"volcano", 36000 - 20}, {"volcano-binpack", 0}}
	if len(got.Results) != len(want) {
		t.Fatalf("%d results, want %d:\n%s", len(got.Results), len(want), stdout)
	}
	for i, w := range want {
		if r := got.Results[i]; r.Policy != w.policy || r.MaxWait != w.wait {
			t.Errorf("result %d: %s, longest wait of 8+ GPU jobs %v s; want %s, %v s", i, r.Policy, r.MaxWait, w.policy, w.wait)
		}
	}
	if _, stdout, _ := runArgs(t, "simulate", "--scenario", scenario); strings.Contains(stdout, "volcano-binpack") {
		t.Errorf("volcano-binpack ran though not named:\n%s", stdout)
	}
}
