package core

import (
	"cmp"
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
// (docs/evaluation-notebook.md); with right estimates it is 1 and changes nothing.
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
	// often (docs/evaluation-notebook.md).
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
	f := median(ratios)
	if math.IsNaN(f) {
		return 1
	}
	f = min(max(f, minEstimateFactor), maxEstimateFactor)
	if current > 0 && f < current*EstimateFactorBand && f*EstimateFactorBand > current {
		return current
	}
	return f
}

// median is the median of at most EstimateSamples ratios (for an even
// count, the geometric mean of the middle two); NaN for none. ratios is not
// modified.
func median(ratios []float64) float64 {
	n := len(ratios)
	if n == 0 {
		return math.NaN()
	}
	var buf [EstimateSamples]float64
	s := append(buf[:0], ratios...)
	slices.Sort(s)
	if n%2 == 0 {
		return math.Sqrt(s[n/2-1] * s[n/2])
	}
	return s[n/2]
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
// ran and when each arrived (all in seconds, in the same order; pairs where
// the estimate or the run time is not positive are skipped) and the
// queue's eras: the sum of the run times over the sum of the estimates,
// each times the factor of its era (a gang whose arrival is missing gets
// the latest era's), within [1/1000, 1000]; 1 when fewer than
// EstimateSamplesMin pairs count. Only the last EstimateSamples should be
// given. Estimates that are exactly right give exactly 1.
func WorkFactor(estimates, ran, arrivals []int64, eras FactorEras) float64 {
	var sumEst, sumRan float64
	n := 0
	correctedPairs(estimates, ran, arrivals, eras, func(est, ran float64) {
		sumEst += est
		sumRan += ran
		n++
	})
	if n < EstimateSamplesMin || !(sumEst > 0) || math.IsInf(sumEst, 0) {
		return 1
	}
	return min(max(sumRan/sumEst, minEstimateFactor), maxEstimateFactor)
}

// OverrunFactor is how far past their corrected estimates a queue's gangs
// run, nine times in ten: over the same latest completed gangs as
// WorkFactor, and with the factors of their eras, the 90th percentile
// (nearest rank) of run time over corrected estimate, at least 1 and at
// most 1000; 1 when fewer than EstimateSamplesMin pairs count. Backfill
// takes a gang to run that much longer before it lets it use nodes
// reserved for another (backfillEstimate): a gang that overruns onto a
// reservation delays the gang it was made for. Estimates that are exactly
// right, or all off by one factor that the eras correct, give 1 (up to
// the rounding of estimates of a few seconds); estimates each off by
// exp(N(0, σ)) give about exp(1.28σ): 1.9 at σ = 0.5, 3.6 at σ = 1.
func OverrunFactor(estimates, ran, arrivals []int64, eras FactorEras) float64 {
	var buf [EstimateSamples]float64
	ratios := buf[:0]
	correctedPairs(estimates, ran, arrivals, eras, func(est, ran float64) { ratios = append(ratios, ran/est) })
	if len(ratios) < EstimateSamplesMin {
		return 1
	}
	slices.Sort(ratios)
	p := ratios[(9*len(ratios)+9)/10-1]
	return min(max(p, 1), maxEstimateFactor)
}

// correctedPairs calls f with each pair of a queue's record whose estimate
// and run time are both positive: the estimate times the factor of its
// era (the latest era's for a gang whose arrival is missing), and the run
// time.
func correctedPairs(estimates, ran, arrivals []int64, eras FactorEras, f func(est, ran float64)) {
	for i, est := range estimates {
		if i >= len(ran) || est <= 0 || ran[i] <= 0 {
			continue
		}
		arrival := int64(math.MaxInt64)
		if i < len(arrivals) {
			arrival = arrivals[i]
		}
		f(float64(est)*eras.At(arrival), float64(ran[i]))
	}
}

// Habits that change. A team changes its estimates (a new time limit, a
// move to faster GPUs), and its queue's factor follows once most of its
// latest completions are new gangs. But gangs submitted before the change
// may still wait, and their estimates were made with the old habit: the new
// factor would correct them wrongly. Under overload many wait for days, and
// multiplied by four (padded twice over before, run twice their estimate
// after) they held the backlog, and with it every reservation, back for a
// week on the evaluation's traces (docs/evaluation-notebook.md, "A team whose habits
// change"). So the factor is kept by era of arrival: when it moves, the
// latest completions, in order of arrival, are split where the old factor
// stops explaining their ratios and the new one starts, and the new factor
// applies to the gangs that arrived from there on, the gangs that arrived
// before keeping the factor of their time, as long as those ran, in the
// median, at least twice or at most half what the later ones ran
// (FactorEraChange); otherwise the latest era's factor moves, as a queue's
// single factor did.

// FactorEra is the factor of the gangs of a queue that arrived from From
// (seconds, on the driver's clock) until the next era's From.
type FactorEra struct {
	From   int64   `json:"from"`
	Factor float64 `json:"factor"`
}

// FactorEras are a queue's eras, by increasing From; the first also covers
// every earlier arrival. None means a factor of 1 for all.
type FactorEras []FactorEra

// FactorEraChange is how far apart, at least, the median ratios of the gangs
// that arrived before a split and after it must lie for the split to start
// an era: twice or half, the smallest change of habits the
// evaluation models (a team padding its estimates twice over, or halving
// them). Noise alone also splits the latest completions by arrival, since
// shortest estimate first starts the underestimated gangs sooner, so that
// those that waited longer lean the other way. With twice, the evaluation's
// traces with noise=0.5 give the figures of a single factor per queue to
// within a thousandth (docs/evaluation-notebook.md, "Factors by era of arrival").
const FactorEraChange = 2

// MaxFactorEras bounds how many eras a queue keeps: beyond, the oldest is
// dropped, and the next covers its gangs.
const MaxFactorEras = 32

// At is the factor of a gang that arrived at arrival.
func (es FactorEras) At(arrival int64) float64 {
	if len(es) == 0 {
		return 1
	}
	i, _ := slices.BinarySearchFunc(es, arrival, func(e FactorEra, at int64) int {
		if e.From <= at {
			return -1
		}
		return 1
	})
	return es[max(i-1, 0)].Factor
}

// Valid reports whether es are eras Moved could have made, as when read
// back from a record: at most MaxFactorEras, by increasing From, each factor
// within the bounds EstimateFactor keeps.
func (es FactorEras) Valid() bool {
	if len(es) > MaxFactorEras {
		return false
	}
	for i, e := range es {
		if !(e.Factor >= minEstimateFactor && e.Factor <= maxEstimateFactor) || i > 0 && e.From <= es[i-1].From {
			return false
		}
	}
	return true
}

// Current is the factor of the latest era: the one a gang arriving now gets,
// and the one EstimateFactor is given as the factor so far.
func (es FactorEras) Current() float64 {
	if len(es) == 0 {
		return 1
	}
	return es[len(es)-1].Factor
}

// Follow returns the eras after a completion, given the ratios and
// arrivals, in the same order, of the queue's latest completed gangs with a
// declared estimate: Moved, if EstimateFactor moves the factor from
// Current; es itself otherwise. A move always changes Current.
func (es FactorEras) Follow(ratios []float64, arrivals []int64) FactorEras {
	cur := es.Current()
	if f := EstimateFactor(ratios, cur); f != cur {
		return es.Moved(ratios, arrivals, f)
	}
	return es
}

// Moved returns the eras once the factor moved to f (EstimateFactor, given
// Current, returned f), given the ratios and arrivals of the completed gangs
// that moved it, in the same order: a new era of factor f starts at the
// arrival that best splits them, in order of arrival, into earlier ones near
// the factor of their time and later ones near f (the least sum of the
// distances of their logarithms); later eras are dropped, earlier ones kept.
// Unless the earlier ones' median ratio and the later ones' lie
// FactorEraChange or more apart, with EstimateSamplesMin or more on each
// side, no era starts: the latest era's factor becomes f. (Not f but the
// later ones' median is compared with the earlier ones': halfway through a
// change, the median of all of them lies between the two habits, and f with
// it.)
// The first factor learned (es empty) applies to every arrival. es is not
// modified.
func (es FactorEras) Moved(ratios []float64, arrivals []int64, f float64) FactorEras {
	n := min(len(ratios), len(arrivals))
	if len(es) == 0 || n == 0 {
		// The first factor learned: the 1 before it was no habit, only
		// too few gangs to know one, so it applies to every gang.
		return FactorEras{{From: math.MinInt64, Factor: f}}
	}
	var buf [EstimateSamples]int
	idx := buf[:0]
	for i := range n {
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(arrivals[a], arrivals[b]) })
	dist := func(k int, factor float64) float64 { return math.Abs(math.Log(ratios[idx[k]]) - math.Log(factor)) }
	// cost(s): the first s near their era's factor, the rest near f.
	cost := 0.0
	for k := range idx {
		cost += dist(k, f)
	}
	best, split := cost, 0
	for s := 1; s < n; s++ {
		cost += dist(s-1, es.At(arrivals[idx[s-1]])) - dist(s-1, f)
		if cost < best {
			best, split = cost, s
		}
	}
	var obuf, nbuf [EstimateSamples]float64
	olds, news := obuf[:0], nbuf[:0]
	for k, i := range idx {
		if k < split {
			olds = append(olds, ratios[i])
		} else {
			news = append(news, ratios[i])
		}
	}
	if mo, mn := median(olds), median(news); len(olds) < EstimateSamplesMin || len(news) < EstimateSamplesMin ||
		mo*FactorEraChange > mn && mn*FactorEraChange > mo {
		// The earlier and later gangs ran alike, or too few are on one
		// side to tell: no habit changed, the factor of the latest era
		// moves.
		out := slices.Clone(es)
		out[len(out)-1].Factor = f
		return out
	}
	from := arrivals[idx[split]]
	before := es.At(from - 1)
	keep := 0
	for keep < len(es) && es[keep].From < from {
		keep++
	}
	out := slices.Clone(es[:keep])
	if keep == 0 {
		out = append(out, FactorEra{From: math.MinInt64, Factor: before})
	}
	if out[len(out)-1].Factor != f {
		out = append(out, FactorEra{From: from, Factor: f})
	}
	if len(out) > MaxFactorEras {
		out = slices.Delete(out, 0, len(out)-MaxFactorEras)
	}
	return out
}
