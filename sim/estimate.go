package sim

// Run-time estimates. The simulator knows how long each job runs (its
// Duration); the scheduler only gets an estimate (Gang.Estimate, and the
// expected ends of Snapshot.Releases). By default the estimate is exact;
// EstimateError makes it wrong in a controlled, reproducible way.

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/phalanx-sched/phalanx/core"
)

// EstimateError turns a job's duration into the scheduler's estimate of it.
// The zero value is exact.
type EstimateError struct {
	// Factor, when not 0, multiplies every duration: 0.5 underestimates
	// every job by half, 2 overestimates it twice.
	Factor float64
	// Noise, when > 0, multiplies every duration by exp(N(0, Noise)),
	// drawn from a generator seeded with the job's ID alone, so that a job's
	// estimate depends neither on the other jobs nor on their order.
	Noise float64
}

// Bounds of the forms ParseEstimateError accepts.
const (
	minEstimateFactor = 1e-3
	maxEstimateFactor = 1e3
	maxEstimateNoise  = 5
	// maxEstimate caps an estimate, in seconds (about 31,700 years).
	maxEstimate = 1 << 40
)

// ParseEstimateError parses the --estimate-error forms:
//
//	exact       estimates are the durations (also the empty string)
//	x0.5        every estimate is 0.5 times the duration (0.001 to 1000)
//	noise=0.5   every estimate is the duration times exp(N(0, 0.5)), with
//	            a standard deviation from 0 to 5
//
// Anything else is an error that says what is accepted.
func ParseEstimateError(s string) (EstimateError, error) {
	const forms = "want exact, x<factor> such as x0.5 or x2, or noise=<sigma> such as noise=0.5"
	switch {
	case s == "" || s == "exact":
		return EstimateError{}, nil
	case strings.HasPrefix(s, "x"):
		f, err := parseFinite(s[1:])
		if err != nil || f < minEstimateFactor || f > maxEstimateFactor {
			return EstimateError{}, fmt.Errorf("sim: estimate error %q: the factor must be a number from %g to %g; %s", s, minEstimateFactor, maxEstimateFactor, forms)
		}
		if f == 1 {
			return EstimateError{}, nil // x1 is exact
		}
		return EstimateError{Factor: f}, nil
	case strings.HasPrefix(s, "noise="):
		sigma, err := parseFinite(s[len("noise="):])
		if err != nil || sigma < 0 || sigma > maxEstimateNoise {
			return EstimateError{}, fmt.Errorf("sim: estimate error %q: the noise must be a number from 0 to %g; %s", s, float64(maxEstimateNoise), forms)
		}
		return EstimateError{Noise: sigma}, nil
	}
	return EstimateError{}, fmt.Errorf("sim: estimate error %q: %s", s, forms)
}

// ParseEstimateErrors parses --estimate-error: one form of
// ParseEstimateError for every queue, or a comma-separated list of forms,
// each but one prefixed with the queue it applies to and a colon; the one
// without a queue applies to the others (exact if there is none):
//
//	x2                       every queue pads its estimates twice over
//	team-a:x2,team-b:x0.5    team-a pads, team-b halves, the others are exact
//	noise=0.5,team-a:x2      team-a pads, the others are noisy
//
// It returns the others' error and the queues' own. Whether the queues
// exist is for the run to check (Run).
func ParseEstimateErrors(s string) (EstimateError, map[string]EstimateError, error) {
	var (
		def     EstimateError
		hasDef  bool
		byQueue map[string]EstimateError
	)
	items := strings.Split(s, ",")
	for _, item := range items {
		if item == "" && len(items) > 1 {
			return EstimateError{}, nil, fmt.Errorf("sim: estimate error %q: an empty item between commas", s)
		}
		queue, form, named := strings.Cut(item, ":")
		if !named {
			if hasDef {
				return EstimateError{}, nil, fmt.Errorf("sim: estimate error %q: %q and another form apply to every queue; prefix all but one with a queue and a colon, such as team-a:x2", s, item)
			}
			e, err := ParseEstimateError(item)
			if err != nil {
				return EstimateError{}, nil, err
			}
			def, hasDef = e, true
			continue
		}
		if queue == "" {
			return EstimateError{}, nil, fmt.Errorf("sim: estimate error %q: %q names no queue before its colon", s, item)
		}
		if _, dup := byQueue[queue]; dup {
			return EstimateError{}, nil, fmt.Errorf("sim: estimate error %q: queue %q is given twice", s, queue)
		}
		e, err := ParseEstimateError(form)
		if err != nil {
			return EstimateError{}, nil, fmt.Errorf("sim: estimate error of queue %q: %s", queue, strings.TrimPrefix(err.Error(), "sim: "))
		}
		if byQueue == nil {
			byQueue = map[string]EstimateError{}
		}
		byQueue[queue] = e
	}
	return def, byQueue, nil
}

// formatEstimateErrors returns the form ParseEstimateErrors reads, the
// queues in order of name.
func formatEstimateErrors(def EstimateError, byQueue map[string]EstimateError) string {
	if len(byQueue) == 0 {
		return def.String()
	}
	var items []string
	if def != (EstimateError{}) {
		items = append(items, def.String())
	}
	for _, q := range slices.Sorted(maps.Keys(byQueue)) {
		items = append(items, q+":"+byQueue[q].String())
	}
	return strings.Join(items, ",")
}

// parseFinite parses a plain decimal number: no sign other than a leading
// minus, no hexadecimal, no infinities, no NaN, no underscores.
func parseFinite(s string) (float64, error) {
	if s == "" || strings.ContainsAny(s, "xXpP_iInN+") {
		return 0, fmt.Errorf("not a decimal number")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("not a decimal number")
	}
	return f, nil
}

// String returns the form ParseEstimateError reads.
func (e EstimateError) String() string {
	switch {
	case e.Noise > 0:
		return "noise=" + strconv.FormatFloat(e.Noise, 'g', -1, 64)
	case e.Factor != 0 && e.Factor != 1:
		return "x" + strconv.FormatFloat(e.Factor, 'g', -1, 64)
	}
	return "exact"
}

// estimate returns the estimate of a job of the given ID and duration: at
// least 1 s for a job that runs at all, at most maxEstimate.
func (e EstimateError) estimate(id string, duration int64) int64 {
	f := 1.0
	if e.Factor != 0 {
		f = e.Factor
	}
	if e.Noise > 0 {
		h := fnv.New64a()
		h.Write([]byte(id))
		rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
		f *= math.Exp(e.Noise * rng.NormFloat64())
	}
	if f == 1 || duration == 0 {
		return duration
	}
	est := math.Round(float64(duration) * f)
	return int64(min(max(est, 1), maxEstimate))
}

// queueEstimates corrects the estimates the scheduler gets as the
// scheduler does (core.EstimateFactor, core.WorkFactor;
// scheduler/history.go): per queue, the estimates and run times of its
// latest completed jobs and the factor the median of their ratios gives;
// the work factor of their sums is derived from them as each completes.
type queueEstimates struct {
	on bool
	// est and ran, by queue index, oldest first, at most
	// core.EstimateSamples, for jobs with both positive.
	est, ran [][]int64
	factor   []float64 // by queue index
	// gen moves whenever a factor changes, so that the policy refreshes
	// the estimates of the gangs it keeps.
	gen uint64
}

func (q *queueEstimates) init(queues int) {
	q.est = make([][]int64, queues)
	q.ran = make([][]int64, queues)
	q.factor = make([]float64, queues)
	for i := range q.factor {
		q.factor[i] = 1
	}
}

// record adds a job of queue that ran ran seconds against an estimate of
// estimate seconds, and returns the queue's work factor (core.WorkFactor;
// 1 when nothing is corrected).
func (q *queueEstimates) record(queue int, estimate, ran int64) (work float64) {
	if _, ok := core.EstimateRatio(estimate, ran); !q.on || !ok {
		return core.WorkFactor(q.est[queue], q.ran[queue], q.factor[queue])
	}
	es, rs := append(q.est[queue], estimate), append(q.ran[queue], ran)
	if len(es) > core.EstimateSamples {
		es, rs = append(es[:0], es[1:]...), append(rs[:0], rs[1:]...)
	}
	q.est[queue], q.ran[queue] = es, rs
	var buf [core.EstimateSamples]float64
	ratios := buf[:0]
	for i := range es {
		r, _ := core.EstimateRatio(es[i], rs[i])
		ratios = append(ratios, r)
	}
	if f := core.EstimateFactor(ratios, q.factor[queue]); f != q.factor[queue] {
		q.factor[queue] = f
		q.gen++
	}
	return core.WorkFactor(es, rs, q.factor[queue])
}

// expected is the run time the scheduler expects of j: its estimate,
// corrected by its queue's record.
func (s *state) expected(j *job) int64 {
	return core.CorrectEstimate(j.estimate, s.estimates.factor[j.queue], maxEstimate)
}
