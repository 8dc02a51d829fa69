package sim

// This file turns a finished run into Metrics. The window of a run is
// [first submit, end], where end is the last completion, or the last event
// when nothing completed; makespan is its length. Everything integrated over
// time (utilisation, waste, fairness) is clipped to that window:
//   - gpu_utilization: integral of GPUs held by running jobs over the
//     integral of the cluster's GPUs (each pool counted from when it joins);
//   - wasted_gpu_s: integral of GPUs held by members whose job is not
//     running (Held - Running);
//   - jain_fairness: Jain's index over the queues that submitted GPU jobs of
//     x_q = GPU-seconds received while running / GPU-seconds demanded (GPUs x
//     Duration summed over the queue's jobs);
//   - JCT and wait statistics come from the job outcomes, percentiles by
//     nearest rank.
//   - rack_locality: among started jobs whose placed members (at the end of
//     the run, elastic ones included) use more than one node, the share
//     whose nodes all carry the same value of the workload's narrowest
//     topology label; 0 when there is no such job or no topology.
//   - preemptions, the GPU time they lost, member failures and how long
//     replacements waited are counted by the state as they happen.
// Integrals are computed in exact int64 arithmetic and converted once.

import (
	"slices"

	"github.com/phalanx-sched/phalanx/workload"
)

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest sample such that at least p% of the
// samples are less than or equal to it, i.e. sorted[ceil(p*n/100)-1]. It
// returns 0 when there is no sample.
func percentile(sorted []float64, p int) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (p*n + 99) / 100
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// jain returns Jain's fairness index (sum x)^2 / (n * sum x^2) of xs: 1 when
// all are equal, 1/n when one gets everything. It is 1 for no or one value,
// and for all zeros (nobody got anything, equally).
func jain(xs []float64) float64 {
	if len(xs) <= 1 {
		return 1
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
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

// metrics computes the figures of a run that ended at end (see the top of
// the file) from the state and the job outcomes.
func metrics(s *state, jobs []JobOutcome, end int64) Metrics {
	from := s.firstSubmit
	m := Metrics{JobsTotal: len(jobs)}
	if len(jobs) == 0 {
		m.JainFairness = 1
		return m
	}
	m.Makespan = float64(end - from)

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
	slices.Sort(jct)
	slices.Sort(wait)
	slices.Sort(waitBig)
	m.MeanJCT, m.P50JCT, m.P99JCT = mean(jct), percentile(jct, 50), percentile(jct, 99)
	m.MeanWait, m.P99Wait = mean(wait), percentile(wait, 99)
	m.P99WaitBig = percentile(waitBig, 99)

	running := integrate(s.samples, from, end, func(x Sample) int64 { return x.Running })
	m.WastedGPUSeconds = float64(integrate(s.samples, from, end, func(x Sample) int64 { return x.Held - x.Running }))
	if capacity := clusterGPUSeconds(s.w.Pools, from, end); capacity > 0 {
		m.GPUUtilization = float64(running) / float64(capacity)
	}

	demand := make([]int64, len(s.snap.Queues))
	received := make([]int64, len(s.snap.Queues))
	for i := range s.jobs {
		j := &s.jobs[i]
		demand[j.queue] += j.spec.Total(workload.GPU) * j.spec.Duration
		// Running time is clipped at end; every job running has finished
		// by then, so this is the whole of it (runs lost to preemption
		// included: the GPUs were received).
		received[j.queue] += j.received
	}
	var xs []float64
	for q := range demand {
		if demand[q] > 0 {
			xs = append(xs, float64(received[q])/float64(demand[q]))
		}
	}
	m.JainFairness = jain(xs)
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
		m.MeanReplacementWait = float64(sum) / float64(n)
		m.MaxReplacementWait = float64(most)
	}
	return m
}

// rackLocality computes Metrics.RackLocality (see the top of the file).
func rackLocality(s *state) float64 {
	if len(s.w.Topology) == 0 {
		return 0
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
		return 0
	}
	return float64(local) / float64(spanning)
}
