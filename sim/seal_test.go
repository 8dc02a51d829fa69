package sim

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

// sealChecker runs the core and, before each cycle, checks that every
// gang's sealed summary is what Seal would record now (core.Gang.Seal's
// contract: the simulator changes its gangs in place from one cycle to the
// next and must seal them again).
type sealChecker struct {
	*core.Scheduler
	broken []string
	cycles int
}

func (c *sealChecker) RunCycle(snap *core.Snapshot, now int64) (core.Plan, core.Diagnostics) {
	c.cycles++
	for _, g := range snap.Gangs {
		if g != nil && !g.SealHolds() && len(c.broken) < 5 {
			c.broken = append(c.broken, fmt.Sprintf("%s at %d s", g.ID, now))
		}
	}
	return c.Scheduler.RunCycle(snap, now)
}

// TestSimulatorKeepsSeals runs the golden scenarios (preemption, member
// failures, elastic gangs, reservations) and a small synthetic trace under
// the phalanx policy with every gang's seal checked before every cycle.
func TestSimulatorKeepsSeals(t *testing.T) {
	files := goldenScenarioFiles(t)
	type input struct {
		name string
		w    *workload.Workload
	}
	var inputs []input
	for _, f := range files {
		w, err := workload.ReadScenarioFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{filepath.Base(f), w})
	}
	var trace bytes.Buffer
	if err := workload.GenerateTrace(&trace, workload.GenOptions{Seed: 1, Jobs: 600, GPUs: 64, Load: 1.3, Queues: 3}); err != nil {
		t.Fatal(err)
	}
	gen, err := workload.ReadTrace(&trace, "gen-trace", workload.TraceOptions{Nodes: 8, GPUsPerNode: 8, NodesPerRack: 4})
	if err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, input{"gen-trace", gen})
	cycles := 0
	for _, in := range inputs {
		cfg, gopt, err := gangPolicyConfig(in.w, PolicyPhalanx, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := core.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := &sealChecker{Scheduler: s}
		if _, err := run(in.w, PolicyPhalanx, c, gopt, Options{}); err != nil {
			t.Fatal(err)
		}
		if len(c.broken) > 0 {
			t.Errorf("%s: gangs changed after Seal without a new Seal: %v", in.name, c.broken)
		}
		cycles += c.cycles
	}
	if cycles == 0 {
		t.Fatal("no cycle ran")
	}
}
