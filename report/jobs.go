package report

// This file writes the per-job records of `phalanx simulate --jobs-out`.

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
)

// JobColumns are the columns of WriteJobsCSV, in order: the input and the
// policy, the job's identity and size, its times in seconds of virtual time
// (start and end empty when it never started or never ended), where it
// ended up, its wait (start - submit) and completion time (end - submit),
// how many times preemption took members from it, the GPU-seconds it
// received while running (runs thrown away included), why a job that
// never started waited, when nodes were first reserved for it (empty if
// never), and, with --forecast-every, when its start was first forecast
// and the start forecast then (empty if none), and when that forecast gave
// nodes to be first reserved for it (empty if never). Later columns come last, so
// that the columns before keep their places.
var JobColumns = []string{"input", "policy", "job", "queue", "gpus", "members", "placed", "submit_s", "start_s", "end_s",
	"duration_s", "state", "wait_s", "jct_s", "preemptions", "gpu_s", "reason", "reserved_s", "forecast_at_s", "forecast_start_s",
	"forecast_reserved_s"}

// WriteJobsCSV writes one CSV record per job of every result of every
// comparison, after a header of JobColumns. Empty cells mean "none".
func WriteJobsCSV(out io.Writer, cs []Comparison) error {
	w := csv.NewWriter(out)
	if err := w.Write(JobColumns); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	ifSet := func(n int64) string {
		if n < 0 {
			return ""
		}
		return itoa(n)
	}
	for _, c := range cs {
		for _, r := range c.Results {
			for _, o := range r.Jobs {
				var wait, jct string
				if o.Start >= 0 {
					wait = itoa(o.Start - o.Submit)
				}
				if o.Finish >= 0 {
					jct = itoa(o.Finish - o.Submit)
				}
				rec := []string{c.Workload.Name, r.Policy, o.ID, o.Queue, itoa(o.GPUs), strconv.Itoa(o.Members), strconv.Itoa(o.Placed),
					itoa(o.Submit), ifSet(o.Start), ifSet(o.Finish), itoa(o.Duration), string(o.State), wait, jct,
					strconv.Itoa(o.Preemptions), itoa(o.GPUSeconds), o.Reason, ifSet(o.Reserved),
					ifSet(o.ForecastAt), ifSet(o.ForecastStart), ifSet(o.ForecastReserved)}
				if err := w.Write(rec); err != nil {
					return fmt.Errorf("report: %w", err)
				}
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// WriteJobsFile writes WriteJobsCSV's records into the file at path.
func WriteJobsFile(path string, cs []Comparison) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := WriteJobsCSV(f, cs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
