package sim

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/workload"
)

// Each job's first forecast while it waits is weighed against its start:
// exact estimates and nothing arriving after it give no error; a shorter
// job that arrives later and goes first makes it start later than
// forecast.
func TestForecastAccuracy(t *testing.T) {
	w := newWorkload().
		pool("gpu", 1, gpus(8), cpu(8)).
		job("a", at(0), runs(3600), task("w", 1, gpus(8))).
		// b waits for a; its forecast at 10 s says 3600 s.
		job("b", at(10), runs(600), task("w", 1, gpus(8))).
		// c, shorter, arrives after b's forecast and starts first, at
		// 3600 s as its own forecast at 20 s says; b starts at 3660 s.
		job("c", at(20), runs(60), task("w", 1, gpus(8))).
		build()
	r, err := Run(w, PolicyPhalanx, Options{ForecastEvery: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]forecastRecord{
		// a starts in the cycle of the forecast at 0 s: left out of the
		// metrics.
		"a": {0, 0, 0},
		"b": {10, 3600, 3660},
		"c": {20, 3600, 3600},
	}
	if d := cmp.Diff(want, forecastRecords(r)); d != "" {
		t.Errorf("forecasts and starts (-want +got):\n%s", d)
	}
	// Errors of 60 s (b) and 0 (c); b's is within a quarter of the 3650 s
	// it waited after its forecast.
	// Both take 8 GPUs: the big jobs' figures are the same.
	wantF := ForecastMetrics{Every: 10, Horizon: 7 * 24 * 3600, Gangs: 2, WithStart: 2, Started: 2,
		AbsErrorP50: figure(0), AbsErrorP90: figure(60), MeanError: figure(30),
		WithinHour: figure(1), WithinQuarter: figure(1), Later: figure(0.5),
		BigStarted: 2, BigWithinHour: figure(1), BigWithinQuarter: figure(1), BigMeanError: figure(30)}
	if f := r.Metrics.Forecast; f == nil {
		t.Error("no forecast metrics")
	} else if d := cmp.Diff(wantF, *f); d != "" {
		t.Errorf("forecast metrics (-want +got):\n%s", d)
	}
}

// A job that must wait past the horizon (a week) has no forecast start;
// when the estimates it waits behind are too long, it starts within the
// horizon all the same, and the metrics count it.
func TestForecastBeyondHorizon(t *testing.T) {
	const day = 24 * 3600
	w := newWorkload().
		pool("gpu", 1, gpus(8), cpu(8)).
		job("x", at(0), runs(4*day), task("w", 1, gpus(8))).
		job("y", at(10), runs(3600), task("w", 1, gpus(8))).
		build()
	for _, tc := range []struct {
		estimates EstimateErrors
		missed    int
	}{
		{EstimateErrors{{Factor: 3}}, 1}, // x expected to run 12 days, ends after 4
		{nil, 0},                         // exact: y starts after 4 days, forecast then
	} {
		r, err := Run(w, PolicyPhalanx, Options{ForecastEvery: 10, EstimateError: tc.estimates})
		if err != nil {
			t.Fatal(err)
		}
		f := r.Metrics.Forecast
		if f == nil {
			t.Fatal("no forecast metrics")
		}
		y := forecastRecords(r)["y"]
		if tc.missed == 1 && (y != forecastRecord{10, -1, 4 * day} || f.Gangs != 1 || f.WithStart != 0 || f.AbsErrorP50 != nil) {
			t.Errorf("estimates %s: y %+v, metrics %+v; want no forecast start, a start at 4 days and no error figures", tc.estimates, y, *f)
		}
		if tc.missed == 0 && (y != forecastRecord{10, 4 * day, 4 * day} || f.Started != 1) {
			t.Errorf("estimates %s: y %+v, metrics %+v; want a forecast start of 4 days, met", tc.estimates, y, *f)
		}
		if f.NoStartButStarted != tc.missed {
			t.Errorf("estimates %s: %d jobs forecast not to start within a week that did, want %d", tc.estimates, f.NoStartButStarted, tc.missed)
		}
	}
}

// The forecast gets the estimated end of a job that runs past it, as the
// scheduler's does, and expects the job to run as long again as it has
// overrun: x, estimated at an hour, runs two; y, arriving at 1h30, is
// forecast to start at 2h.
func TestForecastOverrunningJob(t *testing.T) {
	w := newWorkload().
		pool("gpu", 1, gpus(8), cpu(8)).
		job("x", at(0), runs(7200), task("w", 1, gpus(8))).
		job("y", at(5400), runs(600), task("w", 1, gpus(8))).
		build()
	r, err := Run(w, PolicyPhalanx, Options{ForecastEvery: 10, EstimateError: EstimateErrors{{Factor: 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := forecastRecords(r)["y"], (forecastRecord{5400, 7200, 7200}); got != want {
		t.Errorf("y: %+v, want %+v", got, want)
	}
}

// The first forecast also gives when nodes will first be reserved for a
// gang (a PodGroup's status.expectedReservationTime): big, which waits for
// x to end, is due for a reservation once it has waited the hour of
// ReserveAfter, and is forecast so at its arrival; x starts at once and is
// never reserved for.
func TestForecastReservation(t *testing.T) {
	w := newWorkload().
		pool("gpu", 1, gpus(8), cpu(8)).
		job("x", at(0), runs(3*3600), task("w", 1, gpus(4))).
		job("big", at(10), runs(600), task("w", 1, gpus(8))).
		build()
	r, err := Run(w, PolicyPhalanx, Options{ForecastEvery: 10, ReserveAfter: 3600})
	if err != nil {
		t.Fatal(err)
	}
	type record struct{ At, Reserved, ForecastReserved, Forecast, First int64 }
	got := map[string]record{}
	for _, j := range r.Jobs {
		got[j.ID] = record{j.ForecastAt, j.Reserved, j.ForecastReserved, j.ForecastStart, j.FirstStart}
	}
	want := map[string]record{
		"x":   {0, -1, -1, 0, 0},
		"big": {10, 3610, 3610, 3 * 3600, 3 * 3600},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("forecast and actual reservations and starts (-want +got):\n%s", d)
	}
	f := r.Metrics.Forecast
	if f == nil {
		t.Fatal("no forecast metrics")
	}
	// x started in its forecast's cycle and is left out.
	if f.Gangs != 1 || f.Reserved != 1 || f.GivenReservation != 1 || f.GivenReserved != 1 ||
		Value(f.ReservationMeanError) != 0 || Value(f.ReservationWithinHour) != 1 || Value(f.ReservationWithinQuarter) != 1 {
		t.Errorf("forecast metrics %+v: want big alone, reserved for when forecast", *f)
	}
}

// forecastRecord is when a job's first forecast was made, the start it
// gave and the job's first start.
type forecastRecord struct{ At, Forecast, First int64 }

func forecastRecords(r *Result) map[string]forecastRecord {
	out := map[string]forecastRecord{}
	for _, j := range r.Jobs {
		out[j.ID] = forecastRecord{j.ForecastAt, j.ForecastStart, j.FirstStart}
	}
	return out
}

// Forecasting reads the snapshot and changes nothing: on an overloaded
// trace every job starts and ends as without forecasts, and the figures
// are the same but for the forecast's own.
func TestForecastChangesNothing(t *testing.T) {
	var b bytes.Buffer
	if err := workload.GenerateTrace(&b, workload.GenOptions{Seed: 2, Jobs: 600, GPUs: 64,
		Load: workload.LoadOverloaded, Queues: 3}); err != nil {
		t.Fatal(err)
	}
	w, err := workload.ReadTrace(&b, "gen.csv", workload.TraceOptions{Nodes: 8, GPUsPerNode: 8, NodesPerRack: 4})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Run(w, PolicyPhalanx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	forecast, err := Run(w, PolicyPhalanx, Options{ForecastEvery: 1800})
	if err != nil {
		t.Fatal(err)
	}
	f := forecast.Metrics.Forecast
	if f == nil || f.Started == 0 {
		t.Fatalf("forecast metrics %+v: want some forecast gangs that started", f)
	}
	forecast.Metrics.Forecast = nil
	if d := cmp.Diff(plain.Metrics, forecast.Metrics); d != "" {
		t.Errorf("metrics changed by forecasting (-without +with):\n%s", d)
	}
	forecasts := 0
	for i := range plain.Jobs {
		p, q := plain.Jobs[i], forecast.Jobs[i]
		if q.ForecastAt >= 0 {
			forecasts++
		}
		q.ForecastAt, q.ForecastStart, q.ForecastReserved = -1, -1, -1
		if p != q {
			t.Errorf("job %s: %+v without forecasts, %+v with", p.ID, p, q)
		}
	}
	if forecasts < f.Gangs {
		t.Errorf("%d jobs have a forecast, fewer than the %d the metrics count", forecasts, f.Gangs)
	}
}

// The big jobs' figures count the jobs of 8 GPUs or more only.
func TestForecastMetricsBigJobs(t *testing.T) {
	jobs := []JobOutcome{
		{ID: "small", GPUs: 1, ForecastAt: 0, ForecastStart: 600, FirstStart: 600, Reserved: -1, ForecastReserved: -1},
		// Two hours late after ten hours of wait: within a quarter. Its
		// nodes were reserved two hours later than forecast too, after six
		// hours: not within a quarter.
		{ID: "big", GPUs: 8, ForecastAt: 0, ForecastStart: 8 * 3600, FirstStart: 10 * 3600,
			Reserved: 6 * 3600, ForecastReserved: 4 * 3600},
		// Not started: in no start error figure. Reserved for, though no
		// reservation was forecast: counted, in no reservation error figure.
		{ID: "waiting", GPUs: 16, ForecastAt: 0, ForecastStart: 3600, FirstStart: -1, Reserved: 7200, ForecastReserved: -1},
	}
	got := *forecastMetrics(jobs, 3600)
	want := ForecastMetrics{Every: 3600, Horizon: 7 * 24 * 3600, Gangs: 3, WithStart: 3, Started: 2,
		AbsErrorP50: figure(0), AbsErrorP90: figure(7200), MeanError: figure(3600),
		WithinHour: figure(0.5), WithinQuarter: figure(1), Later: figure(0.5),
		BigStarted: 1, BigWithinHour: figure(0), BigWithinQuarter: figure(1), BigMeanError: figure(7200),
		Reserved: 2, GivenReservation: 1, GivenReserved: 1, ReservationMeanError: figure(7200),
		ReservationWithinHour: figure(0), ReservationWithinQuarter: figure(0)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("forecast metrics (-want +got):\n%s", d)
	}
}
