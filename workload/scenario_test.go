package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/core"
)

// goodScenario uses every field of the format.
const goodScenario = `# every field
name: kitchen-sink
description: all the fields
nodePools:
- name: gpu
  count: 4
  at: 0s
  resources: {cpu: "4", memory: 16Gi, nvidia.com/gpu: 1}
  labels: {gpu: 1060g1, zone: a}
  taints: [{key: dedicated, value: ml, effect: NoSchedule}]
- name: late
  at: 2h
  resources:
    cpu: 500m
    memory: 1.5Gi
    pods: 20
    example.com/fpga: 2
queues:
- name: research
  weight: 2
  capability: {nvidia.com/gpu: 8}
  guarantee: {nvidia.com/gpu: 2, cpu: 1500m}
- name: default
jobs:
- name: late-job
  queue: research
  priority: -3
  submit: 90
  duration: 1m30s
  tasks:
  - role: worker
- name: job1
  priority: 7
  submit: 10m
  duration: 600
  minMember: 9
  tasks:
  - role: ps
    requests: {cpu: "1", memory: 512Mi}
    nodeSelector: {gpu: 1060g1}
    tolerations:
    - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
    - {operator: Exists}
    - {key: spot}
    affinity:
    - matchExpressions:
      - {key: zone, operator: In, values: [a, b]}
      - {key: rack, operator: Gt, values: ["3"]}
    - matchExpressions: [{key: ssd, operator: Exists}]
  - role: worker
    replicas: 3
    requests: {nvidia.com/gpu: 1, cpu: "1"}
- name: early
  queue: default
  duration: 2h
  tasks: [{role: w, requests: {example.com/fpga: 1}}]
`

func TestReadScenario(t *testing.T) {
	got, err := ReadScenario(strings.NewReader(goodScenario), "good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Workload{
		Name:        "kitchen-sink",
		Description: "all the fields",
		Resources:   []string{"example.com/fpga", GPU},
		Pools: []NodePool{
			{
				Name: "gpu", Count: 4, At: 0,
				Allocatable: map[string]int64{"cpu": 4000, "memory": 16 << 30, GPU: 1, "pods": 110},
				Labels:      map[string]string{"gpu": "1060g1", "zone": "a"},
				Taints:      []core.Taint{{Key: "dedicated", Value: "ml", Effect: core.NoSchedule}},
			},
			{
				Name: "late", Count: 1, At: 7200,
				Allocatable: map[string]int64{"cpu": 500, "memory": 3 << 29, "pods": 20, "example.com/fpga": 2},
			},
		},
		Queues: []Queue{
			{Name: "research", Weight: 2, Capability: map[string]int64{GPU: 8}, Guarantee: map[string]int64{GPU: 2, "cpu": 1500}},
			{Name: "default", Weight: 1},
		},
		Jobs: []Job{
			{ID: "early", Queue: "default", Duration: 7200, MinMember: 1, Source: "good.yaml:53", Tasks: []Task{
				{Role: "w", Replicas: 1, Requests: map[string]int64{"example.com/fpga": 1}},
			}},
			{ID: "late-job", Queue: "research", Priority: -3, Submit: 90, Duration: 90, MinMember: 1, Source: "good.yaml:25", Tasks: []Task{
				{Role: "worker", Replicas: 1, Requests: map[string]int64{}},
			}},
			{ID: "job1", Queue: "default", Priority: 7, Submit: 600, Duration: 600, MinMember: 9, Source: "good.yaml:32", Tasks: []Task{
				{
					Role: "ps", Replicas: 1,
					Requests:     map[string]int64{"cpu": 1000, "memory": 512 << 20},
					NodeSelector: map[string]string{"gpu": "1060g1"},
					Tolerations: []core.Toleration{
						{Key: "dedicated", Operator: core.TolerationEqual, Value: "ml", Effect: core.NoSchedule},
						{Operator: core.TolerationExists},
						{Key: "spot", Operator: core.TolerationEqual},
					},
					Affinity: []core.NodeSelectorTerm{
						{MatchExpressions: []core.Requirement{
							{Key: "zone", Operator: core.SelectorIn, Values: []string{"a", "b"}},
							{Key: "rack", Operator: core.SelectorGt, Values: []string{"3"}},
						}},
						{MatchExpressions: []core.Requirement{{Key: "ssd", Operator: core.SelectorExists}}},
					},
				},
				{Role: "worker", Replicas: 3, Requests: map[string]int64{GPU: 1, "cpu": 1000}},
			}},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ReadScenario (-want +got):\n%s", d)
	}
}

func TestScenarioDefaults(t *testing.T) {
	const in = `jobs:
- name: a
  duration: 1
  tasks: [{role: w, replicas: 2}]
`
	got, err := ReadScenario(strings.NewReader(in), "d.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Workload{
		Name:   "d.yaml",
		Queues: []Queue{{Name: "default", Weight: 1}},
		Jobs: []Job{{ID: "a", Queue: "default", Duration: 1, MinMember: 2, Source: "d.yaml:2", Tasks: []Task{
			{Role: "w", Replicas: 2, Requests: map[string]int64{}},
		}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ReadScenario (-want +got):\n%s", d)
	}
}

func TestScenarioAliases(t *testing.T) {
	const in = `jobs:
- name: a
  duration: 1
  tasks:
  - role: w
    requests: &gpu {nvidia.com/gpu: 2}
- name: b
  duration: 1
  tasks: [{role: w, requests: *gpu}]
`
	w, err := ReadScenario(strings.NewReader(in), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Jobs[1].Total(GPU); got != 2 {
		t.Errorf("job b requests %d GPUs through an alias, want 2", got)
	}
}

func TestReadScenarioFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(path, []byte("jobs: [{name: a, duration: 1, tasks: [{role: w}]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := ReadScenarioFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "mine.yaml" || w.Jobs[0].Source != path+":1" {
		t.Errorf("name %q, source %q; want mine.yaml, %s:1", w.Name, w.Jobs[0].Source, path)
	}
	if err := os.WriteFile(path, []byte("jobs: [{name: a}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadScenarioFile(path); err == nil || !strings.HasPrefix(err.Error(), path+":1: ") {
		t.Errorf("error %v, want it to start with %s:1:", err, path)
	}
	if _, err := ReadScenarioFile(filepath.Join(dir, "none.yaml")); err == nil || !strings.HasPrefix(err.Error(), "workload: open ") {
		t.Errorf("error %v, want workload: open ...", err)
	}
}

const oneJob = "jobs: [{name: a, duration: 1, tasks: [{role: w}]}]\n"

// badScenarios are small bad files and the error each must give; the fuzz
// test starts from them too.
var badScenarios = []struct{ name, in, want string }{
	{"empty", "", "s.yaml:1: empty scenario"},
	{"unclosed flow", "jobs:\n- name: a\n  duration: [1\n", "s.yaml:3: did not find expected ',' or ']'"},
	{"block mapping", "name: a\n- b\n", "s.yaml:2: did not find expected key"},
	{"bad indentation", "jobs:\n- name: a\n   duration: 1\n", "s.yaml:3: mapping values are not allowed in this context"},
	{"unknown anchor", "jobs:\n- name: a\n  tasks: *t\n", "s.yaml:3: alias *t names no anchor defined before it"},
	{"tab", "jobs:\n\t- name: a\n", "s.yaml:2: found character that cannot start any token"},
	{"two documents", oneJob + "---\n" + oneJob, "s.yaml:2: a scenario is one YAML document"},
	{"not a mapping", "- a\n", "s.yaml:1: scenario must be a mapping"},
	{"unknown top field", "nodepools: []\n", `s.yaml:1: unknown field "nodepools" in scenario (did you mean "nodePools"?)`},
	{"unknown job field", "jobs:\n- name: a\n  duration: 1\n  minAvailable: 2\n  tasks: [{role: w}]\n", `s.yaml:4: unknown field "minAvailable" in job; known fields: name,`},
	{"duplicate field", "jobs:\n- name: a\n  name: b\n", `s.yaml:3: duplicate field "name" in job (first on line 2)`},
	{"merge key", "jobs:\n- <<: {name: a}\n", "s.yaml:2: merge keys (<<) are not supported"},
	{"negative count", "nodePools:\n- name: p\n  count: -1\n  resources: {cpu: 1}\n", "s.yaml:3: count must be between 0 and"},
	{"count not integer", "nodePools:\n- name: p\n  count: two\n", `s.yaml:3: count must be an integer, got "two"`},
	{"pool without resources", "nodePools:\n- name: p\n", `s.yaml:2: node pool "p" has no resources`},
	{"duplicate pool", "nodePools:\n- {name: p, resources: {cpu: 1}}\n- {name: p, resources: {cpu: 1}}\n", `s.yaml:3: duplicate node pool name "p" (first on line 2)`},
	{"pool without name", "nodePools:\n- {resources: {cpu: 1}}\n", "s.yaml:2: node pool has no name"},
	{"bad quantity", "nodePools:\n- name: p\n  resources: {memory: 16GB}\n", `s.yaml:3: resources memory: quantity "16GB" is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)`},
	{"negative quantity", "nodePools:\n- name: p\n  resources:\n    cpu: -1\n", `s.yaml:4: resources cpu: quantity "-1" is negative`},
	{"fractional GPU", "nodePools:\n- name: p\n  resources: {nvidia.com/gpu: 0.5}\n", `s.yaml:3: resources nvidia.com/gpu: nvidia.com/gpu "0.5" is not a whole number`},
	{"resource typo", "nodePools:\n- name: p\n  resources: {gpu: 1}\n", `s.yaml:3: resources: unknown resource "gpu"`},
	{"empty resource", "nodePools:\n- name: p\n  resources: {\"\": 1}\n", "s.yaml:3: resources: resource name is empty"},
	{"no amount", "nodePools:\n- name: p\n  resources: {cpu: }\n", "s.yaml:3: resources cpu has no amount"},
	{"too many extended", "nodePools:\n- name: p\n  resources: {a.io/a: 1, a.io/b: 1, a.io/c: 1}\njobs:\n- name: j\n  duration: 1\n  tasks:\n  - role: w\n    requests: {a.io/a: 1, a.io/d: 1, a.io/e: 1, a.io/f: 1}\n", `s.yaml:9: too many extended resources: "a.io/f" would be the 6th`},
	{"overflowing cluster", "nodePools:\n- {name: p, count: 1000, resources: {memory: 8Ei}}\n", "s.yaml:2: the total memory of the cluster exceeds 9223372036854775807"},
	{"overflowing total", "nodePools:\n- name: p\n  count: 1000\n  resources: {memory: 7Ei}\n", "s.yaml:4: the total memory of the cluster exceeds"},
	{"bad effect", "nodePools:\n- name: p\n  resources: {cpu: 1}\n  taints: [{key: k, effect: NoSchedul}]\n", `s.yaml:4: taint effect must be one of NoSchedule, PreferNoSchedule, NoExecute, got "NoSchedul"`},
	{"negative rack size", "nodePools:\n- name: p\n  resources: {cpu: 1}\n  rackSize: -2\n", "s.yaml:4: rackSize must be between 0 and"},
	{"rack label without size", "nodePools:\n- name: p\n  resources: {cpu: 1}\n  rackLabel: r\n", `s.yaml:4: node pool "p" has a rackLabel but no rackSize`},
	{"empty rack label", "nodePools:\n- name: p\n  resources: {cpu: 1}\n  rackSize: 2\n  rackLabel: \"\"\n", "s.yaml:5: rackLabel is empty"},
	{"reclaimable not bool", "queues: [{name: q, reclaimable: no-thanks}]\n", `s.yaml:1: reclaimable must be true or false, got "no-thanks"`},
	{"strictOrder not bool", "queues: [{name: q, strictOrder: maybe}]\n", `s.yaml:1: strictOrder must be true or false, got "maybe"`},
	{"empty gpu model", "nodePools: [{name: p, gpuModel: \"\", resources: {cpu: 1}}]\n", `s.yaml:1: gpuModel "" is not a label value`},
	{"gpu model twice", "nodePools: [{name: p, gpuModel: A100, labels: {nvidia.com/gpu.product: V100}, resources: {cpu: 1}}]\n", `node pool "p" sets label "nvidia.com/gpu.product" both in labels and as its gpuModel`},
	{"gpu model conflict", "jobs: [{name: j, gpuModel: A100, duration: 1, tasks: [{role: w, nodeSelector: {nvidia.com/gpu.product: V100}}]}]\n", `job "j" wants gpuModel "A100" but its task "w" selects nvidia.com/gpu.product=V100`},
	{"failure without at", "jobs: [{name: j, duration: 1, tasks: [{role: w}], failures: [{member: 0}]}]\n", `failure of job "j" has no at`},
	{"failure without member", "jobs: [{name: j, duration: 1, tasks: [{role: w}], failures: [{at: 5s}]}]\n", `failure of job "j" has no member`},
	{"failure of no member", "jobs: [{name: j, duration: 1, tasks: [{role: w, replicas: 2}], failures: [{at: 5s, member: 2}]}]\n", `job "j" has 2 members: member must be between 0 and 1, got 2`},
	{"failure field typo", "jobs: [{name: j, duration: 1, tasks: [{role: w}], failures: [{at: 5s, member: 0, restart: 1m}]}]\n", `unknown field "restart" in failure`},
	{"negative restart", "jobs: [{name: j, duration: 1, tasks: [{role: w}], failures: [{at: 5s, member: 0, restartAfter: -1s}]}]\n", "s.yaml:1: restartAfter"},
	{"rack label clash", "nodePools:\n- name: p\n  resources: {cpu: 1}\n  labels: {phalanx.dev/rack: x}\n  rackSize: 2\n", `s.yaml:2: node pool "p" sets label "phalanx.dev/rack" both in labels and as its rack label`},
	{"two rack labels", "nodePools:\n- {name: p, resources: {cpu: 1}, rackSize: 2}\n- {name: q, resources: {cpu: 1}, rackSize: 2, rackLabel: r}\n", `s.yaml:3: node pool "q" labels its racks "r" but pool "p" uses "phalanx.dev/rack": all racks must share one label`},
	{"empty required topology", "jobs:\n- name: a\n  duration: 1\n  requiredTopology: \" \"\n  tasks: [{role: w}]\n", `s.yaml:4: requiredTopology is empty: name a node label key such as "phalanx.dev/rack"`},
	{"taint without key", "nodePools:\n- name: p\n  resources: {cpu: 1}\n  taints:\n  - effect: NoSchedule\n", "s.yaml:5: taint has no key"},
	{"zero weight", "queues:\n- name: q\n  weight: 0\n", "s.yaml:3: weight must be between 1 and"},
	{"duplicate queue", "queues: [{name: q}, {name: q}]\n", `s.yaml:1: duplicate queue name "q"`},
	{"undeclared queue", "queues: [{name: q}]\njobs:\n- name: a\n  queue: r\n  duration: 1\n  tasks: [{role: w}]\n", `s.yaml:4: job "a" names queue "r", which is not declared (queues: q)`},
	{"default queue undeclared", "queues: [{name: q}]\njobs:\n- name: a\n  duration: 1\n  tasks: [{role: w}]\n", `s.yaml:3: job "a" names queue "default", which is not declared`},
	{"no queues declared", "jobs:\n- name: a\n  queue: r\n  duration: 1\n  tasks: [{role: w}]\n", `s.yaml:3: job "a" names queue "r" but the scenario declares no queues`},
	{"duplicate job", "jobs:\n- {name: a, duration: 1, tasks: [{role: w}]}\n- {name: a, duration: 1, tasks: [{role: w}]}\n", `s.yaml:3: duplicate job name "a" (first on line 2)`},
	{"empty job name", "jobs:\n- {name: \"\", duration: 1, tasks: [{role: w}]}\n", "s.yaml:2: job name is empty"},
	{"no duration", "jobs:\n- name: a\n  tasks: [{role: w}]\n", `s.yaml:2: job "a" has no duration`},
	{"negative duration", "jobs:\n- name: a\n  duration: -10s\n  tasks: [{role: w}]\n", `s.yaml:3: duration "-10s" is negative`},
	{"negative seconds", "jobs:\n- name: a\n  duration: -5\n  tasks: [{role: w}]\n", `s.yaml:3: duration "-5" is negative`},
	{"bad duration", "jobs:\n- name: a\n  submit: 10 minutes\n  duration: 1\n  tasks: [{role: w}]\n", `s.yaml:3: submit "10 minutes" is not a duration`},
	{"sub-second", "jobs:\n- name: a\n  duration: 1500ms\n  tasks: [{role: w}]\n", `s.yaml:3: duration "1500ms" is not a whole number of seconds`},
	{"float duration", "jobs:\n- name: a\n  duration: 1.5\n  tasks: [{role: w}]\n", `s.yaml:3: duration must be a duration such as 90s`},
	{"no tasks", "jobs:\n- name: a\n  duration: 1\n  tasks: []\n", `s.yaml:4: job "a" has no tasks`},
	{"tasks missing", "jobs:\n- name: a\n  duration: 1\n", `s.yaml:2: job "a" has no tasks`},
	{"zero replicas", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    replicas: 0\n", "s.yaml:6: replicas must be between 1 and"},
	{"zero minMember", "jobs:\n- name: a\n  duration: 1\n  minMember: 0\n  tasks: [{role: w}]\n", "s.yaml:4: minMember must be between 1 and"},
	{"priority past 64 bits", "jobs:\n- name: a\n  duration: 1\n  priority: 99999999999999999999\n  tasks: [{role: w}]\n", "s.yaml:4: priority must be between -2147483648 and"},
	{"priority overflow", "jobs:\n- name: a\n  duration: 1\n  priority: 3000000000\n  tasks: [{role: w}]\n", "s.yaml:4: priority must be between"},
	{"duplicate role", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n  - role: w\n", `s.yaml:6: duplicate role "w" in job "a" (first on line 5)`},
	{"no role", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - replicas: 2\n", "s.yaml:5: task has no role"},
	{"pods requested", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    requests: {pods: 1}\n", "s.yaml:6: requests: pods cannot be requested"},
	{"overflowing job", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    replicas: 100\n    requests: {memory: 1Ei}\n", `s.yaml:5: the total memory of job "a" exceeds`},
	{"bad operator", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    tolerations: [{key: k, operator: In}]\n", `s.yaml:6: toleration operator must be Equal or Exists, got "In"`},
	{"exists with value", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    tolerations:\n    - {key: k, operator: Exists, value: v}\n", "s.yaml:7: toleration with operator Exists must have no value"},
	{"toleration effect", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    tolerations: [{key: k, effect: Never}]\n", `s.yaml:6: toleration effect must be empty or one of`},
	{"affinity operator", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    affinity:\n    - matchExpressions:\n      - {key: z, operator: Equals, values: [a]}\n", `s.yaml:8: match expression operator must be one of In, NotIn`},
	{"affinity In without values", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    affinity: [{matchExpressions: [{key: z, operator: In}]}]\n", "s.yaml:6: operator In needs at least one value"},
	{"affinity Gt not integer", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    affinity: [{matchExpressions: [{key: z, operator: Gt, values: [x]}]}]\n", `s.yaml:6: operator Gt needs an integer value, got "x"`},
	{"affinity not a list", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    affinity: {nodeAffinity: {}}\n", "s.yaml:6: affinity must be a list, got a mapping"},
	{"empty affinity term", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    affinity: [{}]\n", "s.yaml:6: affinity term has no matchExpressions"},
	{"label not a scalar", "nodePools:\n- name: p\n  resources: {cpu: 1}\n  labels: {a: [b]}\n", "s.yaml:4: labels a must be a scalar, got a list"},
	{"too many aliases", "jobs:\n- name: a\n  duration: 1\n  tasks:\n  - role: w\n    affinity: [&t {matchExpressions: [{key: k, operator: Exists}]}" + strings.Repeat(", *t", 1001) + "]\n", "s.yaml:6: too many alias expansions (at most 1000)"},
}

func TestReadScenarioErrors(t *testing.T) {
	for _, tc := range badScenarios {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ReadScenario(strings.NewReader(tc.in), "s.yaml")
			if err == nil {
				t.Fatalf("no error, got %+v; want %q", w, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// A minMember larger than the number of members is legal input: the
// scheduler, not the reader, reports it.
func TestScenarioMinMemberAboveMembers(t *testing.T) {
	w, err := ReadScenario(strings.NewReader("jobs: [{name: a, duration: 1, minMember: 5, tasks: [{role: w, replicas: 2}]}]\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if j := w.Jobs[0]; j.MinMember != 5 || j.Members() != 2 {
		t.Errorf("MinMember %d, members %d; want 5, 2", j.MinMember, j.Members())
	}
}

func TestScenarioRacks(t *testing.T) {
	in := "nodePools:\n- {name: gpu, count: 4, rackSize: 2, resources: {nvidia.com/gpu: 8}}\n- {name: cpu, resources: {cpu: 4}}\n" +
		"jobs:\n- {name: a, duration: 1, requiredTopology: phalanx.dev/rack, tasks: [{role: w}]}\n"
	w, err := ReadScenario(strings.NewReader(in), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{DefaultRackLabel}, w.Topology); diff != "" {
		t.Errorf("topology (-want +got):\n%s", diff)
	}
	p := &w.Pools[0]
	if p.RackSize != 2 || p.RackLabel != DefaultRackLabel {
		t.Errorf("pool racks = %d %q, want 2 %q", p.RackSize, p.RackLabel, DefaultRackLabel)
	}
	var racks []string
	for i := 0; i < p.Count; i++ {
		racks = append(racks, p.RackOf(i))
	}
	if diff := cmp.Diff([]string{"gpu-rack-0", "gpu-rack-0", "gpu-rack-1", "gpu-rack-1"}, racks); diff != "" {
		t.Errorf("racks (-want +got):\n%s", diff)
	}
	if got := w.Pools[1].RackOf(0); got != "" {
		t.Errorf("a pool without racks gives rack %q", got)
	}
	if got := w.Jobs[0].RequiredTopology; got != DefaultRackLabel {
		t.Errorf("requiredTopology = %q", got)
	}
}

// TestTraceGivenAsScenario: a CSV trace read as a scenario is one long
// scalar; the error quotes its start, not the whole file, and says how a
// trace is given.
func TestTraceGivenAsScenario(t *testing.T) {
	in := "job_id,submit_time_s,duration_s,num_gpus,vc\n" + strings.Repeat("j,0,60,1,q\n", 1000)
	_, err := ReadScenario(strings.NewReader(in), "jobs.csv")
	if err == nil {
		t.Fatal("a trace read as a scenario: no error")
	}
	want := `jobs.csv:1: scenario must be a mapping, got "job_id,submit_time_s,duration_s,num_gpus,vc j,0,60,1,q j,0,6" and `
	if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, "(a trace in CSV is given with --trace)") || len(msg) > 200 {
		t.Errorf("error %q, want it to start %q, end with the hint, and be short", msg, want)
	}
}
