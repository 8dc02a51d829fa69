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

// none is what the table shows for a figure over no sample: not 0, which
// would read as the best value.
const none = "—"

// duration renders a time figure, "—" when there is none.
func duration(f *float64) string {
	if f == nil {
		return none
	}
	return Duration(*f)
}

// share renders a ratio figure as a percentage, "—" when there is none.
func share(f *float64) string {
	if f == nil {
		return none
	}
	return percent(*f)
}

// heldIdle renders the GPU time held by jobs that are not running; when GPUs
// are still held so at the end of the run, the figure is a lower bound of a
// waste without end, and says so.
func heldIdle(m *sim.Metrics) string {
	if m.HeldIdleAtEnd == 0 {
		return gpuTime(m.WastedGPUSeconds)
	}
	return fmt.Sprintf("%s+, %s never freed", gpuTime(m.WastedGPUSeconds), plural(m.HeldIdleAtEnd, "GPU"))
}

// fairness renders the windowed fairness: the mean and the worst window.
func fairness(m *sim.Metrics) string {
	if m.FairnessMean == nil || m.FairnessWorst == nil {
		return none
	}
	return fmt.Sprintf("%.2f (worst %.2f)", *m.FairnessMean, *m.FairnessWorst)
}

// ratio renders a figure in [0, 1] with two decimals, "—" when there is
// none.
func ratio(f *float64) string {
	if f == nil {
		return none
	}
	return fmt.Sprintf("%.2f", *f)
}

// windowLength renders the length of the fairness windows, "—" for none.
func windowLength(s int64) string {
	if s == 0 {
		return none
	}
	return Duration(float64(s))
}

// metricRows lists the rows of the table, in order. Every field of
// sim.Metrics has a row here, in rackRows or in failureRows; the rows of
// held idle GPU time and of fairness each show two.
var metricRows = []metricRow{
	{"jobs", func(m *sim.Metrics) string { return count(m.JobsTotal) }},
	{"  completed", func(m *sim.Metrics) string { return count(m.JobsCompleted) }},
	{"  stuck (fit the cluster, never ran)", func(m *sim.Metrics) string { return count(m.StuckJobs) }},
	{"  unschedulable (can never fit the cluster)", func(m *sim.Metrics) string { return count(m.UnschedulableJobs) }},
	{"job completion time, mean", func(m *sim.Metrics) string { return duration(m.MeanJCT) }},
	{"job completion time, p50", func(m *sim.Metrics) string { return duration(m.P50JCT) }},
	{"job completion time, p99", func(m *sim.Metrics) string { return duration(m.P99JCT) }},
	{"wait before start, mean", func(m *sim.Metrics) string { return duration(m.MeanWait) }},
	{"wait before start, p99", func(m *sim.Metrics) string { return duration(m.P99Wait) }},
	{"wait before start, p99 of 8+ GPU jobs", func(m *sim.Metrics) string { return duration(m.P99WaitBig) }},
	{"  longest of 8+ GPU jobs", func(m *sim.Metrics) string { return duration(m.MaxWaitBig) }},
	{"GPU utilisation", func(m *sim.Metrics) string { return share(m.GPUUtilization) }},
	{"  while jobs arrive", func(m *sim.Metrics) string { return share(m.GPUUtilizationArriving) }},
	{"GPU time held idle by incomplete gangs", heldIdle},
	{"makespan", func(m *sim.Metrics) string { return duration(m.Makespan) }},
	{"fair share honoured per window, mean (worst); 1 = fair", fairness},
	{"  least-served queue's share of its due, mean", func(m *sim.Metrics) string { return ratio(m.FairnessLeastServed) }},
	{"  window", func(m *sim.Metrics) string { return windowLength(m.FairnessWindow) }},
	{"preemptions (gangs that lost pods)", func(m *sim.Metrics) string { return count(m.PreemptedGangs) }},
	{"  pods evicted", func(m *sim.Metrics) string { return count(m.EvictedMembers) }},
	{"  GPU time lost (run time thrown away)", func(m *sim.Metrics) string { return gpuTime(m.PreemptionLostGPUSeconds) }},
}

// rackRows are shown after metricRows only for workloads with racks.
var rackRows = []metricRow{
	{"multi-node jobs within one rack", func(m *sim.Metrics) string { return share(m.RackLocality) }},
}

// failureRows are shown last only when some run had member failures.
var failureRows = []metricRow{
	{"pods failed while their job ran", func(m *sim.Metrics) string { return count(m.MemberFailures) }},
	{"  replacement wait for a node, mean", func(m *sim.Metrics) string { return duration(m.MeanReplacementWait) }},
	{"  replacement wait for a node, max", func(m *sim.Metrics) string { return duration(m.MaxReplacementWait) }},
}

// forecastRows are shown after the others only when some run forecast
// (sim.Options.ForecastEvery); they render sim.Metrics.Forecast, "—" for
// a run without forecasts. Rows marked "(…)" or ";" show two or three of
// its fields.
var forecastRows = []metricRow{
	{"start forecast every (looking ahead)", forecastCell(func(f *sim.ForecastMetrics) string {
		return fmt.Sprintf("%s (%s)", Duration(float64(f.Every)), Duration(float64(f.Horizon)))
	})},
	{"  gangs forecast while waiting", forecastCell(func(f *sim.ForecastMetrics) string { return count(f.Gangs) })},
	{"  given a start (started since)", forecastCell(func(f *sim.ForecastMetrics) string {
		return fmt.Sprintf("%s (%s)", count(f.WithStart), count(f.Started))
	})},
	{"  start error, p50 (p90)", forecastCell(func(f *sim.ForecastMetrics) string {
		return fmt.Sprintf("%s (%s)", duration(f.AbsErrorP50), duration(f.AbsErrorP90))
	})},
	{"  start error, mean (+: later than forecast)", forecastCell(func(f *sim.ForecastMetrics) string { return signed(f.MeanError) })},
	{"  within an hour; within a quarter of the wait", forecastCell(func(f *sim.ForecastMetrics) string {
		return share(f.WithinHour) + "; " + share(f.WithinQuarter)
	})},
	{"  started later than forecast", forecastCell(func(f *sim.ForecastMetrics) string { return share(f.Later) })},
	{"  forecast not to start within the horizon, did", forecastCell(func(f *sim.ForecastMetrics) string { return count(f.NoStartButStarted) })},
	{"  jobs of 8+ GPUs: started; within an hour; within a quarter", forecastCell(func(f *sim.ForecastMetrics) string {
		return count(f.BigStarted) + "; " + share(f.BigWithinHour) + "; " + share(f.BigWithinQuarter)
	})},
	{"  jobs of 8+ GPUs: start error, mean", forecastCell(func(f *sim.ForecastMetrics) string { return signed(f.BigMeanError) })},
	{"  reserved for (given a reservation time; reserved since)", forecastCell(func(f *sim.ForecastMetrics) string {
		return fmt.Sprintf("%s (%s; %s)", count(f.Reserved), count(f.GivenReservation), count(f.GivenReserved))
	})},
	{"  reservation error, mean; within an hour; within a quarter", forecastCell(func(f *sim.ForecastMetrics) string {
		return signed(f.ReservationMeanError) + "; " + share(f.ReservationWithinHour) + "; " + share(f.ReservationWithinQuarter)
	})},
}

// signed renders a time figure with its sign, "+" when positive, "—" when
// there is none.
func signed(f *float64) string {
	if f != nil && *f > 0 {
		return "+" + Duration(*f)
	}
	return duration(f)
}

// forecastCell renders a forecast row, "—" for a run without forecasts.
func forecastCell(render func(f *sim.ForecastMetrics) string) func(m *sim.Metrics) string {
	return func(m *sim.Metrics) string {
		if m.Forecast == nil {
			return none
		}
		return render(m.Forecast)
	}
}

// WriteTable writes c's metrics as one table, a column per policy and a row
// per figure (rack locality only when the workload has racks, member
// failures only when some run had any, forecasts only when some run made
// any), followed by one line per policy
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
	for _, r := range c.Results {
		if r.Metrics.Forecast != nil {
			rows = append(rows[:len(rows):len(rows)], forecastRows...)
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
