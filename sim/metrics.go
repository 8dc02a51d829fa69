package sim

// This file turns a finished run into Metrics. The window of a run is
// [first submit, end], where end is the last completion, or the last event
// when nothing completed; makespan is its length (nil when nothing
// completed). Everything integrated over
// time (utilisation, waste, fairness) is clipped to that window, or to the
// idle horizon below when the run ends with GPUs held for ever:
//   - gpu_utilization: integral of GPUs held by running jobs over the
//     integral of the cluster's GPUs (each pool counted from when it joins),
//     up to the idle horizon;
//   - gpu_utilization_arriving: the same over [first submit, last submit],
//     while jobs arrive (nil when they all arrive at once), which leaves
//     out the drain at the end of an overloaded run;
//   - wasted_gpu_s: integral of GPUs held by members whose job is not
//     running (Held - Running). When the run ends with such GPUs still held
//     (held_idle_at_end_gpus: a partial gang that never starts, as pod by
//     pod leaves in a deadlock), nothing will ever free them, and the
//     integral runs to the idle horizon instead: the later of end and the
//     last event, plus the longest Duration of the jobs holding them. Had
//     such a job started at the last event, it would have been done by
//     then; it never starts, so its GPUs are idle at least that long. The
//     figure is a lower bound of a waste without end, and the report says
//     so;
//   - fairness_mean, fairness_worst, fairness_least_served: the windowed
//     fairness. The window of
//     the run is cut into windows of fairness_window_s seconds (one day, or
//     a tenth of the run when it lasts less than ten days; the last window
//     may be shorter). In each window every queue demands the GPU time of
//     its jobs that are present (submitted and not completed; jobs larger
//     than the cluster do not count), and deserves its share, by weight, of
//     the GPU time that running jobs received in the window, water-filled:
//     capped by its demand and its GPU capability, what a capped queue
//     leaves dealt again to the others. The share is of what was received,
//     not of the capacity: GPUs left idle are utilisation's business, and
//     gangs come whole, so a lone queue could rarely use every GPU. A
//     window's score is the share of the fair allocation honoured: the sum
//     over queues of min(received, deserved) over the sum of deserved; a
//     queue's own score is received over deserved, at most 1. Over the
//     windows where some queue deserved anything, fairness_mean is the mean
//     of the window scores, fairness_worst the least, and
//     fairness_least_served the mean of the least queue score of each
//     window (0 in a window where some queue that deserved GPU time got
//     none); all are nil when there is no such window (nothing ran). 1
//     means that in every window every queue got at least its share of
//     what ran. A gang is indivisible, so over windows much shorter than the
//     jobs a fair scheduler takes turns and scores below 1; longer runs
//     have longer windows;
//   - JCT and wait statistics come from the job outcomes, percentiles by
//     nearest rank.
//   - rack_locality: among started jobs whose placed members (at the end of
//     the run, elastic ones included) use more than one node, the share
//     whose nodes all carry the same value of the workload's narrowest
//     topology label; nil when there is no such job or no topology.
//   - preemptions, the GPU time they lost, member failures and how long
//     replacements waited are counted by the state as they happen.
// A figure over no sample is nil (null in JSON). Integrals are computed in
// exact int64 arithmetic and converted once.

import (
	"slices"

	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest sample such that at least p% of the
// samples are less than or equal to it, i.e. sorted[ceil(p*n/100)-1]. It
// returns nil when there is no sample.
func Percentile(sorted []float64, p int) *float64 {
	n := len(sorted)
	if n == 0 {
		return nil
	}
	rank := (p*n + 99) / 100
	rank = min(max(rank, 1), n)
	return figure(sorted[rank-1])
}

// mean returns the mean of xs, nil when there is none.
func mean(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return figure(sum / float64(len(xs)))
}

// integrate returns the integral over [from, to] of the step function given
// by samples (each value holds from its Time to the next sample's Time, the
// last one forever, 0 before the first) of value(sample).
func integrate(samples []Sample, from, to int64, value func(Sample) int64) int64 {
	var total int64
	for i, smp := range samples {
		lo := max(smp.Time, from)
		hi := to
		if i+1 < len(samples) {
			hi = min(samples[i+1].Time, to)
		}
		if hi > lo {
			total += value(smp) * (hi - lo)
		}
	}
	return total
}

// clusterGPUSeconds returns the integral over [from, to] of the GPUs of the
// cluster, each pool counted from when it joins.
func clusterGPUSeconds(pools []workload.NodePool, from, to int64) int64 {
	var total int64
	for i := range pools {
		p := &pools[i]
		if lo := max(p.At, from); to > lo {
			total += int64(p.Count) * p.Allocatable[workload.GPU] * (to - lo)
		}
	}
	return total
}

// metrics computes the figures of a run that ended at end, whose last
// event was at last (see the top of the file), from the state and the job
// outcomes.
func metrics(s *state, jobs []JobOutcome, end, last int64) Metrics {
	from := s.firstSubmit
	m := Metrics{JobsTotal: len(jobs)}
	if len(jobs) == 0 {
		return m
	}

	var jct, wait, waitBig []float64
	for i := range jobs {
		o := &jobs[i]
		switch o.State {
		case JobCompleted:
			m.JobsCompleted++
			jct = append(jct, float64(o.Finish-o.Submit))
		case JobStuck:
			m.StuckJobs++
		case JobUnschedulable:
			m.UnschedulableJobs++
		}
		if o.Start >= 0 {
			w := float64(o.Start - o.Submit)
			wait = append(wait, w)
			if o.GPUs >= 8 {
				waitBig = append(waitBig, w)
			}
		}
	}
	if m.JobsCompleted > 0 {
		m.Makespan = figure(float64(end - from))
	}
	slices.Sort(jct)
	slices.Sort(wait)
	slices.Sort(waitBig)
	m.MeanJCT, m.P50JCT, m.P99JCT = mean(jct), Percentile(jct, 50), Percentile(jct, 99)
	m.MeanWait, m.P99Wait = mean(wait), Percentile(wait, 99)
	m.P99WaitBig, m.MaxWaitBig = Percentile(waitBig, 99), Percentile(waitBig, 100)

	horizon := idleHorizon(s, end, last)
	running := integrate(s.samples, from, horizon, func(x Sample) int64 { return x.Running })
	m.HeldIdleAtEnd = s.held - s.running
	m.WastedGPUSeconds = float64(integrate(s.samples, from, horizon, func(x Sample) int64 { return x.Held - x.Running }))
	if capacity := clusterGPUSeconds(s.w.Pools, from, horizon); capacity > 0 {
		m.GPUUtilization = figure(float64(running) / float64(capacity))
	}
	lastSubmit := from
	for i := range jobs {
		lastSubmit = max(lastSubmit, jobs[i].Submit)
	}
	if capacity := clusterGPUSeconds(s.w.Pools, from, lastSubmit); capacity > 0 {
		arriving := integrate(s.samples, from, lastSubmit, func(x Sample) int64 { return x.Running })
		m.GPUUtilizationArriving = figure(float64(arriving) / float64(capacity))
	}
	if end > from {
		window := fairnessWindow(end - from)
		f := windowedFairness(s, jobs, from, end, window)
		m.FairnessMean, m.FairnessWorst, m.FairnessLeastServed = f.mean, f.worst, f.leastMean
		if f.mean != nil {
			m.FairnessWindow = window // none to show when nothing ran
		}
	}
	m.RackLocality = rackLocality(s)
	m.PreemptedGangs, m.EvictedMembers = s.preemptedGangs, s.evictedMembers
	m.PreemptionLostGPUSeconds = float64(s.lostGPUSeconds)
	m.MemberFailures = s.failures
	if n := len(s.replacementWaits); n > 0 {
		var sum, most int64
		for _, w := range s.replacementWaits {
			sum += w
			most = max(most, w)
		}
		m.MeanReplacementWait = figure(float64(sum) / float64(n))
		m.MaxReplacementWait = figure(float64(most))
	}
	if s.forecastEvery > 0 {
		m.Forecast = forecastMetrics(jobs, s.forecastEvery)
	}
	return m
}

// forecastMetrics weighs the jobs' first forecasts against their first
// starts (ForecastMetrics).
func forecastMetrics(jobs []JobOutcome, every int64) *ForecastMetrics {
	f := &ForecastMetrics{Every: every, Horizon: core.DefaultForecastHorizon}
	var all, big, res forecastErrors
	for i := range jobs {
		o := &jobs[i]
		if o.ForecastAt < 0 || (o.FirstStart == o.ForecastAt && o.ForecastStart == o.ForecastAt) {
			continue
		}
		f.Gangs++
		if o.Reserved >= 0 {
			f.Reserved++
		}
		if o.ForecastReserved >= 0 {
			f.GivenReservation++
			if o.Reserved >= 0 {
				res.add(o.Reserved, o.ForecastReserved, o.ForecastAt)
			}
		}
		if o.ForecastStart < 0 {
			if o.FirstStart >= 0 && o.FirstStart <= o.ForecastAt+f.Horizon {
				f.NoStartButStarted++
			}
			continue
		}
		f.WithStart++
		if o.FirstStart < 0 {
			continue
		}
		all.add(o.FirstStart, o.ForecastStart, o.ForecastAt)
		if o.GPUs >= 8 {
			big.add(o.FirstStart, o.ForecastStart, o.ForecastAt)
		}
	}
	f.Started, f.BigStarted, f.GivenReserved = all.n, big.n, res.n
	if all.n > 0 {
		slices.Sort(all.abs)
		f.AbsErrorP50, f.AbsErrorP90 = Percentile(all.abs, 50), Percentile(all.abs, 90)
		f.Later = figure(float64(all.later) / float64(all.n))
	}
	f.WithinHour, f.WithinQuarter, f.MeanError = all.shares()
	f.BigWithinHour, f.BigWithinQuarter, f.BigMeanError = big.shares()
	f.ReservationWithinHour, f.ReservationWithinQuarter, f.ReservationMeanError = res.shares()
	return f
}

// forecastErrors counts the errors of forecasts of a time (a start, a
// reservation) that came, and keeps their absolute values.
type forecastErrors struct {
	n, hour, quarter, later int
	sum                     float64
	abs                     []float64
}

// add counts a forecast made at at of a time that came at actual.
func (e *forecastErrors) add(actual, forecast, at int64) {
	d := actual - forecast
	a := max(d, -d)
	e.n++
	e.sum += float64(d)
	e.abs = append(e.abs, float64(a))
	if a <= 3600 {
		e.hour++
	}
	if a <= max(60, (actual-at)/4) {
		e.quarter++
	}
	if d > 0 {
		e.later++
	}
}

// shares returns the shares within an hour and within a quarter of the
// wait, and the mean error; nil when no job started.
func (e *forecastErrors) shares() (hour, quarter, mean *float64) {
	if e.n == 0 {
		return nil, nil, nil
	}
	n := float64(e.n)
	return figure(float64(e.hour) / n), figure(float64(e.quarter) / n), figure(e.sum / n)
}

// idleHorizon returns the time up to which GPUs held by jobs that are not
// running count as idle (see the top of the file): end when the run ends
// with none held, else the later of end and last plus the longest Duration
// of the jobs that hold them.
func idleHorizon(s *state, end, last int64) int64 {
	if s.held == s.running {
		return end
	}
	var longest int64
	for i := range s.jobs {
		if j := &s.jobs[i]; j.held > 0 && !j.running() {
			longest = max(longest, j.spec.Duration)
		}
	}
	return max(end, last) + longest
}

// rackLocality computes Metrics.RackLocality (see the top of the file).
func rackLocality(s *state) *float64 {
	if len(s.w.Topology) == 0 {
		return nil
	}
	label := s.w.Topology[len(s.w.Topology)-1]
	spanning, local := 0, 0
	for i := range s.jobs {
		j := &s.jobs[i]
		if j.start < 0 {
			continue
		}
		first, multi, oneRack := int32(-1), false, true
		var rack string
		for m := range j.members {
			n := j.members[m].node
			if st := j.members[m].state; n < 0 || st != memberPlaced && st != memberDone {
				continue
			}
			r, ok := s.snap.Nodes[n].Labels[label]
			switch {
			case first < 0:
				first, rack, oneRack = n, r, ok
			case n != first:
				multi = true
				oneRack = oneRack && ok && r == rack
			}
		}
		if multi {
			spanning++
			if oneRack {
				local++
			}
		}
	}
	if spanning == 0 {
		return nil
	}
	return figure(float64(local) / float64(spanning))
}
