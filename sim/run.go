package sim

import (
	"errors"

	"github.com/phalanx-sched/phalanx/workload"
)

// Options tune a run.
type Options struct {
	// Record keeps the per-member timeline in Result.Events (small inputs).
	Record bool
	// Progress, if set, is called now and then with the number of events
	// processed and the total expected.
	Progress func(done, total int)
}

// Run simulates the workload under the named policy.
func Run(w *workload.Workload, policy string, opt Options) (*Result, error) {
	return nil, errors.New("sim: not implemented yet")
}
