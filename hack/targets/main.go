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
// With -phalanx-from, phalanx's result for each input is taken from those
// reports instead (runs of phalanx alone, under other settings, of the same
// inputs), against the same baselines: hack/evaluate-estimates.sh judges
// wrong estimates this way. It then also prints, averaged over the inputs
// whose names match -ratios, phalanx's mean JCT over the better baseline's
// and its p99 wait of 8+ GPU jobs over fifo-gang's, and the gangs preempted
// and GPU time lost over all inputs.
//
// With -volcano-from, volcano's result for each input is taken from those
// reports instead, a run of volcano-binpack (or of volcano) per input, and
// the verdicts and the ratios name it: hack/evaluate-binpack.sh judges the
// defaults against a Volcano that packs this way.
//
//	go run ./hack/targets [-phalanx-from report.json]... [-volcano-from report.json]... [-ratios regexp] report.json...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
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
	volcanoName                string // the policy of the run in volcano's place
}

// A role is a place in a trio that the runs of other reports may take.
type role struct {
	flag     string   // the flag that names those reports
	policies []string // the policies whose runs may take it
	take     func(*trio, *result)
}

var (
	phalanxRole = role{"-phalanx-from", []string{sim.PolicyPhalanx},
		func(t *trio, r *result) { t.phalanx = &r.Metrics }}
	volcanoRole = role{"-volcano-from", []string{sim.PolicyVolcano, sim.PolicyVolcanoBinpack},
		func(t *trio, r *result) { t.volcano, t.volcanoName = &r.Metrics, r.Policy }}
)

// The policies targets compares.
var compared = []string{sim.PolicyPhalanx, sim.PolicyFIFOGang, sim.PolicyVolcano}

// reportFiles collects the repeated -phalanx-from flag.
type reportFiles []string

func (r *reportFiles) String() string     { return strings.Join(*r, ",") }
func (r *reportFiles) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	var phalanxFrom, volcanoFrom reportFiles
	fs := flag.NewFlagSet("targets", flag.ExitOnError)
	fs.Var(&phalanxFrom, "phalanx-from", "a report of phalanx runs whose results replace phalanx's (repeat for more)")
	fs.Var(&volcanoFrom, "volcano-from", "a report of volcano-binpack (or volcano) runs whose results replace volcano's (repeat for more)")
	ratios := fs.String("ratios", "philly|overloaded", "with -phalanx-from or -volcano-from, the inputs (a regular expression on their names) the ratios are averaged over")
	fs.Parse(os.Args[1:])
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: targets [-phalanx-from report.json]... [-volcano-from report.json]... [-ratios regexp] report.json...")
		os.Exit(2)
	}
	over, err := regexp.Compile(*ratios)
	if err != nil {
		fmt.Fprintln(os.Stderr, "targets: -ratios:", err)
		os.Exit(2)
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "targets:", err)
		os.Exit(1)
	}
	var trios []trio
	for _, path := range fs.Args() {
		data, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		ts, err := parse(data)
		if err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		trios = append(trios, ts...)
	}
	for _, from := range []struct {
		files reportFiles
		role  role
	}{{phalanxFrom, phalanxRole}, {volcanoFrom, volcanoRole}} {
		if len(from.files) == 0 {
			continue
		}
		runs := map[string]*result{}
		for _, path := range from.files {
			data, err := os.ReadFile(path)
			if err != nil {
				fail(err)
			}
			if err := runsOf(data, from.role, runs); err != nil {
				fail(fmt.Errorf("%s: %w", path, err))
			}
		}
		if err := replace(trios, from.role, runs); err != nil {
			fail(err)
		}
	}
	if err := write(os.Stdout, trios); err != nil {
		fail(err)
	}
	if len(phalanxFrom)+len(volcanoFrom) > 0 {
		if err := writeRatios(os.Stdout, trios, over); err != nil {
			fail(err)
		}
	}
}

// runsOf adds to runs, by input, the results of a report that may take
// the role r.
func runsOf(data []byte, r role, runs map[string]*result) error {
	var rep jsonReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return err
	}
	n := 0
	for i := range rep.Results {
		if res := &rep.Results[i]; slices.Contains(r.policies, res.Policy) {
			if runs[res.Input] != nil {
				return fmt.Errorf("input %s: a second result of %s", res.Input, strings.Join(r.policies, " or "))
			}
			runs[res.Input] = res
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("no result of %s", strings.Join(r.policies, " or "))
	}
	return nil
}

// replace gives each trio, in the role r, the run of runs for its input;
// every input must have one, and every run an input.
func replace(trios []trio, r role, runs map[string]*result) error {
	for i := range trios {
		res := runs[trios[i].input]
		if res == nil {
			return fmt.Errorf("input %s: no result of %s among the %s reports", trios[i].input, strings.Join(r.policies, " or "), r.flag)
		}
		r.take(&trios[i], res)
	}
	if len(runs) != len(trios) {
		return fmt.Errorf("%d results of %s for %d inputs: some are of inputs the baselines lack", len(runs), r.flag, len(trios))
	}
	return nil
}

// writeRatios prints phalanx's mean JCT over the better baseline's and its
// p99 wait of 8+ GPU jobs over fifo-gang's, averaged over the trios whose
// input matches over, and the gangs preempted and GPU time lost over all.
func writeRatios(out io.Writer, trios []trio, over *regexp.Regexp) error {
	var mean, p99 float64
	var nMean, nP99 int
	var preempted int64
	var lost float64
	for _, t := range trios {
		preempted += int64(t.phalanx.PreemptedGangs)
		lost += t.phalanx.PreemptionLostGPUSeconds
		if !over.MatchString(t.input) {
			continue
		}
		p, f, v := t.phalanx, t.fifoGang, t.volcano
		if p.MeanJCT != nil && f.MeanJCT != nil && v.MeanJCT != nil && min(*f.MeanJCT, *v.MeanJCT) > 0 {
			mean += *p.MeanJCT / min(*f.MeanJCT, *v.MeanJCT)
			nMean++
		}
		if p.P99WaitBig != nil && f.P99WaitBig != nil && *f.P99WaitBig > 0 {
			p99 += *p.P99WaitBig / *f.P99WaitBig
			nP99++
		}
	}
	ratio := func(sum float64, n int) string {
		if n == 0 {
			return "—"
		}
		return fmt.Sprintf("%.3f", sum/float64(n))
	}
	_, err := fmt.Fprintf(out, "Over the %d inputs matching %q: mean JCT / the better baseline's %s, p99 wait of 8+ GPU jobs / fifo-gang's %s (%d inputs).\n"+
		"Over all %d inputs: %d gangs preempted, %.0f GPU-hours lost.\n",
		nMean, over.String(), ratio(mean, nMean), ratio(p99, nP99), nP99, len(trios), preempted, lost/3600)
	return err
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
		t := trio{input: in.Input, gpus: in.GPUs, topology: in.Topology, volcanoName: sim.PolicyVolcano}
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
		}{{t.volcanoName, v.MeanJCT}, {sim.PolicyFIFOGang, f.MeanJCT}} {
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
			missed = append(missed, fmt.Sprintf("p99 wait of 8+ GPU jobs %s > %s, half of %s's %s", report.Duration(*p.P99WaitBig), report.Duration(*v.P99WaitBig/2), t.volcanoName, report.Duration(*v.P99WaitBig)))
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
		names := []string{sim.PolicyPhalanx, sim.PolicyFIFOGang, t.volcanoName}
		for i, m := range []*sim.Metrics{t.phalanx, t.fifoGang, t.volcano} {
			c.Results = append(c.Results, &sim.Result{Policy: names[i], Metrics: *m})
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
