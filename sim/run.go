package sim

// This file is the entry point: it builds the state and the policy, runs the
// event loop (engine.go) and assembles the Result (job outcomes here, figures
// in metrics.go).

import (
	"fmt"
	"slices"

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
	// reservations). Durations serve as the run-time estimates, made wrong
	// by EstimateError.
	ReserveAfter int64
	// FixedReserveAfter, for the phalanx policy, reserves once a gang has
	// waited ReserveAfter, however much work waits (core.Config.
	// ReserveAfterBacklog off; on by default).
	FixedReserveAfter bool
	// ReserveAhead, for the phalanx policy, is how long before a gang is
	// due (ReserveAfter, the backlog) nodes may be reserved for it, for a
	// reservation that starts no sooner than it is due (seconds; 0:
	// DefaultReserveAhead; < 0: only once it is due).
	ReserveAhead int64
	// Reservations, for the phalanx policy, is how many waiting gangs may
	// hold reservations at once (0: DefaultReservations).
	Reservations int
	// ReserveByWork, for the phalanx policy, is the most a gang's work
	// moves it back in line for a reservation (seconds; 0:
	// DefaultReserveByWork; < 0: by arrival; core.Config.ReserveByWork).
	ReserveByWork int64
	// ArrivalOrder makes the phalanx policy order gangs of equal priority
	// within a queue by arrival only, rather than shortest estimate first.
	ArrivalOrder bool
	// NoPreemption turns off preemption within a queue and reclaim across
	// queues for the phalanx policy (on by default).
	NoPreemption bool
	// ReclaimAfter, for the phalanx policy, is how long a gang waits before
	// it may reclaim from queues over their share (seconds; 0:
	// DefaultReclaimAfter; < 0: at once).
	ReclaimAfter int64
	// ReclaimYoungerOnly, for the phalanx policy, reclaims only from gangs
	// that arrived after the reclaiming gang.
	ReclaimYoungerOnly bool
	// PreemptMinRuntime and ReclaimMinRuntime, for the phalanx policy, are
	// how long a gang runs before it may be preempted within its queue or
	// reclaimed by another (seconds; 0: DefaultPreemptMinRuntime and
	// DefaultReclaimMinRuntime; < 0: no minimum).
	PreemptMinRuntime, ReclaimMinRuntime int64
	// NoWeighLoss, for the phalanx policy, evicts even when the victims
	// lose more run time than the preemptor gains (core.Config.WeighLoss,
	// on by default).
	NoWeighLoss bool
	// GracePeriod is how long an evicted member keeps its node before it is
	// freed (seconds; 0: DefaultGracePeriod; < 0: freed at once).
	GracePeriod int64
	// HoldFailed, for the phalanx policy, is how long what a failed member
	// of a running job freed is held for its replacement (seconds; 0:
	// DefaultHoldFailed; < 0: not held).
	HoldFailed int64
	// EstimateError makes the run-time estimates the scheduler gets differ
	// from the durations, from the times its errors give; empty, they are
	// exact.
	EstimateError EstimateErrors
	// QueueEstimateErrors, by queue name, replaces EstimateError for the
	// jobs of those queues (ParseEstimateErrors); each must be a queue of
	// the workload.
	QueueEstimateErrors map[string]EstimateErrors
	// NoEstimateCorrection, for the phalanx policy, gives the core the
	// estimates as declared, rather than corrected by how the queue's
	// latest completed jobs ran against theirs (core.EstimateFactor; on by
	// default).
	NoEstimateCorrection bool
	// ForecastEvery, for the phalanx policy, forecasts every waiting
	// gang's start as the scheduler does (core.Scheduler.Forecast over the
	// cycle's snapshot, its default horizon of a week, cycles at least a
	// minute apart), at the first cycle at least this many seconds after
	// the previous forecast, and keeps each job's first forecast to weigh
	// against its start (JobOutcome.ForecastAt, Metrics.Forecast); 0: none.
	ForecastEvery int64
}

// Defaults of Options.
const (
	// DefaultReserveAfter is the wait after which the phalanx policy
	// reserves nodes for a gang.
	DefaultReserveAfter = 86400 // config.DefaultReserveAfter
	// DefaultReserveAhead is how long before a gang is due the phalanx
	// policy may reserve nodes for it.
	DefaultReserveAhead = 2 * 86400 // config.DefaultReserveAhead
	// DefaultReservations is how many gangs the phalanx policy reserves
	// for at once.
	DefaultReservations = 4 // config.DefaultReservations
	// DefaultReserveByWork is the most a gang's work moves it back in line
	// for a reservation under the phalanx policy.
	DefaultReserveByWork = 86400 // config.DefaultReserveByWork
	// DefaultReclaimAfter is the wait after which a gang of the phalanx
	// policy may reclaim from other queues: none, as the scheduler's
	// default.
	DefaultReclaimAfter = 0
	// DefaultPreemptMinRuntime and DefaultReclaimMinRuntime are how long a
	// gang of the phalanx policy runs before it may be preempted or
	// reclaimed, as the scheduler's defaults (config.DefaultPreemptMinRuntime
	// and config.DefaultReclaimMinRuntime).
	DefaultPreemptMinRuntime = 0
	DefaultReclaimMinRuntime = 3600
	// DefaultGracePeriod is how long an evicted member terminates, as
	// Kubernetes' default terminationGracePeriodSeconds.
	DefaultGracePeriod = 30
	// DefaultHoldFailed is how long the phalanx policy holds a failed
	// member's resources for its replacement.
	DefaultHoldFailed = 300
)

// orDefault resolves the "0: default, < 0: none" convention of Options.
func orDefault(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func (o Options) gracePeriod() int64 { return orDefault(o.GracePeriod, DefaultGracePeriod) }

// Run simulates the workload under the named policy. The Result depends on
// nothing but its arguments: the same input gives the same Result. Run does
// not modify w and may be called concurrently on the same workload.
func Run(w *workload.Workload, policy string, opt Options) (*Result, error) {
	if policy == PolicyPodByPod {
		return run(w, policy, nil, gangOptions{}, opt)
	}
	cfg, gopt, err := gangPolicyConfig(w, policy, opt)
	if err != nil {
		return nil, err
	}
	s, err := core.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return run(w, policy, s, gopt, opt)
}

// estimateError returns the estimate error of queue's jobs submitted since
// seconds after the workload's first submission.
func (o Options) estimateError(queue string, since int64) EstimateError {
	if es, ok := o.QueueEstimateErrors[queue]; ok {
		return es.at(since)
	}
	return o.EstimateError.at(since)
}

// gangPolicyConfig returns the core configuration of a gang policy and how
// the simulator drives it.
func gangPolicyConfig(w *workload.Workload, policy string, opt Options) (core.Config, gangOptions, error) {
	cfg := core.Config{GPU: workload.GPU, Ordering: core.FairShare, Topology: w.Topology}
	var gopt gangOptions
	switch policy {
	case PolicyPhalanx:
		cfg.ReserveAfter = orDefault(opt.ReserveAfter, DefaultReserveAfter)
		cfg.Reservations = opt.Reservations
		if cfg.Reservations == 0 {
			cfg.Reservations = DefaultReservations
		}
		cfg.ShortestFirst = !opt.ArrivalOrder
		cfg.Preemption = !opt.NoPreemption
		cfg.ReclaimAfter = max(orDefault(opt.ReclaimAfter, DefaultReclaimAfter), 0)
		cfg.ReclaimYoungerOnly = opt.ReclaimYoungerOnly
		cfg.PreemptMinRuntime = orDefault(opt.PreemptMinRuntime, DefaultPreemptMinRuntime)
		cfg.ReclaimMinRuntime = orDefault(opt.ReclaimMinRuntime, DefaultReclaimMinRuntime)
		cfg.WeighLoss = !opt.NoWeighLoss
		cfg.ReserveAfterBacklog = !opt.FixedReserveAfter
		cfg.ReserveAhead = orDefault(opt.ReserveAhead, DefaultReserveAhead)
		cfg.ReserveByWork = orDefault(opt.ReserveByWork, DefaultReserveByWork)
		if cfg.ReserveAfter > 0 {
			gopt.wakeAfter = append(gopt.wakeAfter, cfg.ReserveAfter)
			// When nodes may be reserved ahead of a fixed threshold; with
			// the backlog, never before ReserveAfter (core/reserve.go).
			if early := cfg.ReserveAfter - cfg.ReserveAhead; early > 0 && cfg.ReserveAhead > 0 && !cfg.ReserveAfterBacklog {
				gopt.wakeAfter = append(gopt.wakeAfter, early)
			}
		}
		if cfg.Preemption && cfg.ReclaimAfter > 0 && cfg.ReclaimAfter != cfg.ReserveAfter {
			gopt.wakeAfter = append(gopt.wakeAfter, cfg.ReclaimAfter)
		}
		gopt.holdFailed = orDefault(opt.HoldFailed, DefaultHoldFailed)
		gopt.correctEstimates = !opt.NoEstimateCorrection
		gopt.forecastEvery = max(opt.ForecastEvery, 0)
	case PolicyFIFOGang:
		cfg.Ordering = core.StrictFIFO
	case PolicyVolcano, PolicyVolcanoBinpack:
		// Volcano's default actions are enqueue, allocate and backfill; its
		// default plugins give each queue its proportion of the cluster by
		// weight, order jobs by priority and start a job only when
		// minAvailable of its pods fit (gang). Its backfill action places
		// only pods that request nothing, which no job of ours is, so it
		// adds nothing here; nothing is reserved and nothing is preempted
		// (preempt and reclaim are not default actions). Its default
		// nodeorder plugin scores nodes by least-requested resources, so
		// members are spread (core.Config.Spread). Differences from the real
		// thing: the score is on accelerators only, its enqueue gate (a job
		// enters only when the queue's share has room) is not modelled, and
		// required topology is ignored, as a scheduler that does not know
		// the requirement would.
		//
		// Its binpack plugin, given the accelerator as a resource
		// (binpack.resources), scores nodes by how full they would be, and
		// with enough weight outweighs least-requested: volcano-binpack
		// packs members instead (core.Config.Pack), the rest as above.
		cfg.Spread = policy == PolicyVolcano
		cfg.Pack = policy == PolicyVolcanoBinpack
		cfg.Topology = nil
		gopt.ignoreTopology = true
	default:
		return cfg, gopt, fmt.Errorf("sim: unknown policy %q (want one of %v)", policy, slices.Concat(Policies, MorePolicies))
	}
	gopt.reserve = cfg.ReserveAfter > 0
	gopt.preempt = cfg.Preemption
	return cfg, gopt, nil
}

// run simulates w with the gang scheduler sched, driven as gopt says, or pod
// by pod when sched is nil.
func run(w *workload.Workload, name string, sched cycler, gopt gangOptions, opt Options) (*Result, error) {
	s, err := newState(w, opt)
	if err != nil {
		return nil, err
	}
	s.estimates.on = gopt.correctEstimates
	var p policy
	if sched != nil {
		p = newGangPolicy(s, sched, gopt)
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
		Metrics: metrics(s, jobs, end, last),
		Jobs:    jobs,
		GPUs:    s.samples,
		Waiting: s.waitingSamples,
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
			// received is counted ahead to finish: every job still
			// running at the end has finished by then.
			Duration:         j.spec.Duration,
			GPUSeconds:       j.received,
			Preemptions:      j.preemptions,
			Reserved:         j.reserved,
			FirstStart:       j.firstStart,
			ForecastAt:       j.fcAt,
			ForecastStart:    j.fcStart,
			ForecastReserved: j.fcReserved,
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
