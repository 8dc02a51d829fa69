package scheduler

import (
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
)

// The run times of each queue's recent gangs estimate how long a gang of
// that queue runs when nothing better is known, and correct the estimates
// its gangs declare: with their declared estimates, they give the factor
// by which those are multiplied (core.EstimateFactor), and the one by which
// the backlog (and, above 1, backfill) multiplies them (core.WorkFactor,
// core.Queue.WorkFactor), and how far past them one in ten ran, which
// backfill and the backlog also read (core.OverrunFactor,
// core.Queue.OverrunFactor). The scheduler keeps them in memory and
// records them in its state ConfigMap (state.go), from which a new leader
// restores them; it also learns them again from the finished pods its
// informers list, once per gang.

const (
	// historySize is how many of a queue's latest completed gangs are
	// kept: the estimate factor reads all of them, the p90 run time the
	// latest p90Size.
	historySize = core.EstimateSamples
	p90Size     = 20
	// historyMin is how many must have completed before they are trusted.
	historyMin = 5
)

// runTimes are the run times of one queue's latest completed gangs, by
// finish time, oldest first, with the gangs' keys, declared estimates (0
// for a gang that declared none) and arrivals.
type runTimes struct {
	finish, seconds, estimates, arrivals []int64
	gangs                                []string
	p                                    int64 // p90, kept up to date by addGang
	// eras are the estimate factor's by arrival (core.FactorEras), kept up
	// to date by addGang.
	eras core.FactorEras
	w    float64 // the work factor, kept up to date by addGang
	o    float64 // the overrun factor, kept up to date by addGang
}

// add records a gang that finished at finish (Unix seconds) after running
// secs seconds; only the historySize latest finishes are kept.
func (r *runTimes) add(finish, secs int64) { r.addGang("", finish, secs, 0, finish-secs) }

// addGang is add for the gang of key gang, which declared an estimate of
// estimate seconds (0: none) and arrived at arrival (Unix seconds).
func (r *runTimes) addGang(gang string, finish, secs, estimate, arrival int64) {
	i, _ := slices.BinarySearch(r.finish, finish+1) // after equal finishes
	r.finish = slices.Insert(r.finish, i, finish)
	r.seconds = slices.Insert(r.seconds, i, secs)
	r.estimates = slices.Insert(r.estimates, i, estimate)
	r.arrivals = slices.Insert(r.arrivals, i, arrival)
	r.gangs = slices.Insert(r.gangs, i, gang)
	if len(r.finish) > historySize {
		r.finish, r.seconds, r.estimates, r.arrivals, r.gangs = r.finish[1:], r.seconds[1:], r.estimates[1:], r.arrivals[1:], r.gangs[1:]
	}
	r.p = 0
	if len(r.seconds) >= historyMin {
		sorted := slices.Clone(r.seconds[max(len(r.seconds)-p90Size, 0):])
		slices.Sort(sorted)
		r.p = sorted[(9*len(sorted)+9)/10-1]
	}
	var ratios [historySize]float64
	var arrivals [historySize]int64
	n := 0
	for i, est := range r.estimates {
		if ratio, ok := core.EstimateRatio(est, r.seconds[i]); ok {
			ratios[n], arrivals[n] = ratio, r.arrivals[i]
			n++
		}
	}
	r.eras = r.eras.Follow(ratios[:n], arrivals[:n])
	r.factors()
}

// factors derives the work and overrun factors from the record and the
// eras.
func (r *runTimes) factors() {
	r.w = core.WorkFactor(r.estimates, r.seconds, r.arrivals, r.eras)
	r.o = core.OverrunFactor(r.estimates, r.seconds, r.arrivals, r.eras)
}

// setEras replaces the eras of the factor (restored from a recorded state),
// and the work and overrun factors with them.
func (r *runTimes) setEras(eras core.FactorEras) {
	r.eras = slices.Clone(eras)
	r.factors()
}

// workFactor is what the backlog multiplies the queue's estimates by
// (core.WorkFactor over its latest gangs that declared an estimate): 1 when
// fewer than core.EstimateSamplesMin did.
func (r *runTimes) workFactor() float64 {
	if r == nil || r.w == 0 {
		return 1
	}
	return r.w
}

// overrunFactor is how far past their corrected estimates one in ten of
// the queue's latest gangs that declared one ran, which backfill counts
// (core.OverrunFactor): 1 when fewer than core.EstimateSamplesMin did.
func (r *runTimes) overrunFactor() float64 {
	if r == nil || r.o == 0 {
		return 1
	}
	return r.o
}

// factor is what the declared estimates of the queue's gangs that arrive
// now are multiplied by (core.EstimateFactor over the ratios of run time to
// declared estimate of those of its latest gangs that declared one): 1 when
// fewer than core.EstimateSamplesMin did.
func (r *runTimes) factor() float64 {
	if r == nil {
		return 1
	}
	return r.eras.Current()
}

// factorAt is what the declared estimate of a gang of the queue that
// arrived at arrival (Unix seconds) is multiplied by: the factor of its era
// (core.FactorEras).
func (r *runTimes) factorAt(arrival int64) float64 {
	if r == nil {
		return 1
	}
	return r.eras.At(arrival)
}

// has reports whether the run time of the gang of key gang is recorded.
func (r *runTimes) has(gang string) bool {
	return r != nil && gang != "" && slices.Contains(r.gangs, gang)
}

// p90 is the 90th percentile (nearest rank) of the latest p90Size run
// times, or 0 when fewer than historyMin are known. A nil *runTimes knows none.
func (r *runTimes) p90() int64 {
	if r == nil {
		return 0
	}
	return r.p
}

// recordCompletion adds the run time of g, whose members all succeeded, to
// its queue's history, once per gang. The run time goes from the first
// member's start to the last member's finish: the pods' startTime and their
// containers' finishedAt, or when the store saw them running and finished if
// those are missing.
func (s *Store) recordCompletion(g *gangInfo, queue string, declared, arrival int64) {
	if g.recorded {
		return
	}
	g.recorded = true
	if s.history[queue].has(g.key) {
		return // restored from the state a former leader recorded
	}
	var start, finish int64
	for _, p := range g.members {
		st := p.runningAt
		if t := p.pod.Status.StartTime; t != nil {
			st = t.Unix()
		}
		if st == 0 {
			return // never seen running: no run time to learn
		}
		end := lastFinish(p.pod)
		if end == 0 {
			end = p.doneAt
		}
		if start == 0 || st < start {
			start = st
		}
		finish = max(finish, end)
	}
	if finish < start || start == 0 {
		return
	}
	if s.history[queue] == nil {
		s.history[queue] = &runTimes{}
	}
	r := s.history[queue]
	f := r.factor()
	r.addGang(g.key, finish, max(finish-start, 1), declared, arrival)
	s.historyGen[queue]++
	if r.factor() != f { // the eras moved (a move always changes the latest)
		s.factorGen[queue]++
	}
}

// lastFinish is when the pod's last container terminated, in Unix seconds,
// or 0 when no container says.
func lastFinish(pod *corev1.Pod) int64 {
	var end time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(end) {
			end = t.FinishedAt.Time
		}
	}
	if end.IsZero() {
		return 0
	}
	return end.Unix()
}
