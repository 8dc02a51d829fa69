package workload

// A trace is a CSV file with a header row naming at least the columns
// job_id, submit_time_s, duration_s, num_gpus and vc, in any order; other
// columns are ignored. Each data row is one job; its vc (virtual cluster)
// becomes its queue. The trace says how many GPUs a job needs, not how it
// splits into pods: that is the convention of ../shared/traces/README.md,
// implemented by splitPods.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TraceOptions describe the cluster a trace runs on and how much of it to read.
type TraceOptions struct {
	// Nodes and GPUsPerNode size the single node pool; Nodes must be in
	// [1, 1048576] and GPUsPerNode in [1, 1024].
	Nodes, GPUsPerNode int
	// MaxJobs, when > 0, reads only the first MaxJobs jobs (data rows); the
	// rest of the input is not read.
	MaxJobs int
	// NodesPerRack, when > 0, splits the pool into racks of that many nodes,
	// labelled DefaultRackLabel = "trace-rack-<i/NodesPerRack>", and makes
	// the rack the workload's topology level. It must not be negative.
	NodesPerRack int
}

// Per-GPU requests of a trace pod, and the shape of a trace node.
const (
	traceCPUPerGPU    = 1000    // milli-CPU
	traceMemoryPerGPU = 4 << 30 // bytes
	tracePoolName     = "trace"
	traceTaskRole     = "worker"
	traceRestRole     = "remainder"
	maxGPUsPerNode    = 1024
)

// The columns a trace must have.
var traceColumns = []string{"job_id", "submit_time_s", "duration_s", "num_gpus", "vc"}

// ReadTraceFile reads the CSV trace at path (see ReadTrace). Errors name the
// path as given and the line; the workload is named after the file's base name.
func ReadTraceFile(path string, opt TraceOptions) (*Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	w, err := ReadTrace(f, path, opt)
	if err != nil {
		return nil, err
	}
	w.Name = filepath.Base(path)
	return w, nil
}

// ReadTrace reads a CSV trace (format in ../shared/traces/README.md) from r
// and builds a workload on one node pool named "trace" of opt.Nodes nodes,
// each with opt.GPUsPerNode GPUs, max(64, 8*GPUs) CPUs, max(512Gi, 64Gi*GPUs)
// of memory and 110 pods. name names the input in the workload and in
// errors, which all read "name:line: problem".
//
// On success the workload has one queue (weight 1, no caps) per distinct vc
// in order of first appearance, and one job per row, sorted by submit time
// with ties in row order. A job of G GPUs is one pod of G GPUs when G <= K
// (K GPUs per node), else ceil(G/K) pods of K GPUs with the last taking the
// remainder; MinMember is the number of pods. Every pod also requests 1 CPU
// and 4Gi of memory per GPU. ReadTrace does not panic on any input.
func ReadTrace(r io.Reader, name string, opt TraceOptions) (*Workload, error) {
	if opt.Nodes < 1 || opt.Nodes > maxCount {
		return nil, fmt.Errorf("workload: %s: nodes must be between 1 and %d, got %d", name, maxCount, opt.Nodes)
	}
	if opt.GPUsPerNode < 1 || opt.GPUsPerNode > maxGPUsPerNode {
		return nil, fmt.Errorf("workload: %s: GPUs per node must be between 1 and %d, got %d", name, maxGPUsPerNode, opt.GPUsPerNode)
	}
	if opt.NodesPerRack < 0 {
		return nil, fmt.Errorf("workload: %s: nodes per rack must not be negative, got %d", name, opt.NodesPerRack)
	}
	k := int64(opt.GPUsPerNode)

	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // checked below, with a clearer message
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s:1: empty trace: the header %s is required", name, strings.Join(traceColumns, ","))
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	headerLine, _ := cr.FieldPos(0)
	col, err := traceHeader(name, headerLine, header)
	if err != nil {
		return nil, err
	}
	width := len(header)

	w := &Workload{
		Name:      name,
		Resources: []string{GPU},
		Pools: []NodePool{{
			Name:  tracePoolName,
			Count: opt.Nodes,
			Allocatable: map[string]int64{
				GPU:      k,
				"cpu":    max(64, 8*k) * 1000,
				"memory": max(512<<30, 64<<30*k),
				"pods":   DefaultPods,
			},
		}},
	}
	if opt.NodesPerRack > 0 {
		w.Pools[0].RackSize, w.Pools[0].RackLabel = opt.NodesPerRack, DefaultRackLabel
		w.Topology = []string{DefaultRackLabel}
	}
	seenQueue := map[string]bool{}
	firstLine := map[string]int{} // job_id -> line
	for opt.MaxJobs <= 0 || len(w.Jobs) < opt.MaxJobs {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != width {
			return nil, fmt.Errorf("%s:%d: %d field(s), the header has %d", name, line, len(rec), width)
		}
		job, err := traceJob(rec, col, k)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if first, dup := firstLine[job.ID]; dup {
			return nil, fmt.Errorf("%s:%d: duplicate job_id %q (first on line %d)", name, line, job.ID, first)
		}
		firstLine[job.ID] = line
		job.Source = name + ":" + strconv.Itoa(line)
		if !seenQueue[job.Queue] {
			seenQueue[job.Queue] = true
			w.Queues = append(w.Queues, Queue{Name: job.Queue, Weight: 1})
		}
		w.Jobs = append(w.Jobs, job)
	}
	sortJobs(w.Jobs)
	return w, nil
}

// traceHeader maps each required column to its index.
func traceHeader(name string, line int, header []string) (map[string]int, error) {
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // a byte order mark
		}
		if _, dup := col[h]; dup && h != "" {
			return nil, fmt.Errorf("%s:%d: column %q appears twice in the header", name, line, h)
		}
		col[h] = i
	}
	for _, c := range traceColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s:%d: the header lacks column %q (required: %s)", name, line, c, strings.Join(traceColumns, ","))
		}
	}
	return col, nil
}

// csvError turns an encoding/csv error into "name:line: problem".
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %w", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("workload: %s: %w", name, err)
}

// traceJob builds the job of one row; errors say what is wrong, not where.
func traceJob(rec []string, col map[string]int, k int64) (Job, error) {
	field := func(c string) string { return strings.TrimSpace(rec[col[c]]) }
	id, queue := field("job_id"), field("vc")
	if id == "" {
		return Job{}, errors.New("job_id is empty")
	}
	if queue == "" {
		return Job{}, errors.New("vc is empty")
	}
	submit, err := traceInt(field, "submit_time_s", maxSeconds)
	if err != nil {
		return Job{}, err
	}
	duration, err := traceInt(field, "duration_s", maxSeconds)
	if err != nil {
		return Job{}, err
	}
	gpus, err := traceInt(field, "num_gpus", maxCount)
	if err != nil {
		return Job{}, err
	}
	if gpus < 1 {
		return Job{}, fmt.Errorf("num_gpus is %d, a job needs at least 1", gpus)
	}
	j := Job{ID: id, Queue: queue, Submit: submit, Duration: duration, Tasks: splitPods(gpus, k)}
	j.MinMember = j.Members()
	return j, nil
}

// traceInt parses the named column as an integer in [0, limit].
func traceInt(field func(string) string, c string, limit int64) (int64, error) {
	s := field(c)
	if s == "" {
		return 0, fmt.Errorf("%s is empty", c)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not an integer", c, s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%s %d is negative", c, v)
	}
	if v > limit {
		return 0, fmt.Errorf("%s %d is more than %d", c, v, limit)
	}
	return v, nil
}

// splitPods splits a job of g GPUs into pods on nodes of k GPUs: one pod of
// g GPUs when g <= k, else ceil(g/k) pods, all of k GPUs but the last, which
// takes the remainder. Pods of equal size form one task ("worker"); a
// smaller last pod is a task of its own ("remainder").
func splitPods(g, k int64) []Task {
	if g <= k {
		return []Task{tracePod(traceTaskRole, 1, g)}
	}
	n := (g + k - 1) / k
	rest := g - (n-1)*k
	if rest == k {
		return []Task{tracePod(traceTaskRole, int(n), k)}
	}
	return []Task{tracePod(traceTaskRole, int(n-1), k), tracePod(traceRestRole, 1, rest)}
}

// tracePod is a task of n pods of g GPUs each, with 1 CPU and 4Gi of memory
// per GPU (at least one of each for a pod without GPUs).
func tracePod(role string, n int, g int64) Task {
	req := map[string]int64{
		"cpu":    max(g, 1) * traceCPUPerGPU,
		"memory": max(g, 1) * traceMemoryPerGPU,
	}
	if g > 0 {
		req[GPU] = g
	}
	return Task{Role: role, Replicas: n, Requests: req}
}
