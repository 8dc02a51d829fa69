package scheduler

import (
	"fmt"
	"time"

	"github.com/phalanx-sched/phalanx/core"
)

// The core's message for the gang it reserved nodes for ends "...; 2 node(s)
// reserved for it; expected to start in 8m20s", relative to the cycle's
// time. Written as is, that text would change every cycle and rewrite the PodGroup's
// status, every waiting member's condition and an Event every second. The
// adapter states the expected start as a time of day instead, which changes
// only when the reservation does, and adds the relative wait to the Event
// alone, which is written once per change.

// reservation is what is reserved for a waiting gang.
type reservation struct {
	nodes int
	start int64 // expected start, Unix seconds
	// ahead: made ahead of the gang's due time, start; the gang may start
	// sooner (core.GangStatus.ReservedAhead).
	ahead bool
}

// reservationOf splits the core's status st into the cause of the wait and
// the gang's reservation, if it holds one.
func reservationOf(st core.GangStatus) (string, reservation, bool) {
	nodes, start, ok := st.Reservation()
	if !ok {
		return st.Message(), reservation{}, false
	}
	return st.Cause(), reservation{nodes: nodes, start: start, ahead: st.ReservedAhead()}, true
}

// steady returns r with the start of the gang's previous reservation, last's,
// when both were made ahead of its due time, on as many nodes, and r's start
// lies within forecastSlack of that one, still ahead: the due time moves
// with the backlog, by seconds at each arrival, and each move would rewrite
// the PodGroup's status for no news. The core computes the reservation
// afresh every cycle; only what is published is kept steady.
func (r reservation) steady(last *verdict, now int64) reservation {
	if last == nil || !last.reserved || !r.ahead || !last.resv.ahead || last.resv.nodes != r.nodes {
		return r
	}
	if old := last.resv.start; old > now && abs(r.start-old) <= forecastSlack(r.start-now) {
		r.start = old
	}
	return r
}

// text describes the reservation as of cycle time now; it does not change
// as time passes, except once when the expected start is reached.
func (r reservation) text(now int64) string {
	if r.ahead && r.start > now {
		return fmt.Sprintf("%d node(s) reserved for it ahead of its due time; expected to start by %s", r.nodes, time.Unix(r.start, 0).UTC().Format(time.RFC3339))
	}
	if r.start <= now {
		return fmt.Sprintf("%d node(s) reserved for it; expected to start as soon as running members past their estimated end finish", r.nodes)
	}
	return fmt.Sprintf("%d node(s) reserved for it; expected to start at %s", r.nodes, time.Unix(r.start, 0).UTC().Format(time.RFC3339))
}
