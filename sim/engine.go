package sim

// This file is the discrete-event loop. Virtual time is int64 seconds. The
// events: a job completes (start + Duration, later if it was paused), an
// evicted member's grace period ends, a member fails (workload.Failure), a
// hold expires (a wake-up with nothing to apply), a node pool joins
// (NodePool.At), a failed member's replacement is created, a job arrives
// (Submit). The loop takes the earliest pending time, applies every event of
// that time in that order (each kind in a fixed order: by job input order,
// then member), runs one scheduling cycle of the policy, which binds and
// evicts through the state, and samples the GPU counters. (A gang policy
// skips a cycle that it knows would plan nothing: see gang.go.) Binds that
// bring a job to MinMember start it and schedule its completion. An event
// the cycle schedules at the current time (a zero grace period, a failure at
// 0 s of run time) makes one more round at the same time. The run ends when
// no event is left; jobs that never started by then are stuck or
// unschedulable.
//
// Timers that no longer apply (the completion of a job that was paused or
// restarted since, the failure of an earlier run) stay in the heap and are
// dropped when they reach its top.
//
// Nothing here reads the wall clock or iterates a map, so the same input
// gives the same run.

import (
	"container/heap"
	"sort"

	"github.com/phalanx-sched/phalanx/core"
)

// policy decides placements. The engine calls arrive, completed, requeue and
// failed as events happen and cycle once per event time; a policy binds
// members only through state.bind, during cycle.
type policy interface {
	// arrive hands over the jobs submitted at the current time, in input
	// order; their members are built.
	arrive(jobs []*job)
	// completed says that j finished and its members were freed.
	completed(j *job)
	// requeue says that member m of j waits for a node again: a replacement
	// was created, or its eviction ended.
	requeue(j *job, m int)
	// failed says that member m of j failed on node, freeing amount there.
	failed(j *job, m int, node int32, amount core.Vector)
	// cycle runs one scheduling cycle at the current time.
	cycle() error
	// finish is called once the last event time had its cycle.
	finish() error
	// reason says, at the end of the run, why j never started.
	reason(j *job) string
}

// timerKind orders the timed events of one instant.
type timerKind uint8

const (
	timerComplete timerKind = iota
	timerTerminated
	timerFailure
	timerWake
	// Replacements come after node pools join.
	timerReplacement
)

// timer is a timed event. arg is a member index (terminated, replacement)
// or a failure index; epoch is the job's epoch (complete) or run (failure)
// the timer belongs to.
type timer struct {
	at    int64
	kind  timerKind
	job   int32
	arg   int32
	epoch uint32
}

// timerHeap orders timers by time, kind, job input order, then arg.
type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(a, b int) bool {
	x, y := h[a], h[b]
	switch {
	case x.at != y.at:
		return x.at < y.at
	case x.kind != y.kind:
		return x.kind < y.kind
	case x.job != y.job:
		return x.job < y.job
	}
	return x.arg < y.arg
}
func (h timerHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (s *state) push(t timer) { heap.Push(&s.timers, t) }

// live reports whether timer t still applies.
func (s *state) live(t timer) bool {
	j := &s.jobs[t.job]
	switch t.kind {
	case timerComplete:
		return !j.done && j.epoch == t.epoch
	case timerTerminated:
		m := &j.members[t.arg]
		return m.state == memberTerminating && m.until == t.at
	case timerFailure:
		return !j.done && j.runs == t.epoch && j.start >= 0 && !j.failed[t.arg]
	case timerReplacement:
		return !j.done && j.members[t.arg].state == memberFailed
	}
	return true
}

// nextTimer drops the dead timers at the top of the heap and returns the
// time of the next live one.
func (s *state) nextTimer() (int64, bool) {
	for len(s.timers) > 0 {
		if s.live(s.timers[0]) {
			return s.timers[0].at, true
		}
		heap.Pop(&s.timers)
	}
	return 0, false
}

// fire applies the live timers of time t whose kind is in [from, to], and
// returns how many completions it applied.
func (s *state) fire(p policy, t int64, from, to timerKind) int {
	done := 0
	for len(s.timers) > 0 && s.timers[0].at == t && s.timers[0].kind >= from && s.timers[0].kind <= to {
		tm := heap.Pop(&s.timers).(timer)
		if !s.live(tm) {
			continue
		}
		j := &s.jobs[tm.job]
		if tm.kind != timerWake {
			s.changed = true // a wake-up changes nothing but the time
		}
		switch tm.kind {
		case timerComplete:
			s.complete(j)
			p.completed(j)
			done++
		case timerTerminated:
			if s.terminated(j, int(tm.arg)) {
				p.requeue(j, int(tm.arg))
			}
		case timerFailure:
			m := j.spec.Failures[tm.arg].Member
			if node, freed, ok := s.fail(j, int(tm.arg)); ok {
				p.failed(j, m, node, freed)
			}
		case timerReplacement:
			if s.replace(j, int(tm.arg)) {
				p.requeue(j, int(tm.arg))
			}
		}
	}
	return done
}

// simulate runs the event loop to the end and returns the time of the last
// event.
func simulate(s *state, p policy, opt Options) (int64, error) {
	w := s.w
	arrivals := make([]int, len(w.Jobs))
	for i := range arrivals {
		arrivals[i] = i
	}
	sort.SliceStable(arrivals, func(a, b int) bool {
		return w.Jobs[arrivals[a]].Submit < w.Jobs[arrivals[b]].Submit
	})
	pools := make([]int, len(w.Pools))
	for i := range pools {
		pools[i] = i
	}
	sort.SliceStable(pools, func(a, b int) bool { return w.Pools[pools[a]].At < w.Pools[pools[b]].At })

	if len(w.Jobs) > 0 {
		s.samples = append(s.samples, Sample{Time: s.firstSubmit})
	}
	// Progress counts arrivals, pools joining and completions.
	total := 2*len(w.Jobs) + len(w.Pools)
	step := max(1, total/100)
	done, report := 0, step
	var batch []*job
	ai, pi := 0, 0
	last := int64(0)
	for {
		t, ok := int64(0), false
		consider := func(x int64) {
			if !ok || x < t {
				t, ok = x, true
			}
		}
		if ai < len(arrivals) {
			consider(w.Jobs[arrivals[ai]].Submit)
		}
		if pi < len(pools) {
			consider(w.Pools[pools[pi]].At)
		}
		if next, live := s.nextTimer(); live {
			consider(next)
		}
		if !ok {
			break
		}
		s.now, last = t, t
		done += s.fire(p, t, timerComplete, timerWake)
		for ; pi < len(pools) && w.Pools[pools[pi]].At == t; pi++ {
			if err := s.joinPool(&w.Pools[pools[pi]]); err != nil {
				return 0, err
			}
			s.changed = true
			done++
		}
		s.fire(p, t, timerReplacement, timerReplacement)
		batch = batch[:0]
		for ; ai < len(arrivals) && w.Jobs[arrivals[ai]].Submit == t; ai++ {
			j := &s.jobs[arrivals[ai]]
			s.materialise(j)
			s.changed = true
			batch = append(batch, j)
			done++
		}
		if len(batch) > 0 {
			p.arrive(batch)
		}
		if err := p.cycle(); err != nil {
			return 0, err
		}
		s.sample()
		if opt.Progress != nil && done >= report {
			opt.Progress(done, total)
			report = done + step
		}
	}
	if err := p.finish(); err != nil {
		return 0, err
	}
	if opt.Progress != nil {
		opt.Progress(done, done)
	}
	return last, nil
}
