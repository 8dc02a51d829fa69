package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/phalanx-sched/phalanx/workload"
)

// WriteSummary writes one line saying what c's input is: its name, jobs,
// pods, nodes and GPUs.
func WriteSummary(out io.Writer, c Comparison) error {
	w := c.Workload
	pods, nodes := 0, 0
	for i := range w.Jobs {
		pods += w.Jobs[i].Members()
	}
	for _, p := range w.Pools {
		nodes += p.Count
	}
	_, err := fmt.Fprintf(out, "%s: %s (%s) in %s on %s with %s\n", w.Name,
		plural(int64(len(w.Jobs)), "job"), plural(int64(pods), "pod"), plural(int64(len(w.Queues)), "queue"),
		plural(int64(nodes), "node"), plural(capacity(w, maxTime), "GPU"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// WriteStory writes everything a newcomer needs to see what the policies do
// differently on a small recorded input: its description, a pod view per
// policy at each of Moments, a job timeline per policy, then the metrics
// table. Every line is derived from the results.
func WriteStory(out io.Writer, c Comparison) error {
	ew := &errWriter{w: out}
	w := c.Workload
	title := "Scenario " + w.Name
	fmt.Fprintf(ew, "%s\n%s\n", title, strings.Repeat("=", len(title)))
	if w.Description != "" {
		fmt.Fprintln(ew, wrap(w.Description, 78))
	}
	fmt.Fprintln(ew)
	WriteSummary(ew, c)
	for _, m := range Moments(w) {
		fmt.Fprintf(ew, "\nPods at %s, %s:\n", Instant(m.At), m.Why)
		for _, r := range c.Results {
			rows := Pods(w, r, m.At)
			g := GPUsAt(w, rows, m.At)
			terminating := ""
			if g.Terminating > 0 {
				terminating = fmt.Sprintf(", %d terminating", g.Terminating)
			}
			fmt.Fprintf(ew, "\n  %s: GPUs %d running, %d held idle%s, %d free\n", r.Policy, g.Running, g.Idle, terminating, g.Free)
			WritePods(ew, rows, "    ")
		}
	}
	fmt.Fprintln(ew, "\nTimeline:")
	for _, r := range c.Results {
		fmt.Fprintf(ew, "\n  %s:\n", r.Policy)
		WriteTimeline(ew, Timeline(w, r), "    ")
	}
	fmt.Fprintln(ew, "\nMetrics:")
	fmt.Fprintln(ew)
	WriteTable(ew, c)
	return ew.err
}

// errWriter remembers the first write error and drops what follows it, so
// that a long report checks for errors once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = fmt.Errorf("report: %w", err)
	}
	return n, e.err
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		if n > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// Recordable reports whether w is small enough for sim.Options.Record and
// WriteStory: at most maxStoryPods pods.
func Recordable(w *workload.Workload) bool {
	pods := 0
	for i := range w.Jobs {
		pods += w.Jobs[i].Members()
		if pods > maxStoryPods {
			return false
		}
	}
	return true
}

// maxStoryPods bounds the inputs WriteStory tells: beyond it the pod views
// no longer fit a screen.
const maxStoryPods = 60
