package workload

import (
	"sort"
	"strings"
	"testing"
)

// checkInvariants fails t unless w keeps the promises of the Workload doc
// comments and of the readers.
func checkInvariants(t *testing.T, w *Workload) {
	t.Helper()
	if !sort.SliceIsSorted(w.Jobs, func(i, j int) bool { return w.Jobs[i].Submit < w.Jobs[j].Submit }) {
		t.Errorf("jobs are not sorted by submit time")
	}
	if !sort.StringsAreSorted(w.Resources) || len(w.Resources) > maxExtended {
		t.Errorf("resources %v: not sorted or more than %d", w.Resources, maxExtended)
	}
	queues := map[string]bool{}
	for _, q := range w.Queues {
		if queues[q.Name] {
			t.Errorf("queue %q twice", q.Name)
		}
		queues[q.Name] = true
		if q.Weight < 1 {
			t.Errorf("queue %q: weight %d", q.Name, q.Weight)
		}
	}
	for _, p := range w.Pools {
		if p.Count < 0 || p.At < 0 {
			t.Errorf("pool %q: count %d, at %d", p.Name, p.Count, p.At)
		}
		for r, v := range p.Allocatable {
			if v < 0 {
				t.Errorf("pool %q: %s %d", p.Name, r, v)
			}
		}
	}
	ids := map[string]bool{}
	for _, j := range w.Jobs {
		if ids[j.ID] || j.ID == "" {
			t.Errorf("job ID %q empty or twice", j.ID)
		}
		ids[j.ID] = true
		if !queues[j.Queue] {
			t.Errorf("job %q: queue %q does not exist", j.ID, j.Queue)
		}
		if j.MinMember < 1 || len(j.Tasks) == 0 || j.Submit < 0 || j.Duration < 0 || j.Source == "" {
			t.Errorf("job %q: MinMember %d, %d tasks, submit %d, duration %d, source %q",
				j.ID, j.MinMember, len(j.Tasks), j.Submit, j.Duration, j.Source)
		}
		for _, task := range j.Tasks {
			if task.Replicas < 1 {
				t.Errorf("job %q task %q: %d replicas", j.ID, task.Role, task.Replicas)
			}
			for r, v := range task.Requests {
				if v < 0 {
					t.Errorf("job %q task %q: %s %d", j.ID, task.Role, r, v)
				}
			}
		}
	}
}

func FuzzReadTrace(f *testing.F) {
	const h = traceHeaderRow
	for _, s := range []string{
		h + "a,0,10,1,q\nb,5,10,12,r\nc,5,1,3,q\n",
		"vc,num_gpus,x,job_id,duration_s,submit_time_s\nq,16,,j,1,2\n",
		h + "a,0,10,0,q\n",
		h + "a,0,10,1,q\na,1,1,1,q\n",
		h + "a,\"0\n\",10,1,q\n",
		h + "a,-1,10,1,q\n",
		h + "a,0,10,1\n",
		"job_id\n",
		"",
	} {
		f.Add(s, uint8(8), uint8(0))
	}
	for _, tc := range badTraces {
		f.Add(tc.in, uint8(tc.opt.GPUsPerNode), uint8(tc.opt.MaxJobs))
	}
	f.Fuzz(func(t *testing.T, in string, k, maxJobs uint8) {
		opt := TraceOptions{Nodes: 2, GPUsPerNode: int(k), MaxJobs: int(maxJobs)}
		w, err := ReadTrace(strings.NewReader(in), "f.csv", opt)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv:") && !strings.HasPrefix(err.Error(), "workload: ") {
				t.Errorf("error %q names no place", err)
			}
			return
		}
		checkInvariants(t, w)
		for _, j := range w.Jobs {
			if pods := int((j.Total(GPU) + int64(k) - 1) / int64(k)); j.MinMember != pods {
				t.Errorf("job %q: %d GPUs, MinMember %d, want %d", j.ID, j.Total(GPU), j.MinMember, pods)
			}
		}
	})
}

func FuzzReadScenario(f *testing.F) {
	for _, name := range builtinNames {
		data, err := builtinFiles.ReadFile("builtin/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	for _, s := range []string{
		goodScenario,
		"jobs: [{name: a, duration: 1, tasks: [{role: w}]}]\n",
		"nodePools: [{name: p, resources: {cpu: 500m, memory: 1.5Gi, example.com/fpga: 2}}]\n",
		"jobs:\n- name: a\n  duration: 1\n  minMember: 0\n  tasks: [{role: w}]\n",
		"jobs:\n- &j {name: a, duration: 1, tasks: [{role: w}]}\n- *j\n",
		"a: &a [x, x]\nb: &b [*a, *a]\n",
		"queues: [{name: q, weight: 0}]\n",
		"jobs: [{name: a, queue: nope, duration: 1, tasks: [{role: w}]}]\n",
		"nodePools: [{name: p, resources: {a.b/c: 1, a.b/d: 1, a.b/e: 1, a.b/f: 1, a.b/g: 1, a.b/h: 1}}]\n",
		"jobs: [{name: a, duration: -1s, tasks: []}]\n",
		"name: [\n",
		"--- {}\n--- {}\n",
		"",
	} {
		f.Add(s)
	}
	for _, tc := range badScenarios {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		w, err := ReadScenario(strings.NewReader(in), "f.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml:") {
				t.Errorf("error %q names no line", err)
			}
			return
		}
		checkInvariants(t, w)
		for _, j := range w.Jobs {
			if !strings.HasPrefix(j.Source, "f.yaml:") {
				t.Errorf("job %q: source %q", j.ID, j.Source)
			}
		}
	})
}
