package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/phalanx-sched/phalanx/workload"
)

// gen-trace writes a synthetic trace (workload.GenerateTrace) that phalanx
// simulate --trace reads.

type genTraceFlags struct {
	seed               uint64
	jobs, gpus, queues int
	load, out          string
}

func newGenTraceFlagSet(f *genTraceFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("phalanx gen-trace", flag.ContinueOnError)
	fs.Uint64Var(&f.seed, "seed", 1, "`N` selects the trace: the same flags give the same file")
	fs.IntVar(&f.jobs, "jobs", 20000, "`N` jobs")
	fs.IntVar(&f.gpus, "gpus", 512, "the load is relative to a cluster of `G` GPUs, at least 64, the largest job drawn (simulate it with --nodes and --gpus-per-node to match)")
	fs.StringVar(&f.load, "load", "overloaded",
		"offered load `L` while jobs arrive: light (0.6), overloaded (1.3) or a number (GPU-seconds asked for over GPU-seconds there are)")
	fs.IntVar(&f.queues, "queues", 6, "`Q` queues (the vc column q0, q1, ...), q0 with the most jobs")
	fs.StringVar(&f.out, "out", "", "write to `FILE.csv` (default: standard output)")
	return fs
}

func genTraceUsage(out io.Writer) {
	fmt.Fprint(out, `Usage: phalanx gen-trace [flags]

Writes a synthetic GPU cluster trace, in the CSV format of the Philly trace
(job_id, submit_time_s, duration_s, num_gpus, vc), for phalanx simulate
--trace. 75% of jobs take 1 GPU (a median of 20 minutes), 10% 2 or 4 GPUs (1
hour), 15% are gangs of 8 to 64 GPUs (4 hours); run times are log-normal
with a long tail. Queues get jobs in proportion 1, 1/2, 1/3, ..., the odd
ones twice the gangs of the even ones, and each alternates busy and quiet
periods of about 12 hours. docs/evaluation.md uses it.

Flags:
`)
	var f genTraceFlags
	fs := newGenTraceFlagSet(&f)
	fs.SetOutput(out)
	fs.PrintDefaults()
}

func runGenTrace(args []string, stdout, stderr io.Writer) int {
	var f genTraceFlags
	fs := newGenTraceFlagSet(&f)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			genTraceUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "phalanx gen-trace: %s\n", parseHint(fs, err))
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "phalanx gen-trace: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	load, err := workload.ParseLoad(f.load)
	if err != nil {
		fmt.Fprintf(stderr, "phalanx gen-trace: --load: %v\n", err)
		return 2
	}
	opt := workload.GenOptions{Seed: f.seed, Jobs: f.jobs, GPUs: f.gpus, Load: load, Queues: f.queues}
	w := stdout
	var file *os.File
	if f.out != "" {
		if file, err = os.Create(f.out); err != nil {
			fmt.Fprintf(stderr, "phalanx gen-trace: %v\n", err)
			return 1
		}
		w = file
	}
	bw := bufio.NewWriter(w)
	err = workload.GenerateTrace(bw, opt)
	if err == nil {
		err = bw.Flush()
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "phalanx gen-trace: %v\n", err)
		return 1
	}
	return 0
}
