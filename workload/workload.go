// Package workload reads what the simulator runs: a cluster (node pools that
// may join over time), queues and jobs. It parses the two input formats, GPU
// cluster traces in CSV and scenario files in YAML, and validates them so
// that every error names the file, the line and the problem.
//
// Resource amounts are integers keyed by Kubernetes resource name: "cpu" in
// milli-CPU, "memory" in bytes, "pods", and extended resources such as
// "nvidia.com/gpu" in device counts.
package workload

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/core"
)

// GPU is the accelerator resource the simulator counts for utilisation.
const GPU = "nvidia.com/gpu"

// DefaultRackLabel is the node label that names a node's rack when a pool
// is split into racks and names no label of its own.
const DefaultRackLabel = "phalanx.dev/rack"

// GPUModelLabel is the node label that names a node's GPU model, as NVIDIA's
// GPU feature discovery sets it: a pool's gpuModel becomes this label, and a
// job's gpuModel a nodeSelector on it.
const GPUModelLabel = "nvidia.com/gpu.product"

// Workload is one simulator input: a cluster and the jobs submitted to it.
type Workload struct {
	// Name identifies the input in reports: a file name or a built-in name.
	Name string
	// Description says in one or two sentences what the input shows
	// (built-in scenarios); may be empty.
	Description string
	// Resources lists the extended resources used anywhere in the input
	// (e.g. "nvidia.com/gpu"), sorted, without "cpu", "memory" and "pods".
	Resources []string
	// Pools are the node pools, in input order.
	Pools []NodePool
	// Queues, in input order. Every job's queue is among them.
	Queues []Queue
	// Jobs sorted by Submit, ties in input order.
	Jobs []Job
	// Topology lists the node label keys of the cluster's topology levels,
	// broadest first: the rack label when some pool is split into racks,
	// else nothing.
	Topology []string
}

// NodePool is Count identical nodes that join the cluster at time At.
type NodePool struct {
	Name  string
	Count int
	// At is when the pool joins, in seconds of virtual time.
	At          int64
	Allocatable map[string]int64
	Labels      map[string]string
	Taints      []core.Taint
	// RackSize, when > 0, splits the pool's nodes, in order, into racks of
	// RackSize nodes: node i gets label RackLabel with value
	// "<Name>-rack-<i/RackSize>", besides Labels.
	RackSize  int
	RackLabel string
}

// RackOf returns the rack label value of node i of the pool, or "" when the
// pool is not split into racks.
func (p *NodePool) RackOf(i int) string {
	if p.RackSize <= 0 {
		return ""
	}
	return fmt.Sprintf("%s-rack-%d", p.Name, i/p.RackSize)
}

// Queue is a tenant queue.
type Queue struct {
	Name   string
	Weight int64
	// Capability caps what the queue may hold; resources absent from the
	// map are not capped. Nil means no cap at all.
	Capability map[string]int64
	// Guarantee is what the queue deserves whatever the weights say.
	Guarantee map[string]int64
	// NoReclaim keeps other queues from reclaiming what this queue's jobs
	// hold (scenario field reclaimable: false).
	NoReclaim bool
	// StrictOrder runs the queue's jobs strictly in order (scenario field
	// strictOrder: true).
	StrictOrder bool
}

// Job is one gang: its tasks' replicas are its members.
type Job struct {
	ID       string
	Queue    string
	Priority int32
	// Submit is when the job's pods are created; Duration how long the job
	// runs once all of its MinMember members run. Both in seconds.
	Submit, Duration int64
	// MinMember is how many members must run together; the parsers default
	// it to the total of the tasks' replicas.
	MinMember int
	Tasks     []Task
	// RequiredTopology, when not empty, is a node label key of a topology
	// level: the members the job needs to start must run within one domain
	// of that level (e.g. one rack), or the job waits.
	RequiredTopology string
	// GPUModel, when not empty, restricts every member to nodes whose
	// GPUModelLabel has this value.
	GPUModel string
	// Failures are members that fail while the job runs, in input order.
	Failures []Failure
	// Source is "file:line" of the job's definition, for messages.
	Source string
}

// Failure is one member of a running job failing (its pod dies). The
// simulator frees the member's resources at once and creates a replacement
// member RestartAfter seconds later; the rest of the job keeps its members.
type Failure struct {
	// At is when the member fails, in seconds after the job starts running
	// (each time it starts, until the failure has happened once).
	At int64
	// Member indexes the job's members: the replicas of its tasks in order,
	// from 0.
	Member int
	// RestartAfter is how long after the failure the replacement member is
	// created.
	RestartAfter int64
}

// Task is a role of a job (e.g. ps, worker) with identical replicas.
type Task struct {
	Role         string
	Replicas     int
	Requests     map[string]int64
	NodeSelector map[string]string
	Affinity     []core.NodeSelectorTerm
	Tolerations  []core.Toleration
}

// MemberName is the name of replica r of a job's task role: the pod name
// the simulator and its reports use.
func MemberName(job, role string, r int) string { return fmt.Sprintf("%s-%s-%d", job, role, r) }

// Members returns the number of members of the job (sum of replicas).
func (j *Job) Members() int {
	n := 0
	for _, t := range j.Tasks {
		n += t.Replicas
	}
	return n
}

// Total returns the job's total request of the named resource.
func (j *Job) Total(resource string) int64 {
	var n int64
	for _, t := range j.Tasks {
		n += int64(t.Replicas) * t.Requests[resource]
	}
	return n
}
