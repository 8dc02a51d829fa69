package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/report"
	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// records writes, as `phalanx simulate --jobs-out` does, two runs of one
// input: policy "a" completes four jobs that arrive from 0 to 100 s, the
// last of which starts after the last arrival; policy "b" has one job of 8
// GPUs that never starts.
func records(t *testing.T) []byte {
	t.Helper()
	done := func(id string, gpus, submit, start, duration int64) sim.JobOutcome {
		return sim.JobOutcome{ID: id, GPUs: gpus, Submit: submit, Start: start, Finish: start + duration, Duration: duration,
			State: sim.JobCompleted, Reserved: -1, ForecastAt: -1, ForecastStart: -1, ForecastReserved: -1}
	}
	a := &sim.Result{Policy: "a", Jobs: []sim.JobOutcome{
		done("1", 1, 0, 0, 100),     // completion 100, first part
		done("2", 8, 50, 60, 200),   // wait 10, completion 210, first part
		done("3", 1, 100, 300, 10),  // completion 210, rest
		done("4", 16, 100, 400, 50), // wait 300, completion 350, rest; starts after the last arrival
	}}
	b := &sim.Result{Policy: "b", Jobs: []sim.JobOutcome{{ID: "1", GPUs: 8, Submit: 0, Start: -1, Finish: -1, Duration: 60,
		State: sim.JobStuck, Reserved: -1, ForecastAt: -1, ForecastStart: -1, ForecastReserved: -1}}}
	var buf bytes.Buffer
	c := report.Comparison{Workload: &workload.Workload{Name: "t"}, Results: []*sim.Result{a, b}}
	if err := report.WriteJobsCSV(&buf, []report.Comparison{c}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAnalyse(t *testing.T) {
	runs, err := read(bytes.NewReader(records(t)))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].policy != "a" || runs[1].policy != "b" || len(runs[0].jobs) != 4 {
		t.Fatalf("read %+v, want runs a (4 jobs) and b", runs)
	}
	// Arrivals span 0 to 100 s; split at half, the first part is what
	// arrived by 50 s: jobs 1 and 2.
	a := analyse(runs[0], 0.5)
	check := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || *got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("mean JCT, all", a.all.meanJCT, (100+210+210+350)/4.0)
	check("mean JCT, first part", a.first.meanJCT, (100+210)/2.0)
	check("mean JCT, rest", a.last.meanJCT, (210+350)/2.0)
	check("p99 wait of 8+ GPU jobs, all", a.all.p99WaitBig, 300) // nearest rank of 2: the second
	check("p99 wait of 8+ GPU jobs, first part", a.first.p99WaitBig, 10)
	check("p99 wait of 8+ GPU jobs, rest", a.last.p99WaitBig, 300)
	check("8+ GPU work after the last arrival", a.bigAfter, 16*50/(8*200+16*50.0))
	if a.first.jobs != 2 || a.last.jobs != 2 {
		t.Errorf("jobs %d, %d; want 2, 2", a.first.jobs, a.last.jobs)
	}

	b := analyse(runs[1], 0.5)
	if b.all.meanJCT != nil || b.all.p99WaitBig != nil {
		t.Errorf("a run that completes nothing: mean %v, p99 %v; want none", b.all.meanJCT, b.all.p99WaitBig)
	}
	check("8+ GPU work after the last arrival, none started", b.bigAfter, 0)

	var out bytes.Buffer
	if err := write(&out, runs, 0.5); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| t | a | 3m38s | 2m35s | 4m40s | 5m | 10s | 5m | 2, 2 | 33% |", "| t | b | — | — | — | — | — | — | 1, 0 | 0% |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReadRejects(t *testing.T) {
	good := string(records(t))
	for name, c := range map[string]struct{ in, want string }{
		"not records":  {"a,b\n1,2\n", `no column "input"`},
		"no record":    {strings.SplitAfter(good, "\n")[0], "no record"},
		"garbage size": {strings.Replace(good, "t,a,4,,16,", "t,a,4,,sixteen,", 1), `line 5: gpus "sixteen"`},
	} {
		_, err := read(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}
