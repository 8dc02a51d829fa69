package core

// RunCycle decides one scheduling cycle over snap at time now and returns
// the plan and why every gang left pending waits. It does not modify snap.
// The same snapshot and time always give the same plan, bit for bit.
func (s *Scheduler) RunCycle(snap *Snapshot, now int64) (Plan, Diagnostics) {
	// TODO: implementation in progress.
	return Plan{}, Diagnostics{}
}
