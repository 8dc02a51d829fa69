package sim

// This file computes the windowed fairness of a run (see the top of
// metrics.go for what it means).

import (
	"math"

	"github.com/phalanx-sched/phalanx/workload"
)

// fairnessWindow returns the length of the fairness windows of a run that
// lasts span seconds: a day, or a tenth of the run (rounded up, at least a
// second) when it lasts less than ten days.
func fairnessWindow(span int64) int64 {
	const day = 86400
	if span >= 10*day {
		return day
	}
	return max(1, (span+9)/10)
}

// fairness is the windowed fairness of a run: the mean and the worst, over
// the windows, of the share of the fair allocation honoured, and the mean of
// the least-served queue's score; nil when no window counts.
type fairness struct {
	mean, worst, leastMean *float64
}

// windowedFairness computes the fairness over the windows of length window
// that cut [from, end), counting those where some queue deserved GPU time
// (see the top of metrics.go). What a queue deserves in a window is its
// share of the GPU time received by all in that window.
func windowedFairness(s *state, jobs []JobOutcome, from, end, window int64) fairness {
	if end <= from || window <= 0 {
		return fairness{}
	}
	nq := len(s.snap.Queues)
	nw := int((end - from + window - 1) / window)
	bounds := func(k int) (int64, int64) {
		a := from + int64(k)*window
		return a, min(a+window, end)
	}
	demand := make([][]int64, nw)
	received := make([][]int64, nw)
	for k := range demand {
		demand[k] = make([]int64, nq)
		received[k] = make([]int64, nq)
	}
	// Demand: each job's GPUs from its submission to its completion (the
	// end of the run when it never completes).
	for i := range s.jobs {
		j := &s.jobs[i]
		gpus := j.spec.Total(workload.GPU)
		if gpus == 0 || jobs[i].State == JobUnschedulable {
			continue
		}
		lo, hi := max(j.spec.Submit, from), end
		if j.done {
			hi = min(j.finish, end)
		}
		for k := int((lo - from) / window); k < nw; k++ {
			a, b := bounds(k)
			if a >= hi {
				break
			}
			if x, y := max(a, lo), min(b, hi); y > x {
				demand[k][j.queue] += gpus * (y - x)
			}
		}
	}
	// Received: each queue's running GPUs, a step function.
	for i, smp := range s.queueSamples {
		lo, hi := smp.Time, end
		for n := i + 1; n < len(s.queueSamples); n++ {
			if s.queueSamples[n].Queue == smp.Queue {
				hi = min(s.queueSamples[n].Time, end)
				break
			}
		}
		if smp.Running == 0 || hi <= lo {
			continue
		}
		lo = max(lo, from)
		for k := int((lo - from) / window); k < nw; k++ {
			a, b := bounds(k)
			if a >= hi {
				break
			}
			if x, y := max(a, lo), min(b, hi); y > x {
				received[k][smp.Queue] += smp.Running * (y - x)
			}
		}
	}
	weights := make([]float64, nq)
	capability := make([]int64, nq) // GPUs, -1 for none
	for q := range s.snap.Queues {
		weights[q] = float64(max(s.snap.Queues[q].Weight, 1))
		capability[q] = -1
		if s.gpu >= 0 {
			if c := s.snap.Queues[q].Capability[s.gpu]; c < math.MaxInt64/4 {
				capability[q] = c
			}
		}
	}
	var sum, sumLeast float64
	worst := math.Inf(1)
	counted := 0
	caps := make([]float64, nq)
	for k := 0; k < nw; k++ {
		a, b := bounds(k)
		for q := range caps {
			caps[q] = float64(demand[k][q])
			if capability[q] >= 0 {
				caps[q] = min(caps[q], float64(capability[q]*(b-a)))
			}
		}
		var total int64
		for _, r := range received[k] {
			total += r
		}
		deserved := waterFill(float64(total), weights, caps)
		var honoured, due float64
		least := 1.0
		for q, d := range deserved {
			if d <= 0 {
				continue
			}
			got := float64(received[k][q])
			honoured += min(got, d)
			due += d
			least = min(least, got/d)
		}
		if due == 0 {
			continue
		}
		counted++
		score := honoured / due
		sum += score
		sumLeast += least
		worst = min(worst, score)
	}
	if counted == 0 {
		return fairness{}
	}
	return fairness{mean: figure(sum / float64(counted)), worst: figure(worst), leastMean: figure(sumLeast / float64(counted))}
}

// waterFill deals capacity between parties by weight, none getting more than
// its cap; what a capped party cannot take is dealt again to the others. It
// returns each party's deal.
func waterFill(capacity float64, weights, caps []float64) []float64 {
	deal := make([]float64, len(weights))
	open := make([]bool, len(weights))
	for i := range open {
		open[i] = caps[i] > 0 && weights[i] > 0
	}
	left := capacity
	for left > 0 {
		var total float64
		for i, o := range open {
			if o {
				total += weights[i]
			}
		}
		if total == 0 {
			break
		}
		capped := false
		for i, o := range open {
			if o && caps[i] <= left*weights[i]/total {
				deal[i], open[i], capped = caps[i], false, true
			}
		}
		if !capped {
			for i, o := range open {
				if o {
					deal[i] = left * weights[i] / total
				}
			}
			break
		}
		left = capacity
		for i, o := range open {
			if !o {
				left -= deal[i]
			}
		}
	}
	return deal
}
