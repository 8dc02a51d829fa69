package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/workload"
)

// A job's GPU model becomes a nodeSelector of every member: one shared
// *Constraints for its tasks without constraints of their own, the task's
// own merged with the model otherwise, the workload never written.
func TestGPUModelConstraints(t *testing.T) {
	w := newWorkload().
		pool("n", 1, gpus(8), cpu(32)).labels(workload.GPUModelLabel, "A100", "zone", "a").
		job("j", at(0), runs(10), gpuModel("A100"),
			task("ps", 1, cpu(1)), task("worker", 2, gpus(1)), task("eval", 1, gpus(1), selector("zone", "a"))).
		job("plain", at(0), runs(10), task("w", 1, gpus(1))).
		build()
	s, err := newState(w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, plain := &s.jobs[0], &s.jobs[1]
	s.materialise(j)
	s.materialise(plain)
	ps, w0, w1, eval := j.members[0].cons, j.members[1].cons, j.members[2].cons, j.members[3].cons
	if ps != w0 || w0 != w1 {
		t.Errorf("tasks without constraints of their own do not share one pointer")
	}
	if d := cmp.Diff(map[string]string{workload.GPUModelLabel: "A100"}, ps.NodeSelector); d != "" {
		t.Errorf("model selector (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{workload.GPUModelLabel: "A100", "zone": "a"}, eval.NodeSelector); d != "" {
		t.Errorf("eval selector (-want +got):\n%s", d)
	}
	if len(w.Jobs[0].Tasks[2].NodeSelector) != 1 {
		t.Errorf("the task's selector was written: %v", w.Jobs[0].Tasks[2].NodeSelector)
	}
	if plain.members[0].cons != s.noConstraints {
		t.Errorf("a job without a model does not share the unconstrained pointer")
	}
}

// testdata/golden/gpu-model.yaml: a job waits for its model although other
// GPUs are free, and one whose model no node has is unschedulable, with the
// scheduler's reason.
func TestGPUModelScenario(t *testing.T) {
	r := runWith(t, readGolden(t, "gpu-model"), PolicyPhalanx, Options{})
	got := map[string]JobOutcome{}
	for _, o := range r.Jobs {
		got[o.ID] = o
	}
	if o := got["needs-a100"]; o.Start != 3600 {
		t.Errorf("needs-a100 starts at %d s, want 3600 (when first-a100 frees the A100 node)", o.Start)
	}
	if o := got["needs-h100"]; o.State != JobUnschedulable || o.Reason != "0/1 members fit; a member needing 1 nvidia.com/gpu: 0/3 nodes fit (3 nodeSelector mismatch)" {
		t.Errorf("needs-h100: %s, %q", o.State, o.Reason)
	}
}
