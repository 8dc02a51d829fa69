package report

// This file rebuilds what `kubectl get pods` would have shown at a moment of
// a recorded run (sim.Options.Record). A pod exists from its job's
// submission. Its state is read from the last PodEvent at or before the
// moment, cross-checked with the job's outcome: no event yet means Pending;
// a pod bound while its job has not started holds its node but does nothing
// (Idle); a pod of a started job runs until the job completes; an evicted
// pod is Terminating on its node until its grace period ends, then Pending
// again (its job's controller recreates it) unless its job is done; a pod
// that died is Failed until its replacement is created, Pending. The pods of a
// job are named as the simulator names them, "<job>-<role>-<index>", which is
// also the tf-operator convention the users of the seed experiments saw.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// Phase is the state of one pod at one moment.
type Phase int

// Pod phases, from the user's point of view.
const (
	// Pending: not bound to any node.
	Pending Phase = iota
	// Idle: bound to a node, holding its resources, while the rest of its
	// job is not; kubectl shows such a pod Running, but it only waits.
	Idle
	// Running: its whole job runs.
	Running
	// Completed: its job finished.
	Completed
	// Terminating: evicted, still holding its node for its grace period.
	Terminating
	// Failed: it died while its job ran; its replacement is not created yet.
	Failed
)

// String names the phase.
func (p Phase) String() string {
	switch p {
	case Pending:
		return "Pending"
	case Idle:
		return "Idle"
	case Running:
		return "Running"
	case Completed:
		return "Completed"
	case Terminating:
		return "Terminating"
	case Failed:
		return "Failed"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// PodRow is one line of a pod view.
type PodRow struct {
	Name, Job string
	Phase     Phase
	// Node is where the pod is bound, "" when pending.
	Node string
	// GPUs is the pod's GPU request.
	GPUs int64
	// Age is how long ago its job was submitted.
	Age int64
	// Bound and Members count the pods of its job that hold a node, and all
	// of them, at the moment.
	Bound, Members int
}

// Status renders the row's phase in the words of `kubectl get pods`, with
// the truth kubectl hides: a pod of an incomplete gang is idle.
func (p PodRow) Status() string {
	switch p.Phase {
	case Idle:
		return fmt.Sprintf("Running (idle: only %d/%d pods of %s bound)", p.Bound, p.Members, p.Job)
	case Running:
		return "Running"
	case Completed, Terminating:
		return p.Phase.String()
	case Failed:
		return "Error"
	default:
		return "Pending"
	}
}

// podSpec is one pod of the workload.
type podSpec struct {
	name, job string
	gpus      int64
}

// podSpecs lists the pods of w's jobs submitted by time at, in input order,
// and the number of pods of each job.
func podSpecs(w *workload.Workload, at int64) ([]podSpec, map[string]int) {
	var pods []podSpec
	members := make(map[string]int)
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if j.Submit > at {
			continue
		}
		for _, t := range j.Tasks {
			for r := 0; r < t.Replicas; r++ {
				pods = append(pods, podSpec{workload.MemberName(j.ID, t.Role, r), j.ID, t.Requests[workload.GPU]})
			}
		}
		members[j.ID] = j.Members()
	}
	return pods, members
}

// Pods returns the pod view of res at time at, just after everything that
// happened at that time: the pods of the jobs submitted by then, in input
// order, then any pod the events name that the workload does not (there
// should be none). res must have been recorded with sim.Options.Record.
func Pods(w *workload.Workload, res *sim.Result, at int64) []PodRow {
	last := make(map[string]sim.PodEvent)
	for _, e := range res.Events {
		if e.Time <= at && e.Pod != "" { // "waiting" events name a job, not a pod
			last[e.Pod] = e
		}
	}
	outcome := make(map[string]*sim.JobOutcome, len(res.Jobs))
	for i := range res.Jobs {
		outcome[res.Jobs[i].ID] = &res.Jobs[i]
	}
	specs, members := podSpecs(w, at)
	known := make(map[string]bool, len(specs))
	for _, s := range specs {
		known[s.name] = true
	}
	var extra []string
	for pod, e := range last {
		if !known[pod] {
			extra = append(extra, pod)
			specs = append(specs, podSpec{name: pod, job: e.Job})
		}
	}
	slices.Sort(extra)

	rows := make([]PodRow, 0, len(specs))
	bound := make(map[string]int)
	for _, s := range specs {
		row := PodRow{Name: s.name, Job: s.job, GPUs: s.gpus, Members: members[s.job]}
		if o := outcome[s.job]; o != nil {
			row.Age = at - o.Submit
			if row.Members == 0 {
				row.Members = o.Members
			}
		}
		if e, ok := last[s.name]; ok && e.Kind != "" {
			row.Phase = phase(e.Kind, outcome[s.job], at)
			if row.Phase != Pending {
				row.Node = e.Node
			}
		}
		if row.Phase == Idle || row.Phase == Running {
			bound[s.job]++
		}
		rows = append(rows, row)
	}
	for i := range rows {
		rows[i].Bound = bound[rows[i].Job]
	}
	return rows
}

// phase is the phase of a pod whose last event is of the given kind.
func phase(kind string, o *sim.JobOutcome, at int64) Phase {
	switch kind {
	case "evicted":
		return Terminating
	case "failed":
		return Failed
	case "deleted", "replaced":
		if o != nil && o.Finish >= 0 && o.Finish <= at {
			return Completed
		}
		return Pending
	}
	switch {
	case kind == "completed" || o != nil && o.Finish >= 0 && o.Finish <= at:
		return Completed
	case kind == "running" || o != nil && o.Start >= 0 && o.Start <= at:
		return Running
	default:
		return Idle
	}
}

// WritePods writes rows as `kubectl get pods -o wide` would, indented.
func WritePods(out io.Writer, rows []PodRow, indent string) error {
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "%sNAME\tSTATUS\tAGE\tNODE\n", indent)
	for _, r := range rows {
		node := r.Node
		if node == "" {
			node = "<none>"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", indent, r.Name, r.Status(), Instant(r.Age), node)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// GPUCounts is what a pod view says about GPUs.
type GPUCounts struct {
	// Running: held by running pods; Idle: by idle pods; Terminating: by
	// evicted pods not gone yet; Free: the rest of the capacity that joined
	// by then.
	Running, Idle, Terminating, Free int64
}

// GPUsAt sums what the view rows, taken at time at, say about GPUs.
func GPUsAt(w *workload.Workload, rows []PodRow, at int64) GPUCounts {
	var c GPUCounts
	for _, r := range rows {
		switch r.Phase {
		case Running:
			c.Running += r.GPUs
		case Idle:
			c.Idle += r.GPUs
		case Terminating:
			c.Terminating += r.GPUs
		}
	}
	c.Free = capacity(w, at) - c.Running - c.Idle - c.Terminating
	return c
}

// Moment is a time worth a pod view, and why.
type Moment struct {
	At  int64
	Why string
}

// Moments returns when the pod views of a scenario are taken: just after the
// last submission, when every pod exists and the policies have made their
// first choice about the last job; then just after each later node pool
// joins, when waiting gangs may fit.
func Moments(w *workload.Workload) []Moment {
	if len(w.Jobs) == 0 {
		return nil
	}
	lastSubmit := w.Jobs[0].Submit
	for _, j := range w.Jobs {
		lastSubmit = max(lastSubmit, j.Submit)
	}
	var ids []string
	for _, j := range w.Jobs {
		if j.Submit == lastSubmit {
			ids = append(ids, j.ID)
		}
	}
	what := "submission of " + strings.Join(ids, ", ")
	if len(ids) == len(w.Jobs) {
		what = "submission of every job"
	}
	out := []Moment{{lastSubmit, "just after the " + what}}
	pools := slices.Clone(w.Pools)
	slices.SortStableFunc(pools, func(a, b workload.NodePool) int { return cmp.Compare(a.At, b.At) })
	for _, p := range pools {
		if p.At <= lastSubmit {
			continue
		}
		why := fmt.Sprintf("node pool %s joins (+%s, +%s)", p.Name, plural(int64(p.Count), "node"), plural(int64(p.Count)*p.Allocatable[workload.GPU], "GPU"))
		if n := len(out); out[n-1].At == p.At {
			out[n-1].Why += " and " + why
		} else {
			out = append(out, Moment{p.At, "just after " + why})
		}
	}
	return out
}
