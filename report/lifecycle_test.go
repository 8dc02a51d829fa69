package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// churnWorkload: low (2 pods) is evicted at 600 by high and restarts at
// 2430; train's pod w-1 fails at 100 and its replacement binds at 160.
func churnWorkload() *workload.Workload {
	gpu := map[string]int64{workload.GPU: 1}
	job := func(id string, submit int64) workload.Job {
		return workload.Job{ID: id, Queue: "default", Submit: submit, Duration: 1800, MinMember: 2,
			Tasks: []workload.Task{{Role: "w", Replicas: 2, Requests: gpu}}}
	}
	return &workload.Workload{
		Name:   "churn",
		Pools:  []workload.NodePool{{Name: "n", Count: 4, Allocatable: map[string]int64{workload.GPU: 1}}},
		Queues: []workload.Queue{{Name: "default", Weight: 1}},
		Jobs:   []workload.Job{job("low", 0), job("train", 0), job("high", 600)},
	}
}

func churnResult() *sim.Result {
	ev := func(t int64, job, pod, kind, node, reason string) sim.PodEvent {
		return sim.PodEvent{Time: t, Job: job, Pod: pod, Kind: kind, Node: node, Reason: reason}
	}
	return &sim.Result{
		Policy: "phalanx",
		Jobs: []sim.JobOutcome{
			{ID: "low", Queue: "default", GPUs: 2, Submit: 0, Start: 2430, Finish: 4230, State: sim.JobCompleted, Placed: 2, Members: 2},
			{ID: "train", Queue: "default", GPUs: 2, Submit: 0, Start: 0, Finish: 1860, State: sim.JobCompleted, Placed: 2, Members: 2},
			{ID: "high", Queue: "default", GPUs: 2, Submit: 600, Start: 630, Finish: 2430, State: sim.JobCompleted, Placed: 2, Members: 2},
		},
		Events: []sim.PodEvent{
			ev(0, "low", "low-w-0", "bound", "n-0", ""), ev(0, "low", "low-w-1", "bound", "n-1", ""),
			ev(0, "low", "low-w-0", "running", "n-0", ""), ev(0, "low", "low-w-1", "running", "n-1", ""),
			ev(0, "train", "train-w-0", "bound", "n-2", ""), ev(0, "train", "train-w-1", "bound", "n-3", ""),
			ev(0, "train", "train-w-0", "running", "n-2", ""), ev(0, "train", "train-w-1", "running", "n-3", ""),
			ev(100, "train", "train-w-1", "failed", "n-3", ""),
			ev(160, "train", "train-w-1", "replaced", "", ""),
			ev(160, "train", "train-w-1", "bound", "n-3", ""), ev(160, "train", "train-w-1", "running", "n-3", ""),
			ev(600, "low", "low-w-0", "evicted", "n-0", "preempted by high"), ev(600, "low", "low-w-1", "evicted", "n-1", "preempted by high"),
			ev(630, "low", "low-w-0", "deleted", "n-0", ""), ev(630, "low", "low-w-1", "deleted", "n-1", ""),
			ev(630, "high", "high-w-0", "bound", "n-0", ""), ev(630, "high", "high-w-1", "bound", "n-1", ""),
			ev(630, "high", "high-w-0", "running", "n-0", ""), ev(630, "high", "high-w-1", "running", "n-1", ""),
			ev(1860, "train", "train-w-0", "completed", "n-2", ""), ev(1860, "train", "train-w-1", "completed", "n-3", ""),
			ev(2430, "high", "high-w-0", "completed", "n-0", ""), ev(2430, "high", "high-w-1", "completed", "n-1", ""),
			ev(2430, "low", "low-w-0", "bound", "n-0", ""), ev(2430, "low", "low-w-1", "bound", "n-1", ""),
			ev(2430, "low", "low-w-0", "running", "n-0", ""), ev(2430, "low", "low-w-1", "running", "n-1", ""),
			ev(4230, "low", "low-w-0", "completed", "n-0", ""), ev(4230, "low", "low-w-1", "completed", "n-1", ""),
		},
	}
}

func TestPodsThroughEvictionAndFailure(t *testing.T) {
	w, r := churnWorkload(), churnResult()
	phases := func(at int64) map[string]string {
		out := map[string]string{}
		for _, row := range Pods(w, r, at) {
			out[row.Name] = row.Phase.String() + "@" + row.Node
		}
		return out
	}
	tests := []struct {
		at   int64
		want map[string]string
	}{
		{120, map[string]string{"low-w-0": "Running@n-0", "low-w-1": "Running@n-1", "train-w-0": "Running@n-2", "train-w-1": "Failed@n-3"}},
		{160, map[string]string{"low-w-0": "Running@n-0", "low-w-1": "Running@n-1", "train-w-0": "Running@n-2", "train-w-1": "Running@n-3"}},
		{610, map[string]string{"low-w-0": "Terminating@n-0", "low-w-1": "Terminating@n-1", "train-w-0": "Running@n-2", "train-w-1": "Running@n-3",
			"high-w-0": "Pending@", "high-w-1": "Pending@"}},
		{1000, map[string]string{"low-w-0": "Pending@", "low-w-1": "Pending@", "train-w-0": "Running@n-2", "train-w-1": "Running@n-3",
			"high-w-0": "Running@n-0", "high-w-1": "Running@n-1"}},
	}
	for _, tc := range tests {
		if d := cmp.Diff(tc.want, phases(tc.at)); d != "" {
			t.Errorf("pods at %d s (-want +got):\n%s", tc.at, d)
		}
	}
	if g := GPUsAt(w, Pods(w, r, 610), 610); g != (GPUCounts{Running: 2, Terminating: 2, Free: 0}) {
		t.Errorf("GPUs at 610 s: %+v", g)
	}
}

func TestTimelineShowsRestartAndFailure(t *testing.T) {
	var got []string
	for _, s := range Timeline(churnWorkload(), churnResult()) {
		got = append(got, Instant(s.At)+" "+s.Text)
	}
	for _, want := range []string{
		"0s low starts",
		"1m40s train: pod train-w-1 failed on n-3",
		"2m40s train: the replacement of pod train-w-1 is created",
		"2m40s train: the replacement of pod train-w-1 is bound to n-3 after waiting 0s",
		"10m low: 2 pods evicted (preempted by high); the job stops and will start again from scratch",
		"40m30s low starts (2/2 pods bound)",
	} {
		if !contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, l := range got {
		if strings.Contains(l, "the job cannot start") {
			t.Errorf("a gang bound whole shows as partial: %q", l)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Every metric has a row, and the failure rows show only when some run had
// failures.
func TestMetricRows(t *testing.T) {
	// Two rows show two fields each: held idle GPU time (and the GPUs
	// never freed), fairness (mean and worst).
	// One field, Forecast, is shown by forecastRows.
	const twoFieldRows = 2
	if n, rows := reflect.TypeOf(sim.Metrics{}).NumField(), len(metricRows)+len(rackRows)+len(failureRows)+twoFieldRows+1; n != rows {
		t.Errorf("sim.Metrics has %d fields but the table shows %d", n, rows)
	}
	// Four forecast rows show two fields each: the period and the
	// horizon, the gangs given a start and those started, the p50 and the
	// p90 error, the shares within an hour and within a quarter; three
	// show three: the big jobs started and their two shares, the jobs
	// reserved for, given a reservation time and reserved since, and the
	// reservations' mean error and two shares.
	const extraForecastFields = 4 + 3*2
	if n, rows := reflect.TypeOf(sim.ForecastMetrics{}).NumField(), len(forecastRows)+extraForecastFields; n != rows {
		t.Errorf("sim.ForecastMetrics has %d fields but the table shows %d", n, rows)
	}
	const label = "pods failed while their job ran"
	for _, failures := range []int{0, 2} {
		c := tinyComparison()
		c.Results[1].Metrics.MemberFailures = failures
		var out bytes.Buffer
		if err := WriteTable(&out, c); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), label); got != (failures > 0) {
			t.Errorf("%d failures: row shown = %v:\n%s", failures, got, out.String())
		}
	}
	// The forecast rows show when some run forecast; a run that did not
	// shows "—" in them.
	for _, forecast := range []bool{false, true} {
		c := tinyComparison()
		if forecast {
			c.Results[0].Metrics.Forecast = &sim.ForecastMetrics{Every: 3600, Horizon: 7 * 86400, Gangs: 3, WithStart: 2, Started: 2,
				AbsErrorP50: ptr(120.0), AbsErrorP90: ptr(7200.0), MeanError: ptr(3660.0),
				WithinHour: ptr(0.5), WithinQuarter: ptr(1.0), Later: ptr(0.5), NoStartButStarted: 1,
				BigStarted: 1, BigWithinHour: ptr(0.0), BigWithinQuarter: ptr(1.0), BigMeanError: ptr(-7200.0),
				Reserved: 2, GivenReservation: 1, GivenReserved: 1, ReservationMeanError: ptr(5400.0),
				ReservationWithinHour: ptr(0.0), ReservationWithinQuarter: ptr(1.0)}
		}
		var out bytes.Buffer
		if err := WriteTable(&out, c); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		for _, want := range []string{
			"start forecast every (looking ahead) 1h (7d)",
			"gangs forecast while waiting 3",
			"given a start (started since) 2 (2)",
			"start error, p50 (p90) 2m (2h)",
			"start error, mean (+: later than forecast) +1h1m",
			"within an hour; within a quarter of the wait 50.0%; 100.0%",
			"started later than forecast 50.0%",
			"forecast not to start within the horizon, did 1",
			"jobs of 8+ GPUs: started; within an hour; within a quarter 1; 0.0%; 100.0%",
			"jobs of 8+ GPUs: start error, mean -2h",
			"reserved for (given a reservation time; reserved since) 2 (1; 1)",
			"reservation error, mean; within an hour; within a quarter +1h30m; 0.0%; 100.0%",
		} {
			found := false
			for _, l := range lines {
				// The second column is the other run's "—".
				if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(strings.Join(f, " "), want+" —") {
					found = true
				}
			}
			if found != forecast {
				t.Errorf("forecast %v: row %q shown = %v:\n%s", forecast, want, found, out.String())
			}
		}
	}
}

func ptr(x float64) *float64 { return &x }
