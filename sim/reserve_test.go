package sim

import (
	"testing"

	"github.com/phalanx-sched/phalanx/workload"
)

// TestReservationStopsStarvation runs testdata/golden/reservation.yaml, where
// a stream of small jobs never leaves the node free whole: without
// reservations the big job waits for the stream to end; with them it starts
// as soon as the job running when its reservation was made ends.
func TestReservationStopsStarvation(t *testing.T) {
	w, err := workload.ReadScenarioFile("testdata/golden/reservation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	start := func(reserveAfter int64) int64 {
		r, err := Run(w, PolicyPhalanx, Options{ReserveAfter: reserveAfter})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range r.Jobs {
			if j.ID == "big" {
				return j.Start
			}
		}
		t.Fatal("no job big")
		return 0
	}
	// At 1h30 (the first event after it has waited an hour) the node is
	// reserved; small-2, running since 1h, ends at 2h and big starts then.
	if got := start(3600); got != 7200 {
		t.Errorf("with reservations big starts at %d s, want 7200", got)
	}
	// Without, every freed half goes to the next small job, until the
	// stream ends: small-9 arrives at 4h30 and the last ones end at 5h30.
	if got := start(-1); got <= 4*3600 {
		t.Errorf("without reservations big starts at %d s; want it to starve until the stream ends", got)
	}
}
