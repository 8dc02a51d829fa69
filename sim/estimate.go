package sim

// Run-time estimates. The simulator knows how long each job runs (its
// Duration); the scheduler only gets an estimate (Gang.Estimate, and the
// expected ends of Snapshot.Releases). By default the estimate is exact;
// EstimateError makes it wrong in a controlled, reproducible way.

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// From is when the error starts to apply, in seconds after the
	// workload's first submission: to the jobs submitted then or later,
	// until a later one of its EstimateErrors takes over (a team whose
	// habits change).
	From int64
}

// EstimateErrors is what a queue's estimates are over time: each job gets
// the last of them whose From is no later than its submission, and an
// exact estimate before the first. Their From values increase.
type EstimateErrors []EstimateError

// Bounds of the forms ParseEstimateError accepts.
const (
	minEstimateFactor = 1e-3
	maxEstimateFactor = 1e3
	maxEstimateNoise  = 5
	// maxEstimate caps an estimate, in seconds (about 31,700 years).
	maxEstimate = 1 << 40
	// maxEstimateFrom caps an error's From, in seconds (about 100 years).
	maxEstimateFrom = 100 * 365 * 86400
)

// ParseEstimateError parses the --estimate-error forms:
//
//	exact       estimates are the durations (also the empty string)
//	x0.5        every estimate is 0.5 times the duration (0.001 to 1000)
//	noise=0.5   every estimate is the duration times exp(N(0, 0.5)), with
//	            a standard deviation from 0 to 5
//
// each optionally followed by @ and when it starts to apply, after the
// workload's first submission: whole days (@20d) or a duration (@36h, @90m).
// Anything else is an error that says what is accepted.
func ParseEstimateError(s string) (EstimateError, error) {
	const forms = "want exact, x<factor> such as x0.5 or x2, or noise=<sigma> such as noise=0.5, optionally followed by @<when> such as @20d or @36h"
	form, when, timed := strings.Cut(s, "@")
	var from int64
	if timed {
		var err error
		if from, err = parseFrom(when); err != nil {
			return EstimateError{}, fmt.Errorf("sim: estimate error %q: %v; %s", s, err, forms)
		}
	}
	switch {
	case form == "" || form == "exact":
		return EstimateError{From: from}, nil
	case strings.HasPrefix(form, "x"):
		f, err := parseFinite(form[1:])
		if err != nil || f < minEstimateFactor || f > maxEstimateFactor {
			return EstimateError{}, fmt.Errorf("sim: estimate error %q: the factor must be a number from %g to %g; %s", s, minEstimateFactor, maxEstimateFactor, forms)
		}
		if f == 1 {
			return EstimateError{From: from}, nil // x1 is exact
		}
		return EstimateError{Factor: f, From: from}, nil
	case strings.HasPrefix(form, "noise="):
		sigma, err := parseFinite(form[len("noise="):])
		if err != nil || sigma < 0 || sigma > maxEstimateNoise {
			return EstimateError{}, fmt.Errorf("sim: estimate error %q: the noise must be a number from 0 to %g; %s", s, float64(maxEstimateNoise), forms)
		}
		return EstimateError{Noise: sigma, From: from}, nil
	}
	return EstimateError{}, fmt.Errorf("sim: estimate error %q: %s", s, forms)
}

// parseFrom parses when an estimate error starts: whole days ("20d") or a
// Go duration of whole seconds ("36h"), from 0 to about 100 years.
func parseFrom(s string) (int64, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if !isDigits(days) || err != nil || n > maxEstimateFrom/86400 {
			return 0, fmt.Errorf("%q is not a whole number of days from 0 to %d", s, maxEstimateFrom/86400)
		}
		return n * 86400, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d%time.Second != 0 || d/time.Second > maxEstimateFrom {
		return 0, fmt.Errorf("%q is not a time such as 20d or 36h (whole seconds, at most %d days)", s, maxEstimateFrom/86400)
	}
	return int64(d / time.Second), nil
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// ParseEstimateErrors parses --estimate-error: one form of
// ParseEstimateError for every queue, or a comma-separated list of forms,
// each prefixed with the queue it applies to and a colon but for those
// that apply to the others (exact if there is none). A queue, or the
// others, may be given several forms that start at different times:
//
//	x2                       every queue pads its estimates twice over
//	team-a:x2,team-b:x0.5    team-a pads, team-b halves, the others are exact
//	noise=0.5,team-a:x2      team-a pads, the others are noisy
//	team-a:x2,team-a:x0.5@20d  team-a pads, and from day 20 halves
//
// A queue's forms replace the others' for all of its jobs. It returns the
// others' errors (nil when they are exact) and the queues' own, each in
// order of From. Whether the queues exist is for the run to check (Run).
func ParseEstimateErrors(s string) (EstimateErrors, map[string]EstimateErrors, error) {
	var (
		def     EstimateErrors
		byQueue map[string]EstimateErrors
	)
	items := strings.Split(s, ",")
	for _, item := range items {
		if item == "" && len(items) > 1 {
			return nil, nil, fmt.Errorf("sim: estimate error %q: an empty item between commas", s)
		}
		queue, form, named := strings.Cut(item, ":")
		if !named {
			e, err := ParseEstimateError(item)
			if err != nil {
				return nil, nil, err
			}
			if slices.ContainsFunc(def, func(o EstimateError) bool { return o.From == e.From }) {
				return nil, nil, fmt.Errorf("sim: estimate error %q: %q and another form apply to every queue from the same time; prefix all but one with a queue and a colon, such as team-a:x2, or start it later, such as %s@20d", s, item, item)
			}
			def = append(def, e)
			continue
		}
		if queue == "" {
			return nil, nil, fmt.Errorf("sim: estimate error %q: %q names no queue before its colon", s, item)
		}
		if form == "" || strings.HasPrefix(form, "@") {
			return nil, nil, fmt.Errorf("sim: estimate error %q: %q gives queue %q no form after its colon (exact, x2, noise=0.5, ...)", s, item, queue)
		}
		e, err := ParseEstimateError(form)
		if err != nil {
			return nil, nil, fmt.Errorf("sim: estimate error of queue %q: %s", queue, strings.TrimPrefix(err.Error(), "sim: "))
		}
		if slices.ContainsFunc(byQueue[queue], func(o EstimateError) bool { return o.From == e.From }) {
			return nil, nil, fmt.Errorf("sim: estimate error %q: queue %q is given two forms from the same time", s, queue)
		}
		if byQueue == nil {
			byQueue = map[string]EstimateErrors{}
		}
		byQueue[queue] = append(byQueue[queue], e)
	}
	sortByFrom := func(es EstimateErrors) {
		slices.SortFunc(es, func(a, b EstimateError) int { return cmp.Compare(a.From, b.From) })
	}
	sortByFrom(def)
	if def.exact() {
		def = nil // exact throughout, however written
	}
	for _, es := range byQueue {
		sortByFrom(es)
	}
	return def, byQueue, nil
}

// formatEstimateErrors returns the form ParseEstimateErrors reads, the
// queues in order of name.
func formatEstimateErrors(def EstimateErrors, byQueue map[string]EstimateErrors) string {
	if len(byQueue) == 0 {
		if len(def) == 0 {
			return "exact"
		}
		return def.String()
	}
	var items []string
	if !def.exact() {
		items = append(items, def.String())
	}
	for _, q := range slices.Sorted(maps.Keys(byQueue)) {
		for _, e := range byQueue[q] {
			items = append(items, q+":"+e.String())
		}
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
	form := "exact"
	switch {
	case e.Noise > 0:
		form = "noise=" + strconv.FormatFloat(e.Noise, 'g', -1, 64)
	case e.Factor != 0 && e.Factor != 1:
		form = "x" + strconv.FormatFloat(e.Factor, 'g', -1, 64)
	}
	switch {
	case e.From == 0:
		return form
	case e.From%86400 == 0:
		return fmt.Sprintf("%s@%dd", form, e.From/86400)
	}
	return form + "@" + (time.Duration(e.From) * time.Second).String()
}

// String returns the comma-separated forms ParseEstimateErrors reads for
// every queue.
func (es EstimateErrors) String() string {
	items := make([]string, len(es))
	for i, e := range es {
		items[i] = e.String()
	}
	return strings.Join(items, ",")
}

// exact says whether es leaves every estimate exact.
func (es EstimateErrors) exact() bool {
	for _, e := range es {
		if e.Noise > 0 || (e.Factor != 0 && e.Factor != 1) {
			return false
		}
	}
	return true
}

// at returns the error of a job submitted since seconds after the
// workload's first submission.
func (es EstimateErrors) at(since int64) EstimateError {
	var cur EstimateError
	for _, e := range es {
		if e.From > since {
			break
		}
		cur = e
	}
	return cur
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
// scheduler does (core.EstimateFactor, core.FactorEras, core.WorkFactor,
// core.OverrunFactor; scheduler/history.go): per queue, the estimates, run
// times and arrivals of its latest completed jobs and the eras of the
// factor the medians of their ratios gave; the work factor of their sums
// and the overrun factor of their 90th percentile are derived from them as
// each completes.
type queueEstimates struct {
	on bool
	// est, ran and arr, by queue index, oldest completion first, at most
	// core.EstimateSamples, for jobs with both est and ran positive.
	est, ran, arr [][]int64
	eras          []core.FactorEras // by queue index
	// gen moves whenever a factor changes, so that the policy refreshes
	// the estimates of the gangs it keeps.
	gen uint64
}

func (q *queueEstimates) init(queues int) {
	q.est = make([][]int64, queues)
	q.ran = make([][]int64, queues)
	q.arr = make([][]int64, queues)
	q.eras = make([]core.FactorEras, queues)
}

// record adds a job of queue that arrived at arrival and ran ran seconds
// against an estimate of estimate seconds, and returns the queue's work
// and overrun factors (core.WorkFactor, core.OverrunFactor; 1 when nothing
// is corrected).
func (q *queueEstimates) record(queue int, estimate, ran, arrival int64) (work, overrun float64) {
	if _, ok := core.EstimateRatio(estimate, ran); !q.on || !ok {
		es, rs, as, eras := q.est[queue], q.ran[queue], q.arr[queue], q.eras[queue]
		return core.WorkFactor(es, rs, as, eras), core.OverrunFactor(es, rs, as, eras)
	}
	es, rs, as := append(q.est[queue], estimate), append(q.ran[queue], ran), append(q.arr[queue], arrival)
	if len(es) > core.EstimateSamples {
		es, rs, as = append(es[:0], es[1:]...), append(rs[:0], rs[1:]...), append(as[:0], as[1:]...)
	}
	q.est[queue], q.ran[queue], q.arr[queue] = es, rs, as
	var buf [core.EstimateSamples]float64
	ratios := buf[:0]
	for i := range es {
		r, _ := core.EstimateRatio(es[i], rs[i])
		ratios = append(ratios, r)
	}
	if eras := q.eras[queue].Follow(ratios, as); eras.Current() != q.eras[queue].Current() {
		q.eras[queue] = eras
		q.gen++
	}
	return core.WorkFactor(es, rs, as, q.eras[queue]), core.OverrunFactor(es, rs, as, q.eras[queue])
}

// expected is the run time the scheduler expects of j: its estimate,
// corrected by its queue's record.
func (s *state) expected(j *job) int64 {
	return core.CorrectEstimate(j.estimate, s.estimates.eras[j.queue].At(j.spec.Submit), maxEstimate)
}
