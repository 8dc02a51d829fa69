package sim

// Golden scenario tests: each testdata/golden/NAME.yaml is a scenario file;
// NAME.golden holds, per policy, every member event (bound, running,
// completed, evicted, deleted, failed, replaced) with its time, node and
// reason, every change of a waiting job's reason, for every job that never
// started the reason the scheduler gave, and the counts of preemptions and
// failures when there are any. Refresh after an intended change with
//
//	go test ./sim -run Golden -rewrite
//
// and review the diff like code.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/workload"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files of the scenario tests")

// goldenScenarioFiles lists the golden scenario files (testdata/golden),
// failing the test if there are none.
func goldenScenarioFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/golden/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scenarios found: %v", err)
	}
	return files
}

func TestGoldenScenarios(t *testing.T) {
	files := goldenScenarioFiles(t)
	type scenario struct {
		w      *workload.Workload
		golden string
	}
	var scenarios []scenario
	// The built-in seed experiments are golden too.
	for _, w := range workload.Builtin() {
		scenarios = append(scenarios, scenario{w, "testdata/golden/builtin-" + w.Name + ".golden"})
	}
	for _, file := range files {
		w, err := workload.ReadScenarioFile(file)
		if err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, scenario{w, strings.TrimSuffix(file, ".yaml") + ".golden"})
	}
	for _, sc := range scenarios {
		goldenPath := sc.golden
		t.Run(strings.TrimSuffix(filepath.Base(goldenPath), ".golden"), func(t *testing.T) {
			got := renderGolden(t, sc.w)
			if *rewrite {
				if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s differs from the simulation (-golden +got); if the change is intended, run with -rewrite and review:\n%s", goldenPath, diff)
			}
		})
	}
}

func renderGolden(t *testing.T, w *workload.Workload) string {
	var b strings.Builder
	for _, policy := range Policies {
		// Preemption as it was when the scenarios were written: their
		// preemptions happen minutes after the victims start, to show the
		// mechanism, and the minimum run time would keep them from
		// happening at all (TestMinRuntimeDelaysPreemption shows it).
		opt := oldDefaults
		opt.Record = true
		r, err := Run(w, policy, opt)
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		fmt.Fprintf(&b, "== %s\n", policy)
		for _, e := range r.Events {
			if e.Kind == "waiting" {
				fmt.Fprintf(&b, "%6ds %-9s %-24s %s\n", e.Time, e.Kind, e.Job, e.Reason)
				continue
			}
			if e.Reason != "" {
				fmt.Fprintf(&b, "%6ds %-9s %-24s %s (%s)\n", e.Time, e.Kind, e.Pod, e.Node, e.Reason)
				continue
			}
			fmt.Fprintf(&b, "%6ds %-9s %-24s %s\n", e.Time, e.Kind, e.Pod, e.Node)
		}
		for _, j := range r.Jobs {
			if j.Start < 0 {
				fmt.Fprintf(&b, "never started: %s (%s, %d/%d placed): %s\n", j.ID, j.State, j.Placed, j.Members, j.Reason)
			}
		}
		m := r.Metrics
		makespan := "none"
		if m.Makespan != nil {
			makespan = fmt.Sprintf("%.0f s", *m.Makespan)
		}
		fmt.Fprintf(&b, "completed %d/%d, stuck %d, unschedulable %d, wasted %.0f GPU-s, makespan %s\n",
			m.JobsCompleted, m.JobsTotal, m.StuckJobs, m.UnschedulableJobs, m.WastedGPUSeconds, makespan)
		if m.HeldIdleAtEnd > 0 {
			fmt.Fprintf(&b, "%d GPU(s) held idle when the run ends\n", m.HeldIdleAtEnd)
		}
		if len(w.Topology) > 0 {
			fmt.Fprintf(&b, "rack locality %.2f\n", Value(m.RackLocality))
		}
		if m.PreemptedGangs > 0 {
			fmt.Fprintf(&b, "preempted %d gang(s), %d member(s), %.0f GPU-s lost\n", m.PreemptedGangs, m.EvictedMembers, m.PreemptionLostGPUSeconds)
		}
		if m.MemberFailures > 0 {
			fmt.Fprintf(&b, "%d member failure(s), replacements waited %.0f s on average, %.0f s at most\n",
				m.MemberFailures, Value(m.MeanReplacementWait), Value(m.MaxReplacementWait))
		}
		b.WriteString("\n")
	}
	return b.String()
}
