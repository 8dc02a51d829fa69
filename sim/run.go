package sim

// This file is the entry point: it builds the state and the policy, runs the
// event loop (engine.go) and assembles the Result (job outcomes here, figures
// in metrics.go).

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

// Options tune a run.
type Options struct {
	// Record keeps the per-member timeline in Result.Events (small inputs).
	Record bool
	// Progress, if set, is called now and then with the number of events
	// processed and the total expected (at most about every 1% of them), and
	// once at the end with done == total.
	Progress func(done, total int)
	// ReserveAfter, for the phalanx policy, is how long a gang waits before
	// nodes are reserved for it (seconds; 0: DefaultReserveAfter; < 0: no
	// reservations). Trace durations serve as the run-time estimates.
	ReserveAfter int64
}

// DefaultReserveAfter is the wait after which the phalanx policy reserves
// nodes for a gang.
const DefaultReserveAfter = 3600

// Run simulates the workload under the named policy. The Result depends on
// nothing but its arguments: the same input gives the same Result. Run does
// not modify w and may be called concurrently on the same workload.
func Run(w *workload.Workload, policy string, opt Options) (*Result, error) {
	var sched cycler
	switch policy {
	case PolicyPhalanx, PolicyFIFOGang:
		ordering := core.FairShare
		if policy == PolicyFIFOGang {
			ordering = core.StrictFIFO
		}
		cfg := core.Config{GPU: workload.GPU, Ordering: ordering, Topology: w.Topology}
		if policy == PolicyPhalanx {
			cfg.ReserveAfter = opt.ReserveAfter
			if cfg.ReserveAfter == 0 {
				cfg.ReserveAfter = DefaultReserveAfter
			}
			cfg.ReserveAfter = max(cfg.ReserveAfter, 0)
		}
		s, err := core.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		sched = s
	case PolicyPodByPod:
	default:
		return nil, fmt.Errorf("sim: unknown policy %q (want one of %v)", policy, Policies)
	}
	return run(w, policy, sched, opt)
}

// run simulates w with the gang scheduler sched, or pod by pod when sched is
// nil.
func run(w *workload.Workload, name string, sched cycler, opt Options) (*Result, error) {
	s, err := newState(w, opt.Record)
	if err != nil {
		return nil, err
	}
	var p policy
	if sched != nil {
		gp := newGangPolicy(s, sched)
		if cs, ok := sched.(*core.Scheduler); ok {
			gp.reserve = cs.Reserves()
		}
		p = gp
	} else {
		p = newPodByPod(s)
	}
	last, err := simulate(s, p, opt)
	if err != nil {
		return nil, err
	}
	end := last
	if s.completed > 0 {
		end = s.lastCompletion
	}
	jobs := outcomes(s, p)
	return &Result{
		Policy:  name,
		Metrics: metrics(s, jobs, end),
		Jobs:    jobs,
		GPUs:    s.samples,
		Events:  s.events,
	}, nil
}

// outcomes returns one JobOutcome per job, in input order.
func outcomes(s *state, p policy) []JobOutcome {
	fit := newFitter(s.snap.Nodes, s.w.Topology)
	out := make([]JobOutcome, len(s.jobs))
	for i := range s.jobs {
		j := &s.jobs[i]
		o := JobOutcome{
			ID:      j.spec.ID,
			Queue:   j.spec.Queue,
			GPUs:    j.spec.Total(workload.GPU),
			Submit:  j.spec.Submit,
			Start:   j.start,
			Finish:  -1,
			Placed:  j.placed,
			Members: len(j.members),
		}
		switch {
		case j.done:
			o.Finish, o.State, o.Placed = j.finish, JobCompleted, j.placedAtStart
		case fit.fits(j):
			o.State = JobStuck
		default:
			o.State = JobUnschedulable
		}
		if j.start < 0 {
			o.Reason = p.reason(j)
		}
		out[i] = o
	}
	return out
}
