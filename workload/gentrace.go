package workload

// GenerateTrace writes a synthetic GPU cluster trace in the CSV format that
// ReadTrace reads (job_id, submit_time_s, duration_s, num_gpus, vc), so that
// policies can be compared on load that was not used to choose their
// defaults. What it draws, all from one seeded generator:
//
//   - Sizes: 75% of jobs take 1 GPU, 10% 2 or 4, and 15% are gangs of 8, 16,
//     32 or 64 GPUs (weighted 8:4:2:1).
//   - Run times, log-normal and clipped to [1 min, 14 days]: a median of
//     20 minutes for 1 GPU, 1 hour for 2 or 4, 4 hours for gangs, each with
//     sigma 1.5 (a long tail: some jobs run for days).
//   - Queues: Queues of them, q0 first, with skewed demand: queue i gets a
//     share of the jobs proportional to 1/(i+1), and the odd queues have
//     twice the even ones' share of gangs among their jobs.
//   - Arrivals: the span is set so that the offered load (GPU-seconds asked
//     for over GPU-seconds available while jobs arrive) is Load. Each queue
//     alternates busy and quiet periods (exponential, 12 hours on average,
//     four times the arrival rate when busy), so that queues' demand, and
//     with it their deserved shares, move as they do on a shared cluster.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// GenOptions describe a synthetic trace.
type GenOptions struct {
	// Seed selects the trace: the same options give the same bytes.
	Seed uint64
	// Jobs is how many jobs; at least 1.
	Jobs int
	// GPUs is the size of the cluster the load is relative to; at least 64,
	// the largest job drawn.
	GPUs int
	// Load is the offered load: above 1 the cluster is overloaded while
	// jobs arrive. In (0, 100].
	Load float64
	// Queues is how many queues (vc); 1 to 100.
	Queues int
}

// Load levels of GenOptions.Load by name.
const (
	LoadLight      = 0.6
	LoadOverloaded = 1.3
)

// ParseLoad reads a load level: light, overloaded or a number.
func ParseLoad(s string) (float64, error) {
	switch s {
	case "light":
		return LoadLight, nil
	case "overloaded":
		return LoadOverloaded, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0 && v <= 100) {
		return 0, fmt.Errorf("workload: load %q: want light, overloaded or a number in (0, 100]", s)
	}
	return v, nil
}

type genJob struct {
	queue    int
	gpus     int
	duration int64
	submit   int64
}

// maxGenGPUs is the largest job GenerateTrace draws, hence the smallest
// cluster its traces fit.
const maxGenGPUs = 64

// GenerateTrace writes the trace opt describes to w.
func GenerateTrace(w io.Writer, opt GenOptions) error {
	switch {
	case opt.Jobs < 1 || opt.Jobs > maxCount:
		return fmt.Errorf("workload: jobs must be between 1 and %d, got %d", maxCount, opt.Jobs)
	case opt.GPUs < maxGenGPUs || opt.GPUs > maxCount:
		return fmt.Errorf("workload: gpus must be between %d, the largest job it draws, and %d, got %d", maxGenGPUs, maxCount, opt.GPUs)
	case !(opt.Load > 0 && opt.Load <= 100):
		return fmt.Errorf("workload: load must be in (0, 100], got %v", opt.Load)
	case opt.Queues < 1 || opt.Queues > 100:
		return fmt.Errorf("workload: queues must be between 1 and 100, got %d", opt.Queues)
	}
	r := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	// Queue shares of jobs, 1/(i+1), and of gangs among them.
	share := make([]float64, opt.Queues)
	var total float64
	for i := range share {
		share[i] = 1 / float64(i+1)
		total += share[i]
	}
	jobs := make([]genJob, opt.Jobs)
	var work float64 // GPU-seconds
	for i := range jobs {
		j := &jobs[i]
		j.queue = pick(r, share, total)
		gangShare := 0.10
		if j.queue%2 == 1 {
			gangShare = 0.20
		}
		u := r.Float64()
		switch {
		case u < gangShare:
			j.gpus = []int{8, 8, 8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 32, 32, 64}[r.IntN(15)]
			j.duration = logNormal(r, 4*3600, 1.5)
		case u < gangShare+0.10:
			j.gpus = 2 << r.IntN(2)
			j.duration = logNormal(r, 3600, 1.5)
		default:
			j.gpus = 1
			j.duration = logNormal(r, 20*60, 1.5)
		}
		work += float64(j.gpus) * float64(j.duration)
	}
	span := work / (float64(opt.GPUs) * opt.Load)
	// Arrivals: each queue's busy and quiet periods over the span, then
	// each job at a time drawn by the queue's rate (rejection sampling).
	const period, busy, quiet = 12 * 3600.0, 4.0, 1.0
	type phase struct {
		end  float64
		rate float64
	}
	phases := make([][]phase, opt.Queues)
	for q := range phases {
		on := r.IntN(2) == 0
		for t := 0.0; t < span; {
			t += r.ExpFloat64() * period
			rate := quiet
			if on {
				rate = busy
			}
			phases[q] = append(phases[q], phase{end: t, rate: rate})
			on = !on
		}
	}
	rateAt := func(q int, t float64) float64 {
		ps := phases[q]
		k, _ := slices.BinarySearchFunc(ps, t, func(p phase, t float64) int {
			if p.end <= t {
				return -1
			}
			return 1
		})
		return ps[min(k, len(ps)-1)].rate
	}
	for i := range jobs {
		for {
			t := r.Float64() * span
			if r.Float64()*busy < rateAt(jobs[i].queue, t) {
				jobs[i].submit = int64(t)
				break
			}
		}
	}
	slices.SortStableFunc(jobs, func(a, b genJob) int { return int(a.submit - b.submit) })

	cw := csv.NewWriter(w)
	if err := cw.Write(traceColumns); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	for i, j := range jobs {
		rec := []string{fmt.Sprintf("gen%d-%d", opt.Seed, i), strconv.FormatInt(j.submit, 10),
			strconv.FormatInt(j.duration, 10), strconv.Itoa(j.gpus), fmt.Sprintf("q%d", j.queue)}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("workload: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	return nil
}

// pick returns i with probability weights[i]/total.
func pick(r *rand.Rand, weights []float64, total float64) int {
	u := r.Float64() * total
	for i, w := range weights {
		if u < w {
			return i
		}
		u -= w
	}
	return len(weights) - 1
}

// logNormal draws a run time in seconds of the given median and sigma,
// clipped to [1 minute, 14 days].
func logNormal(r *rand.Rand, median, sigma float64) int64 {
	v := median * math.Exp(sigma*r.NormFloat64())
	return int64(math.Min(math.Max(v, 60), 14*86400))
}

// errNoJobs is returned by OfferedLoad for an empty workload.
var errNoJobs = errors.New("workload: no jobs")

// OfferedLoad is the GPU-seconds w's jobs ask for over the GPU-seconds of
// its nodes from the first arrival to the last.
func OfferedLoad(w *Workload) (float64, error) {
	if len(w.Jobs) == 0 {
		return 0, errNoJobs
	}
	var gpus, work float64
	for _, p := range w.Pools {
		gpus += float64(p.Count) * float64(p.Allocatable[GPU])
	}
	first, last := w.Jobs[0].Submit, w.Jobs[0].Submit
	for _, j := range w.Jobs {
		work += float64(j.Total(GPU)) * float64(j.Duration)
		first, last = min(first, j.Submit), max(last, j.Submit)
	}
	if gpus == 0 || last == first {
		return 0, errNoJobs
	}
	return work / (gpus * float64(last-first)), nil
}
