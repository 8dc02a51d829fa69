package scheduler

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every waiting gang's place in its queue, expected start and, with
// reservations on, when nodes are expected to be reserved for it
// (status.queuePosition, status.expectedStartTime,
// status.expectedReservationTime), as Slurm's squeue --start gives the
// start for jobs.
//
// At most once per Options.ForecastPeriod, after a cycle, the loop hands
// that cycle's snapshot to a goroutine that runs core.Forecast over it:
// the core's own cycle run forward in virtual time (core/forecast.go). The
// core never modifies a snapshot, and the store builds each snapshot
// afresh (a gang's cached parts are replaced, never changed in place), so
// the goroutine reads it while the loop goes on binding: the forecast
// never delays a cycle. Only one forecast runs at a time. Its result comes
// back to the loop through the inbox, like any change, and the next cycle's
// publish writes the statuses that differ, through the status writer with
// every other status (coalesced per object, rate-limited).
//
// To keep writes few, a gang's expected start or reservation is rewritten
// only when it moves by more than forecastSlack: a minute, or a sixteenth
// of the time left until it, which is the core's own precision. A reserved
// gang's expected start is its reservation's, computed every cycle (the
// forecast agrees with it to within that precision), and it has no
// expected reservation: the Reserved condition says since when it holds
// one.

// forecastEntry is what the latest forecast says of one gang.
type forecastEntry struct {
	position int32
	start    int64 // Unix seconds; 0: not forecast to start
	// reserve is when nodes are forecast to be reserved for the gang, in
	// Unix seconds; 0: not forecast, or reserved already.
	reserve int64
}

// forecastState is the loop's side of the forecast.
type forecastState struct {
	running bool
	next    time.Time
	byGang  map[string]forecastEntry
	// first is the expected start the first forecast of each waiting gang
	// gave it (Unix seconds; 0: none within the horizon), to weigh against
	// its start (observeStart). It holds the gangs of the latest forecast
	// only, so gangs that leave drop out.
	first map[string]int64
}

// maybeForecast starts a forecast over snap, the snapshot of the cycle of
// time now, if the period has passed since the previous one started and
// none is running, and says whether it did: the forecast then reads snap
// while the loop goes on. Loop goroutine only.
func (s *Scheduler) maybeForecast(ctx context.Context, snap *core.Snapshot, now time.Time) bool {
	if s.opts.ForecastPeriod <= 0 || s.fc.running || now.Before(s.fc.next) {
		return false
	}
	s.fc.running, s.fc.next = true, now.Add(s.opts.ForecastPeriod)
	opts := core.ForecastOptions{Horizon: int64(s.opts.ForecastHorizon / time.Second), Step: core.DefaultForecastStep}
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		began := time.Now()
		f := s.core.Forecast(snap, now.Unix(), opts)
		took := time.Since(began)
		s.send(ctx, func() {
			s.fc.running = false
			s.applyForecast(f, now.Unix())
			s.metrics.ForecastDuration.Observe(took.Seconds())
		})
	}()
	return true
}

// applyForecast keeps the forecast f, computed at time at, for the next
// publish. Loop goroutine only.
func (s *Scheduler) applyForecast(f core.Forecast, at int64) {
	// The gangs the forecast starts at its own time are those the cycle
	// whose snapshot it read placed: they run now, and the gangs behind
	// them in their queue move up.
	byQueue := map[string][]core.GangForecast{}
	for _, g := range f.Gangs {
		if !g.Starts || g.Start > at {
			byQueue[g.Queue] = append(byQueue[g.Queue], g)
		}
	}
	next := make(map[string]forecastEntry, len(f.Gangs))
	first := make(map[string]int64, len(f.Gangs))
	for _, gangs := range byQueue {
		slices.SortFunc(gangs, func(a, b core.GangForecast) int { return cmp.Compare(a.Position, b.Position) })
		for i, g := range gangs {
			e := forecastEntry{position: int32(min(i+1, math.MaxInt32))}
			if g.Starts {
				e.start = g.Start
			}
			if g.Reserves && g.Reserved > at {
				e.reserve = g.Reserved
			}
			if old, ok := s.fc.byGang[g.Gang]; ok {
				e.start = steady(old.start, e.start, at)
				e.reserve = steady(old.reserve, e.reserve, at)
			}
			next[g.Gang] = e
			if t, ok := s.fc.first[g.Gang]; ok {
				first[g.Gang] = t
			} else {
				first[g.Gang] = e.start
			}
		}
	}
	s.fc.byGang, s.fc.first = next, first
}

// observeStart weighs the start, at time at, of the gang key of queue
// against the expected start its first forecast gave it, if any (late:
// after it; early: at or before it), and forgets it: a gang that waits
// again is weighed again. Loop goroutine only.
func (s *Scheduler) observeStart(key, queue string, at int64) {
	t, ok := s.fc.first[key]
	delete(s.fc.first, key)
	if !ok || t == 0 {
		return
	}
	direction, d := "late", at-t
	if d <= 0 {
		direction, d = "early", -d
	}
	s.metrics.QueueStartForecastError.WithLabelValues(queue, direction).Observe(float64(d))
}

// forecastSlack is how far an expected start that lies left seconds ahead
// may move without being rewritten.
func forecastSlack(left int64) int64 { return max(60, left/16) }

// steady returns the time old that a new forecast, made at time at, moves
// to t, if t moves it by no more than the slack; else t. 0 is no time.
func steady(old, t, at int64) int64 {
	if old != 0 && t != 0 && abs(t-old) <= forecastSlack(t-at) {
		return old
	}
	return t
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// forecastOf is what the status of gang key shows: its place in its queue,
// its expected start and its expected reservation, if it waits. A reserved
// gang's expected start is its reservation's while that lies ahead,
// forecast or not, and it expects no reservation: it has one. Nor does a
// gang whose expected reservation has passed. A reservation made ahead of
// the gang's due time starts then at the latest: a forecast that starts
// the gang sooner is kept.
func (s *Scheduler) forecastOf(key string, last *verdict, now int64) forecastEntry {
	e := s.fc.byGang[key]
	if last != nil && last.reserved {
		e.reserve = 0
		sooner := last.resv.ahead && e.start > now && e.start < last.resv.start
		if last.resv.start > now && !sooner {
			e.start = last.resv.start
		}
	}
	if e.reserve <= now {
		e.reserve = 0
	}
	return e
}

// withForecast sets the forecast fields of st from e, or clears them when
// the gang does not wait.
func withForecast(st *v1alpha1.PodGroupStatus, e forecastEntry, waiting bool) {
	st.QueuePosition, st.ExpectedStartTime, st.ExpectedReservationTime = 0, nil, nil
	if !waiting {
		return
	}
	st.QueuePosition = e.position
	if e.start != 0 {
		t := metav1.NewTime(time.Unix(e.start, 0))
		st.ExpectedStartTime = &t
	}
	if e.reserve != 0 {
		t := metav1.NewTime(time.Unix(e.reserve, 0))
		st.ExpectedReservationTime = &t
	}
}
