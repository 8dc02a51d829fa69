package core

import (
	"math"
	"slices"
)

// Correcting declared estimates by what a queue's gangs actually ran.
//
// Reservations, backfill, weighed evictions and the forecast all read
// Gang.Estimate and the releases built from it. Users' estimates are often
// off by a factor that is the same for a whole team: a time limit padded
// twice over, a benchmark run on faster GPUs. Backfilling with predictions
// learned from a user's own past jobs rather than the user's estimates is
// an old idea of batch scheduling (Tsafrir, Etsion and Feitelson,
// "Backfilling using system-generated predictions rather than user runtime
// estimates", IEEE TPDS 18(6), 2007). Here the drivers keep, per queue, the
// ratio of run time to declared estimate of the queue's latest completed
// gangs (EstimateSamples of them), and give the core each declared estimate
// multiplied by their median (EstimateFactor). A queue whose estimates are
// right on the whole keeps a factor near 1; a queue whose gangs all run
// twice their estimate gets estimates twice as long.
//
// The median, not the mean: one gang that ran a hundred times its estimate
// (it hung) moves the median of fifty by one place. The median of the
// ratios rather than a fit of run time on estimate: a team's padding is a
// factor, whatever the job's length.
//
// The median suits a single gang: the typical one runs its estimate times
// the factor. Summed over many gangs it does not: noise around right
// estimates keeps the median at 1, but the estimates' sum exceeds the run
// times' (a log-normal error of sigma 1 makes it about 1.65 times as
// large, exp(sigma^2/2)), and the reservation threshold sums them
// (reserve.go, the backlog). There a queue's estimates are also multiplied
// by its WorkFactor: the run times of the same gangs over their corrected
// estimates, in sum. With noise=1 on the evaluation's traces, it brought the
// big jobs' p99 wait from 1.37 to 1.13 times fifo-gang's
// (docs/evaluation.md); with right estimates it is 1 and changes nothing.
//
// The factor follows the median only when the median has moved away from
// it by more than EstimateFactorBand. Noise around right estimates moves
// the median by a tenth or more either way, and more when shortest
// estimate first starts the underestimated gangs sooner, so that the
// latest completions lean one way; a quarter either way matters little to
// a reservation. And each change makes the scheduler rebuild the expected
// ends of every gang of the queue (about 0.3 s at 150,000 pods in one
// queue: BenchmarkScaleCycleEstimateFactor). The WorkFactor moves with
// every completion, at no cost: only the backlog's sum reads it.

const (
	// EstimateSamples is how many of a queue's latest completed gangs with
	// a declared estimate the factor reads. Fifty rather than twenty: on
	// Philly with noisy estimates (noise=0.5) the factors moved a third as
	// often (docs/evaluation.md).
	EstimateSamples = 50
	// EstimateSamplesMin is how many it needs before it corrects anything.
	EstimateSamplesMin = 5
	// EstimateFactorBand: the factor moves to the median only when the
	// median is more than this many times it, or less than its inverse.
	EstimateFactorBand = 1.25
	// Bounds of the factor: a thousand times shorter or longer.
	minEstimateFactor, maxEstimateFactor = 1e-3, 1e3
)

// EstimateRatio is the ratio EstimateFactor reads for a gang that ran ran
// seconds against a declared estimate of estimate seconds; ok is false when
// either is not positive, and the gang teaches nothing.
func EstimateRatio(estimate, ran int64) (ratio float64, ok bool) {
	if estimate <= 0 || ran <= 0 {
		return 0, false
	}
	return float64(ran) / float64(estimate), true
}

// EstimateFactor is what declared estimates are multiplied by, given the
// ratios (EstimateRatio) of a queue's latest completed gangs, in any order,
// and the factor so far (1 at first): their median (for an even count, the
// geometric mean of the middle two, so that ratios of 2 and 0.5 give 1),
// within [1/1000, 1000], unless it lies within EstimateFactorBand of the
// factor so far, which then stays; 1 when fewer than EstimateSamplesMin
// are given. Only the last EstimateSamples should be given. ratios is not
// modified.
func EstimateFactor(ratios []float64, current float64) float64 {
	n := len(ratios)
	if n < EstimateSamplesMin {
		return 1
	}
	var buf [EstimateSamples]float64
	s := append(buf[:0], ratios...)
	slices.Sort(s)
	f := s[n/2]
	if n%2 == 0 {
		f = math.Sqrt(s[n/2-1] * s[n/2])
	}
	if math.IsNaN(f) {
		return 1
	}
	f = min(max(f, minEstimateFactor), maxEstimateFactor)
	if current > 0 && f < current*EstimateFactorBand && f*EstimateFactorBand > current {
		return current
	}
	return f
}

// CorrectEstimate is estimate times factor, rounded, at least 1 s and at
// most limit; an estimate of 0 (unknown) stays 0, and a factor of 1 leaves
// the estimate exactly as it was.
func CorrectEstimate(estimate int64, factor float64, limit int64) int64 {
	if estimate <= 0 || factor == 1 {
		return estimate
	}
	c := math.Round(float64(estimate) * factor)
	if c >= float64(limit) {
		return limit
	}
	return max(int64(c), 1)
}

// WorkFactor is what the backlog multiplies a queue's estimates by, given
// the declared estimates of the queue's latest completed gangs, what each
// ran (both in seconds, in the same order; pairs where either is not
// positive are skipped) and the queue's estimate factor: the sum of the run
// times over the sum of the estimates times the factor, within [1/1000,
// 1000]; 1 when fewer than EstimateSamplesMin pairs count. Only the last
// EstimateSamples should be given. Estimates that are exactly right give
// exactly 1.
func WorkFactor(estimates, ran []int64, factor float64) float64 {
	var sumEst, sumRan float64
	n := 0
	for i, est := range estimates {
		if i < len(ran) && est > 0 && ran[i] > 0 {
			sumEst += float64(est)
			sumRan += float64(ran[i])
			n++
		}
	}
	if n < EstimateSamplesMin || factor <= 0 || math.IsNaN(factor) {
		return 1
	}
	return min(max(sumRan/(sumEst*factor), minEstimateFactor), maxEstimateFactor)
}
