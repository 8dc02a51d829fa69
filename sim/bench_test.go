package sim

// Benchmarks over the whole Microsoft Philly trace (82k jobs, see
// ../../shared/traces/README.md). PHALANX_TRACE overrides the file. They skip
// when the file or the trace parser is not available.
//
//	go test -run '^$' -bench Philly -benchtime 1x ./sim

import (
	"fmt"
	"os"
	"testing"

	"github.com/phalanx-sched/phalanx/workload"
)

const phillyTrace = "../../shared/traces/philly_jobs.csv"

func readPhilly(b *testing.B, nodes, gpusPerNode int) *workload.Workload {
	b.Helper()
	path := phillyTrace
	if p := os.Getenv("PHALANX_TRACE"); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("trace not available: %v", err)
	}
	w, err := workload.ReadTraceFile(path, workload.TraceOptions{Nodes: nodes, GPUsPerNode: gpusPerNode})
	if err != nil {
		b.Skipf("trace parser not available: %v", err)
	}
	return w
}

func benchRun(b *testing.B, w *workload.Workload, policy string) {
	b.Helper()
	var r *Result
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if r, err = Run(w, policy, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(w.Jobs))*float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(r.Metrics.JobsCompleted), "completed")
	b.ReportMetric(float64(r.Metrics.StuckJobs), "stuck")
}

// BenchmarkPhilly: the whole trace on 250 nodes x 8 GPUs under phalanx.
func BenchmarkPhilly(b *testing.B) {
	benchRun(b, readPhilly(b, 250, 8), PolicyPhalanx)
}

// BenchmarkPhillyPolicies: every policy on 250 x 8 and on 64 x 8 GPUs.
func BenchmarkPhillyPolicies(b *testing.B) {
	for _, nodes := range []int{250, 64} {
		w := readPhilly(b, nodes, 8)
		for _, policy := range Policies {
			b.Run(fmt.Sprintf("%s/%dx8", policy, nodes), func(b *testing.B) { benchRun(b, w, policy) })
		}
	}
}
