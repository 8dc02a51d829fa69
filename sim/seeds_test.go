package sim

// The seed experiments: what pod-by-pod scheduling of gang jobs costs, and
// what the gang policies do instead.

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/workload"
)

func mustRun(t *testing.T, w *workload.Workload, policy string) *Result {
	t.Helper()
	r, err := Run(w, policy, Options{Record: true})
	if err != nil {
		t.Fatalf("Run(%s): %v", policy, err)
	}
	return r
}

// span is the start and finish of one job.
type span struct{ Start, Finish int64 }

func spans(r *Result) map[string]span {
	m := map[string]span{}
	for _, o := range r.Jobs {
		m[o.ID] = span{o.Start, o.Finish}
	}
	return m
}

// firstBound returns when the first member of job was bound, or -1.
func firstBound(r *Result, job string) int64 {
	for _, e := range r.Events {
		if e.Job == job && e.Kind == "bound" {
			return e.Time
		}
	}
	return -1
}

// seedA: 4 nodes x 1 GPU; job1 = 1 PS + 3 workers at t=0, job2 = 1 PS + 2
// workers at t=30, each running 600 s.
func seedA() *workload.Workload {
	return newWorkload().
		pool("gpu", 4, gpus(1), cpu(4)).
		job("job1", at(0), runs(600), task("ps", 1, cpu(1)), task("worker", 3, gpus(1))).
		job("job2", at(30), runs(600), task("ps", 1, cpu(1)), task("worker", 2, gpus(1))).
		build()
}

func TestSeedAPodByPod(t *testing.T) {
	r := mustRun(t, seedA(), PolicyPodByPod)
	want := map[string]span{"job1": {0, 600}, "job2": {600, 1200}}
	if d := cmp.Diff(want, spans(r)); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
	// job2's PS and one worker are placed at 30 and hold a GPU until 600.
	if got := firstBound(r, "job2"); got != 30 {
		t.Errorf("job2 first bound at %d, want 30", got)
	}
	if r.Metrics.WastedGPUSeconds < 570 {
		t.Errorf("wasted_gpu_s = %v, want >= 570", r.Metrics.WastedGPUSeconds)
	}
	if r.Metrics.WastedGPUSeconds != 570 {
		t.Errorf("wasted_gpu_s = %v, want exactly 1 GPU x 570 s", r.Metrics.WastedGPUSeconds)
	}
}

func TestSeedAGang(t *testing.T) {
	for _, policy := range []string{PolicyPhalanx, PolicyFIFOGang} {
		t.Run(policy, func(t *testing.T) {
			r := mustRun(t, seedA(), policy)
			want := map[string]span{"job1": {0, 600}, "job2": {600, 1200}}
			if d := cmp.Diff(want, spans(r)); d != "" {
				t.Errorf("spans (-want +got):\n%s", d)
			}
			if got := firstBound(r, "job2"); got != 600 {
				t.Errorf("job2 first bound at %d, want 600 (nothing held while waiting)", got)
			}
			if r.Metrics.WastedGPUSeconds != 0 {
				t.Errorf("wasted_gpu_s = %v, want 0", r.Metrics.WastedGPUSeconds)
			}
		})
	}
}

// seedB (ACK): 2 nodes x 2 GPUs, a job of 1 PS + 4 workers x 2 GPUs with
// minMember 5; 2 more nodes x 2 GPUs join at t=300.
func seedB() *workload.Workload {
	return newWorkload().
		pool("ack", 2, gpus(2), cpu(8)).
		poolAt("late", 2, 300, gpus(2), cpu(8)).
		job("train", at(0), runs(1000), minMember(5), task("ps", 1, cpu(1)), task("worker", 4, gpus(2))).
		build()
}

func TestSeedBPodByPod(t *testing.T) {
	r := mustRun(t, seedB(), PolicyPodByPod)
	if got := spans(r)["train"]; got != (span{300, 1300}) {
		t.Errorf("train ran %v, want {300 1300}", got)
	}
	var boundAt0 int
	for _, e := range r.Events {
		if e.Kind == "bound" && e.Time == 0 {
			boundAt0++
		}
	}
	if boundAt0 != 3 {
		t.Errorf("%d members bound at 0, want 3 (PS and 2 workers)", boundAt0)
	}
	m := r.Metrics
	// 4 GPUs held by 2 waiting workers from 0 to 300.
	if m.WastedGPUSeconds != 4*300 {
		t.Errorf("wasted_gpu_s = %v, want 1200", m.WastedGPUSeconds)
	}
	// 8 GPUs x 1000 s over 4 GPUs x 1300 s + 4 GPUs x 1000 s.
	if want := 8000.0 / 9200.0; Value(m.GPUUtilization) != want {
		t.Errorf("gpu_utilization = %v, want %v", Value(m.GPUUtilization), want)
	}
}

func TestSeedBGang(t *testing.T) {
	r := mustRun(t, seedB(), PolicyPhalanx)
	if got := spans(r)["train"]; got != (span{300, 1300}) {
		t.Errorf("train ran %v, want {300 1300}", got)
	}
	if got := firstBound(r, "train"); got != 300 {
		t.Errorf("train first bound at %d, want 300", got)
	}
	if r.Metrics.WastedGPUSeconds != 0 {
		t.Errorf("wasted_gpu_s = %v, want 0", r.Metrics.WastedGPUSeconds)
	}
}

// Two jobs of 3 x 1-GPU pods arrive together on 4 GPUs: created
// round-robin, each gets 2 pods and neither ever starts.
func deadlock() *workload.Workload {
	return newWorkload().
		pool("gpu", 4, gpus(1), cpu(4)).
		job("a", at(0), runs(600), task("worker", 3, gpus(1))).
		job("b", at(0), runs(600), task("worker", 3, gpus(1))).
		build()
}

func TestDeadlockPodByPod(t *testing.T) {
	r := mustRun(t, deadlock(), PolicyPodByPod)
	m := r.Metrics
	if m.StuckJobs != 2 || m.JobsCompleted != 0 || m.UnschedulableJobs != 0 {
		t.Errorf("stuck %d, completed %d, unschedulable %d; want 2, 0, 0", m.StuckJobs, m.JobsCompleted, m.UnschedulableJobs)
	}
	for _, o := range r.Jobs {
		if o.State != JobStuck || o.Placed != 2 || o.Start != -1 {
			t.Errorf("%s: state %s, placed %d, start %d; want Stuck, 2, -1", o.ID, o.State, o.Placed, o.Start)
		}
		if want := "2/3 pods placed; 1 pending: no node has 1 nvidia.com/gpu free"; o.Reason != want {
			t.Errorf("%s: reason %q, want %q", o.ID, o.Reason, want)
		}
	}
	if got := r.GPUs[len(r.GPUs)-1]; got.Held != 4 || got.Running != 0 {
		t.Errorf("last sample %+v, want 4 held, 0 running", got)
	}
	if d := cmp.Diff([]Waiting{{0, 2}}, r.Waiting); d != "" {
		t.Errorf("waiting jobs (-want +got):\n%s", d)
	}
	// The run ends at 0, its last event, with 4 GPUs held forever: they
	// count as idle for the 600 s either job would have run.
	if m.HeldIdleAtEnd != 4 || m.WastedGPUSeconds != 4*600 {
		t.Errorf("%d GPUs held at the end, %v GPU-s idle; want 4 and 2400", m.HeldIdleAtEnd, m.WastedGPUSeconds)
	}
	// Nothing completed or started: no time figure is 0, all are missing.
	for name, f := range map[string]*float64{"mean JCT": m.MeanJCT, "p50 JCT": m.P50JCT, "p99 JCT": m.P99JCT,
		"mean wait": m.MeanWait, "p99 wait": m.P99Wait, "p99 wait big": m.P99WaitBig, "makespan": m.Makespan,
		"fairness": m.FairnessMean} {
		if f != nil {
			t.Errorf("%s = %v, want none", name, *f)
		}
	}
	// Utilisation runs to the idle horizon: 0 of 4 GPUs x 600 s.
	if u := m.GPUUtilization; u == nil || *u != 0 {
		t.Errorf("utilisation %v, want 0", Value(u))
	}
}

func TestDeadlockGang(t *testing.T) {
	for _, policy := range []string{PolicyPhalanx, PolicyFIFOGang} {
		t.Run(policy, func(t *testing.T) {
			r := mustRun(t, deadlock(), policy)
			want := map[string]span{"a": {0, 600}, "b": {600, 1200}}
			if d := cmp.Diff(want, spans(r)); d != "" {
				t.Errorf("spans (-want +got):\n%s", d)
			}
			if r.Metrics.StuckJobs != 0 || r.Metrics.JobsCompleted != 2 {
				t.Errorf("metrics %+v", r.Metrics)
			}
			// b waits from 0 to 600.
			if d := cmp.Diff([]Waiting{{0, 1}, {600, 0}}, r.Waiting); d != "" {
				t.Errorf("waiting jobs (-want +got):\n%s", d)
			}
		})
	}
}

// A job larger than the cluster is unschedulable under every policy; pod by
// pod it still grabs what it can, and holds it to the end of the run.
func TestLargerThanCluster(t *testing.T) {
	w := newWorkload().
		pool("gpu", 2, gpus(1), cpu(4)).
		job("huge", at(0), runs(100), task("worker", 3, gpus(1))).
		job("small", at(10), runs(100), task("worker", 1, cpu(1))).
		build()
	for _, policy := range Policies {
		t.Run(policy, func(t *testing.T) {
			r := mustRun(t, w, policy)
			o := r.Jobs[0]
			wantCompleted := 1
			if policy == PolicyFIFOGang {
				// Strict FIFO: the job that never fits blocks the one behind.
				wantCompleted = 0
				if s := r.Jobs[1]; s.State != JobStuck || !strings.Contains(s.Reason, "huge") {
					t.Errorf("small: %+v, want stuck behind huge", s)
				}
			}
			if o.State != JobUnschedulable || r.Metrics.UnschedulableJobs != 1 || r.Metrics.JobsCompleted != wantCompleted {
				t.Fatalf("huge: %+v; metrics %+v", o, r.Metrics)
			}
			if o.Reason == "" {
				t.Errorf("huge has no reason")
			}
			wantPlaced, wantWaste, wantHeld := 0, 0.0, int64(0)
			if policy == PolicyPodByPod {
				// 2 GPUs held from 0 and never freed: the run ends at 110
				// (small completes) and they count as idle for huge's
				// duration after that, to the idle horizon 210.
				wantPlaced, wantWaste, wantHeld = 2, 2*210, 2
			}
			if m := r.Metrics; o.Placed != wantPlaced || m.WastedGPUSeconds != wantWaste || m.HeldIdleAtEnd != wantHeld {
				t.Errorf("placed %d, waste %v, %d GPUs held at the end; want %d, %v, %d", o.Placed, m.WastedGPUSeconds, m.HeldIdleAtEnd, wantPlaced, wantWaste, wantHeld)
			}
		})
	}
}

func TestConstraints(t *testing.T) {
	w := newWorkload().
		pool("a", 1, gpus(1), cpu(4)).labels("zone", "a").
		pool("b", 1, gpus(1), cpu(4)).labels("zone", "b").
		pool("t", 1, gpus(1), cpu(4)).taint("dedicated").
		job("inb", at(0), runs(10), task("w", 1, gpus(1), selector("zone", "b"))).
		job("tol", at(0), runs(10), task("w", 1, gpus(1), selector("zone", "t"), tolerate("dedicated"))).
		build()
	for _, policy := range Policies {
		t.Run(policy, func(t *testing.T) {
			r := mustRun(t, w, policy)
			nodes := map[string]string{}
			for _, e := range r.Events {
				if e.Kind == "bound" {
					nodes[e.Job] = e.Node
				}
			}
			if nodes["inb"] != "b-0" {
				t.Errorf("inb bound to %q, want b-0", nodes["inb"])
			}
			if _, ok := nodes["tol"]; ok {
				t.Errorf("tol bound to %q; no node has zone=t", nodes["tol"])
			}
			if o := r.Jobs[1]; o.State != JobUnschedulable || o.Reason == "" {
				t.Errorf("tol: %+v, want Unschedulable with a reason", o)
			}
			if policy == PolicyPodByPod && !strings.Contains(r.Jobs[1].Reason, "nodeSelector") {
				t.Errorf("tol reason %q does not mention the nodeSelector", r.Jobs[1].Reason)
			}
		})
	}
}

func TestUnknownPolicy(t *testing.T) {
	if _, err := Run(seedA(), "round-robin", Options{}); err == nil {
		t.Fatal("Run with an unknown policy succeeded")
	}
}
