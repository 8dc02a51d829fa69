package report

// This file tells the story of a recorded run job by job: submissions, node
// pools joining, members bound before their job could start (the partial
// gangs a pod-by-pod scheduler leaves holding resources), starts and
// completions, evictions and the restarts they cause, members that fail and
// their replacements, and at the end the jobs that never ran and why.
// Entries that happen at the same time keep the simulator's order:
// completions, failures, pools, replacements, submissions, then what the
// scheduling cycle did. A recorded run shows every start of a job that was
// restarted; an unrecorded one only the start that led to its completion.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// Step is one entry of a timeline. At is -1 for what holds at the end of
// the run.
type Step struct {
	At   int64
	Text string
	// order sorts entries of the same time.
	order int
}

// Entry kinds in the order they happen within one instant.
const (
	orderComplete = iota
	orderFail
	orderPool
	orderReplace
	orderSubmit
	orderPartial
	orderWait
	orderEvict
	orderStart
	orderEnd
)

// Timeline returns the job timeline of res over w, sorted by time. res must
// have been recorded with sim.Options.Record for partial binds to show.
func Timeline(w *workload.Workload, res *sim.Result) []Step {
	var steps []Step
	add := func(at int64, order int, format string, args ...any) {
		steps = append(steps, Step{At: at, Text: fmt.Sprintf(format, args...), order: order})
	}
	for _, p := range w.Pools {
		if p.At > 0 {
			add(p.At, orderPool, "node pool %s joins: +%s, +%s", p.Name, plural(int64(p.Count), "node"), plural(int64(p.Count)*p.Allocatable[workload.GPU], "GPU"))
		}
	}
	specs, _ := podSpecs(w, maxTime)
	gpus := make(map[string]int64, len(specs))
	for _, s := range specs {
		gpus[s.name] = s.gpus
	}
	for _, e := range res.Events {
		if e.Kind == "waiting" {
			add(e.Time, orderWait, "%s waits: %s", e.Job, e.Reason)
		}
	}
	runs := podLife(res.Events, add)
	partial := partialBinds(res.Events, res.Jobs, runs, gpus)
	for _, o := range res.Jobs {
		add(o.Submit, orderSubmit, "%s submitted (%s, %s)", o.ID, plural(int64(o.Members), "pod"), plural(o.GPUs, "GPU"))
		for _, p := range partial[o.ID] {
			add(p.at, orderPartial, "%s: %d/%d pods bound, holding %s idle; the job cannot start", o.ID, p.bound, o.Members, plural(p.gpus, "GPU"))
		}
		if rs, ok := runs[o.ID]; ok {
			for _, r := range rs {
				if t := r.from; t == o.Start {
					add(t, orderStart, "%s starts (%d/%d pods bound)", o.ID, o.Placed, o.Members)
				} else {
					add(t, orderStart, "%s starts", o.ID)
				}
			}
		} else if o.Start >= 0 {
			add(o.Start, orderStart, "%s starts (%d/%d pods bound)", o.ID, o.Placed, o.Members)
		}
		if o.Finish >= 0 {
			add(o.Finish, orderComplete, "%s completes", o.ID)
		}
		if o.Start < 0 {
			text := fmt.Sprintf("%s never starts (%s", o.ID, strings.ToLower(string(o.State)))
			if o.Placed > 0 {
				text += fmt.Sprintf(", %d/%d pods still bound", o.Placed, o.Members)
			}
			if o.Reason != "" {
				text += ": " + o.Reason
			}
			add(-1, orderEnd, "%s)", text)
		}
	}
	slices.SortStableFunc(steps, func(a, b Step) int {
		if (a.At < 0) != (b.At < 0) {
			return cmp.Compare(b.At, a.At) // the end comes last
		}
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.order, b.order))
	})
	return steps
}

const maxTime = int64(^uint64(0) >> 1)

// run is when a job ran: from a pod of it running while none did, to none
// running again (maxTime if that never happens).
type run struct{ from, to int64 }

// podLife follows the pods of the events: it adds the steps of evictions,
// failures and replacements, and returns when each job with events ran.
func podLife(events []sim.PodEvent, add func(at int64, order int, format string, args ...any)) map[string][]run {
	runs := make(map[string][]run)
	runningPods := make(map[string]int)  // by job
	running := make(map[string]bool)     // pods running
	replacedAt := make(map[string]int64) // pods whose replacement waits, since
	type evictKey struct {
		at          int64
		job, reason string
	}
	var evictions []evictKey
	evicted := make(map[evictKey]int)
	stopped := make(map[evictKey]bool) // the job had no pod running left
	stopRunning := func(e sim.PodEvent) {
		if running[e.Pod] {
			running[e.Pod] = false
			runningPods[e.Job]--
			if runningPods[e.Job] == 0 {
				rs := runs[e.Job]
				rs[len(rs)-1].to = e.Time
			}
		}
	}
	for _, e := range events {
		switch e.Kind {
		case "running":
			if !running[e.Pod] {
				if runningPods[e.Job] == 0 {
					runs[e.Job] = append(runs[e.Job], run{from: e.Time, to: maxTime})
				}
				running[e.Pod] = true
				runningPods[e.Job]++
			}
		case "completed":
			stopRunning(e)
		case "evicted":
			stopRunning(e)
			k := evictKey{e.Time, e.Job, e.Reason}
			if evicted[k] == 0 {
				evictions = append(evictions, k)
			}
			evicted[k]++
			stopped[k] = runningPods[e.Job] == 0
		case "failed":
			stopRunning(e)
			add(e.Time, orderFail, "%s: pod %s failed on %s", e.Job, e.Pod, e.Node)
		case "replaced":
			replacedAt[e.Pod] = e.Time
			add(e.Time, orderReplace, "%s: the replacement of pod %s is created", e.Job, e.Pod)
		case "bound":
			if since, ok := replacedAt[e.Pod]; ok {
				delete(replacedAt, e.Pod)
				add(e.Time, orderStart, "%s: the replacement of pod %s is bound to %s after waiting %s", e.Job, e.Pod, e.Node, Duration(float64(e.Time-since)))
			}
		}
	}
	for _, k := range evictions {
		text := fmt.Sprintf("%s: %s evicted (%s)", k.job, plural(int64(evicted[k]), "pod"), k.reason)
		if stopped[k] {
			text += "; the job stops and will start again from scratch"
		}
		add(k.at, orderEvict, "%s", text)
	}
	return runs
}

// partial is a job's bound members at one time before the job started.
type partial struct {
	at, gpus int64
	bound    int
}

// partialBinds returns, per job, each time members were bound while the job
// was not running, with the count and GPUs of its bound members then. When
// a job ran is read from runs, or from its outcome for jobs without.
func partialBinds(events []sim.PodEvent, jobs []sim.JobOutcome, runs map[string][]run, gpus map[string]int64) map[string][]partial {
	start := make(map[string]int64, len(jobs))
	for _, o := range jobs {
		start[o.ID] = o.Start
	}
	ran := func(job string, t int64) bool {
		rs, ok := runs[job]
		if !ok {
			return start[job] >= 0 && t >= start[job]
		}
		for _, r := range rs {
			if t >= r.from && t <= r.to {
				return true
			}
		}
		return false
	}
	out := make(map[string][]partial)
	for _, e := range events {
		if e.Kind != "bound" || ran(e.Job, e.Time) {
			continue
		}
		ps := out[e.Job]
		if n := len(ps); n > 0 && ps[n-1].at == e.Time {
			ps[n-1].bound++
			ps[n-1].gpus += gpus[e.Pod]
		} else {
			p := partial{at: e.Time, bound: 1, gpus: gpus[e.Pod]}
			if n > 0 {
				p.bound += ps[n-1].bound
				p.gpus += ps[n-1].gpus
			}
			ps = append(ps, p)
		}
		out[e.Job] = ps
	}
	return out
}

// WriteTimeline writes steps one per line, the time shown once per instant.
func WriteTimeline(out io.Writer, steps []Step, indent string) error {
	width := 0
	for _, s := range steps {
		width = max(width, len(stepTime(s.At)))
	}
	prev := int64(-2)
	for _, s := range steps {
		t := ""
		if s.At != prev {
			t = stepTime(s.At)
		}
		prev = s.At
		if _, err := fmt.Fprintf(out, "%s%-*s  %s\n", indent, width, t, s.Text); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

func stepTime(at int64) string {
	if at < 0 {
		return "end"
	}
	return Instant(at)
}
