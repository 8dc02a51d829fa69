package sim

// This file holds the simulated cluster: nodes, queues, jobs and their
// members, and the GPU counters the metrics read. It is the single writer of
// the core.Snapshot the gang policies hand to the core: node Used and queue
// Allocated vectors are updated in place as members bind and leave, so a
// cycle never needs the world rebuilt.
//
// Bookkeeping rules:
//   - a member request never carries pods; binding a member adds its request
//     plus one pod to its node's Used and its queue's Allocated, freeing
//     subtracts the same;
//   - a job starts the moment its placed members reach MinMember; it
//     completes Duration seconds of running later and frees every member it
//     holds, including elastic members placed after the start;
//   - an evicted member terminates for the grace period: it keeps its node
//     (Used, Allocated) but leaves the GPU counters at once, then frees the
//     node and waits for a node again unless its job is done. A started job
//     left below MinMember by evictions restarts: its other members
//     terminate too, and its run so far is lost;
//   - a failed member frees its node at once; its replacement waits for a
//     node from RestartAfter later. A job left below MinMember pauses (its
//     members still held count as held, not running, like an incomplete
//     gang's) until the replacement binds, and finishes that much later;
//   - gen counts the events that give capacity back (members leaving nodes,
//     nodes joining); a placement that failed at generation g fails again
//     until gen moves, which the pod-by-pod policy uses to skip hopeless
//     retries.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

// memberState is where a member is in its life.
type memberState uint8

const (
	// memberPending: waiting for a node (or its job has not arrived yet).
	memberPending memberState = iota
	// memberPlaced: bound to node.
	memberPlaced
	// memberTerminating: evicted; it still uses node until its grace period
	// ends (until), then goes back to pending unless its job is done.
	memberTerminating
	// memberFailed: its pod died; its replacement is not created yet.
	memberFailed
	// memberDone: freed when its job completed; node says where it ran.
	memberDone
)

// member is one pod of a job.
type member struct {
	name  string
	req   core.Vector // Pods is always 0
	gpus  int64
	cons  *core.Constraints
	node  int32 // index in state.snap.Nodes, -1 while not placed
	state memberState
	// start is when the member began running (the later of its bind and its
	// job's start); -1 while its job has not started.
	start int64
	// until is when a terminating member's grace period ends.
	until int64
	// createdAt is when a replacement member was created, -1 for members
	// that are not replacements waiting for a node.
	createdAt int64
}

// job is the simulator's view of one workload job.
type job struct {
	idx     int
	spec    *workload.Job
	queue   int
	members []member
	// placed counts members bound to a node (not terminating); onNodes also
	// counts terminating ones.
	placed, onNodes int
	// held is the GPUs its placed members hold.
	held int64
	// start and finish are -1 until the job starts; finish is set at start
	// and moves while the job is paused. A job restarted by preemption is
	// back at -1.
	start, finish int64
	done          bool
	// placedAtStart is how many members held a node when the job started.
	placedAtStart int
	// received is the GPU-seconds the job holds while running, counted
	// ahead to finish and corrected whenever that changes.
	received int64
	// preemptions counts the cycles in which it lost members to preemption
	// or reclaim.
	preemptions int
	// reserved is when nodes were first reserved for the job (the core's
	// reservation for its gang), -1 if never.
	reserved int64
	// firstStart is when the job first started, -1 until it does.
	firstStart int64
	// fcAt is when the first forecast of the job's start was made
	// (Options.ForecastEvery), -1 if none was; fcStart the start it gave,
	// -1 if none within its horizon; fcReserved when it gave nodes to be
	// first reserved for the job, -1 if never within its horizon.
	fcAt, fcStart, fcReserved int64
	// estimate is the run time the job declares, which the scheduler
	// corrects by its queue's record (state.expected); estEnd is start +
	// estimate while the job runs, moved by pauses.
	estimate, estEnd int64
	// epoch moves whenever finish changes or the job stops, so that a
	// completion timer of an earlier epoch is ignored.
	epoch uint32
	// runs counts the job's starts; a failure timer belongs to one run.
	runs uint32
	// paused: a member failed and the job is below MinMember until its
	// replacement binds; remaining is its run time left, pausedAt when it
	// paused.
	paused              bool
	remaining, pausedAt int64
	// failed[i] says Failures[i] has happened (or was skipped).
	failed []bool
	// resident is the job's index in state.resident, -1 when no member of
	// it is on a node.
	resident int32
}

// running reports whether the job is making progress: started, not paused,
// not done.
func (j *job) running() bool { return j.start >= 0 && !j.paused && !j.done }

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
	// resident lists the jobs with a member on a node, in no particular
	// (but deterministic) order.
	resident []int32
	// grace is how long an evicted member terminates, in seconds.
	grace int64

	gen uint64
	// changed says that an event changed the cluster or the jobs since the
	// policy's last cycle (set by the event loop, cleared by the policy).
	changed       bool
	running, held int64
	// queueRunning is running by queue (state.snap.Queues' order), and
	// queueSamples its step series, for the windowed fairness.
	queueRunning []int64
	queueSamples []queueSample
	// waiting counts the jobs submitted and not started (again, after a
	// restart); waitingSamples is its step series.
	waiting        int
	waitingSamples []Waiting
	queueSampled   []int64
	lastCompletion int64
	completed      int
	timers         timerHeap
	record         bool
	// forecastEvery is Options.ForecastEvery when the policy forecasts
	// (gang.go), 0 otherwise.
	forecastEvery    int64
	events           []PodEvent
	samples          []Sample
	firstSubmit, now int64

	// What preemption and failures cost, for the metrics.
	preemptedGangs, evictedMembers int
	lostGPUSeconds                 int64
	failures                       int
	replacementWaits               []int64

	estimates queueEstimates
}

func newState(w *workload.Workload, opt Options) (*state, error) {
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
		record:         opt.Record,
		grace:          opt.gracePeriod(),
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
			Name: q.Name, Weight: q.Weight, Capability: capability, Guarantee: guarantee, NoReclaim: q.NoReclaim, StrictOrder: q.StrictOrder,
		})
	}
	for _, q := range slices.Sorted(maps.Keys(opt.QueueEstimateErrors)) {
		if _, ok := s.queueIx[q]; !ok {
			return nil, fmt.Errorf("sim: estimate error of queue %q: the workload has no such queue (its queues: %s)", q, workload.QueueNames(w.Queues))
		}
	}
	s.queueRunning = make([]int64, len(s.snap.Queues))
	s.estimates.init(len(s.snap.Queues)) // Run turns it on for the phalanx policy
	s.queueSampled = make([]int64, len(s.snap.Queues))
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
		for _, f := range spec.Failures {
			if f.Member < 0 || f.Member >= spec.Members() || f.At < 0 || f.RestartAfter < 0 {
				return nil, fmt.Errorf("sim: job %q: failure of member %d at %d s (restart after %d s) is out of range", spec.ID, f.Member, f.At, f.RestartAfter)
			}
		}
		s.jobs[i] = job{idx: i, spec: spec, queue: q, start: -1, finish: -1, resident: -1, reserved: -1, firstStart: -1, fcAt: -1, fcStart: -1, fcReserved: -1,
			estimate: opt.estimateError(spec.Queue, spec.Submit-w.Jobs[0].Submit).estimate(spec.ID, spec.Duration)}
		if len(spec.Failures) > 0 {
			s.jobs[i].failed = make([]bool, len(spec.Failures))
		}
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
		alloc[core.Pods] = workload.DefaultPods
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
	}
	s.gen++
	return nil
}

// materialise builds the members of a job when it arrives. Members of one
// task share one *core.Constraints; a job that names a GPU model adds a
// nodeSelector on workload.GPUModelLabel, through one pointer shared by all
// of its tasks that have no constraints of their own.
func (s *state) materialise(j *job) {
	s.waiting++
	j.members = make([]member, 0, j.spec.Members())
	var modelOnly *core.Constraints // the job's GPU model and nothing else
	for t := range j.spec.Tasks {
		task := &j.spec.Tasks[t]
		req, _ := s.vector(task.Requests) // checked in newState
		req[core.Pods] = 0
		var gpus int64
		if s.gpu >= 0 {
			gpus = req[s.gpu]
		}
		cons := s.noConstraints
		own := len(task.NodeSelector) > 0 || len(task.Affinity) > 0 || len(task.Tolerations) > 0
		switch {
		case own:
			cons = &core.Constraints{
				NodeSelector: withGPUModel(task.NodeSelector, j.spec.GPUModel), Affinity: task.Affinity, Tolerations: task.Tolerations,
			}
		case j.spec.GPUModel != "":
			if modelOnly == nil {
				modelOnly = &core.Constraints{NodeSelector: withGPUModel(nil, j.spec.GPUModel)}
			}
			cons = modelOnly
		}
		for r := 0; r < task.Replicas; r++ {
			j.members = append(j.members, member{
				name: workload.MemberName(j.spec.ID, task.Role, r),
				req:  req, gpus: gpus, cons: cons, node: -1, start: -1, createdAt: -1,
			})
		}
	}
}

// withGPUModel returns selector plus workload.GPUModelLabel=model, or
// selector itself when model is empty. It never writes selector.
func withGPUModel(selector map[string]string, model string) map[string]string {
	if model == "" {
		return selector
	}
	out := make(map[string]string, len(selector)+1)
	for k, v := range selector {
		out[k] = v
	}
	out[workload.GPUModelLabel] = model
	return out
}

// take adds member m's request plus one pod to node n and to its queue.
func (s *state) take(j *job, m *member, n int32) {
	node := &s.snap.Nodes[n]
	node.Used = node.Used.Add(m.req)
	node.Used[core.Pods]++
	q := &s.snap.Queues[j.queue]
	q.Allocated = q.Allocated.Add(m.req)
	q.Allocated[core.Pods]++
	if j.onNodes == 0 {
		j.resident = int32(len(s.resident))
		s.resident = append(s.resident, int32(j.idx))
	}
	j.onNodes++
}

// give takes back what take added for member m, from its node.
func (s *state) give(j *job, m *member) {
	node := &s.snap.Nodes[m.node]
	node.Used = node.Used.Sub(m.req)
	node.Used[core.Pods]--
	q := &s.snap.Queues[j.queue]
	q.Allocated = q.Allocated.Sub(m.req)
	q.Allocated[core.Pods]--
	j.onNodes--
	if j.onNodes == 0 {
		last := s.resident[len(s.resident)-1]
		s.resident[j.resident] = last
		s.jobs[last].resident = j.resident
		s.resident = s.resident[:len(s.resident)-1]
		j.resident = -1
	}
	s.gen++
}

// bind places member m of job j on node n at the current time and starts the
// job when it reaches MinMember. It reports whether the job started.
func (s *state) bind(j *job, m int, n int32) bool {
	mem := &j.members[m]
	mem.node, mem.state = n, memberPlaced
	s.take(j, mem, n)
	j.placed++
	j.held += mem.gpus
	s.held += mem.gpus
	if mem.createdAt >= 0 {
		s.replacementWaits = append(s.replacementWaits, s.now-mem.createdAt)
		mem.createdAt = -1
	}
	s.event(j, mem, "bound", "")
	if j.start >= 0 {
		mem.start = s.now
		switch {
		case !j.paused:
			s.addRunning(j, mem.gpus)
			j.received += mem.gpus * (j.finish - s.now)
		case j.placed >= j.spec.MinMember:
			s.resume(j)
		}
		s.event(j, mem, "running", "")
		return false
	}
	if j.placed >= j.spec.MinMember && j.spec.MinMember >= 1 {
		s.startJob(j)
		return true
	}
	return false
}

func (s *state) startJob(j *job) {
	s.waiting--
	j.start = s.now
	if j.firstStart < 0 {
		j.firstStart = s.now
	}
	j.finish = s.now + j.spec.Duration
	j.estEnd = s.now + j.estimate
	j.placedAtStart = j.placed
	j.received += j.held * j.spec.Duration
	s.addRunning(j, j.held)
	j.epoch++
	j.runs++
	s.push(timer{at: j.finish, kind: timerComplete, job: int32(j.idx), epoch: j.epoch})
	for i, f := range j.spec.Failures {
		if !j.failed[i] {
			s.push(timer{at: s.now + f.At, kind: timerFailure, job: int32(j.idx), arg: int32(i), epoch: j.runs})
		}
	}
	for m := range j.members {
		if mem := &j.members[m]; mem.state == memberPlaced {
			mem.start = s.now
			s.event(j, mem, "running", "")
		}
	}
}

// complete frees every placed member of j at the current time. Terminating
// members stay until their grace period ends.
func (s *state) complete(j *job) {
	for m := range j.members {
		mem := &j.members[m]
		if mem.state != memberPlaced {
			continue
		}
		s.give(j, mem)
		mem.state = memberDone
		s.event(j, mem, "completed", "")
	}
	s.addRunning(j, -j.held)
	s.held -= j.held
	q := &s.snap.Queues[j.queue]
	q.WorkFactor, q.OverrunFactor = s.estimates.record(j.queue, j.estimate, s.now-j.start, j.spec.Submit)
	j.done = true
	s.completed++
	s.lastCompletion = s.now
}

// stop takes placed member mem of j out of the counters, as it stops
// running: it is evicted or fails.
func (s *state) stop(j *job, mem *member) {
	if j.running() {
		s.addRunning(j, -mem.gpus)
		j.received -= mem.gpus * (j.finish - s.now)
	}
	j.placed--
	j.held -= mem.gpus
	s.held -= mem.gpus
}

// evict starts the termination of placed member m of j; why is the event's
// reason. The member keeps its node until the grace period ends.
func (s *state) evict(j *job, m int, why string) {
	mem := &j.members[m]
	if mem.start >= 0 {
		s.lostGPUSeconds += mem.gpus * (s.now - mem.start)
	}
	s.stop(j, mem)
	mem.state, mem.until = memberTerminating, s.now+s.grace
	s.push(timer{at: mem.until, kind: timerTerminated, job: int32(j.idx), arg: int32(m)})
	s.event(j, mem, "evicted", why)
}

// restart stops a started job that lost members below MinMember: its other
// placed members terminate too, and it waits to start from scratch, its run
// so far lost.
func (s *state) restart(j *job) {
	s.waiting++
	for m := range j.members {
		if j.members[m].state == memberPlaced {
			s.evict(j, m, "its job restarts")
		}
	}
	if j.paused {
		j.paused = false
	}
	j.start, j.finish = -1, -1
	j.epoch++
}

// terminated ends the grace period of member m of j and frees its node. It
// reports whether the member waits for a node again (its job is not done).
func (s *state) terminated(j *job, m int) bool {
	mem := &j.members[m]
	s.give(j, mem)
	s.event(j, mem, "deleted", "")
	mem.node, mem.start = -1, -1
	if j.done {
		mem.state = memberDone
		return false
	}
	mem.state = memberPending
	return true
}

// fail makes failure i of j happen now, if its member is placed: the member
// is freed at once and its replacement is due RestartAfter later. A job left
// below MinMember pauses until the replacement binds. It returns the node
// the member was on and what it freed there (request plus pod), ok false
// when the member was not placed.
func (s *state) fail(j *job, i int) (node int32, freed core.Vector, ok bool) {
	j.failed[i] = true
	f := j.spec.Failures[i]
	mem := &j.members[f.Member]
	if mem.state != memberPlaced {
		return -1, freed, false
	}
	s.failures++
	node = mem.node
	freed = mem.req
	freed[core.Pods] = 1
	s.stop(j, mem)
	s.event(j, mem, "failed", "")
	s.give(j, mem)
	mem.state, mem.node, mem.start = memberFailed, -1, -1
	if j.running() && j.placed < j.spec.MinMember {
		j.paused, j.pausedAt = true, s.now
		j.remaining = j.finish - s.now
		s.addRunning(j, -j.held)
		j.received -= j.held * j.remaining
		j.epoch++
	}
	s.push(timer{at: s.now + f.RestartAfter, kind: timerReplacement, job: int32(j.idx), arg: int32(f.Member)})
	return node, freed, true
}

// resume restarts the clock of a paused job whose members are back to
// MinMember: it finishes as much later as it was paused.
func (s *state) resume(j *job) {
	j.paused = false
	j.finish = s.now + j.remaining
	j.estEnd += s.now - j.pausedAt
	j.received += j.held * j.remaining
	s.addRunning(j, j.held)
	j.epoch++
	s.push(timer{at: j.finish, kind: timerComplete, job: int32(j.idx), epoch: j.epoch})
}

// replace creates the replacement of failed member m of j. It reports
// whether the replacement waits for a node (the job is not done and the
// member was not replaced otherwise).
func (s *state) replace(j *job, m int) bool {
	mem := &j.members[m]
	if j.done || mem.state != memberFailed {
		return false
	}
	mem.state, mem.createdAt = memberPending, s.now
	s.event(j, mem, "replaced", "")
	return true
}

func (s *state) event(j *job, m *member, kind, reason string) {
	if !s.record {
		return
	}
	node := ""
	if m.node >= 0 {
		node = s.snap.Nodes[m.node].Name
	}
	s.events = append(s.events, PodEvent{Time: s.now, Job: j.spec.ID, Pod: m.name, Kind: kind, Node: node, Reason: reason})
}

// sample appends the GPU counters at the current time if they changed; a
// second change at the same time replaces the first. The same for the
// running GPUs of each queue.
func (s *state) sample() {
	s.sampleQueues()
	if n := len(s.waitingSamples); n == 0 || s.waitingSamples[n-1].Jobs != s.waiting {
		if n > 0 && s.waitingSamples[n-1].Time == s.now {
			s.waitingSamples[n-1].Jobs = s.waiting
		} else {
			s.waitingSamples = append(s.waitingSamples, Waiting{Time: s.now, Jobs: s.waiting})
		}
	}
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

// queueSample is a step of one queue's running GPUs.
type queueSample struct {
	Time    int64
	Queue   int32
	Running int64
}

// addRunning adds d GPUs to what runs, in total and for j's queue.
func (s *state) addRunning(j *job, d int64) {
	s.running += d
	s.queueRunning[j.queue] += d
}

// sampleQueues appends a queueSample for every queue whose running GPUs
// changed since it was last sampled. Changes at one time are each recorded;
// integrating them in order gives the last its time.
func (s *state) sampleQueues() {
	for q, r := range s.queueRunning {
		if r != s.queueSampled[q] {
			s.queueSampled[q] = r
			s.queueSamples = append(s.queueSamples, queueSample{Time: s.now, Queue: int32(q), Running: r})
		}
	}
}

// releases appends to dst what every member on a node gives back when the
// scheduler expects it to: a member of a running job at the job's expected
// end (start + expected run time, moved by pauses; passed if the job overran it, as
// the scheduler gives it: the core decides what to expect of it), a
// terminating member when its grace period ends. Members of paused jobs,
// and of jobs without an estimate, are left out: their end is unknown.
func (s *state) releases(dst []core.Release) []core.Release {
	for _, ji := range s.resident {
		j := &s.jobs[ji]
		end := int64(0)
		if j.running() && j.estimate > 0 {
			end = j.estEnd - j.estimate + s.expected(j)
		}
		for m := range j.members {
			mem := &j.members[m]
			at := end
			switch mem.state {
			case memberPlaced:
			case memberTerminating:
				at = mem.until
			default:
				continue
			}
			if at == 0 {
				continue
			}
			amount := mem.req
			amount[core.Pods] = 1
			dst = append(dst, core.Release{Node: int(mem.node), Amount: amount, At: at, Queue: j.spec.Queue})
		}
	}
	return dst
}

// runningGangs fills Snapshot.Running: one entry per job with a member on a
// node, its members placed or terminating. placed is scratch space for the
// members, reused across cycles; both slices are returned for reuse.
func (s *state) runningGangs(dst []core.Running, placed []core.Placed) ([]core.Running, []core.Placed) {
	dst, placed = dst[:0], placed[:0]
	for _, ji := range s.resident {
		j := &s.jobs[ji]
		for m := range j.members {
			mem := &j.members[m]
			if mem.state != memberPlaced && mem.state != memberTerminating {
				continue
			}
			start := mem.start
			if start < 0 {
				start = s.now
			}
			placed = append(placed, core.Placed{Name: mem.name, Node: int(mem.node), Request: mem.req, Start: start,
				Terminating: mem.state == memberTerminating})
		}
	}
	k := 0
	for _, ji := range s.resident {
		j := &s.jobs[ji]
		n := j.onNodes
		dst = append(dst, core.Running{Gang: j.spec.ID, Queue: j.spec.Queue, Priority: j.spec.Priority,
			MinMember: j.spec.MinMember, Arrival: j.spec.Submit, Estimate: s.expected(j), Members: placed[k : k+n : k+n]})
		k += n
	}
	return dst, placed
}
