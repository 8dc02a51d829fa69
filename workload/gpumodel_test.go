package workload

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fields of the preemption, failure and GPU-model scenarios.
func TestScenarioModelsQueuesFailures(t *testing.T) {
	in := `nodePools:
- {name: a100, gpuModel: A100, labels: {zone: a}, resources: {nvidia.com/gpu: 8}}
- {name: plain, resources: {nvidia.com/gpu: 8}}
queues:
- {name: prod, reclaimable: false}
- {name: research, reclaimable: true}
- {name: batch}
jobs:
- name: train
  queue: prod
  gpuModel: A100
  duration: 1h
  tasks:
  - {role: ps}
  - {role: worker, replicas: 3, nodeSelector: {zone: a}}
  failures:
  - {at: 10m, member: 3, restartAfter: 1m}
  - {at: 20m, member: 0}
`
	w, err := ReadScenario(strings.NewReader(in), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Pools[0].Labels; !cmp.Equal(got, map[string]string{"zone": "a", GPUModelLabel: "A100"}) {
		t.Errorf("a100 labels %v", got)
	}
	if w.Pools[1].Labels != nil {
		t.Errorf("plain labels %v, want none", w.Pools[1].Labels)
	}
	var noReclaim []bool
	for _, q := range w.Queues {
		noReclaim = append(noReclaim, q.NoReclaim)
	}
	if !cmp.Equal(noReclaim, []bool{true, false, false}) {
		t.Errorf("NoReclaim of the queues %v, want only prod", noReclaim)
	}
	j := w.Jobs[0]
	if j.GPUModel != "A100" {
		t.Errorf("GPUModel %q", j.GPUModel)
	}
	// The job's model stays out of the tasks' own selectors: the simulator
	// adds it.
	if got := j.Tasks[1].NodeSelector; !cmp.Equal(got, map[string]string{"zone": "a"}) {
		t.Errorf("worker nodeSelector %v", got)
	}
	want := []Failure{{At: 600, Member: 3, RestartAfter: 60}, {At: 1200, Member: 0}}
	if d := cmp.Diff(want, j.Failures); d != "" {
		t.Errorf("failures (-want +got):\n%s", d)
	}
}

func TestQueueWeights(t *testing.T) {
	w := &Workload{
		Name:   "t.csv",
		Queues: []Queue{{Name: "big", Weight: 1}, {Name: "small", Weight: 1}, {Name: "idle", Weight: 1}},
		Jobs: []Job{
			{ID: "a", Queue: "big", Duration: 3600, Tasks: []Task{{Replicas: 2, Requests: map[string]int64{GPU: 8}}}},
			{ID: "b", Queue: "small", Duration: 1800, Tasks: []Task{{Replicas: 1, Requests: map[string]int64{GPU: 3}}}},
			{ID: "c", Queue: "idle", Duration: 3600, Tasks: []Task{{Replicas: 1, Requests: map[string]int64{"cpu": 1000}}}},
		},
	}
	weights := func(spec string) ([]int64, error) {
		qw, err := ParseQueueWeights(spec)
		if err != nil {
			return nil, err
		}
		c := *w
		if err := qw.Apply(&c); err != nil {
			return nil, err
		}
		var out []int64
		for _, q := range c.Queues {
			out = append(out, q.Weight)
		}
		return out, nil
	}
	for spec, want := range map[string][]int64{
		"equal": {1, 1, 1},
		// 16 GPU-hours, 1.5 and none: 100, round(9.375) = 9, at least 1.
		"gpu-hours":      {100, 9, 1},
		"big=3,small=2":  {3, 2, 1},
		" idle = 7 ":     {1, 1, 7},
		"big=1048576":    {1048576, 1, 1},
		"small=1,big=40": {40, 1, 1},
	} {
		got, err := weights(spec)
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("%q: weights %v, %v; want %v", spec, got, err, want)
		}
	}
	for spec, want := range map[string]string{
		"":            "queue weights are empty",
		"gpu_hours":   `queue weight "gpu_hours" is not name=weight`,
		"big=0":       `weight of queue "big" is "0"`,
		"big=2.5":     `weight of queue "big" is "2.5"`,
		"big=1048577": "an integer from 1 to 1048576",
		"=3":          "is not name=weight",
		"big=1,big=2": `queue "big" is weighed twice`,
		"nope=2":      `t.csv has no queue "nope" to weigh (queues: big, small, idle)`,
	} {
		if _, err := weights(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", spec, err, want)
		}
	}
	if w.Queues[0].Weight != 1 {
		t.Errorf("Apply wrote the queues it was given")
	}
	for _, spec := range []string{"equal", "gpu-hours", "big=3,small=2"} {
		qw, _ := ParseQueueWeights(spec)
		if qw.String() != spec {
			t.Errorf("%q prints as %q", spec, qw.String())
		}
	}
}
