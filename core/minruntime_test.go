package core

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A minimum run time protects a gang until it has run that long; the
// cheapest victim that ran long enough goes instead, or none, and the plan
// says when that changes.
func TestReclaimMinRuntime(t *testing.T) {
	// At 100, a-old has run 100 s and a-new 40 s.
	for _, tc := range []struct {
		name      string
		cfg       Config
		queueA    int64 // queue a's own ReclaimMinRuntime
		victims   []string
		wantUntil int64 // 0: not checked
	}{
		{name: "none", cfg: Config{Preemption: true}, victims: []string{"a-new/a-new-0"}},
		{name: "a-new too young", cfg: Config{Preemption: true, ReclaimMinRuntime: 100},
			victims: []string{"a-old/a-old-0"}},
		// Both protected: a-old's 200 s come first, at 200.
		{name: "both too young", cfg: Config{Preemption: true, ReclaimMinRuntime: 200}, wantUntil: 200},
		{name: "the queue's own wins", cfg: Config{Preemption: true, ReclaimMinRuntime: 200}, queueA: 50,
			victims: []string{"a-old/a-old-0"}},
		{name: "the queue protects nothing", cfg: Config{Preemption: true, ReclaimMinRuntime: 200}, queueA: -1,
			victims: []string{"a-new/a-new-0"}},
		// Preemption's minimum does not guard against reclaim.
		{name: "preempt minimum only", cfg: Config{Preemption: true, PreemptMinRuntime: 1000},
			victims: []string{"a-new/a-new-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := reclaimSnapshot(8)
			s.Queues[0].ReclaimMinRuntime = tc.queueA
			plan, diag := runAt(t, s, tc.cfg, 100)
			if diff := cmp.Diff(tc.victims, victims(plan)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
			// With no victim the status says none may be evicted.
			const none = "; no preemption: no running gang may be evicted for it"
			if msg := pendingOf(diag)["claim"].Message; tc.victims == nil && !strings.Contains(msg, none) {
				t.Errorf("claim's status does not say no gang may be evicted: %q", msg)
			}
			if tc.wantUntil != 0 && plan.Until != tc.wantUntil {
				t.Errorf("Until %d, want %d", plan.Until, tc.wantUntil)
			}
		})
	}
	// Once a-old has run 200 s it may go.
	plan, _ := runAt(t, reclaimSnapshot(8), Config{Preemption: true, ReclaimMinRuntime: 200}, 200)
	if diff := cmp.Diff([]string{"a-old/a-old-0"}, victims(plan)); diff != "" {
		t.Errorf("at 200, victims (-want +got):\n%s", diff)
	}
}

func TestPreemptMinRuntime(t *testing.T) {
	snap := func() *Snapshot {
		s := twoEightGPUNodes().Gangs(MakeGang("high").Members(1, GPUs(8)).Priority(10)).Obj()
		runGang(s, "old", "default", 0, 1, 0, []int{0}, 8)
		runGang(s, "young", "default", 0, 1, 90, []int{1}, 8)
		return s
	}
	plan, _ := runAt(t, snap(), Config{Preemption: true, PreemptMinRuntime: 50}, 100)
	if diff := cmp.Diff([]string{"old/old-0"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
	// Reclaim's minimum does not guard against preemption.
	plan, _ = runAt(t, snap(), Config{Preemption: true, ReclaimMinRuntime: 1000}, 100)
	if diff := cmp.Diff([]string{"young/young-0"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
	// An elastic member counts from its own start.
	s := twoEightGPUNodes().Gangs(MakeGang("higher").Members(1, GPUs(4)).Priority(1)).Obj()
	runGang(s, "elastic", "default", 0, 2, 0, []int{0, 0, 1}, 4, 4, 4)
	s.Running[0].Members[2].Start = 80
	runGang(s, "other", "default", 0, 1, 0, []int{1}, 4)
	plan, _ = runAt(t, s, Config{Preemption: true, PreemptMinRuntime: 50}, 100)
	if diff := cmp.Diff([]string{"other/other-0"}, victims(plan)); diff != "" {
		t.Errorf("elastic member too young: victims (-want +got):\n%s", diff)
	}
}

// WeighLoss: claim (8 GPUs) reclaims a-new (8 GPUs, started at 60) only
// while what a-new loses, 8 x (now - 60), is at most what claim gains,
// 8 x (a-new's end - now).
func TestWeighLoss(t *testing.T) {
	cfg := Config{Preemption: true, WeighLoss: true}
	snap := func(estimate int64) *Snapshot {
		s := reclaimSnapshot(8)
		for i := range s.Running {
			s.Running[i].Estimate = estimate
			s.Running[i].Arrival = s.Running[i].Members[0].Start // started as they arrived
		}
		return s
	}
	// a-new ends at 1060: at 100 it loses 320 for a gain of 7,680. Equal
	// rates (8 each way): the loss catches up at the midpoint of 60 and
	// 1060, 560. a-old (ends at 1000, lost 800 at 100) would pay off too,
	// but a-new is cheaper and enough.
	plan, _ := runAt(t, snap(1000), cfg, 100)
	if diff := cmp.Diff([]string{"a-new/a-new-0"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
	if plan.Until != 561 {
		t.Errorf("Until %d, want 561, when the loss first exceeds the gain", plan.Until)
	}
	plan, _ = runAt(t, snap(1000), cfg, 560)
	if diff := cmp.Diff([]string{"a-new/a-new-0"}, victims(plan)); diff != "" {
		t.Errorf("at 560, loss 4000 = gain 4000: victims (-want +got):\n%s", diff)
	}
	plan, diag := runAt(t, snap(1000), cfg, 561)
	if len(plan.Evictions) != 0 {
		t.Errorf("at 561, loss 4008 > gain 3992, yet %v", victims(plan))
	}
	if msg := pendingOf(diag)["claim"].Message; !strings.Contains(msg,
		"; no preemption: the evictions that would make room would lose more run time than they would gain it") {
		t.Errorf("at 561, claim's status does not say why nothing is evicted: %q", msg)
	}
	// Nearly done: a-new ends at 110, a gain of 80 for a loss of 320.
	plan, _ = runAt(t, snap(50), cfg, 100)
	if len(plan.Evictions) != 0 {
		t.Errorf("a victim about to end is evicted: %v", victims(plan))
	}
	// The victims also wait again while claim runs: with claim's estimate
	// of 500 s the loss is 320 + 8 x 500 = 4,320 against a gain of 7,680;
	// with 1,000 s, 8,320.
	for _, tc := range []struct {
		estimate int64
		evict    bool
	}{{500, true}, {1000, false}} {
		s := snap(1000)
		s.Gangs[0].Estimate = tc.estimate
		plan, _ = runAt(t, s, cfg, 100)
		if got := len(plan.Evictions) > 0; got != tc.evict {
			t.Errorf("claim's estimate %d: evictions %v, want some: %v", tc.estimate, victims(plan), tc.evict)
		}
	}
	// A victim that waited long for its room would wait again: a-new,
	// arrived at -3000, waited 3,060 s, 8 x 3,060 = 24,480 more than the
	// gain.
	s := snap(1000)
	s.Running[1].Arrival = -3000
	plan, _ = runAt(t, s, cfg, 100)
	if len(plan.Evictions) != 0 {
		t.Errorf("a victim that waited long is evicted: %v", victims(plan))
	}
	// Room that frees anyway bounds the gain: with 8 GPUs released at
	// 130, claim would start 30 s later without evicting (gain 240, loss
	// 320); released at 200, it gains 800.
	for _, tc := range []struct {
		at    int64
		evict bool
	}{{130, false}, {200, true}} {
		s := snap(1000)
		s.Releases = []Release{{Node: 0, Amount: Vector{Pods: 1, gpuDim: 8}, At: tc.at, Queue: "a"}}
		plan, _ = runAt(t, s, cfg, 100)
		if got := len(plan.Evictions) > 0; got != tc.evict {
			t.Errorf("release at %d: evictions %v, want some: %v", tc.at, victims(plan), tc.evict)
		}
	}
	// Without estimates nothing is weighed.
	plan, _ = runAt(t, snap(0), cfg, 100)
	if diff := cmp.Diff([]string{"a-new/a-new-0"}, victims(plan)); diff != "" {
		t.Errorf("no estimates: victims (-want +got):\n%s", diff)
	}
	// Without WeighLoss the victim about to end goes.
	plan, _ = runAt(t, snap(50), Config{Preemption: true}, 100)
	if diff := cmp.Diff([]string{"a-new/a-new-0"}, victims(plan)); diff != "" {
		t.Errorf("WeighLoss off: victims (-want +got):\n%s", diff)
	}
}

// Nothing is evicted for a gang that would not start once its victims are
// gone: high needs both nodes, and young, on one of them, is protected by
// the minimum run time, so old is not evicted either.
func TestNoEvictionForAGangThatCannotStart(t *testing.T) {
	snap := func() *Snapshot {
		s := twoEightGPUNodes().Gangs(MakeGang("high").Members(2, GPUs(8)).Priority(10)).Obj()
		runGang(s, "old", "default", 0, 1, 0, []int{0}, 8)
		runGang(s, "young", "default", 0, 1, 90, []int{1}, 8)
		return s
	}
	plan, diag := runAt(t, snap(), Config{Preemption: true, PreemptMinRuntime: 50}, 100)
	if len(plan.Evictions) != 0 || len(plan.Holds) != 0 {
		t.Errorf("evictions %v, holds %v", victims(plan), plan.Holds)
	}
	if msg := pendingOf(diag)["high"].Message; !strings.Contains(msg,
		"; no preemption: evicting every running gang that may be evicted for it would not make room") {
		t.Errorf("high's status does not say why nothing is evicted: %q", msg)
	}
	if plan.Until != 140 {
		t.Errorf("Until %d, want 140, when young has run 50 s", plan.Until)
	}
	plan, _ = runAt(t, snap(), Config{Preemption: true, PreemptMinRuntime: 50}, 140)
	if len(plan.Evictions) != 2 {
		t.Errorf("at 140 both may go: evictions %v", victims(plan))
	}
}

// Preemption by priority is not weighed: high (8 GPUs, priority 10) evicts
// young, which arrived at 0, started at 90 and ends at 110, although the
// eviction throws away 8 x 10 s and young would wait its 90 s again (800
// GPU-seconds lost) for 8 x 10 s gained. Weighed, as a reclaim would be,
// nothing would be evicted (TestWeighLoss).
func TestWeighLossLeavesPriorityAlone(t *testing.T) {
	s := twoEightGPUNodes().Gangs(MakeGang("high").Members(1, GPUs(8)).Priority(10)).Obj()
	runGang(s, "old", "default", 0, 1, 0, []int{0}, 8)
	runGang(s, "young", "default", 0, 1, 90, []int{1}, 8)
	for i := range s.Running {
		s.Running[i].Estimate = 1000
		s.Running[i].Arrival = s.Running[i].Members[0].Start
	}
	s.Running[1].Estimate, s.Running[1].Arrival = 20, 0
	plan, _ := runAt(t, s, Config{Preemption: true, WeighLoss: true}, 100)
	if diff := cmp.Diff([]string{"young/young-0"}, victims(plan)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
}
