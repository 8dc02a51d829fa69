package report

// This file tells the story of a recorded run job by job: submissions, node
// pools joining, members bound before their job could start (the partial
// gangs a pod-by-pod scheduler leaves holding resources), starts and
// completions, and at the end the jobs that never ran and why. Entries that
// happen at the same time keep the simulator's order: completions, pools,
// submissions, then what the scheduling cycle did.

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
	orderPool
	orderSubmit
	orderPartial
	orderWait
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
	partial := partialBinds(res.Events, res.Jobs, gpus)
	for _, e := range res.Events {
		if e.Kind == "waiting" {
			add(e.Time, orderWait, "%s waits: %s", e.Job, e.Reason)
		}
	}
	for _, o := range res.Jobs {
		add(o.Submit, orderSubmit, "%s submitted (%s, %s)", o.ID, plural(int64(o.Members), "pod"), plural(o.GPUs, "GPU"))
		for _, p := range partial[o.ID] {
			add(p.at, orderPartial, "%s: %d/%d pods bound, holding %s idle; the job cannot start", o.ID, p.bound, o.Members, plural(p.gpus, "GPU"))
		}
		if o.Start >= 0 {
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

// partial is a job's bound members at one time before the job started.
type partial struct {
	at, gpus int64
	bound    int
}

// partialBinds returns, per job, each time members were bound while the job
// had not started, with the count and GPUs of its bound members then.
func partialBinds(events []sim.PodEvent, jobs []sim.JobOutcome, gpus map[string]int64) map[string][]partial {
	start := make(map[string]int64, len(jobs))
	for _, o := range jobs {
		start[o.ID] = o.Start
	}
	out := make(map[string][]partial)
	for _, e := range events {
		if e.Kind != "bound" {
			continue
		}
		if s := start[e.Job]; s >= 0 && e.Time >= s {
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
