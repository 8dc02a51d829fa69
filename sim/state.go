package sim

// This file holds the simulated cluster: nodes, queues, jobs and their
// members, and the GPU counters the metrics read. It is the single writer of
// the core.Snapshot the gang policies hand to the core: node Used and queue
// Allocated vectors are updated in place as members bind and jobs complete,
// so a cycle never needs the world rebuilt.
//
// Bookkeeping rules:
//   - a member request never carries pods; binding a member adds its request
//     plus one pod to its node's Used and its queue's Allocated, freeing
//     subtracts the same;
//   - a job starts the moment its placed members reach MinMember; it
//     completes Duration seconds later and frees every member it holds,
//     including elastic members placed after the start;
//   - gen counts the events that give capacity back (completions, nodes
//     joining); a placement that failed at generation g fails again until gen
//     moves, which the pod-by-pod policy uses to skip hopeless retries.

import (
	"container/heap"
	"fmt"

	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

// defaultMaxPods is the pod capacity of a node whose pool does not say,
// kubelet's default --max-pods.
const defaultMaxPods = 110

// member is one pod of a job.
type member struct {
	name string
	req  core.Vector // Pods is always 0
	gpus int64
	cons *core.Constraints
	node int32 // index in state.snap.Nodes, -1 while not placed
}

// job is the simulator's view of one workload job.
type job struct {
	idx     int
	spec    *workload.Job
	queue   int
	members []member
	placed  int
	// held is the GPUs its placed members hold.
	held int64
	// start and finish are -1 until they happen; finish is set at start.
	start, finish int64
	done          bool
	// placedAtStart is how many members held a node when the job started.
	placedAtStart int
	// received is the GPU-seconds the job holds while running.
	received int64
}

// state is the cluster and the jobs of one run.
type state struct {
	w       *workload.Workload
	names   core.ResourceNames
	gpu     int // dimension of workload.GPU, -1 if the workload has none
	snap    core.Snapshot
	nodeIdx map[string]int32
	queueIx map[string]int
	jobs    []job
	// noConstraints is shared by every unconstrained task of the run, so the
	// core's per-pointer memo covers all of them at once.
	noConstraints *core.Constraints

	gen              uint64
	running, held    int64
	clusterGPUs      int64
	lastCompletion   int64
	completed        int
	completions      completionHeap
	record           bool
	events           []PodEvent
	samples          []Sample
	firstSubmit, now int64
}

func newState(w *workload.Workload, record bool) (*state, error) {
	names, err := core.NewResourceNames(w.Resources...)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s := &state{
		w:              w,
		names:          names,
		gpu:            names.Index(workload.GPU),
		nodeIdx:        make(map[string]int32),
		queueIx:        make(map[string]int, len(w.Queues)),
		jobs:           make([]job, len(w.Jobs)),
		noConstraints:  &core.Constraints{},
		record:         record,
		lastCompletion: -1,
	}
	s.snap.Resources = names
	for i := range w.Queues {
		q := &w.Queues[i]
		if _, dup := s.queueIx[q.Name]; dup {
			return nil, fmt.Errorf("sim: queue %q defined twice", q.Name)
		}
		// Resources absent from the capability map are not capped.
		capability := core.Unbounded()
		for k, v := range q.Capability {
			d := names.Index(k)
			if d < 0 {
				return nil, fmt.Errorf("sim: queue %q: unknown resource %q in capability", q.Name, k)
			}
			capability[d] = v
		}
		guarantee, err := s.vector(q.Guarantee)
		if err != nil {
			return nil, fmt.Errorf("sim: queue %q guarantee: %w", q.Name, err)
		}
		s.queueIx[q.Name] = len(s.snap.Queues)
		s.snap.Queues = append(s.snap.Queues, core.Queue{
			Name: q.Name, Weight: q.Weight, Capability: capability, Guarantee: guarantee,
		})
	}
	seen := make(map[string]bool, len(w.Jobs))
	for i := range w.Jobs {
		spec := &w.Jobs[i]
		if seen[spec.ID] {
			return nil, fmt.Errorf("sim: job %q defined twice", spec.ID)
		}
		seen[spec.ID] = true
		q, ok := s.queueIx[spec.Queue]
		if !ok {
			return nil, fmt.Errorf("sim: job %q: unknown queue %q", spec.ID, spec.Queue)
		}
		s.jobs[i] = job{idx: i, spec: spec, queue: q, start: -1, finish: -1}
		if i == 0 || spec.Submit < s.firstSubmit {
			s.firstSubmit = spec.Submit
		}
		for t := range spec.Tasks {
			if _, err := s.vector(spec.Tasks[t].Requests); err != nil {
				return nil, fmt.Errorf("sim: job %q task %q: %w", spec.ID, spec.Tasks[t].Role, err)
			}
		}
	}
	return s, nil
}

// vector converts a resource map to a Vector; absent resources are 0.
func (s *state) vector(m map[string]int64) (core.Vector, error) {
	var v core.Vector
	for k, x := range m {
		d := s.names.Index(k)
		if d < 0 {
			return v, fmt.Errorf("unknown resource %q", k)
		}
		v[d] = x
	}
	return v, nil
}

// joinPool adds the nodes of a pool to the cluster, each labelled with its
// rack when the pool is split into racks.
func (s *state) joinPool(p *workload.NodePool) error {
	alloc, err := s.vector(p.Allocatable)
	if err != nil {
		return fmt.Errorf("sim: pool %q: %w", p.Name, err)
	}
	if _, ok := p.Allocatable["pods"]; !ok {
		alloc[core.Pods] = defaultMaxPods
	}
	labels := p.Labels
	for i := 0; i < p.Count; i++ {
		name := fmt.Sprintf("%s-%d", p.Name, i)
		if _, dup := s.nodeIdx[name]; dup {
			return fmt.Errorf("sim: node name %q used twice", name)
		}
		if p.RackSize > 0 && i%p.RackSize == 0 {
			// The nodes of one rack share one label map; nothing writes it.
			labels = make(map[string]string, len(p.Labels)+1)
			for k, v := range p.Labels {
				labels[k] = v
			}
			labels[p.RackLabel] = p.RackOf(i)
		}
		s.nodeIdx[name] = int32(len(s.snap.Nodes))
		s.snap.Nodes = append(s.snap.Nodes, core.Node{
			Name: name, Allocatable: alloc, Labels: labels, Taints: p.Taints,
		})
		if s.gpu >= 0 {
			s.clusterGPUs += alloc[s.gpu]
		}
	}
	s.gen++
	return nil
}

// materialise builds the members of a job when it arrives. Members of one
// task share one *core.Constraints.
func (s *state) materialise(j *job) {
	j.members = make([]member, 0, j.spec.Members())
	for t := range j.spec.Tasks {
		task := &j.spec.Tasks[t]
		req, _ := s.vector(task.Requests) // checked in newState
		req[core.Pods] = 0
		var gpus int64
		if s.gpu >= 0 {
			gpus = req[s.gpu]
		}
		cons := s.noConstraints
		if len(task.NodeSelector) > 0 || len(task.Affinity) > 0 || len(task.Tolerations) > 0 {
			cons = &core.Constraints{
				NodeSelector: task.NodeSelector, Affinity: task.Affinity, Tolerations: task.Tolerations,
			}
		}
		for r := 0; r < task.Replicas; r++ {
			j.members = append(j.members, member{
				name: fmt.Sprintf("%s-%s-%d", j.spec.ID, task.Role, r),
				req:  req, gpus: gpus, cons: cons, node: -1,
			})
		}
	}
}

// bind places member m of job j on node n at the current time and starts the
// job when it reaches MinMember. It reports whether the job started.
func (s *state) bind(j *job, m int, n int32) bool {
	mem := &j.members[m]
	mem.node = n
	node := &s.snap.Nodes[n]
	node.Used = node.Used.Add(mem.req)
	node.Used[core.Pods]++
	q := &s.snap.Queues[j.queue]
	q.Allocated = q.Allocated.Add(mem.req)
	q.Allocated[core.Pods]++
	j.placed++
	j.held += mem.gpus
	s.held += mem.gpus
	s.event(j, mem, "bound")
	if j.start >= 0 {
		s.running += mem.gpus
		j.received += mem.gpus * (j.finish - s.now)
		s.event(j, mem, "running")
		return false
	}
	if j.placed >= j.spec.MinMember && j.spec.MinMember >= 1 {
		s.startJob(j)
		return true
	}
	return false
}

func (s *state) startJob(j *job) {
	j.start = s.now
	j.finish = s.now + j.spec.Duration
	j.placedAtStart = j.placed
	j.received = j.held * j.spec.Duration
	s.running += j.held
	heap.Push(&s.completions, completion{at: j.finish, job: int32(j.idx)})
	if s.record {
		for m := range j.members {
			if j.members[m].node >= 0 {
				s.event(j, &j.members[m], "running")
			}
		}
	}
}

// complete frees every member of j at the current time.
func (s *state) complete(j *job) {
	q := &s.snap.Queues[j.queue]
	for m := range j.members {
		mem := &j.members[m]
		if mem.node < 0 {
			continue
		}
		node := &s.snap.Nodes[mem.node]
		node.Used = node.Used.Sub(mem.req)
		node.Used[core.Pods]--
		q.Allocated = q.Allocated.Sub(mem.req)
		q.Allocated[core.Pods]--
		s.event(j, mem, "completed")
	}
	s.running -= j.held
	s.held -= j.held
	j.done = true
	s.completed++
	s.lastCompletion = s.now
	s.gen++
}

func (s *state) event(j *job, m *member, kind string) {
	if !s.record {
		return
	}
	node := ""
	if m.node >= 0 {
		node = s.snap.Nodes[m.node].Name
	}
	s.events = append(s.events, PodEvent{Time: s.now, Job: j.spec.ID, Pod: m.name, Kind: kind, Node: node})
}

// sample appends the GPU counters at the current time if they changed; a
// second change at the same time replaces the first.
func (s *state) sample() {
	n := len(s.samples)
	if n > 0 && s.samples[n-1].Running == s.running && s.samples[n-1].Held == s.held {
		return
	}
	smp := Sample{Time: s.now, Running: s.running, Held: s.held}
	if n > 0 && s.samples[n-1].Time == s.now {
		s.samples[n-1] = smp
		return
	}
	s.samples = append(s.samples, smp)
}

// completion is a job finishing at a time.
type completion struct {
	at  int64
	job int32
}

// completionHeap orders completions by time, then by job input order.
type completionHeap []completion

func (h completionHeap) Len() int { return len(h) }
func (h completionHeap) Less(a, b int) bool {
	if h[a].at != h[b].at {
		return h[a].at < h[b].at
	}
	return h[a].job < h[b].job
}
func (h completionHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *completionHeap) Push(x any)   { *h = append(*h, x.(completion)) }
func (h *completionHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// releases appends to dst what every member of a running job gives back to
// its node when the job is expected to end: its end is known exactly in the
// simulator (Submit/Duration of the trace serve as estimates).
func (s *state) releases(dst []core.Release) []core.Release {
	for _, c := range s.completions {
		j := &s.jobs[c.job]
		for m := range j.members {
			mem := &j.members[m]
			if mem.node < 0 {
				continue
			}
			amount := mem.req
			amount[core.Pods] = 1
			dst = append(dst, core.Release{Node: int(mem.node), Amount: amount, At: j.finish})
		}
	}
	return dst
}
