package sim

// Engine behaviour: determinism, elastic members, progress reports, the
// checks on the core's plans (with a fake core) and the node filter.

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

// randomWorkload builds a mixed workload from a fixed seed: three queues
// with different weights, a pool that joins late, gangs with a PS role and
// GPU workers of several sizes, some elastic.
func randomWorkload(seed uint64, jobs int) *workload.Workload {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := newWorkload().
		pool("a", 6, gpus(4), cpu(32), mem(128)).
		poolAt("b", 4, 2000, gpus(8), cpu(64), mem(256)).
		queue("research", 2).queue("prod", 3).queue("batch", 1)
	queues := []string{"research", "prod", "batch"}
	for i := 0; i < jobs; i++ {
		workers := 1 + rng.IntN(6)
		opts := []jobOpt{
			at(int64(rng.IntN(5000))), runs(int64(60 + rng.IntN(3000))),
			inQueue(queues[rng.IntN(len(queues))]),
			task("ps", rng.IntN(2), cpu(2), mem(4)),
			task("worker", workers, gpus(int64(1<<rng.IntN(3))), cpu(4), mem(16)),
		}
		if rng.IntN(4) == 0 {
			opts = append(opts, minMember(1+rng.IntN(workers)))
		}
		b.job(fmt.Sprintf("j%03d", i), opts...)
	}
	return b.build()
}

func TestDeterminism(t *testing.T) {
	w := randomWorkload(1, 150)
	for _, policy := range Policies {
		t.Run(policy, func(t *testing.T) {
			first := mustRun(t, w, policy)
			second := mustRun(t, w, policy)
			if d := cmp.Diff(first, second); d != "" {
				t.Errorf("two runs differ (-first +second):\n%s", d)
			}
			if first.Metrics.JobsCompleted == 0 {
				t.Errorf("nothing completed: %+v", first.Metrics)
			}
		})
	}
}

// Every run keeps the books: nothing is held at the end except by jobs that
// never started, and every started job completed.
func TestInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		w := randomWorkload(seed, 120)
		for _, policy := range Policies {
			r := mustRun(t, w, policy)
			var heldByStuck int64
			for _, o := range r.Jobs {
				if (o.Start >= 0) != (o.State == JobCompleted) {
					t.Errorf("seed %d %s: %s started at %d but is %s", seed, policy, o.ID, o.Start, o.State)
				}
			}
			for _, e := range r.Events {
				if e.Kind == "bound" {
					heldByStuck += bindGPUs(w, e)
				}
				if e.Kind == "completed" || e.Kind == "deleted" || e.Kind == "failed" {
					heldByStuck -= bindGPUs(w, e)
				}
			}
			last := r.GPUs[len(r.GPUs)-1]
			if last.Running != 0 || last.Held != heldByStuck {
				t.Errorf("seed %d %s: last sample %+v, want 0 running and %d held", seed, policy, last, heldByStuck)
			}
			if policy != PolicyPodByPod && last.Held != 0 {
				t.Errorf("seed %d %s: gang policy holds %d GPUs at the end", seed, policy, last.Held)
			}
			m := r.Metrics
			if m.HeldIdleAtEnd != last.Held {
				t.Errorf("seed %d %s: %d GPUs held idle at the end, the last sample holds %d", seed, policy, m.HeldIdleAtEnd, last.Held)
			}
			// Windowed fairness: scores in [0, 1], the worst window no
			// better than the mean; waiting jobs never negative, none left
			// at the end but those that never started.
			if mean, worst := Value(m.FairnessMean), Value(m.FairnessWorst); !(0 <= worst && worst <= mean && mean <= 1) {
				t.Errorf("seed %d %s: fairness mean %v, worst %v", seed, policy, mean, worst)
			}
			never := 0
			for _, o := range r.Jobs {
				if o.Start < 0 {
					never++
				}
			}
			for _, x := range r.Waiting {
				if x.Jobs < 0 {
					t.Errorf("seed %d %s: %d jobs waiting at %d s", seed, policy, x.Jobs, x.Time)
				}
			}
			if n := r.Waiting[len(r.Waiting)-1].Jobs; n != never {
				t.Errorf("seed %d %s: %d jobs waiting at the end, %d never started", seed, policy, n, never)
			}
		}
	}
}

// bindGPUs is the GPU request of the member of a pod event.
func bindGPUs(w *workload.Workload, e PodEvent) int64 {
	for _, j := range w.Jobs {
		if j.ID != e.Job {
			continue
		}
		for _, task := range j.Tasks {
			if strings.HasPrefix(e.Pod, j.ID+"-"+task.Role+"-") {
				return task.Requests[workload.GPU]
			}
		}
	}
	return 0
}

// An elastic job starts with its minimum and takes more members when room
// appears; they are freed with it.
func TestElastic(t *testing.T) {
	w := newWorkload().
		pool("n", 1, gpus(4), cpu(32)).
		job("e", at(0), runs(100), minMember(2), task("w", 4, gpus(1))).
		job("f", at(0), runs(50), task("w", 1, gpus(2))).
		build()
	r := mustRun(t, w, PolicyPhalanx)
	// Minimums first: e takes 2 GPUs, f 2 GPUs; at 50 f ends and e's two
	// elastic members bind.
	want := map[string]span{"e": {0, 100}, "f": {0, 50}}
	if d := cmp.Diff(want, spans(r)); d != "" {
		t.Fatalf("spans (-want +got):\n%s", d)
	}
	if o := r.Jobs[0]; o.Placed != 2 || o.Members != 4 {
		t.Errorf("e: placed %d of %d at start, want 2 of 4", o.Placed, o.Members)
	}
	wantGPUs := []Sample{{Time: 0, Running: 4, Held: 4}, {Time: 100}}
	if d := cmp.Diff(wantGPUs, r.GPUs); d != "" {
		t.Errorf("GPU series (-want +got):\n%s", d)
	}
	// 2 GPUs x 100 s at start, 2 more x 50 s from 50: 300 of the 400 asked.
	if f := r.Metrics.FairnessWorst; f == nil || *f != 1 {
		t.Errorf("worst windowed fairness %v, want 1 (single queue)", Value(f))
	}
	if got := Value(r.Metrics.GPUUtilization); got != 1 {
		t.Errorf("gpu_utilization %v, want 1 (4 GPUs busy from 0 to 100)", got)
	}
}

func TestProgress(t *testing.T) {
	w := randomWorkload(3, 400)
	var calls, last int
	_, err := Run(w, PolicyPhalanx, Options{Progress: func(done, total int) {
		calls++
		if done < last || done > total {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 2 || calls > 102 {
		t.Errorf("progress called %d times, want about 100", calls)
	}
}

// fakeCore returns a fixed plan once, then nothing.
type fakeCore struct {
	plan core.Plan
	diag core.Diagnostics
	done bool
}

func (f *fakeCore) RunCycle(*core.Snapshot, int64) (core.Plan, core.Diagnostics) {
	if f.done {
		return core.Plan{}, f.diag
	}
	f.done = true
	return f.plan, f.diag
}

func TestBadPlansAreRejected(t *testing.T) {
	w := newWorkload().
		pool("n", 1, gpus(1), cpu(4)).
		job("j", at(0), runs(10), task("w", 2, gpus(1))).
		build()
	tests := []struct {
		name  string
		binds []core.Bind
		want  string
	}{
		{"unknown gang", []core.Bind{{Gang: "x", Member: "j-w-0", Node: "n-0"}}, "unknown gang"},
		{"unknown node", []core.Bind{{Gang: "j", Member: "j-w-0", Node: "n-9"}}, "unknown node"},
		{"unknown member", []core.Bind{{Gang: "j", Member: "j-w-7", Node: "n-0"}}, "not pending"},
		{"twice", []core.Bind{{Gang: "j", Member: "j-w-0", Node: "n-0"}, {Gang: "j", Member: "j-w-0", Node: "n-0"}}, "not pending"},
		{"overcommit", []core.Bind{{Gang: "j", Member: "j-w-0", Node: "n-0"}, {Gang: "j", Member: "j-w-1", Node: "n-0"}}, "free"},
	}
	for _, tc := range tests {
		_, err := run(w, "fake", &fakeCore{plan: core.Plan{Binds: tc.binds}}, gangOptions{}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// The last diagnostic of the core is the reason of a job that never
// started; a partial plan leaves the gang pending with what was bound.
func TestFakeCoreDiagnostics(t *testing.T) {
	w := newWorkload().
		pool("n", 2, gpus(1), cpu(4)).
		job("j", at(0), runs(10), task("w", 3, gpus(1))).
		build()
	f := &fakeCore{
		plan: core.Plan{Binds: []core.Bind{{Gang: "j", Member: "j-w-1", Node: "n-1"}}},
		diag: core.Diagnostics{Pending: []core.GangStatus{{Gang: "j", Reason: core.ReasonQueueClosed}}},
	}
	r, err := run(w, "fake", f, gangOptions{}, Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	o := r.Jobs[0]
	if o.Placed != 1 || o.Start != -1 || o.Reason != "QueueClosed" {
		t.Errorf("outcome %+v", o)
	}
	want := []PodEvent{{Time: 0, Job: "j", Pod: "j-w-1", Kind: "bound", Node: "n-1"}}
	if d := cmp.Diff(want, r.Events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestAdmits(t *testing.T) {
	node := func(labels map[string]string, taints ...core.Taint) *core.Node {
		return &core.Node{Name: "n", Labels: labels, Taints: taints}
	}
	gpuTaint := core.Taint{Key: "gpu", Value: "true", Effect: core.NoSchedule}
	prefer := core.Taint{Key: "soft", Effect: core.PreferNoSchedule}
	zoneA := map[string]string{"zone": "a", "gen": "5"}
	term := func(rs ...core.Requirement) []core.NodeSelectorTerm {
		return []core.NodeSelectorTerm{{MatchExpressions: rs}}
	}
	tests := []struct {
		name string
		node *core.Node
		c    *core.Constraints
		want bool
	}{
		{"nil constraints, plain node", node(nil), nil, true},
		{"nil constraints, tainted node", node(nil, gpuTaint), nil, false},
		{"prefer-no-schedule ignored", node(nil, prefer), &core.Constraints{}, true},
		{"cordoned", &core.Node{Unschedulable: true}, nil, false},
		{"toleration exists", node(nil, gpuTaint), &core.Constraints{Tolerations: []core.Toleration{{Key: "gpu", Operator: core.TolerationExists}}}, true},
		{"toleration wrong value", node(nil, gpuTaint), &core.Constraints{Tolerations: []core.Toleration{{Key: "gpu", Value: "false"}}}, false},
		{"toleration equal", node(nil, gpuTaint), &core.Constraints{Tolerations: []core.Toleration{{Key: "gpu", Value: "true", Effect: core.NoSchedule}}}, true},
		{"toleration wrong effect", node(nil, gpuTaint), &core.Constraints{Tolerations: []core.Toleration{{Key: "gpu", Operator: core.TolerationExists, Effect: core.NoExecute}}}, false},
		{"tolerate everything", node(nil, gpuTaint), &core.Constraints{Tolerations: []core.Toleration{{Operator: core.TolerationExists}}}, true},
		{"selector match", node(zoneA), &core.Constraints{NodeSelector: map[string]string{"zone": "a"}}, true},
		{"selector mismatch", node(zoneA), &core.Constraints{NodeSelector: map[string]string{"zone": "b"}}, false},
		{"affinity In", node(zoneA), &core.Constraints{Affinity: term(core.Requirement{Key: "zone", Operator: core.SelectorIn, Values: []string{"b", "a"}})}, true},
		{"affinity NotIn absent", node(zoneA), &core.Constraints{Affinity: term(core.Requirement{Key: "rack", Operator: core.SelectorNotIn, Values: []string{"1"}})}, true},
		{"affinity DoesNotExist", node(zoneA), &core.Constraints{Affinity: term(core.Requirement{Key: "zone", Operator: core.SelectorDoesNotExist})}, false},
		{"affinity Gt", node(zoneA), &core.Constraints{Affinity: term(core.Requirement{Key: "gen", Operator: core.SelectorGt, Values: []string{"4"}})}, true},
		{"affinity Lt", node(zoneA), &core.Constraints{Affinity: term(core.Requirement{Key: "gen", Operator: core.SelectorLt, Values: []string{"4"}})}, false},
		{"affinity Gt not a number", node(zoneA), &core.Constraints{Affinity: term(core.Requirement{Key: "zone", Operator: core.SelectorGt, Values: []string{"4"}})}, false},
		{"empty term matches nothing", node(zoneA), &core.Constraints{Affinity: []core.NodeSelectorTerm{{}}}, false},
		{"second term holds", node(zoneA), &core.Constraints{Affinity: []core.NodeSelectorTerm{{}, {MatchExpressions: []core.Requirement{{Key: "zone", Operator: core.SelectorExists}}}}}, true},
	}
	for _, tc := range tests {
		if got := core.Admits(tc.node, tc.c); got != tc.want {
			t.Errorf("%s: admits = %v, want %v", tc.name, got, tc.want)
		}
	}
}
