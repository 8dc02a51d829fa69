package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/report"
	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// runArgs runs the command line args and returns its exit code and output.
func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no command", nil, "Usage:"},
		{"unknown command", []string{"simulat"}, `unknown command "simulat"`},
		{"help of unknown command", []string{"help", "bogus"}, `unknown command "bogus"`},
		{"unknown flag", []string{"simulate", "--bogus"}, "flag provided but not defined: -bogus"},
		{"bad number", []string{"simulate", "--trace", "x.csv", "--nodes", "many", "--gpus-per-node", "8"}, `invalid value "many" for flag -nodes: parse error (a whole number)`},
		{"duration without unit", []string{"simulate", "--reserve-after", "3600"}, `invalid value "3600" for flag -reserve-after: parse error (a duration with its unit, such as 90s, 30m or 24h)`},
		{"two inputs", []string{"simulate", "--trace", "x.csv", "--nodes", "1", "--gpus-per-node", "8", "--scenario", "y.yaml"}, "--trace and --scenario are exclusive"},
		{"trace without cluster", []string{"simulate", "--trace", "x.csv"}, "--trace needs --nodes and --gpus-per-node"},
		{"nodes without trace", []string{"simulate", "--nodes", "4"}, "--nodes applies only to --trace"},
		{"zero nodes", []string{"simulate", "--trace", "x.csv", "--nodes", "0", "--gpus-per-node", "8"}, "--nodes 0: give more than 0"},
		{"negative racks", []string{"simulate", "--trace", "x.csv", "--nodes", "4", "--gpus-per-node", "8", "--nodes-per-rack", "-1"}, "--nodes-per-rack -1: give 0 or more"},
		{"racks without trace", []string{"simulate", "--nodes-per-rack", "4"}, "--nodes-per-rack applies only to --trace"},
		{"unknown policy", []string{"simulate", "--policy", "phalanx,drf"}, `unknown policy "drf"; valid policies: phalanx, pod-by-pod, fifo-gang, volcano, volcano-binpack`},
		{"empty policy", []string{"simulate", "--policy", "phalanx,"}, "empty name"},
		{"policy twice", []string{"simulate", "--policy", "phalanx,phalanx"}, "listed twice"},
		{"bad output", []string{"simulate", "--output", "yaml"}, `unknown --output "yaml": want table or json`},
		{"bad plot extension", []string{"simulate", "--plot", filepath.Join(dir, "gpus.pdf")}, "must end in .svg or .png"},
		{"stray argument", []string{"simulate", "trace.csv"}, `unexpected argument "trace.csv"`},
		{"negative grace period", []string{"simulate", "--grace-period", "-1s"}, "--grace-period must not be negative"},
		{"fractional hold", []string{"simulate", "--hold-failed", "1500ms"}, "--hold-failed 1.5s: give whole seconds"},
		{"bad estimate error", []string{"simulate", "--estimate-error", "half"}, `--estimate-error: estimate error "half": want exact, x<factor>`},
		{"estimate factor out of range", []string{"simulate", "--estimate-error", "x0"}, "the factor must be a number from 0.001 to 1000"},
		{"estimate error from a time that is none", []string{"simulate", "--estimate-error", "x2,x0.5@soon"}, `--estimate-error: estimate error "x0.5@soon": "soon" is not a time such as 20d or 36h`},
		{"queue weights without trace", []string{"simulate", "--queue-weights", "gpu-hours"}, "--queue-weights applies only to --trace"},
		{"bad queue weight", []string{"simulate", "--trace", "x.csv", "--nodes", "1", "--gpus-per-node", "8", "--queue-weights", "a=0"}, `--queue-weights: weight of queue "a" is "0"`},
		{"bad preemption", []string{"simulate", "--preemption=maybe"}, `invalid boolean value "maybe" for -preemption`},
		{"no reservations", []string{"simulate", "--reservations", "0"}, "--reservations 0: give 1 to 64"},
		{"negative forecast period", []string{"simulate", "--forecast-every", "-1h"}, "--forecast-every -1h0m0s: give whole seconds, 0 or more"},
		{"fractional forecast period", []string{"simulate", "--forecast-every", "90.5s"}, "--forecast-every 1m30.5s: give whole seconds"},
		{"too many reservations", []string{"simulate", "--reservations", "65"}, "--reservations 65: give 1 to 64"},
		{"records over the trace", []string{"simulate", "--trace", "x.csv", "--nodes", "1", "--gpus-per-node", "8", "--jobs-out", "./x.csv"}, `--jobs-out "./x.csv" is the --trace file`},
		{"plot over the scenario", []string{"simulate", "--scenario", filepath.Join(dir, "s.svg"), "--plot", filepath.Join(dir, "s.svg")}, "is the --scenario file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runArgs(t, tt.args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout not empty:\n%s", stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "simulate"}, {"simulate", "-h"}} {
		code, stdout, stderr := runArgs(t, args...)
		if code != 0 || !strings.Contains(stdout, "simulate") || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and help on stdout", args, code, stdout, stderr)
		}
	}
	_, stdout, _ := runArgs(t, "help", "simulate")
	for _, flag := range []string{"--trace ", "--scenario ", "--nodes ", "--gpus-per-node ", "--max-jobs ", "--nodes-per-rack ", "--policy ", "--output ", "--plot ",
		"--queue-weights ", "--reserve-after ", "--estimate-error ", "--grace-period ", "--hold-failed ", "--forecast-every ", "--preemption\n"} {
		if !strings.Contains(stdout, "  "+flag) {
			t.Errorf("help simulate does not document %s:\n%s", flag, stdout)
		}
	}
}

func TestInputErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-scenario.yaml")
	badTrace := writeFile(t, dir, "bad.csv", "job_id,submit_time_s,duration_s,num_gpus,vc\nj1,0,10,1,a\nj2,ten,10,1,a\n")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"missing scenario", []string{"simulate", "--scenario", missing}, []string{missing}},
		{"missing trace", []string{"simulate", "--trace", missing, "--nodes", "2", "--gpus-per-node", "8"}, []string{missing}},
		{"bad trace row", []string{"simulate", "--trace", badTrace, "--nodes", "2", "--gpus-per-node", "8"}, []string{badTrace + ":3"}},
		// Checked before the run: nothing is printed.
		{"plot into a missing folder", []string{"simulate", "--plot", filepath.Join(dir, "no-such-folder", "gpus.svg")},
			[]string{filepath.Join(dir, "no-such-folder", "gpus.svg")}},
		{"plot into a file's path", []string{"simulate", "--plot", filepath.Join(badTrace, "gpus.svg")}, []string{"is not a folder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runArgs(t, tt.args...)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if !strings.HasPrefix(stderr, "phalanx simulate: ") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr is not one line starting with \"phalanx simulate: \":\n%s", stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("stdout not empty:\n%s", stdout)
			}
		})
	}
}

// TestSeedTFJob checks the point of the default run on the TFJob seed: just
// after job2 arrives, phalanx keeps all of job2 pending while pod-by-pod
// binds part of it, which then holds a GPU idle.
func TestSeedTFJob(t *testing.T) {
	w := builtin(t, "seed-tfjob")
	c, err := compare(input{w, true}, sim.Policies, sim.Options{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	at := report.Moments(w)[0].At
	for _, r := range c.Results {
		var pending, idle, job2 int
		for _, p := range report.Pods(w, r, at) {
			if p.Job != "job2" {
				continue
			}
			job2++
			switch p.Phase {
			case report.Pending:
				pending++
			case report.Idle:
				idle++
			}
		}
		if job2 == 0 {
			t.Fatalf("%s: no pod of job2 in the view at %ds", r.Policy, at)
		}
		switch r.Policy {
		case sim.PolicyPhalanx, sim.PolicyFIFOGang:
			if pending != job2 {
				t.Errorf("%s: %d/%d pods of job2 pending at %ds, want all", r.Policy, pending, job2, at)
			}
		case sim.PolicyPodByPod:
			if idle == 0 || pending == 0 {
				t.Errorf("pod-by-pod: %d idle and %d pending pods of job2 at %ds, want some of each", idle, pending, at)
			}
		}
	}

	// The printed view says the same.
	code, stdout, stderr := runArgs(t, "simulate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	section := between(stdout, "Scenario seed-tfjob", "Timeline:")
	byPolicy := map[string]string{
		sim.PolicyPhalanx:  between(section, "  phalanx:", "  pod-by-pod:"),
		sim.PolicyPodByPod: between(section, "  pod-by-pod:", "  fifo-gang:"),
	}
	if got := lines(byPolicy[sim.PolicyPhalanx], "job2-"); len(got) != 3 {
		t.Errorf("phalanx view shows %d pods of job2, want 3:\n%s", len(got), section)
	}
	for _, line := range lines(byPolicy[sim.PolicyPhalanx], "job2-") {
		if !strings.Contains(line, "Pending") {
			t.Errorf("phalanx view: %q is not Pending", line)
		}
	}
	if got := lines(byPolicy[sim.PolicyPodByPod], "job2-", "Running (idle"); len(got) == 0 {
		t.Errorf("pod-by-pod view shows no idle pod of job2:\n%s", byPolicy[sim.PolicyPodByPod])
	}
	if got := lines(byPolicy[sim.PolicyPodByPod], "job2-", "Pending"); len(got) == 0 {
		t.Errorf("pod-by-pod view shows no pending pod of job2:\n%s", byPolicy[sim.PolicyPodByPod])
	}
}

// TestSeedACK checks that phalanx keeps the 5 pods of tf-smoke-gpu pending
// until the new GPUs join, then runs them all.
func TestSeedACK(t *testing.T) {
	w := builtin(t, "seed-ack")
	c, err := compare(input{w, true}, []string{sim.PolicyPhalanx}, sim.Options{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	moments := report.Moments(w)
	if len(moments) != 2 {
		t.Fatalf("moments %v, want the submission and the pool joining", moments)
	}
	for i, want := range []report.Phase{report.Pending, report.Running} {
		rows := report.Pods(w, c.Results[0], moments[i].At)
		if len(rows) != 5 {
			t.Fatalf("%d pods at %ds, want 5", len(rows), moments[i].At)
		}
		for _, p := range rows {
			if p.Phase != want {
				t.Errorf("at %ds %s is %s, want all %v", moments[i].At, p.Name, p.Status(), want)
			}
		}
	}
}

func TestDefaultJSON(t *testing.T) {
	code, stdout, stderr := runArgs(t, "simulate", "--output", "json", "--policy", "pod-by-pod,phalanx")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := decodeOne(t, stdout)
	var order []string
	for _, r := range got.Results {
		order = append(order, r["input"].(string)+"/"+r["policy"].(string))
	}
	want := "seed-tfjob/pod-by-pod seed-tfjob/phalanx seed-ack/pod-by-pod seed-ack/phalanx deadlock/pod-by-pod deadlock/phalanx"
	if strings.Join(order, " ") != want {
		t.Errorf("results %v, want %s", order, want)
	}
}

func TestTraceAndPlot(t *testing.T) {
	dir := t.TempDir()
	trace := writeFile(t, dir, "small.csv", `job_id,submit_time_s,duration_s,num_gpus,vc
a-0,0,3600,8,alpha
b-0,60,600,4,beta
a-1,120,1800,16,alpha
b-1,180,600,1,beta
b-2,200,7200,2,beta
a-2,300,900,8,alpha
`)
	svg := filepath.Join(dir, "gpus.svg")
	code, stdout, stderr := runArgs(t, "simulate", "--trace", trace, "--nodes", "2", "--gpus-per-node", "8", "--max-jobs", "5", "--plot", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"small.csv: 5 jobs", "phalanx", "pod-by-pod", "fifo-gang", "GPU utilisation", "simulated in", svg} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "within one rack") {
		t.Errorf("rack locality shown without racks:\n%s", stdout)
	}
	code, stdout, stderr = runArgs(t, "simulate", "--trace", trace, "--nodes", "2", "--gpus-per-node", "8", "--nodes-per-rack", "1")
	if code != 0 {
		t.Fatalf("--nodes-per-rack: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "multi-node jobs within one rack") {
		t.Errorf("rack locality not shown with racks:\n%s", stdout)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Fatal("empty SVG")
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := d.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("SVG is not XML: %v", err)
		}
	}

	code, stdout, stderr = runArgs(t, "simulate", "--trace", trace, "--nodes", "2", "--gpus-per-node", "8", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, r := range decodeOne(t, stdout).Results {
		if r["jobs_total"] != 6.0 {
			t.Errorf("%v: jobs_total %v, want 6", r["policy"], r["jobs_total"])
		}
		if _, ok := r["forecast"]; ok {
			t.Errorf("%v: forecast figures without --forecast-every", r["policy"])
		}
	}

	// --forecast-every: phalanx's figures have the forecast's, the
	// others' none.
	code, stdout, stderr = runArgs(t, "simulate", "--trace", trace, "--nodes", "2", "--gpus-per-node", "8", "--output", "json",
		"--policy", "phalanx,volcano", "--forecast-every", "1m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, r := range decodeOne(t, stdout).Results {
		f, ok := r["forecast"].(map[string]any)
		if ok != (r["policy"] == "phalanx") || ok && f["every_s"] != 60.0 {
			t.Errorf("%v with --forecast-every 1m: forecast figures %v", r["policy"], r["forecast"])
		}
	}
}

func TestProgress(t *testing.T) {
	var out syncBuffer
	p := startProgress(&out, "in.csv", []string{"phalanx", "pod-by-pod"}, progressTiming{every: time.Millisecond})
	p.callback(0)(50, 100)
	p.finish(1)
	const want = "simulating in.csv: phalanx  50%, pod-by-pod done; "
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), want) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the progress line comes every millisecond
	}
	p.close()
	if !strings.Contains(out.String(), want) {
		t.Errorf("progress output:\n%s", out.String())
	}

	var quiet syncBuffer
	p = startProgress(&quiet, "in.csv", []string{"phalanx"}, progressTiming{delay: time.Hour, every: time.Millisecond})
	p.close()
	if quiet.String() != "" {
		t.Errorf("a short run printed progress: %q", quiet.String())
	}
}

// builtin returns the named built-in scenario.
func builtin(t *testing.T, name string) *workload.Workload {
	t.Helper()
	for _, w := range workload.Builtin() {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no built-in scenario %q", name)
	return nil
}

type jsonResults struct{ Results []map[string]any }

// decodeOne decodes s, which must hold exactly one JSON object.
func decodeOne(t *testing.T, s string) jsonResults {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	var got jsonResults
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, s)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout holds more than one JSON value:\n%s", s)
	}
	return got
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// between returns the part of s after the first from and before the next
// to (or the end).
func between(s, from, to string) string {
	_, after, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	before, _, _ := strings.Cut(after, to)
	return before
}

// lines returns the lines of s that contain every one of subs.
func lines(s string, subs ...string) []string {
	var out []string
next:
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if !strings.Contains(l, sub) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The preemption flags reach the runs: a scenario where a high-priority gang
// preempts, with preemption on (the default), off, and a longer grace
// period.
func TestPreemptionFlags(t *testing.T) {
	dir := t.TempDir()
	scenario := writeFile(t, dir, "preempt.yaml", `nodePools: [{name: n, resources: {cpu: "8", nvidia.com/gpu: 4}}]
jobs:
- {name: low, duration: 1h, tasks: [{role: w, requests: {nvidia.com/gpu: 4}}]}
- {name: high, priority: 9, submit: 10m, duration: 10m, tasks: [{role: w, requests: {nvidia.com/gpu: 4}}]}
`)
	// Waits: high waits for the grace period, then low, restarted, for
	// high's 10m (and loses the 10m it ran); without preemption high waits
	// for low's hour. By default a higher priority preempts at once; with
	// a minimum run time of 1h, low, which runs for 1h, is protected until
	// it ends; with 10m, just as high arrives.
	tests := []struct {
		args            []string
		preempted, wait float64 // wait: the mean of high's and low's
	}{
		{nil, 1, (30 + 630 + 600) / 2},
		{[]string{"--preempt-min-runtime", "1h"}, 0, 3000 / 2},
		{[]string{"--preempt-min-runtime", "10m"}, 1, (30 + 630 + 600) / 2},
		{[]string{"--preempt-min-runtime", "0", "--preemption=false"}, 0, 3000 / 2},
		{[]string{"--preempt-min-runtime", "0", "--grace-period", "2m"}, 1, (120 + 720 + 600) / 2},
		{[]string{"--preempt-min-runtime", "0", "--grace-period", "0"}, 1, (0 + 600 + 600) / 2},
		// Reclaim's minimum does not apply within a queue.
		{[]string{"--preempt-min-runtime", "0", "--reclaim-min-runtime", "2h"}, 1, (30 + 630 + 600) / 2},
	}
	for _, tc := range tests {
		args := append([]string{"simulate", "--scenario", scenario, "--policy", "phalanx", "--output", "json"}, tc.args...)
		code, stdout, stderr := runArgs(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		r := decodeOne(t, stdout).Results[0]
		if r["preempted_gangs"] != tc.preempted || r["mean_wait_s"] != tc.wait {
			t.Errorf("%v: preempted %v, mean wait %v; want %v and %v", tc.args, r["preempted_gangs"], r["mean_wait_s"], tc.preempted, tc.wait)
		}
	}
}

// --queue-weights weighs a trace's queues; a name the trace lacks is an
// error about the input.
func TestQueueWeightsFlag(t *testing.T) {
	dir := t.TempDir()
	trace := writeFile(t, dir, "q.csv", "job_id,submit_time_s,duration_s,num_gpus,vc\na,0,100,8,alpha\nb,0,100,8,beta\n")
	for _, w := range []string{"equal", "gpu-hours", "alpha=3,beta=1"} {
		code, _, stderr := runArgs(t, "simulate", "--trace", trace, "--nodes", "1", "--gpus-per-node", "8", "--queue-weights", w, "--policy", "phalanx")
		if code != 0 {
			t.Errorf("--queue-weights %s: exit %d: %s", w, code, stderr)
		}
	}
	code, _, stderr := runArgs(t, "simulate", "--trace", trace, "--nodes", "1", "--gpus-per-node", "8", "--queue-weights", "gamma=2")
	if code != 1 || !strings.Contains(stderr, `no queue "gamma"`) {
		t.Errorf("unknown queue: exit %d, stderr %q", code, stderr)
	}
}

func TestShortestFirstFlag(t *testing.T) {
	dir := t.TempDir()
	scenario := writeFile(t, dir, "sjf.yaml", `nodePools: [{name: n, resources: {cpu: "8", nvidia.com/gpu: 4}}]
jobs:
- {name: blocker, duration: 10m, tasks: [{role: w, requests: {nvidia.com/gpu: 4}}]}
- {name: long, submit: 1m, duration: 1h, tasks: [{role: w, requests: {nvidia.com/gpu: 4}}]}
- {name: short, submit: 2m, duration: 10m, tasks: [{role: w, requests: {nvidia.com/gpu: 4}}]}
`)
	// Shortest first: short starts at 10m (waits 8m), long at 20m (19m).
	// By arrival: long at 10m (9m), short at 70m (68m).
	tests := []struct {
		args []string
		wait float64 // mean over the three jobs
	}{
		{nil, (0 + 8*60 + 19*60) / 3.0},
		{[]string{"--shortest-first=false"}, (0 + 9*60 + 68*60) / 3.0},
	}
	for _, tc := range tests {
		args := append([]string{"simulate", "--scenario", scenario, "--policy", "phalanx", "--output", "json"}, tc.args...)
		code, stdout, stderr := runArgs(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		if got := decodeOne(t, stdout).Results[0]["mean_wait_s"]; got != tc.wait {
			t.Errorf("%v: mean wait %v, want %v", tc.args, got, tc.wait)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := runArgs(t, "version")
	if code != 0 || stderr != "" {
		t.Fatalf("phalanx version: exit %d, stderr %q", code, stderr)
	}
	for _, prefix := range []string{"phalanx ", "commit: ", "built: ", "go: go"} {
		if !strings.Contains(stdout, "\n"+prefix) && !strings.HasPrefix(stdout, prefix) {
			t.Errorf("phalanx version has no line %q:\n%s", prefix, stdout)
		}
	}
	// What make build sets with -ldflags -X wins over what Go recorded.
	defer func(v, c, d string) { buildVersion, buildCommit, buildDate = v, c, d }(buildVersion, buildCommit, buildDate)
	buildVersion, buildCommit, buildDate = "v1.2.3", "0123abcd", "2026-01-02T03:04:05Z"
	_, stdout, _ = runArgs(t, "version")
	if want := "phalanx v1.2.3\ncommit: 0123abcd\nbuilt: 2026-01-02T03:04:05Z\n"; !strings.HasPrefix(stdout, want) {
		t.Errorf("with the link-time values, phalanx version printed\n%s\nwant it to begin with\n%s", stdout, want)
	}
	if code, _, _ := runArgs(t, "version", "extra"); code != 2 {
		t.Errorf("phalanx version extra: exit %d, want 2", code)
	}
}
