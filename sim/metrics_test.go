package sim

// Metric functions on hand-computed values, and one small run whose every
// figure is worked out by hand in the comments.

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []float64
		p      int
		want   float64 // NaN: none
	}{
		{"empty", nil, 99, math.NaN()},
		{"one sample", []float64{7}, 50, 7},
		{"p50 of 1..100", hundred, 50, 50},
		{"p99 of 1..100", hundred, 99, 99},
		{"p100 of 1..100", hundred, 100, 100},
		{"p50 of four: rank ceil(2) = 2", []float64{1, 2, 3, 4}, 50, 2},
		{"p99 of four: rank ceil(3.96) = 4", []float64{1, 2, 3, 4}, 99, 4},
		{"p50 of two: rank 1", []float64{100, 150}, 50, 100},
		{"p1 of 1..100", hundred, 1, 1},
	}
	for _, tc := range tests {
		if got := Value(Percentile(tc.sorted, tc.p)); got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s: Percentile = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Water-filling by weight, capped by demand, what a capped party leaves
// dealt again to the others.
func TestWaterFill(t *testing.T) {
	tests := []struct {
		name          string
		capacity      float64
		weights, caps []float64
		want          []float64
	}{
		{"equal weights, enough demand", 30, []float64{1, 1}, []float64{100, 100}, []float64{15, 15}},
		{"one capped: the rest to the other", 30, []float64{1, 1}, []float64{10, 100}, []float64{10, 20}},
		{"by weight 2:1", 30, []float64{2, 1}, []float64{100, 100}, []float64{20, 10}},
		// 3 x 40 / 6 = 20 > cap 5 for the first; then 35 over weights 2 and
		// 1: 23.33 > cap 20 for the second; the third gets the 15 left.
		{"capped in two rounds", 40, []float64{3, 2, 1}, []float64{5, 20, 100}, []float64{5, 20, 15}},
		{"demand below capacity", 30, []float64{1, 1}, []float64{5, 10}, []float64{5, 10}},
		{"no demand", 30, []float64{1, 1}, []float64{0, 0}, []float64{0, 0}},
	}
	for _, tc := range tests {
		if got := waterFill(tc.capacity, tc.weights, tc.caps); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFairnessWindow(t *testing.T) {
	for _, tc := range []struct{ span, want int64 }{
		{0, 1}, {9, 1}, {150, 15}, {151, 16}, {9 * 86400, 77760}, {10 * 86400, 86400}, {70 * 86400, 86400},
	} {
		if got := fairnessWindow(tc.span); got != tc.want {
			t.Errorf("fairnessWindow(%d) = %d, want %d", tc.span, got, tc.want)
		}
	}
}

func TestIntegrate(t *testing.T) {
	samples := []Sample{{Time: 0, Running: 1, Held: 2}, {Time: 100, Running: 2, Held: 2}, {Time: 150}}
	running := func(s Sample) int64 { return s.Running }
	held := func(s Sample) int64 { return s.Held }
	tests := []struct {
		name     string
		from, to int64
		value    func(Sample) int64
		want     int64
	}{
		{"running over all", 0, 150, running, 1*100 + 2*50},
		{"held over all", 0, 150, held, 2 * 150},
		{"clipped", 50, 120, running, 1*50 + 2*20},
		{"past the last sample", 0, 200, running, 200},
		{"before the first sample", -50, 10, running, 10},
		{"empty window", 80, 80, running, 0},
	}
	for _, tc := range tests {
		if got := integrate(samples, tc.from, tc.to, tc.value); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// One node with 2 GPUs. At t=0 arrive, in this order: a (queue qa, 1 pod of
// 1 GPU, 100 s), b (queue qb, 2 pods of 1 GPU, 50 s) and c (queue qc, 1 pod
// of 3 GPUs, 10 s). Pod by pod, created a0 b0 c0 b1: a0 and b0 bind, c0 and
// b1 do not fit. a runs 0..100 while b0 holds a GPU for nothing; at 100 b1
// binds and b runs 100..150; c never fits anywhere.
func TestMetricsByHand(t *testing.T) {
	w := newWorkload().
		pool("n", 1, gpus(2), cpu(8)).
		job("a", at(0), runs(100), inQueue("qa"), task("w", 1, gpus(1))).
		job("b", at(0), runs(50), inQueue("qb"), task("w", 2, gpus(1))).
		job("c", at(0), runs(10), inQueue("qc"), task("w", 1, gpus(3))).
		build()
	r := mustRun(t, w, PolicyPodByPod)
	want := Metrics{
		JobsTotal:         3,
		JobsCompleted:     2,
		StuckJobs:         0,
		UnschedulableJobs: 1,
		MeanJCT:           figure((100 + 150) / 2.0),
		P50JCT:            figure(100), // nearest rank ceil(0.5*2) = 1
		P99JCT:            figure(150), // rank ceil(0.99*2) = 2
		MeanWait:          figure((0 + 100) / 2.0),
		P99Wait:           figure(100),
		P99WaitBig:        nil, // no job of 8 GPUs or more started
		MaxWaitBig:        nil,
		GPUUtilization:    figure(200.0 / 300), // a 1x100 + b 2x50 over 2 GPUs x 150 s; none while arriving: all at 0
		WastedGPUSeconds:  100,                 // b0 holds 1 GPU from 0 to 100
		Makespan:          figure(150),
		// Windows of 15 s (a tenth of 150 s); c is larger than the
		// cluster and demands nothing. In each of the 6 windows of
		// [0, 90) only a runs: 15 GPU-s received, qa demands 15 and qb 30,
		// each deserves 7.5; qa receives 15, qb 0: honoured (7.5 + 0) /
		// 15 = 0.5, least-served 0. In [90, 105) qa receives 1 x 10 and qb
		// 2 x 5 (from 100): 20 dealt over demands 10 and 30 gives each 10:
		// 1 and 1. In the 3 windows of [105, 150) qb alone demands,
		// deserves and receives 30: 1 and 1. Means (6 x 0.5 + 4) / 10 and
		// 4 / 10.
		FairnessWindow:      15,
		FairnessMean:        figure(7.0 / 10),
		FairnessWorst:       figure(0.5),
		FairnessLeastServed: figure(4.0 / 10),
	}
	if d := cmp.Diff(want, r.Metrics); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	wantGPUs := []Sample{{Time: 0, Running: 1, Held: 2}, {Time: 100, Running: 2, Held: 2}, {Time: 150}}
	if d := cmp.Diff(wantGPUs, r.GPUs); d != "" {
		t.Errorf("GPU series (-want +got):\n%s", d)
	}
	if want := "0/1 pods placed; 1 pending: no node is large enough for 3 nvidia.com/gpu"; r.Jobs[2].Reason != want {
		t.Errorf("c: reason %q, want %q", r.Jobs[2].Reason, want)
	}
}

// While jobs arrive: on one node of 2 GPUs, a (1 GPU, 100 s) arrives at 0
// and b (2 GPUs, 100 s) at 50, which waits for a to end at 100. Until b's
// arrival 1 of 2 GPUs runs: 0.5; over the run, 1x100 + 2x100 over 2x200.
func TestUtilizationWhileArriving(t *testing.T) {
	w := newWorkload().
		pool("n", 1, gpus(2), cpu(8)).
		job("a", at(0), runs(100), task("w", 1, gpus(1))).
		job("b", at(50), runs(100), task("w", 1, gpus(2))).
		build()
	for _, policy := range Policies {
		m := mustRun(t, w, policy).Metrics
		if Value(m.GPUUtilizationArriving) != 0.5 || Value(m.GPUUtilization) != 300.0/400 {
			t.Errorf("%s: utilisation while arriving %v, overall %v; want 0.5 and 0.75", policy,
				Value(m.GPUUtilizationArriving), Value(m.GPUUtilization))
		}
	}
}

// Two nodes of 2 GPUs, the second joining at t=100; one job of 2 GPUs runs
// 0..200. Capacity is 2x200 + 2x100 = 600 GPU-seconds, use 2x200 = 400.
func TestUtilizationWithLatePool(t *testing.T) {
	w := newWorkload().
		pool("early", 1, gpus(2), cpu(8)).
		poolAt("late", 1, 100, gpus(2), cpu(8)).
		job("j", at(0), runs(200), task("w", 1, gpus(2))).
		build()
	for _, policy := range Policies {
		r := mustRun(t, w, policy)
		if want := 400.0 / 600; Value(r.Metrics.GPUUtilization) != want {
			t.Errorf("%s: gpu_utilization %v, want %v", policy, Value(r.Metrics.GPUUtilization), want)
		}
	}
}

// Wait statistics for big jobs count only jobs of 8 GPUs or more; the
// makespan starts at the first submit.
func TestWaitBigAndMakespanOrigin(t *testing.T) {
	w := newWorkload().
		pool("n", 2, gpus(8), cpu(64)).
		job("big1", at(1000), runs(100), task("w", 1, gpus(8))).
		job("big2", at(1000), runs(100), task("w", 2, gpus(8))).
		job("small", at(1010), runs(10), task("w", 1, gpus(1))).
		build()
	r := mustRun(t, w, PolicyPodByPod)
	// big1 runs 1000..1100 on one node; big2's first pod takes the other node
	// and waits for big1; small waits behind nobody but finds no GPU until
	// 1100, when big2's second pod is created first and takes the node.
	// big2 runs 1100..1200, small 1200..1210.
	want := map[string]span{"big1": {1000, 1100}, "big2": {1100, 1200}, "small": {1200, 1210}}
	if d := cmp.Diff(want, spans(r)); d != "" {
		t.Fatalf("spans (-want +got):\n%s", d)
	}
	m := r.Metrics
	if Value(m.P99WaitBig) != 100 || Value(m.P99Wait) != 190 || Value(m.Makespan) != 210 {
		t.Errorf("p99 wait big %v, p99 wait %v, makespan %v; want 100, 190, 210", Value(m.P99WaitBig), Value(m.P99Wait), Value(m.Makespan))
	}
}

// The longest wait of big jobs is the one the p99 leaves out: 101 jobs of
// 8 GPUs, 10 s each, all at 0, on one node of 8 GPUs, run one after another
// and wait 0, 10, ..., 1000 s; the p99 is the 100th wait (nearest rank
// ceil(0.99 x 101) = 100), 990 s, the longest 1000 s.
func TestMaxWaitBig(t *testing.T) {
	b := newWorkload().pool("n", 1, gpus(8), cpu(64))
	for i := range 101 {
		b.job(fmt.Sprintf("j%03d", i), at(0), runs(10), task("w", 1, gpus(8)))
	}
	r := mustRun(t, b.build(), PolicyFIFOGang)
	if m := r.Metrics; Value(m.P99WaitBig) != 990 || Value(m.MaxWaitBig) != 1000 {
		t.Errorf("p99 wait big %v, longest %v; want 990, 1000", Value(m.P99WaitBig), Value(m.MaxWaitBig))
	}
}
