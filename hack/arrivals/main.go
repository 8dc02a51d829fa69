// Command arrivals splits the per-job records of `phalanx simulate
// --jobs-out` by when the jobs arrived, to tell a policy that loses over a
// whole trace from one that loses only where the trace ends.
//
// A finite trace ends: after its last arrival, a gang that starts delays no
// job that is yet to come. A policy that leaves its biggest gangs for then
// shows a lower mean completion time than one that serves them while jobs
// still arrive, though on a cluster that never stops receiving work both
// pay for the same gangs. For each input and policy of the records,
// arrivals prints, over all jobs, over those that arrived in the first
// -split of the span of arrivals (from the first submission to the last)
// and over those that arrived after:
//
//   - the mean completion time of the jobs completed;
//   - the p99 wait of the jobs of 8+ GPUs that started (sim.Percentile, as
//     `phalanx simulate` computes it);
//
// and the number of jobs in each part, and, over all jobs, the share of the
// work of the jobs of 8+ GPUs (GPUs times run time) that started after the
// last arrival.
//
//	go run ./hack/arrivals [-split 0.9] jobs.csv...
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/phalanx-sched/phalanx/report"
	"github.com/phalanx-sched/phalanx/sim"
)

func main() {
	fs := flag.NewFlagSet("arrivals", flag.ExitOnError)
	split := fs.Float64("split", 0.9, "the share of the span of arrivals in the first part (0 < split < 1)")
	fs.Parse(os.Args[1:])
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: arrivals [-split 0.9] jobs.csv...")
		os.Exit(2)
	}
	if !(*split > 0 && *split < 1) {
		fmt.Fprintf(os.Stderr, "arrivals: -split %v: must be above 0 and below 1\n", *split)
		os.Exit(2)
	}
	var runs []run
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "arrivals:", err)
			os.Exit(1)
		}
		rs, err := read(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "arrivals: %s: %v\n", path, err)
			os.Exit(1)
		}
		runs = append(runs, rs...)
	}
	if err := write(os.Stdout, runs, *split); err != nil {
		fmt.Fprintln(os.Stderr, "arrivals:", err)
		os.Exit(1)
	}
}

// job is what arrivals reads of one record.
type job struct {
	gpus, submit, start, duration int64 // start -1: never started
	jct                           float64
	completed                     bool
}

// run is one policy's records of one input, in the file's order.
type run struct {
	input, policy string
	jobs          []job
}

// read parses one file of records into its runs, in the order they first
// appear.
func read(r io.Reader) ([]run, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	col := map[string]int{}
	for i, name := range header {
		col[name] = i
	}
	for _, name := range []string{"input", "policy", "gpus", "submit_s", "start_s", "duration_s", "state", "jct_s"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("no column %q: not a file of `phalanx simulate --jobs-out`", name)
		}
	}
	var runs []run
	at := map[[2]string]int{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		j, err := parseJob(rec, col)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		key := [2]string{rec[col["input"]], rec[col["policy"]]}
		i, ok := at[key]
		if !ok {
			i = len(runs)
			at[key] = i
			runs = append(runs, run{input: key[0], policy: key[1]})
		}
		runs[i].jobs = append(runs[i].jobs, j)
	}
	if len(runs) == 0 {
		return nil, errors.New("no record")
	}
	return runs, nil
}

// parseJob reads the columns of one record that arrivals uses.
func parseJob(rec []string, col map[string]int) (job, error) {
	num := func(name string) (int64, error) {
		v, err := strconv.ParseInt(rec[col[name]], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %q: not a whole number", name, rec[col[name]])
		}
		return v, nil
	}
	j := job{start: -1}
	var err error
	if j.gpus, err = num("gpus"); err != nil {
		return j, err
	}
	if j.submit, err = num("submit_s"); err != nil {
		return j, err
	}
	if j.duration, err = num("duration_s"); err != nil {
		return j, err
	}
	if rec[col["start_s"]] != "" {
		if j.start, err = num("start_s"); err != nil {
			return j, err
		}
	}
	if j.completed = rec[col["state"]] == "Completed"; j.completed {
		jct, err := num("jct_s")
		if err != nil {
			return j, err
		}
		j.jct = float64(jct)
	}
	return j, nil
}

// part is the figures over some of a run's jobs.
type part struct {
	jobs       int
	meanJCT    *float64 // nil: none completed
	p99WaitBig *float64 // nil: no job of 8+ GPUs started
}

// figures returns the figures over the jobs of js that keep selects.
func figures(js []job, keep func(job) bool) part {
	var p part
	var sum float64
	var completed int
	var waits []float64
	for _, j := range js {
		if !keep(j) {
			continue
		}
		p.jobs++
		if j.completed {
			sum += j.jct
			completed++
		}
		if j.start >= 0 && j.gpus >= 8 {
			waits = append(waits, float64(j.start-j.submit))
		}
	}
	if completed > 0 {
		m := sum / float64(completed)
		p.meanJCT = &m
	}
	slices.Sort(waits)
	p.p99WaitBig = sim.Percentile(waits, 99)
	return p
}

// analysis is one run split at its cut.
type analysis struct {
	all, first, last part
	// bigAfter is the share of the work of the jobs of 8+ GPUs that
	// started after the last arrival; nil when there is no such work.
	bigAfter *float64
}

// analyse splits r's jobs at first + split of the span from the first
// submission to the last.
func analyse(r run, split float64) analysis {
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, j := range r.jobs {
		first, last = min(first, j.submit), max(last, j.submit)
	}
	cut := float64(first) + split*float64(last-first)
	a := analysis{
		all:   figures(r.jobs, func(job) bool { return true }),
		first: figures(r.jobs, func(j job) bool { return float64(j.submit) <= cut }),
		last:  figures(r.jobs, func(j job) bool { return float64(j.submit) > cut }),
	}
	var work, after float64
	for _, j := range r.jobs {
		if j.gpus < 8 {
			continue
		}
		w := float64(j.gpus) * float64(j.duration)
		work += w
		if j.start > last {
			after += w
		}
	}
	if work > 0 {
		share := after / work
		a.bigAfter = &share
	}
	return a
}

// write prints one table of every run, by input then policy, as they came.
func write(out io.Writer, runs []run, split float64) error {
	fmt.Fprintf(out, "Jobs by arrival: the first %s of the span of arrivals, and the rest.\n\n", strconv.FormatFloat(split, 'f', -1, 64))
	fmt.Fprintln(out, "| input | policy | mean JCT: all | first part | rest | p99 wait of 8+ GPU jobs: all | first part | rest | jobs: first part, rest | 8+ GPU work started after the last arrival |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		a := analyse(r, split)
		share := "—"
		if a.bigAfter != nil {
			share = fmt.Sprintf("%.0f%%", 100**a.bigAfter)
		}
		if _, err := fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s | %d, %d | %s |\n", r.input, r.policy,
			duration(a.all.meanJCT), duration(a.first.meanJCT), duration(a.last.meanJCT),
			duration(a.all.p99WaitBig), duration(a.first.p99WaitBig), duration(a.last.p99WaitBig),
			a.first.jobs, a.last.jobs, share); err != nil {
			return err
		}
	}
	return nil
}

// duration formats a figure in seconds as the simulator's tables do, "—"
// for none.
func duration(s *float64) string {
	if s == nil {
		return "—"
	}
	return report.Duration(*s)
}
