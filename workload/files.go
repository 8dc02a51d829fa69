package workload

import "errors"

// TraceOptions describe the cluster a trace runs on and how much of it to read.
type TraceOptions struct {
	// Nodes and GPUsPerNode size the single node pool; both must be >= 1.
	Nodes, GPUsPerNode int
	// MaxJobs, when > 0, reads only the first MaxJobs jobs.
	MaxJobs int
}

// ReadTraceFile reads a CSV trace (see ../shared/traces/README.md) and builds
// a workload on a cluster of opt.Nodes nodes with opt.GPUsPerNode GPUs each.
func ReadTraceFile(path string, opt TraceOptions) (*Workload, error) {
	return nil, errors.New("workload: not implemented yet")
}

// ReadScenarioFile reads a YAML scenario file.
func ReadScenarioFile(path string) (*Workload, error) {
	return nil, errors.New("workload: not implemented yet")
}

// Builtin returns the built-in scenarios `phalanx simulate` runs with no
// arguments: the seed experiments.
func Builtin() []*Workload { return nil }
