package sim

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

// TestSkippedCycles runs workloads under the gang policies twice, once
// running every cycle and once skipping those that Plan.Until says would
// plan nothing (gang.go), running each skipped cycle anyway to check that
// it plans nothing indeed; the two results must be the same in every job's
// start, end and reason, every sample and every figure.
func TestSkippedCycles(t *testing.T) {
	type input struct {
		name string
		w    *workload.Workload
		// few: only the first two variants, the others skipping none here
		few bool
	}
	var inputs []input
	for seed := uint64(1); seed <= 4; seed++ {
		inputs = append(inputs, input{fmt.Sprintf("churn %d", seed), churnWorkload(seed, 150), false})
	}
	if !testing.Short() {
		w, err := workload.ReadTraceFile(phillyTrace, workload.TraceOptions{Nodes: 16, GPUsPerNode: 8, MaxJobs: 800})
		if err != nil {
			t.Fatalf("%v (the Philly trace lives in the shared traces folder next to the project)", err)
		}
		inputs = append(inputs, input{"philly 800", w, true})
	}
	variants := []struct {
		policy string
		opt    Options
	}{
		{PolicyPhalanx, Options{}},
		{PolicyPhalanx, Options{ReclaimAfter: 900, ReserveAfter: 1200, Reservations: 3}},
		{PolicyPhalanx, Options{ArrivalOrder: true, EstimateError: EstimateErrors{{Factor: 0.5}}}},
		{PolicyPhalanx, Options{EstimateError: EstimateErrors{{Noise: 0.5}}, GracePeriod: -1}},
		{PolicyFIFOGang, Options{}},
		{PolicyVolcano, Options{}},
	}
	total := 0
	for _, in := range inputs {
		for i, v := range variants {
			if in.few && i >= 2 {
				break
			}
			name := fmt.Sprintf("%s, variant %d (%s)", in.name, i, v.policy)
			every := runGangs(t, in.w, v.policy, v.opt, func(o *gangOptions) { o.noSkip = true })
			skips := 0
			skipping := runGangs(t, in.w, v.policy, v.opt, func(o *gangOptions) { o.checkSkips, o.skips = true, &skips })
			if diff := cmp.Diff(every, skipping); diff != "" {
				t.Errorf("%s: skipping %d cycles changed the run (-every cycle +skipping):\n%s", name, skips, diff)
			}
			total += skips
		}
	}
	if total == 0 {
		t.Errorf("no cycle was skipped: the test tries nothing")
	}
}

// runGangs runs w under a gang policy with its gangOptions changed by set.
func runGangs(t *testing.T, w *workload.Workload, policy string, opt Options, set func(*gangOptions)) *Result {
	t.Helper()
	cfg, gopt, err := gangPolicyConfig(w, policy, opt)
	if err != nil {
		t.Fatal(err)
	}
	set(&gopt)
	s, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := run(w, policy, s, gopt, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
