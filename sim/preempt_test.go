package sim

// Preemption and reclaim as the simulator carries them out: victims
// terminate for the grace period, restart from scratch when left below
// MinMember, elastic members just wait again; the plan's evictions and holds
// are checked like its binds.

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/workload"
)

func readGolden(t *testing.T, name string) *workload.Workload {
	t.Helper()
	w, err := workload.ReadScenarioFile("testdata/golden/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func runWith(t *testing.T, w *workload.Workload, policy string, opt Options) *Result {
	t.Helper()
	r, err := Run(w, policy, opt)
	if err != nil {
		t.Fatalf("Run(%s): %v", policy, err)
	}
	return r
}

// testdata/golden/preemption.yaml: high evicts low whole at 10m, starts when
// low's members have terminated, and low restarts from scratch afterwards.
func TestPreemptionRestartsVictim(t *testing.T) {
	w := readGolden(t, "preemption")
	tests := []struct {
		name string
		opt  Options
		want map[string]span
		// preempted gangs, evicted members, GPU-seconds lost
		gangs, members int
		lost           float64
	}{
		{"default grace period", oldDefaults,
			map[string]span{"low": {2430, 6030}, "high": {630, 2430}}, 1, 2, 8 * 600},
		{"longer grace period", Options{GracePeriod: 120, PreemptMinRuntime: -1},
			map[string]span{"low": {2520, 6120}, "high": {720, 2520}}, 1, 2, 8 * 600},
		// No grace: the victims leave at once and a second cycle at 10m
		// places the preemptor.
		{"no grace period", Options{GracePeriod: -1, PreemptMinRuntime: -1},
			map[string]span{"low": {2400, 6000}, "high": {600, 2400}}, 1, 2, 8 * 600},
		{"preemption off", Options{NoPreemption: true},
			map[string]span{"low": {0, 3600}, "high": {3600, 5400}}, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, w, PolicyPhalanx, tc.opt)
			if d := cmp.Diff(tc.want, spans(r)); d != "" {
				t.Errorf("spans (-want +got):\n%s", d)
			}
			m := r.Metrics
			if m.PreemptedGangs != tc.gangs || m.EvictedMembers != tc.members || m.PreemptionLostGPUSeconds != tc.lost {
				t.Errorf("preempted %d gangs, %d members, lost %v GPU-s; want %d, %d, %v",
					m.PreemptedGangs, m.EvictedMembers, m.PreemptionLostGPUSeconds, tc.gangs, tc.members, tc.lost)
			}
			if m.JobsCompleted != 2 || m.WastedGPUSeconds != 0 {
				t.Errorf("completed %d, wasted %v GPU-s; want 2 and none", m.JobsCompleted, m.WastedGPUSeconds)
			}
		})
	}
	// No other policy preempts.
	for _, policy := range []string{PolicyFIFOGang, PolicyVolcano, PolicyPodByPod} {
		if r := runWith(t, w, policy, Options{}); r.Metrics.PreemptedGangs != 0 || spans(r)["high"].Start != 3600 {
			t.Errorf("%s: high starts at %d after %d preemptions; want 3600 and none", policy, spans(r)["high"].Start, r.Metrics.PreemptedGangs)
		}
	}
}

// An elastic member of lower priority is evicted alone: its job keeps
// running, and the member binds again when room comes back.
func TestPreemptionEvictsElasticMember(t *testing.T) {
	w := newWorkload().
		pool("n", 1, gpus(8), cpu(32)).
		job("elastic", at(0), runs(3600), minMember(1), task("w", 2, gpus(4))).
		job("urgent", at(600), runs(600), priority(10), task("w", 1, gpus(4))).
		build()
	opt := oldDefaults // elastic has run 10 minutes
	opt.Record = true
	r := runWith(t, w, PolicyPhalanx, opt)
	want := map[string]span{"elastic": {0, 3600}, "urgent": {630, 1230}}
	if d := cmp.Diff(want, spans(r)); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
	got := map[string][]string{}
	for _, e := range r.Events {
		if e.Job == "elastic" {
			got[e.Pod] = append(got[e.Pod], e.Kind)
		}
	}
	// Both members started at 0: the tie goes by name. elastic-w-0 is
	// evicted, waits and binds again when urgent ends.
	wantKinds := map[string][]string{
		"elastic-w-0": {"bound", "running", "evicted", "deleted", "bound", "running", "completed"},
		"elastic-w-1": {"bound", "running", "completed"},
	}
	if d := cmp.Diff(wantKinds, got); d != "" {
		t.Errorf("events of elastic's members (-want +got):\n%s", d)
	}
	if m := r.Metrics; m.PreemptedGangs != 1 || m.EvictedMembers != 1 || m.PreemptionLostGPUSeconds != 4*600 {
		t.Errorf("preempted %d gangs, %d members, lost %v GPU-s; want 1, 1, 2400", m.PreemptedGangs, m.EvictedMembers, m.PreemptionLostGPUSeconds)
	}
}

// testdata/golden/reclaim.yaml: b reclaims one of a's jobs once, and nothing
// takes it back; prod, not reclaimable, keeps its GPUs.
func TestReclaimWithoutPingPong(t *testing.T) {
	w := readGolden(t, "reclaim")
	opt := oldDefaults // the scenario reclaims minutes after its victims start
	opt.Record = true
	r := runWith(t, w, PolicyPhalanx, opt)
	got := spans(r)
	want := map[string]span{
		// When b-1 ends, a's shorter job a-3 goes first; a-1 restarts after.
		"a-1": {4230, 11430}, "a-2": {0, 7200}, "b-1": {630, 2430}, "a-3": {2430, 4230},
		"prod-1": {18000, 21600}, "prod-2": {18000, 25200}, "b-2": {21600, 23400},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
	evicted := 0
	for _, e := range r.Events {
		if e.Kind == "evicted" {
			evicted++
			if e.Reason != "reclaimed by b-1" {
				t.Errorf("%s evicted at %d s: %q, want reclaimed by b-1", e.Pod, e.Time, e.Reason)
			}
		}
	}
	if evicted != 1 || r.Metrics.PreemptedGangs != 1 {
		t.Errorf("%d evictions, %d preempted gangs; want exactly one of each (no ping-pong)", evicted, r.Metrics.PreemptedGangs)
	}

	// The same with prod reclaimable: b-2 takes one of prod's nodes.
	open := *w
	open.Queues = append([]workload.Queue(nil), w.Queues...)
	for i := range open.Queues {
		open.Queues[i].NoReclaim = false
	}
	if got := spans(runWith(t, &open, PolicyPhalanx, oldDefaults))["b-2"]; got.Start != 18600+DefaultGracePeriod {
		t.Errorf("with prod reclaimable b-2 starts at %d s, want %d", got.Start, 18600+DefaultGracePeriod)
	}
}

// fakePlans returns its plans one per cycle, then nothing, and keeps the
// snapshots' Running and Holds it was given.
type fakePlans struct {
	plans   []core.Plan
	running [][]core.Running
	holds   [][]core.Hold
}

func (f *fakePlans) RunCycle(snap *core.Snapshot, _ int64) (core.Plan, core.Diagnostics) {
	f.running = append(f.running, cloneRunning(snap.Running))
	f.holds = append(f.holds, append([]core.Hold(nil), snap.Holds...))
	if len(f.plans) == 0 {
		return core.Plan{}, core.Diagnostics{}
	}
	p := f.plans[0]
	f.plans = f.plans[1:]
	return p, core.Diagnostics{}
}

func cloneRunning(rs []core.Running) []core.Running {
	out := make([]core.Running, len(rs))
	for i, r := range rs {
		out[i] = r
		out[i].Members = append([]core.Placed(nil), r.Members...)
	}
	return out
}

// twoJobs: victim holds the node from 0, preemptor arrives at 100.
func twoJobs() *workload.Workload {
	return newWorkload().
		pool("n", 2, gpus(1), cpu(4)).
		job("victim", at(0), runs(1000), task("w", 2, gpus(1))).
		job("preemptor", at(100), runs(10), task("w", 1, gpus(1))).
		build()
}

func bindVictim() core.Plan {
	return core.Plan{Binds: []core.Bind{{Gang: "victim", Member: "victim-w-0", Node: "n-0"}, {Gang: "victim", Member: "victim-w-1", Node: "n-1"}}}
}

func TestBadEvictionsAreRejected(t *testing.T) {
	ev := func(gang, member, node, preemptor string) core.Eviction {
		return core.Eviction{Gang: gang, Member: member, Node: node, Preemptor: preemptor}
	}
	tests := []struct {
		name    string
		plan    core.Plan
		preempt bool
		want    string
	}{
		{"preemption off", core.Plan{Evictions: []core.Eviction{ev("victim", "victim-w-0", "n-0", "preemptor")}}, false, "preemption is off"},
		{"unknown gang", core.Plan{Evictions: []core.Eviction{ev("nobody", "victim-w-0", "n-0", "preemptor")}}, true, "has no member on a node"},
		{"unknown member", core.Plan{Evictions: []core.Eviction{ev("victim", "victim-w-9", "n-0", "preemptor")}}, true, "not a member of gang"},
		{"unknown node", core.Plan{Evictions: []core.Eviction{ev("victim", "victim-w-0", "n-7", "preemptor")}}, true, "unknown node"},
		{"wrong node", core.Plan{Evictions: []core.Eviction{ev("victim", "victim-w-0", "n-1", "preemptor")}}, true, "where it does not run"},
		{"twice", core.Plan{Evictions: []core.Eviction{ev("victim", "victim-w-0", "n-0", "preemptor"), ev("victim", "victim-w-0", "n-0", "preemptor")}}, true, "already terminating"},
		{"unknown preemptor", core.Plan{Evictions: []core.Eviction{ev("victim", "victim-w-0", "n-0", "ghost")}}, true, "has no pending member"},
		{"hold for unknown gang", core.Plan{Holds: []core.Hold{{Gang: "ghost", Node: 0}}}, true, "holds resources for gang \"ghost\""},
		{"hold on no node", core.Plan{Holds: []core.Hold{{Gang: "preemptor", Node: 5}}}, true, "does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePlans{plans: []core.Plan{bindVictim(), tc.plan}}
			_, err := run(twoJobs(), "fake", f, gangOptions{preempt: tc.preempt}, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// What the simulator passes the core about running gangs and holds, and how
// it keeps a preemptor's holds: replaced by its next ones, dropped when it is
// placed.
func TestRunningAndHoldsInSnapshots(t *testing.T) {
	evict := core.Plan{
		Evictions: []core.Eviction{{Gang: "victim", Member: "victim-w-1", Node: "n-1", Preemptor: "preemptor"}},
		Holds:     []core.Hold{{Gang: "preemptor", Node: 1, Amount: core.Vector{core.Pods: 1}}},
	}
	f := &fakePlans{plans: []core.Plan{bindVictim(), evict, {},
		{Binds: []core.Bind{{Gang: "preemptor", Member: "preemptor-w-0", Node: "n-1"}}}}}
	w := twoJobs()
	w.Jobs = append(w.Jobs, workload.Job{ID: "bystander", Queue: "default", Submit: 110, Duration: 1, MinMember: 1,
		Tasks: []workload.Task{{Role: "w", Replicas: 1, Requests: map[string]int64{workload.GPU: 1}}}})
	r, err := run(w, "fake", f, gangOptions{preempt: true}, Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	// Cycles: 0 (binds the victim), 100 (evicts), 110 (an arrival), 130
	// (grace ends: binds the preemptor), then the victim waits whole.
	if len(f.running) < 4 {
		t.Fatalf("%d cycles, want at least 4", len(f.running))
	}
	var oneGPU core.Vector
	oneGPU[core.FirstExtended] = 1 // the workload's only extended resource
	// Its estimate is its duration, 1000 s (exact estimates).
	wantAt100 := []core.Running{{Gang: "victim", Queue: "default", MinMember: 2, Estimate: 1000, Members: []core.Placed{
		{Name: "victim-w-0", Node: 0, Request: oneGPU, Start: 0},
		{Name: "victim-w-1", Node: 1, Request: oneGPU, Start: 0},
	}}}
	if d := cmp.Diff(wantAt100, f.running[1]); d != "" {
		t.Errorf("Running at 100 s (-want +got):\n%s", d)
	}
	// At 110 both members terminate: victim-w-1 evicted, victim-w-0 because
	// its job restarts, being left below MinMember. The hold is passed.
	at110 := f.running[2]
	if len(at110) != 1 || len(at110[0].Members) != 2 || !at110[0].Members[0].Terminating || !at110[0].Members[1].Terminating {
		t.Errorf("Running at 110 s: %+v, want both members of victim terminating", at110)
	}
	if d := cmp.Diff(evict.Holds, f.holds[2]); d != "" {
		t.Errorf("Holds at 110 s (-want +got):\n%s", d)
	}
	// At 130 they are gone.
	if len(f.running[3]) != 0 {
		t.Errorf("Running at 130 s: %+v, want none", f.running[3])
	}
	// The preemptor was placed at 130: its hold is gone afterwards.
	for i := 4; i < len(f.holds); i++ {
		if len(f.holds[i]) != 0 {
			t.Errorf("cycle %d still passes holds %v", i, f.holds[i])
		}
	}
	if o := r.Jobs[1]; o.ID != "preemptor" || o.Start != 130 {
		t.Errorf("preemptor %+v, want started at 130", o)
	}
	// The victim restarted: it never ran again (the fake binds no more).
	if o := r.Jobs[0]; o.Start != -1 || r.Metrics.PreemptedGangs != 1 || r.Metrics.EvictedMembers != 1 {
		t.Errorf("victim %+v, metrics %+v; want it waiting after one eviction", o, r.Metrics)
	}
}

// A preemptor's holds expire at grace period + holdMargin when it is never
// placed, with a cycle at that time.
func TestPreemptorHoldsExpire(t *testing.T) {
	evict := core.Plan{
		Evictions: []core.Eviction{{Gang: "victim", Member: "victim-w-1", Node: "n-1", Preemptor: "preemptor"}},
		Holds:     []core.Hold{{Gang: "preemptor", Node: 1}},
	}
	f := &fakePlans{plans: []core.Plan{bindVictim(), evict}}
	if _, err := run(twoJobs(), "fake", f, gangOptions{preempt: true}, Options{}); err != nil {
		t.Fatal(err)
	}
	// Cycles at 0, 100, 130 (grace ends), 190 (holds expire: none passed).
	var n []int
	for _, h := range f.holds {
		n = append(n, len(h))
	}
	if d := cmp.Diff([]int{0, 0, 1, 0}, n); d != "" {
		t.Errorf("holds passed per cycle (-want +got):\n%s", d)
	}
}
