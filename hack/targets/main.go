// Command targets judges `phalanx simulate --output json` reports against
// the targets of docs/evaluation.md. Each report must hold, for every input,
// the results of phalanx, fifo-gang and volcano; targets prints, per input,
// the table of the three that `phalanx simulate` prints, then whether
// phalanx meets each target:
//
//   - no job stuck (one that fits the cluster and never ran);
//   - a mean job completion time no worse than volcano's and fifo-gang's;
//   - a p99 wait of the jobs of 8+ GPUs no worse than fifo-gang's,
//   - and at most half of volcano's (a target over no such job is met);
//   - GPU time thrown away by preemption under 1% of the GPU time used.
//
// It ends with how many inputs meet every target, and exits 0 whatever the
// verdicts (it reports; it does not gate). hack/evaluate.sh runs it.
//
//	go run ./hack/targets report.json...
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/phalanx-sched/phalanx/report"
	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// result is one element of a report's "results".
type result struct {
	Input  string `json:"input"`
	Policy string `json:"policy"`
	sim.Metrics
}

// jsonReport is the part of a report that targets reads.
type jsonReport struct {
	Inputs []struct {
		Input    string   `json:"input"`
		GPUs     int64    `json:"gpus"`
		Topology []string `json:"topology"`
	} `json:"inputs"`
	Results []result `json:"results"`
}

// trio is one input's three runs.
type trio struct {
	input                      string
	gpus                       int64
	topology                   []string // its cluster's topology levels: racks add a row to its table
	phalanx, fifoGang, volcano *sim.Metrics
}

// The policies targets compares.
var compared = []string{sim.PolicyPhalanx, sim.PolicyFIFOGang, sim.PolicyVolcano}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: targets report.json...")
		os.Exit(2)
	}
	var trios []trio
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "targets:", err)
			os.Exit(1)
		}
		ts, err := parse(data)
		if err != nil {
			fmt.Fprintf(os.Stderr, "targets: %s: %v\n", path, err)
			os.Exit(1)
		}
		trios = append(trios, ts...)
	}
	if err := write(os.Stdout, trios); err != nil {
		fmt.Fprintln(os.Stderr, "targets:", err)
		os.Exit(1)
	}
}

// parse reads one report into its inputs' trios, in the report's order.
func parse(data []byte) ([]trio, error) {
	var r jsonReport
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if len(r.Inputs) == 0 {
		return nil, fmt.Errorf("no inputs")
	}
	var out []trio
	for _, in := range r.Inputs {
		t := trio{input: in.Input, gpus: in.GPUs, topology: in.Topology}
		for i := range r.Results {
			res := &r.Results[i]
			if res.Input != in.Input {
				continue
			}
			switch res.Policy {
			case sim.PolicyPhalanx:
				t.phalanx = &res.Metrics
			case sim.PolicyFIFOGang:
				t.fifoGang = &res.Metrics
			case sim.PolicyVolcano:
				t.volcano = &res.Metrics
			}
		}
		if t.phalanx == nil || t.fifoGang == nil || t.volcano == nil {
			return nil, fmt.Errorf("input %s: the report must hold the results of %s", in.Input, strings.Join(compared, ", "))
		}
		out = append(out, t)
	}
	return out, nil
}

// judge says which targets t's phalanx run misses, a phrase each; none
// when it meets them all.
func judge(t trio) (missed []string) {
	p, f, v := t.phalanx, t.fifoGang, t.volcano
	if p.StuckJobs > 0 {
		missed = append(missed, fmt.Sprintf("%d jobs stuck", p.StuckJobs))
	}
	switch {
	case p.MeanJCT == nil:
		missed = append(missed, "no job completed")
	default:
		for _, b := range []struct {
			name string
			mean *float64
		}{{sim.PolicyVolcano, v.MeanJCT}, {sim.PolicyFIFOGang, f.MeanJCT}} {
			if b.mean != nil && *p.MeanJCT > *b.mean {
				missed = append(missed, fmt.Sprintf("mean JCT %s > %s's %s", report.Duration(*p.MeanJCT), b.name, report.Duration(*b.mean)))
			}
		}
	}
	if p.P99WaitBig != nil {
		if f.P99WaitBig != nil && *p.P99WaitBig > *f.P99WaitBig {
			missed = append(missed, fmt.Sprintf("p99 wait of 8+ GPU jobs %s > fifo-gang's %s", report.Duration(*p.P99WaitBig), report.Duration(*f.P99WaitBig)))
		}
		if v.P99WaitBig != nil && *p.P99WaitBig > *v.P99WaitBig/2 {
			missed = append(missed, fmt.Sprintf("p99 wait of 8+ GPU jobs %s > %s, half of volcano's %s", report.Duration(*p.P99WaitBig), report.Duration(*v.P99WaitBig/2), report.Duration(*v.P99WaitBig)))
		}
	}
	switch used := gpuSecondsUsed(p, t.gpus); {
	case used > 0:
		if lost := p.PreemptionLostGPUSeconds / used; lost >= 0.01 {
			missed = append(missed, fmt.Sprintf("preemption threw away %.2f%% of the GPU time used", 100*lost))
		}
	case p.PreemptionLostGPUSeconds > 0:
		missed = append(missed, "preemption threw away GPU time, and the GPU time used is not known")
	}
	return missed
}

// gpuSecondsUsed is the GPU time the run's members ran: its utilisation
// over its makespan, on gpus GPUs (the simulator's utilisation is the GPU
// time run over the cluster's, from the first submission to the last
// completion when every job completed). 0 when a figure is missing.
func gpuSecondsUsed(m *sim.Metrics, gpus int64) float64 {
	if m.GPUUtilization == nil || m.Makespan == nil {
		return 0
	}
	return *m.GPUUtilization * *m.Makespan * float64(gpus)
}

// write prints each trio's figures as `phalanx simulate` tables them, then
// the verdicts.
func write(out io.Writer, trios []trio) error {
	for _, t := range trios {
		fmt.Fprintf(out, "== %s\n", t.input)
		c := report.Comparison{Workload: &workload.Workload{Name: t.input, Topology: t.topology}}
		for i, m := range []*sim.Metrics{t.phalanx, t.fifoGang, t.volcano} {
			c.Results = append(c.Results, &sim.Result{Policy: compared[i], Metrics: *m})
		}
		if err := report.WriteTable(out, c); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out, "| input | phalanx's targets |")
	fmt.Fprintln(out, "|---|---|")
	met := 0
	for _, t := range trios {
		text := "all met"
		if missed := judge(t); len(missed) > 0 {
			text = "missed: " + strings.Join(missed, "; ")
		} else {
			met++
		}
		fmt.Fprintf(out, "| %s | %s |\n", t.input, text)
	}
	_, err := fmt.Fprintf(out, "\n%d of %d inputs meet every target.\n", met, len(trios))
	return err
}
