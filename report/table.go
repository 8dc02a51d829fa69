package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/phalanx-sched/phalanx/sim"
)

// metricRow is one row of the metrics table: a label and how to render the
// figure from a run's metrics.
type metricRow struct {
	label  string
	render func(m *sim.Metrics) string
}

func count(n int) string { return grouped(int64(n)) }

// ifCompleted renders a completion time, or "—" when no job completed: a
// time over no job is no time at all, not 0 s.
func ifCompleted(m *sim.Metrics, seconds float64) string {
	if m.JobsCompleted == 0 {
		return "—"
	}
	return Duration(seconds)
}

// metricRows lists the rows of the table, in order. Every field of
// sim.Metrics has a row here, in rackRows or in failureRows.
var metricRows = []metricRow{
	{"jobs", func(m *sim.Metrics) string { return count(m.JobsTotal) }},
	{"  completed", func(m *sim.Metrics) string { return count(m.JobsCompleted) }},
	{"  stuck (fit the cluster, never ran)", func(m *sim.Metrics) string { return count(m.StuckJobs) }},
	{"  unschedulable (larger than the cluster)", func(m *sim.Metrics) string { return count(m.UnschedulableJobs) }},
	{"job completion time, mean", func(m *sim.Metrics) string { return ifCompleted(m, m.MeanJCT) }},
	{"job completion time, p50", func(m *sim.Metrics) string { return ifCompleted(m, m.P50JCT) }},
	{"job completion time, p99", func(m *sim.Metrics) string { return ifCompleted(m, m.P99JCT) }},
	{"wait before start, mean", func(m *sim.Metrics) string { return Duration(m.MeanWait) }},
	{"wait before start, p99", func(m *sim.Metrics) string { return Duration(m.P99Wait) }},
	{"wait before start, p99 of 8+ GPU jobs", func(m *sim.Metrics) string { return Duration(m.P99WaitBig) }},
	{"GPU utilisation", func(m *sim.Metrics) string { return percent(m.GPUUtilization) }},
	{"GPU time held idle by incomplete gangs", func(m *sim.Metrics) string { return gpuTime(m.WastedGPUSeconds) }},
	{"makespan", func(m *sim.Metrics) string { return Duration(m.Makespan) }},
	{"fairness between queues (Jain, 1 = fair)", func(m *sim.Metrics) string { return fmt.Sprintf("%.3f", m.JainFairness) }},
	{"preemptions (gangs that lost pods)", func(m *sim.Metrics) string { return count(m.PreemptedGangs) }},
	{"  pods evicted", func(m *sim.Metrics) string { return count(m.EvictedMembers) }},
	{"  GPU time lost (run time thrown away)", func(m *sim.Metrics) string { return gpuTime(m.PreemptionLostGPUSeconds) }},
}

// rackRows are shown after metricRows only for workloads with racks.
var rackRows = []metricRow{
	{"multi-node jobs within one rack", func(m *sim.Metrics) string { return percent(m.RackLocality) }},
}

// failureRows are shown last only when some run had member failures.
var failureRows = []metricRow{
	{"pods failed while their job ran", func(m *sim.Metrics) string { return count(m.MemberFailures) }},
	{"  replacement wait for a node, mean", func(m *sim.Metrics) string { return Duration(m.MeanReplacementWait) }},
	{"  replacement wait for a node, max", func(m *sim.Metrics) string { return Duration(m.MaxReplacementWait) }},
}

// WriteTable writes c's metrics as one table, a column per policy and a row
// per figure (rack locality only when the workload has racks, member
// failures only when some run had any), followed by one line per policy
// with the wall time its run took when c.Wall says.
func WriteTable(out io.Writer, c Comparison) error {
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	head := []string{""}
	for _, r := range c.Results {
		head = append(head, r.Policy)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	rows := metricRows
	if c.Workload != nil && len(c.Workload.Topology) > 0 {
		rows = append(rows[:len(rows):len(rows)], rackRows...)
	}
	for _, r := range c.Results {
		if r.Metrics.MemberFailures > 0 {
			rows = append(rows[:len(rows):len(rows)], failureRows...)
			break
		}
	}
	for _, row := range rows {
		cells := []string{row.label}
		for _, r := range c.Results {
			cells = append(cells, row.render(&r.Metrics))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return writeWall(out, c)
}

// writeWall writes the wall time of each run that has one.
func writeWall(out io.Writer, c Comparison) error {
	width := 0
	for _, r := range c.Results {
		width = max(width, len(r.Policy))
	}
	for i, r := range c.Results {
		if i >= len(c.Wall) {
			break
		}
		if i == 0 {
			if _, err := fmt.Fprintln(out); err != nil {
				return fmt.Errorf("report: %w", err)
			}
		}
		if _, err := fmt.Fprintf(out, "%-*s  simulated in %s (wall time)\n", width, r.Policy, wall(c.Wall[i])); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}
