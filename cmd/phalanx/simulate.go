package main

// This file is `phalanx simulate`: it parses and checks the flags, reads the
// inputs (the built-in scenarios, a scenario file or a trace), runs every
// requested policy over each input, one goroutine per policy, and hands the
// results to package report. Results keep the order of --policy whatever
// order the runs finish in.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/phalanx-sched/phalanx/config"
	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/report"
	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// simulateConfig is the checked configuration of one `phalanx simulate`.
type simulateConfig struct {
	trace, scenario string
	traceOpt        workload.TraceOptions
	queueWeights    workload.QueueWeights // with a trace
	policies        []string
	output          string // "table" or "json"
	plot            string // "" for no plot
	jobsOut         string // "" for no per-job records
	// options is every flag by name as it applied, for --output json.
	options map[string]string
	// opt is what every run gets (Record and Progress are set per run).
	opt sim.Options
}

// simulateFlags binds the flags of `phalanx simulate` to raw values.
type simulateFlags struct {
	trace, scenario, policy, output, plot string
	jobsOut                               string
	nodes, gpusPerNode, maxJobs           int
	nodesPerRack                          int
	reserveAfter, reserveAhead            time.Duration
	reserveByWork                         time.Duration
	reservations                          int
	preemption, reclaimYoungerOnly        bool
	shortestFirst                         bool
	gracePeriod, holdFailed, reclaimAfter time.Duration
	preemptMinRuntime, reclaimMinRuntime  time.Duration
	weighLoss, correctEstimates           bool
	reserveAfterBacklog                   bool
	estimateError, queueWeights           string
	config                                string
	forecastEvery                         time.Duration
}

// simulateFlagOrder is the order in which help lists the flags.
var simulateFlagOrder = []string{"trace", "scenario", "nodes", "gpus-per-node", "max-jobs", "nodes-per-rack", "queue-weights",
	"policy", "reserve-after", "reserve-after-backlog", "reserve-ahead", "reservations", "reserve-by-work", "shortest-first", "estimate-error", "correct-estimates", "preemption", "reclaim-after", "reclaim-younger-only", "preempt-min-runtime", "reclaim-min-runtime", "weigh-loss", "grace-period", "hold-failed", "hold-failed-member", "forecast-every", "config", "output", "plot", "jobs-out"}

func newSimulateFlagSet(f *simulateFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("phalanx simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.trace, "trace", "", "replay the GPU cluster trace in `FILE.csv` (needs --nodes and --gpus-per-node)")
	fs.StringVar(&f.scenario, "scenario", "", "run the scenario in `FILE.yaml`")
	fs.IntVar(&f.nodes, "nodes", 0, "with --trace: the simulated cluster has `N` nodes")
	fs.IntVar(&f.gpusPerNode, "gpus-per-node", 0, "with --trace: `K` GPUs per node")
	fs.IntVar(&f.maxJobs, "max-jobs", 0, "with --trace: read only the first `M` jobs (0: all)")
	fs.IntVar(&f.nodesPerRack, "nodes-per-rack", 0, "with --trace: group nodes into racks of `R` (0: no racks); gangs prefer one rack")
	fs.StringVar(&f.queueWeights, "queue-weights", "equal",
		"with --trace: weigh the queues (vc column) `W`: equal, gpu-hours (by their share of the trace's GPU-hours, 1 to 100) or a list such as vcA=3,vcB=1 (others weigh 1)")
	fs.DurationVar(&f.reserveAfter, "reserve-after", sim.DefaultReserveAfter*time.Second,
		"phalanx reserves nodes for a gang that has waited `D` (e.g. 30m; 0: never), backfilling around it with jobs expected to end before it starts")
	fs.BoolVar(&f.reserveAfterBacklog, "reserve-after-backlog", config.DefaultReserveAfterBacklog,
		"phalanx also waits, before it reserves for a gang, nine tenths of the time the cluster needs to run the work waiting now (GPUs x estimates, on the GPUs free now and those running jobs free as they end); false: --reserve-after alone")
	fs.DurationVar(&f.reserveAhead, "reserve-ahead", sim.DefaultReserveAhead*time.Second,
		"phalanx reserves nodes for a gang up to `D` before it is due (--reserve-after, the backlog), for a reservation that starts no sooner; "+
			"until then the nodes take only jobs expected to end by then (0: only once it is due). With the backlog, never before --reserve-after")
	fs.IntVar(&f.reservations, "reservations", sim.DefaultReservations,
		"phalanx reserves for up to `N` waiting gangs at once, by priority then longest wait, moved back by work (--reserve-by-work)")
	fs.DurationVar(&f.reserveByWork, "reserve-by-work", sim.DefaultReserveByWork*time.Second,
		"phalanx takes the gangs in line for a reservation by arrival moved back by eight times the time their work (GPUs x estimate) would take the whole cluster, by at most `D` (0: by arrival)")
	fs.BoolVar(&f.shortestFirst, "shortest-first", true,
		"phalanx starts the gangs of a queue shortest estimate first (by arrival when false)")
	fs.StringVar(&f.estimateError, "estimate-error", "exact",
		"run-time estimates the scheduler gets, from the durations: `E` is exact, x0.5 (half: underestimates), x2, or noise=0.5 (duration x exp(N(0, 0.5)), seeded by job); "+
			"per queue, a comma-separated list such as team-a:x2,team-b:x0.5 (a form without a queue applies to the others); "+
			"over time, forms that start later, such as team-a:x2,team-a:x0.5@20d (from day 20 after the first submission; also @36h)")
	fs.BoolVar(&f.preemption, "preemption", true, "phalanx preempts lower-priority gangs of a queue and reclaims from queues over their share")
	fs.DurationVar(&f.reclaimAfter, "reclaim-after", sim.DefaultReclaimAfter*time.Second,
		"phalanx lets a gang reclaim from queues over their share only once it has waited `D` (0: at once)")
	fs.BoolVar(&f.reclaimYoungerOnly, "reclaim-younger-only", false,
		"phalanx reclaims only from gangs that arrived after the reclaiming gang (what younger gangs got ahead of it)")
	fs.DurationVar(&f.preemptMinRuntime, "preempt-min-runtime", config.DefaultPreemptMinRuntime,
		"phalanx preempts a gang within its queue only once it has run `D` (0: at once)")
	fs.DurationVar(&f.reclaimMinRuntime, "reclaim-min-runtime", config.DefaultReclaimMinRuntime,
		"phalanx reclaims from a gang of another queue only once it has run `D` (0: at once)")
	fs.BoolVar(&f.weighLoss, "weigh-loss", config.DefaultWeighLoss,
		"phalanx evicts only when the victims lose no more GPU time than the preemptor gains by starting before their estimated ends")
	fs.BoolVar(&f.correctEstimates, "correct-estimates", config.DefaultCorrectEstimates,
		"phalanx multiplies a job's estimate by the median ratio of run time to estimate of its queue's latest 50 completed jobs "+
			"(from 5 on; the factor follows the median when it moves more than a quarter away; when a queue's habits change, "+
			"the jobs that arrived before keep the factor of their time); the backlog also multiplies "+
			"them by those jobs' run times over their corrected estimates, in sum")
	fs.DurationVar(&f.gracePeriod, "grace-period", sim.DefaultGracePeriod*time.Second,
		"an evicted pod keeps its node for `D` while it terminates (0: it leaves at once)")
	fs.DurationVar(&f.holdFailed, "hold-failed", sim.DefaultHoldFailed*time.Second,
		"phalanx holds what a pod that failed in a running gang freed for its replacement for `D` (0: no hold)")
	fs.DurationVar(&f.holdFailed, "hold-failed-member", sim.DefaultHoldFailed*time.Second,
		"the same as --hold-failed, under phalanx scheduler's name for it")
	fs.DurationVar(&f.forecastEvery, "forecast-every", 0,
		"phalanx also forecasts every waiting gang's start as phalanx scheduler does, every `D` of virtual time (e.g. 1h; 0: never), and reports how close each job's first forecast came to its start")
	fs.StringVar(&f.config, "config", "",
		"PhalanxConfiguration `FILE` whose scheduling section, shared with phalanx scheduler, sets these flags; flags given here win")
	fs.StringVar(&f.policy, "policy", strings.Join(sim.Policies, ","), "comma-separated `list` of policies to compare")
	fs.StringVar(&f.output, "output", "table", "output `format`: table or json")
	fs.StringVar(&f.plot, "plot", "", "also draw GPUs in use and jobs waiting over time into `FILE` (.svg or .png)")
	fs.StringVar(&f.jobsOut, "jobs-out", "", "also write a CSV record per job and policy into `FILE` (times, state, wait, completion time, preemptions, when nodes were reserved for it)")
	return fs
}

func simulateUsage(out io.Writer) {
	fmt.Fprint(out, `Usage:
  phalanx simulate [--policy LIST] [--output table|json] [--plot FILE.svg] [--jobs-out FILE.csv]
  phalanx simulate --scenario FILE.yaml [flags]
  phalanx simulate --trace FILE.csv --nodes N --gpus-per-node K [--max-jobs M] [--nodes-per-rack R] [--queue-weights W] [flags]

Simulate runs jobs on a simulated cluster under each scheduling policy and
compares the outcomes:
  phalanx      gangs start whole or not at all, queues share by weight,
               priority then shortest estimate within a queue; reservation
               with backfill for gangs that waited long, preemption and
               reclaim, racks preferred
  pod-by-pod   each pod is placed on its own, as the default scheduler does
  fifo-gang    gangs start whole, strictly in submission order
  volcano      like Volcano's defaults: gangs, queues share by weight,
               priority; no reservation, no preemption, no topology
  volcano-binpack
               volcano with members packed, as its binpack plugin does
               when it scores GPUs (run only when named)

With no input flag it runs the built-in scenarios, the gang-scheduling
experiments users ran with TFJobs and with ACK, and shows the pods as
'kubectl get pods' would have, a timeline of each job and the metrics.

Flags:
`)
	fs := newSimulateFlagSet(&simulateFlags{})
	for _, n := range simulateFlagOrder {
		f := fs.Lookup(n)
		name, use := flag.UnquoteUsage(f)
		if name == "" { // a bool
			if f.DefValue == "true" {
				fmt.Fprintf(out, "  --%s\n    \t%s (default true; --%s=false turns it off)\n", f.Name, use, f.Name)
			} else {
				fmt.Fprintf(out, "  --%s\n    \t%s (default false; --%s turns it on)\n", f.Name, use, f.Name)
			}
			continue
		}
		fmt.Fprintf(out, "  --%s %s\n    \t%s", f.Name, name, use)
		if f.DefValue != "" && f.DefValue != "0" {
			fmt.Fprintf(out, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(out)
	}
}

// usageError is a problem with the command line rather than with the input.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// parseSimulate checks args and returns the configuration, flag.ErrHelp for
// -h, or a *usageError.
func parseSimulate(args []string) (simulateConfig, error) {
	var f simulateFlags
	fs := newSimulateFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return simulateConfig{}, err
		}
		return simulateConfig{}, &usageError{parseHint(fs, err)}
	}
	if fs.NArg() > 0 {
		return simulateConfig{}, usagef("unexpected argument %q (inputs are given with --trace or --scenario)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if given["hold-failed"] && given["hold-failed-member"] {
		return simulateConfig{}, usagef("--hold-failed and --hold-failed-member are one setting: give one of them")
	}
	if f.config != "" {
		if err := applyConfig(fs, f.config, "simulate"); err != nil {
			return simulateConfig{}, usagef("%v", err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	cfg := simulateConfig{trace: f.trace, scenario: f.scenario, output: f.output, plot: f.plot, jobsOut: f.jobsOut,
		options: map[string]string{}}
	fs.VisitAll(func(fl *flag.Flag) { cfg.options[fl.Name] = fl.Value.String() })
	holdFailedName := "hold-failed"
	if set["hold-failed-member"] {
		holdFailedName = "hold-failed-member"
	}
	for _, d := range []struct {
		name  string
		value time.Duration
		to    *int64
	}{
		{"reserve-after", f.reserveAfter, &cfg.opt.ReserveAfter},
		{"reserve-ahead", f.reserveAhead, &cfg.opt.ReserveAhead},
		{"reserve-by-work", f.reserveByWork, &cfg.opt.ReserveByWork},
		{"grace-period", f.gracePeriod, &cfg.opt.GracePeriod},
		{holdFailedName, f.holdFailed, &cfg.opt.HoldFailed},
		{"reclaim-after", f.reclaimAfter, &cfg.opt.ReclaimAfter},
		{"preempt-min-runtime", f.preemptMinRuntime, &cfg.opt.PreemptMinRuntime},
		{"reclaim-min-runtime", f.reclaimMinRuntime, &cfg.opt.ReclaimMinRuntime},
	} {
		if d.value < 0 {
			return cfg, usagef("--%s must not be negative", d.name)
		}
		if d.value%time.Second != 0 {
			return cfg, usagef("--%s %s: give whole seconds", d.name, d.value)
		}
		*d.to = int64(d.value / time.Second)
		if *d.to == 0 {
			*d.to = -1 // sim.Options: 0 is the default, < 0 none
		}
	}
	if f.forecastEvery < 0 || f.forecastEvery%time.Second != 0 {
		return cfg, usagef("--forecast-every %s: give whole seconds, 0 or more", f.forecastEvery)
	}
	cfg.opt.ForecastEvery = int64(f.forecastEvery / time.Second)
	cfg.opt.NoPreemption = !f.preemption
	cfg.opt.ArrivalOrder = !f.shortestFirst
	if f.reservations < 1 || f.reservations > core.MaxReservations {
		return cfg, usagef("--reservations %d: give 1 to %d", f.reservations, core.MaxReservations)
	}
	cfg.opt.Reservations = f.reservations
	cfg.opt.ReclaimYoungerOnly = f.reclaimYoungerOnly
	cfg.opt.NoWeighLoss = !f.weighLoss
	cfg.opt.NoEstimateCorrection = !f.correctEstimates
	cfg.opt.FixedReserveAfter = !f.reserveAfterBacklog
	ee, byQueue, err := sim.ParseEstimateErrors(f.estimateError)
	if err != nil {
		return cfg, usagef("--estimate-error: %s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	cfg.opt.EstimateError, cfg.opt.QueueEstimateErrors = ee, byQueue
	switch {
	case set["trace"] && set["scenario"]:
		return cfg, usagef("--trace and --scenario are exclusive: give one input")
	case set["trace"] && f.trace == "", set["scenario"] && f.scenario == "":
		return cfg, usagef("--trace and --scenario need a file name")
	case set["trace"]:
		if !set["nodes"] || !set["gpus-per-node"] {
			return cfg, usagef("--trace needs --nodes and --gpus-per-node: the trace does not say what cluster it ran on")
		}
		for _, c := range []struct {
			flag     string
			value    int
			positive bool
		}{{"nodes", f.nodes, true}, {"gpus-per-node", f.gpusPerNode, true}, {"max-jobs", f.maxJobs, false}, {"nodes-per-rack", f.nodesPerRack, false}} {
			if c.value < 0 || c.positive && c.value == 0 {
				want := "more than 0"
				if !c.positive {
					want = "0 or more"
				}
				return cfg, usagef("--%s %d: give %s", c.flag, c.value, want)
			}
		}
		cfg.traceOpt = workload.TraceOptions{Nodes: f.nodes, GPUsPerNode: f.gpusPerNode, MaxJobs: f.maxJobs, NodesPerRack: f.nodesPerRack}
		if cfg.queueWeights, err = workload.ParseQueueWeights(f.queueWeights); err != nil {
			return cfg, usagef("--queue-weights: %s", strings.TrimPrefix(err.Error(), "workload: "))
		}
	default:
		for _, name := range []string{"nodes", "gpus-per-node", "max-jobs", "nodes-per-rack", "queue-weights"} {
			if set[name] {
				return cfg, usagef("--%s applies only to --trace", name)
			}
		}
	}
	policies, err := parsePolicies(f.policy)
	if err != nil {
		return cfg, err
	}
	cfg.policies = policies
	if f.output != "table" && f.output != "json" {
		return cfg, usagef("unknown --output %q: want table or json", f.output)
	}
	if set["plot"] {
		ext := strings.ToLower(filepath.Ext(f.plot))
		if ext != ".svg" && ext != ".png" {
			return cfg, usagef("--plot %q: the file name must end in .svg or .png", f.plot)
		}
	}
	if set["plot"] && f.plot == "" || set["jobs-out"] && f.jobsOut == "" {
		return cfg, usagef("--plot and --jobs-out need a file name")
	}
	if f.plot != "" && filepath.Clean(f.plot) == filepath.Clean(f.jobsOut) {
		return cfg, usagef("--plot and --jobs-out name the same file %q", f.plot)
	}
	for _, out := range []struct{ flag, path string }{{"plot", f.plot}, {"jobs-out", f.jobsOut}} {
		for _, in := range []struct{ flag, path string }{{"trace", f.trace}, {"scenario", f.scenario}, {"config", f.config}} {
			if out.path != "" && in.path != "" && sameFile(out.path, in.path) {
				return cfg, usagef("--%s %q is the --%s file: writing it would destroy the input", out.flag, out.path, in.flag)
			}
		}
	}
	return cfg, nil
}

// sameFile reports whether a and b name one file: the same path, or two
// paths to one existing file.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// outputs returns the files cfg writes besides stdout.
func (cfg simulateConfig) outputs() []string {
	var out []string
	for _, path := range []string{cfg.plot, cfg.jobsOut} {
		if path != "" {
			out = append(out, path)
		}
	}
	return out
}

// source says what cfg simulates, for --output json.
func (cfg simulateConfig) source() string {
	switch {
	case cfg.trace != "":
		return "trace " + cfg.trace
	case cfg.scenario != "":
		return "scenario " + cfg.scenario
	}
	return "built-in"
}

// writable checks, before a run that may take minutes, that a file can be
// created at path: it is not a folder, its folder exists and takes new
// files.
func writable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a folder", path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	} else if !st.IsDir() {
		return fmt.Errorf("%s: %s is not a folder", path, dir)
	}
	probe, err := os.CreateTemp(dir, ".phalanx-write-check-*")
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err // the probe's own name means nothing to the user
		}
		return fmt.Errorf("%s: cannot write in %s: %w", path, dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// parsePolicies splits a comma-separated list of policy names, checking
// every name.
func parsePolicies(list string) ([]string, error) {
	known := slices.Concat(sim.Policies, sim.MorePolicies)
	valid := strings.Join(known, ", ")
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, usagef("--policy %q has an empty name; valid policies: %s", list, valid)
		case !slices.Contains(known, name):
			return nil, usagef("unknown policy %q; valid policies: %s", name, valid)
		case slices.Contains(out, name):
			return nil, usagef("policy %q is listed twice", name)
		}
		out = append(out, name)
	}
	return out, nil
}

// runSimulate is `phalanx simulate args...`.
func runSimulate(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseSimulate(args)
	if errors.Is(err, flag.ErrHelp) {
		simulateUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "phalanx simulate: %v\nRun 'phalanx help simulate' for usage.\n", err)
		return 2
	}
	if err := simulate(cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "phalanx simulate: %v\n", err)
		return 1
	}
	return 0
}

// input is one workload to simulate and whether to record its runs.
type input struct {
	w      *workload.Workload
	record bool
}

// readInputs reads what cfg names: the built-in scenarios when it names
// nothing.
func readInputs(cfg simulateConfig) ([]input, error) {
	switch {
	case cfg.trace != "":
		w, err := workload.ReadTraceFile(cfg.trace, cfg.traceOpt)
		if err != nil {
			return nil, err
		}
		if err := cfg.queueWeights.Apply(w); err != nil {
			return nil, err
		}
		return []input{{w, false}}, nil
	case cfg.scenario != "":
		w, err := workload.ReadScenarioFile(cfg.scenario)
		if err != nil {
			return nil, err
		}
		return []input{{w, report.Recordable(w)}}, nil
	default:
		var out []input
		for _, w := range workload.Builtin() {
			out = append(out, input{w, true})
		}
		return out, nil
	}
}

// simulate runs cfg, writing reports to stdout and progress to stderr.
func simulate(cfg simulateConfig, stdout, stderr io.Writer) error {
	for _, path := range cfg.outputs() {
		if err := writable(path); err != nil {
			return err
		}
	}
	inputs, err := readInputs(cfg)
	if err != nil {
		return err
	}
	var cs []report.Comparison
	for _, in := range inputs {
		c, err := compare(in, cfg.policies, cfg.opt, stderr)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	if cfg.output == "json" {
		in := &report.Inputs{Source: cfg.source(), Policies: cfg.policies, Options: cfg.options}
		if err := report.WriteJSON(stdout, in, cs); err != nil {
			return err
		}
	} else {
		for i, c := range cs {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if err := writeTable(stdout, c, inputs[i].record); err != nil {
				return err
			}
		}
	}
	if cfg.plot != "" {
		if err := report.PlotFile(cfg.plot, cs); err != nil {
			return err
		}
		if cfg.output != "json" {
			fmt.Fprintf(stdout, "\nGPUs in use and jobs waiting over time: %s\n", cfg.plot)
		}
	}
	if cfg.jobsOut != "" {
		if err := report.WriteJobsFile(cfg.jobsOut, cs); err != nil {
			return err
		}
		if cfg.output != "json" {
			fmt.Fprintf(stdout, "Per-job records: %s\n", cfg.jobsOut)
		}
	}
	return nil
}

// writeTable writes one comparison: the whole story of a recorded run, the
// input's summary and the metrics otherwise.
func writeTable(out io.Writer, c report.Comparison, recorded bool) error {
	if recorded {
		return report.WriteStory(out, c)
	}
	if err := report.WriteSummary(out, c); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	return report.WriteTable(out, c)
}

// compare runs every policy over one input concurrently, each with opt
// (Record and Progress set per run), and returns the results in the order of
// policies, reporting progress on stderr.
func compare(in input, policies []string, opt sim.Options, stderr io.Writer) (report.Comparison, error) {
	c := report.Comparison{
		Workload: in.w,
		Results:  make([]*sim.Result, len(policies)),
		Wall:     make([]time.Duration, len(policies)),
	}
	errs := make([]error, len(policies))
	prog := startProgress(stderr, in.w.Name, policies, defaultTiming(stderr))
	var wg sync.WaitGroup
	for i, policy := range policies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			o := opt
			o.Record, o.Progress = in.record, prog.callback(i)
			res, err := sim.Run(in.w, policy, o)
			c.Wall[i] = time.Since(t0)
			c.Results[i], errs[i] = res, err
			prog.finish(i)
		}()
	}
	wg.Wait()
	prog.close()
	for i, err := range errs {
		if err != nil {
			return c, fmt.Errorf("%s under %s: %w", in.w.Name, policies[i], err)
		}
	}
	return c, nil
}
