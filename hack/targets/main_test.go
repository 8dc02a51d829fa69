package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/report"
	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

func f(v float64) *float64 { return &v }

// metrics returns a run of mean JCT mean and p99 wait of big jobs p99 (nil:
// none started), at 50% utilisation over 100 hours.
func metrics(mean float64, p99 *float64) sim.Metrics {
	return sim.Metrics{MeanJCT: f(mean), P99WaitBig: p99, GPUUtilization: f(0.5), Makespan: f(100 * 3600)}
}

// reportOf writes a report as `phalanx simulate --output json` does, of one
// input on 2 nodes of 8 GPUs and the given runs.
func reportOf(t *testing.T, runs map[string]sim.Metrics) []byte {
	t.Helper()
	w := &workload.Workload{Name: "trace", Pools: []workload.NodePool{{Name: "p", Count: 2, Allocatable: map[string]int64{workload.GPU: 8}}}}
	c := report.Comparison{Workload: w}
	for _, p := range slices.Concat(compared, sim.MorePolicies) {
		if m, ok := runs[p]; ok {
			c.Results = append(c.Results, &sim.Result{Policy: p, Metrics: m})
		}
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, &report.Inputs{Source: "trace", Policies: compared}, []report.Comparison{c}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestJudge(t *testing.T) {
	baselines := func(p sim.Metrics) map[string]sim.Metrics {
		return map[string]sim.Metrics{
			sim.PolicyPhalanx:  p,
			sim.PolicyFIFOGang: metrics(20, f(100)),
			sim.PolicyVolcano:  metrics(10, f(300)),
		}
	}
	lossy := metrics(10, f(100))
	lossy.PreemptionLostGPUSeconds = 0.01 * 0.5 * 100 * 3600 * 16 // 1% of what ran on 16 GPUs
	stuck := metrics(10, f(100))
	stuck.StuckJobs = 3
	for _, tc := range []struct {
		name    string
		phalanx sim.Metrics
		missed  []string // a phrase of each missed target, in order
	}{
		{"level with both", metrics(10, f(100)), nil},
		{"no big job started", metrics(9, nil), nil},
		{"mean over volcano's", metrics(10.5, f(90)), []string{"mean JCT 11s > volcano's 10s"}},
		{"p99 over fifo-gang's", metrics(9, f(101)), []string{"> fifo-gang's 1m40s"}},
		{"p99 over half volcano's", metrics(9, f(151)), []string{"> fifo-gang's", "2m31s > 2m30s, half of volcano's 5m"}},
		{"lost 1%", lossy, []string{"threw away 1.00%"}},
		{"stuck", stuck, []string{"3 jobs stuck"}},
	} {
		trios, err := parse(reportOf(t, baselines(tc.phalanx)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(trios) != 1 || trios[0].gpus != 16 {
			t.Fatalf("%s: parsed %+v, want one input of 16 GPUs", tc.name, trios)
		}
		missed := judge(trios[0])
		if len(missed) != len(tc.missed) {
			t.Errorf("%s: missed %q, want %d targets missed", tc.name, missed, len(tc.missed))
			continue
		}
		for i, want := range tc.missed {
			if !strings.Contains(missed[i], want) {
				t.Errorf("%s: missed[%d] = %q, want it to say %q", tc.name, i, missed[i], want)
			}
		}
	}
}

func TestParseWantsEveryPolicy(t *testing.T) {
	data := reportOf(t, map[string]sim.Metrics{sim.PolicyPhalanx: metrics(1, nil), sim.PolicyVolcano: metrics(1, nil)})
	if _, err := parse(data); err == nil || !strings.Contains(err.Error(), "fifo-gang") {
		t.Errorf("parse without fifo-gang's run: %v, want an error naming the policies", err)
	}
	if _, err := parse([]byte(`{"inputs": []}`)); err == nil {
		t.Error("parse of a report without inputs: no error")
	}
}

func TestWriteCounts(t *testing.T) {
	good, err := parse(reportOf(t, map[string]sim.Metrics{
		sim.PolicyPhalanx: metrics(1, nil), sim.PolicyFIFOGang: metrics(2, nil), sim.PolicyVolcano: metrics(2, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	bad, err := parse(reportOf(t, map[string]sim.Metrics{
		sim.PolicyPhalanx: metrics(3, nil), sim.PolicyFIFOGang: metrics(2, nil), sim.PolicyVolcano: metrics(2, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := write(&out, append(good, bad...)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== trace\n", "job completion time, mean", "| trace | all met |", "| trace | missed: mean JCT 3s > volcano's 2s; mean JCT 3s > fifo-gang's 2s |", "1 of 2 inputs meet every target."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// With -phalanx-from, phalanx's run of each input is the other report's,
// judged against the same baselines, and the ratios average over the
// inputs asked for.
func TestPhalanxFrom(t *testing.T) {
	trios, err := parse(reportOf(t, map[string]sim.Metrics{
		sim.PolicyPhalanx: metrics(1, f(50)), sim.PolicyFIFOGang: metrics(4, f(100)), sim.PolicyVolcano: metrics(2, f(400))}))
	if err != nil {
		t.Fatal(err)
	}
	other := metrics(3, f(150))
	other.PreemptedGangs, other.PreemptionLostGPUSeconds = 2, 7200
	runs := map[string]*result{}
	if err := runsOf(reportOf(t, map[string]sim.Metrics{sim.PolicyPhalanx: other}), phalanxRole, runs); err != nil {
		t.Fatal(err)
	}
	if err := replace(trios, phalanxRole, runs); err != nil {
		t.Fatal(err)
	}
	if missed := judge(trios[0]); len(missed) != 2 || !strings.Contains(missed[0], "mean JCT 3s > volcano's 2s") || !strings.Contains(missed[1], "> fifo-gang's 1m40s") {
		t.Errorf("judged with the other run: missed %q, want its mean over volcano's and p99 over fifo-gang's", missed)
	}
	var out bytes.Buffer
	if err := writeRatios(&out, trios, regexp.MustCompile("trace")); err != nil {
		t.Fatal(err)
	}
	// 3 s over volcano's 2 s, 150 s over fifo-gang's 100 s.
	for _, want := range []string{"mean JCT / the better baseline's 1.500, p99 wait of 8+ GPU jobs / fifo-gang's 1.500 (1 inputs)", "2 gangs preempted, 2 GPU-hours lost"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ratios lack %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := writeRatios(&out, trios, regexp.MustCompile("philly")); err != nil || !strings.Contains(out.String(), "Over the 0 inputs") || !strings.Contains(out.String(), "baseline's —") {
		t.Errorf("ratios over no input: %v\n%s", err, out.String())
	}
	// Every input needs a run, and every run an input.
	if err := replace(trios, phalanxRole, map[string]*result{}); err == nil || !strings.Contains(err.Error(), "no result of phalanx among the -phalanx-from reports") {
		t.Errorf("replace without the input's run: %v", err)
	}
	run := &result{Metrics: other}
	if err := replace(trios, phalanxRole, map[string]*result{"trace": run, "elsewhere": run}); err == nil || !strings.Contains(err.Error(), "inputs the baselines lack") {
		t.Errorf("replace with a run of another input: %v", err)
	}
	if err := runsOf(reportOf(t, map[string]sim.Metrics{sim.PolicyPhalanx: other}), phalanxRole, runs); err == nil || !strings.Contains(err.Error(), "a second result of phalanx") {
		t.Errorf("two runs of one input: %v", err)
	}
}

// With -volcano-from, a volcano-binpack run of each input takes volcano's
// place: phalanx is judged against its mean and half its p99, and the
// verdicts and the table name it.
func TestVolcanoFrom(t *testing.T) {
	trios, err := parse(reportOf(t, map[string]sim.Metrics{
		sim.PolicyPhalanx: metrics(3, f(100)), sim.PolicyFIFOGang: metrics(4, f(200)), sim.PolicyVolcano: metrics(5, f(400))}))
	if err != nil {
		t.Fatal(err)
	}
	if missed := judge(trios[0]); len(missed) != 0 {
		t.Fatalf("against volcano: missed %q, want none", missed)
	}
	runs := map[string]*result{}
	binpack := reportOf(t, map[string]sim.Metrics{sim.PolicyVolcanoBinpack: metrics(2, f(150))})
	if err := runsOf(binpack, volcanoRole, runs); err != nil {
		t.Fatal(err)
	}
	if err := replace(trios, volcanoRole, runs); err != nil {
		t.Fatal(err)
	}
	missed := judge(trios[0])
	want := []string{"mean JCT 3s > volcano-binpack's 2s", "p99 wait of 8+ GPU jobs 1m40s > 1m15s, half of volcano-binpack's 2m30s"}
	if len(missed) != len(want) {
		t.Fatalf("against volcano-binpack: missed %q, want %q", missed, want)
	}
	for i := range want {
		if !strings.Contains(missed[i], want[i]) {
			t.Errorf("missed[%d] = %q, want it to say %q", i, missed[i], want[i])
		}
	}
	var out bytes.Buffer
	if err := write(&out, trios); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ +phalanx +fifo-gang +volcano-binpack$`).MatchString(out.String()) {
		t.Errorf("the table does not head its third column volcano-binpack:\n%s", out.String())
	}
	// A report of phalanx alone has no run to take volcano's place.
	if err := runsOf(reportOf(t, map[string]sim.Metrics{sim.PolicyPhalanx: metrics(1, nil)}), volcanoRole, map[string]*result{}); err == nil || !strings.Contains(err.Error(), "no result of volcano or volcano-binpack") {
		t.Errorf("a report without a volcano run: %v", err)
	}
}
