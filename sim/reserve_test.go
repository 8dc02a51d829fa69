package sim

import (
	"testing"

	"github.com/phalanx-sched/phalanx/workload"
)

// TestReservationStopsStarvation runs testdata/golden/reservation.yaml, where
// a stream of small jobs never leaves the node free whole: without
// reservations the big job waits for the stream to end; with them it starts
// as soon as the job running when its reservation was made ends, and
// sooner when the node is reserved ahead of a fixed threshold. The gangs
// in line for a reservation go by arrival here (ReserveByWork < 0): on one
// node every small job asks half the cluster, and by work they would pass
// big (core.TestReserveByWork tests that order).
func TestReservationStopsStarvation(t *testing.T) {
	w, err := workload.ReadScenarioFile("testdata/golden/reservation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	big := func(reserveAfter, ahead int64, fixed bool) JobOutcome {
		r, err := Run(w, PolicyPhalanx, Options{ReserveAfter: reserveAfter, ReserveAhead: ahead, FixedReserveAfter: fixed, ReserveByWork: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range r.Jobs {
			if j.ID == "big" {
				return j
			}
		}
		t.Fatal("no job big")
		return JobOutcome{}
	}
	// Reserved only once due: at 1h10, once it has waited an hour (the
	// simulator wakes it then), the node is reserved; small-2, running
	// since 1h, ends at 2h and big starts then (small-3, arriving at 1h30,
	// would end after 2h).
	if got := big(3600, -1, false); got.Reserved != 4200 || got.Start != 7200 {
		t.Errorf("with reservations once due big is reserved for at %d s and starts at %d s, want 4200 and 7200", got.Reserved, got.Start)
	}
	// With the defaults, reserved ahead by two days of the backlog's part
	// of the threshold only: the backlog here is shorter than the hour, so
	// big is reserved for once it has waited the hour, as once due.
	if got := big(3600, 0, false); got.Reserved != 4200 || got.Start != 7200 {
		t.Errorf("with the backlog and reservations ahead big is reserved for at %d s and starts at %d s, want 4200 and 7200", got.Reserved, got.Start)
	}
	// Reserved two days ahead of a fixed threshold: at 10m, on arrival,
	// for a reservation from 1h10. small-1, arriving at 30m, would run past
	// 1h10 and waits; small-0 ends at 1h and big starts then.
	if got := big(3600, 0, true); got.Reserved != 600 || got.Start != 3600 {
		t.Errorf("with reservations ahead of a fixed threshold big is reserved for at %d s and starts at %d s, want 600 and 3600", got.Reserved, got.Start)
	}
	// Reserved half an hour ahead of it: at 40m, which the simulator wakes
	// for, though nothing else happens then. small-1 runs until 1h30, so
	// big's nodes free whole at 1h30, after its due time, and it starts
	// then.
	if got := big(3600, 1800, true); got.Reserved != 2400 || got.Start != 5400 {
		t.Errorf("reserved half an hour ahead of a fixed threshold, big is reserved for at %d s and starts at %d s, want 2400 and 5400", got.Reserved, got.Start)
	}
	// Without, every freed half goes to the next small job, until the
	// stream ends: small-9 arrives at 4h30 and the last ones end at 5h30.
	if got := big(-1, 0, false); got.Start <= 4*3600 || got.Reserved != -1 {
		t.Errorf("without reservations big is reserved for at %d s (want never) and starts at %d s; want it to starve until the stream ends", got.Reserved, got.Start)
	}
}
