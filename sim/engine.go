package sim

// This file is the discrete-event loop. Virtual time is int64 seconds. Three
// kinds of event exist: a job completes (start + Duration), a node pool joins
// (NodePool.At), a job arrives (Submit). The loop takes the earliest pending
// time, applies every event of that time (completions first, then pools,
// then arrivals, each kind in a fixed order), runs exactly one scheduling
// cycle of the policy, which binds through the state, and samples the GPU
// counters. Binds that bring a job to MinMember start it and schedule its
// completion. The run ends when no event is left; jobs that never started by
// then are stuck or unschedulable.
//
// Nothing here reads the wall clock or iterates a map, so the same input
// gives the same run.

import (
	"container/heap"
	"sort"
)

// policy decides placements. The engine calls arrive and completed as events
// happen and cycle once per event time; a policy binds members only through
// state.bind, during cycle.
type policy interface {
	// arrive hands over the jobs submitted at the current time, in input
	// order; their members are built.
	arrive(jobs []*job)
	// completed says that j finished and its members were freed.
	completed(j *job)
	// cycle runs one scheduling cycle at the current time.
	cycle() error
	// reason says, at the end of the run, why j never started.
	reason(j *job) string
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
		if len(s.completions) > 0 {
			consider(s.completions[0].at)
		}
		if !ok {
			break
		}
		s.now, last = t, t
		for len(s.completions) > 0 && s.completions[0].at == t {
			c := heap.Pop(&s.completions).(completion)
			j := &s.jobs[c.job]
			s.complete(j)
			p.completed(j)
			done++
		}
		for ; pi < len(pools) && w.Pools[pools[pi]].At == t; pi++ {
			if err := s.joinPool(&w.Pools[pools[pi]]); err != nil {
				return 0, err
			}
			done++
		}
		batch = batch[:0]
		for ; ai < len(arrivals) && w.Jobs[arrivals[ai]].Submit == t; ai++ {
			j := &s.jobs[arrivals[ai]]
			s.materialise(j)
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
	if opt.Progress != nil {
		opt.Progress(done, done)
	}
	return last, nil
}
