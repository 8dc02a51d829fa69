package sim

// A fluent builder of small workloads for tests:
//
//	newWorkload().
//		pool("gpu", 4, gpus(1), cpu(4)).
//		job("job1", at(0), runs(600), task("ps", 1, cpu(1)), task("worker", 3, gpus(1))).
//		build()
//
// Jobs go to queue "default" unless inQueue says otherwise; queues named by
// jobs but not declared are created with weight 1 and no cap.

import (
	"slices"
	"sort"

	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

type res func(map[string]int64)

func gpus(n int64) res { return func(m map[string]int64) { m[workload.GPU] = n } }
func cpu(n int64) res  { return func(m map[string]int64) { m["cpu"] = n * 1000 } }
func mem(gi int64) res { return func(m map[string]int64) { m["memory"] = gi << 30 } }

func resources(rs ...res) map[string]int64 {
	m := map[string]int64{}
	for _, r := range rs {
		r(m)
	}
	return m
}

type jobOpt func(*workload.Job)

func at(t int64) jobOpt        { return func(j *workload.Job) { j.Submit = t } }
func runs(d int64) jobOpt      { return func(j *workload.Job) { j.Duration = d } }
func inQueue(q string) jobOpt  { return func(j *workload.Job) { j.Queue = q } }
func minMember(n int) jobOpt   { return func(j *workload.Job) { j.MinMember = n } }
func priority(p int32) jobOpt  { return func(j *workload.Job) { j.Priority = p } }
func gpuModel(m string) jobOpt { return func(j *workload.Job) { j.GPUModel = m } }

// fails adds a failure of member m at run time at, replaced after restart.
func fails(at int64, m int, restart int64) jobOpt {
	return func(j *workload.Job) {
		j.Failures = append(j.Failures, workload.Failure{At: at, Member: m, RestartAfter: restart})
	}
}
func selector(k, v string) taskOp {
	return func(t *workload.Task) { t.NodeSelector = map[string]string{k: v} }
}
func tolerate(key string) taskOp {
	return func(t *workload.Task) {
		t.Tolerations = append(t.Tolerations, core.Toleration{Key: key, Operator: core.TolerationExists})
	}
}

type taskOp func(*workload.Task)

// task adds replicas of a role; its arguments are resources (res) and
// constraints (taskOp).
func task(role string, replicas int, opts ...any) jobOpt {
	return func(j *workload.Job) {
		t := workload.Task{Role: role, Replicas: replicas, Requests: map[string]int64{}}
		for _, o := range opts {
			switch o := o.(type) {
			case res:
				o(t.Requests)
			case taskOp:
				o(&t)
			default:
				panic("task: unknown option")
			}
		}
		j.Tasks = append(j.Tasks, t)
	}
}

type wlBuilder struct{ w workload.Workload }

func newWorkload() *wlBuilder { return &wlBuilder{w: workload.Workload{Name: "test"}} }

// pool adds count nodes joining at time 0.
func (b *wlBuilder) pool(name string, count int, rs ...res) *wlBuilder {
	return b.poolAt(name, count, 0, rs...)
}

// poolAt adds count nodes joining at time t.
func (b *wlBuilder) poolAt(name string, count int, t int64, rs ...res) *wlBuilder {
	b.w.Pools = append(b.w.Pools, workload.NodePool{Name: name, Count: count, At: t, Allocatable: resources(rs...)})
	return b
}

// labels and taint change the last pool added.
func (b *wlBuilder) labels(kv ...string) *wlBuilder {
	p := &b.w.Pools[len(b.w.Pools)-1]
	p.Labels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Labels[kv[i]] = kv[i+1]
	}
	return b
}

func (b *wlBuilder) taint(key string) *wlBuilder {
	p := &b.w.Pools[len(b.w.Pools)-1]
	p.Taints = append(p.Taints, core.Taint{Key: key, Effect: core.NoSchedule})
	return b
}

func (b *wlBuilder) queue(name string, weight int64, capability ...res) *wlBuilder {
	q := workload.Queue{Name: name, Weight: weight}
	if len(capability) > 0 {
		q.Capability = resources(capability...)
	}
	b.w.Queues = append(b.w.Queues, q)
	return b
}

// job adds a job; MinMember defaults to all of its members, as the parsers do.
func (b *wlBuilder) job(id string, opts ...jobOpt) *wlBuilder {
	j := workload.Job{ID: id, Queue: "default", MinMember: -1, Source: "test"}
	for _, o := range opts {
		o(&j)
	}
	if j.MinMember == -1 {
		j.MinMember = j.Members()
	}
	b.w.Jobs = append(b.w.Jobs, j)
	return b
}

func (b *wlBuilder) build() *workload.Workload {
	w := b.w
	w.Pools = slices.Clone(w.Pools)
	w.Queues = slices.Clone(w.Queues)
	w.Jobs = slices.Clone(w.Jobs)
	sort.SliceStable(w.Jobs, func(a, c int) bool { return w.Jobs[a].Submit < w.Jobs[c].Submit })
	have := map[string]bool{}
	for _, q := range w.Queues {
		have[q.Name] = true
	}
	ext := map[string]bool{}
	note := func(m map[string]int64) {
		for k := range m {
			if k != "cpu" && k != "memory" && k != "pods" {
				ext[k] = true
			}
		}
	}
	for _, p := range w.Pools {
		note(p.Allocatable)
	}
	for _, j := range w.Jobs {
		if !have[j.Queue] {
			have[j.Queue] = true
			w.Queues = append(w.Queues, workload.Queue{Name: j.Queue, Weight: 1})
		}
		for _, t := range j.Tasks {
			note(t.Requests)
		}
	}
	w.Resources = nil
	for k := range ext {
		w.Resources = append(w.Resources, k)
	}
	sort.Strings(w.Resources)
	return &w
}
