package sim

// Members that fail while their job runs: the job pauses below MinMember,
// the replacement is created later, and the phalanx policy holds the freed
// resources for it.

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/workload"
)

// testdata/golden/member-failure.yaml: with the hold the replacement binds
// the moment it exists; without, a small job takes the GPUs and the
// replacement waits for it to end, train's other member idle meanwhile.
func TestFailedMemberHold(t *testing.T) {
	w := readGolden(t, "member-failure")
	tests := []struct {
		name       string
		opt        Options
		train      span
		wait       float64 // the replacement's
		wastedGPUs float64 // GPU-s held by train's idle member
	}{
		// Fails at 1200, replaced at 1260, paused 60 s.
		{"hold", Options{}, span{0, 3660}, 0, 4 * 60},
		// small-1 takes the GPUs at 1200 until 2400: paused 1200 s.
		{"no hold", Options{HoldFailed: -1}, span{0, 4800}, 1140, 4 * 1200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, w, PolicyPhalanx, tc.opt)
			if got := spans(r)["train"]; got != tc.train {
				t.Errorf("train %+v, want %+v", got, tc.train)
			}
			m := r.Metrics
			if m.MemberFailures != 1 || Value(m.MaxReplacementWait) != tc.wait || Value(m.MeanReplacementWait) != tc.wait {
				t.Errorf("%d failures, replacement waited %v (max %v); want 1 and %v", m.MemberFailures, Value(m.MeanReplacementWait), Value(m.MaxReplacementWait), tc.wait)
			}
			if m.WastedGPUSeconds != tc.wastedGPUs {
				t.Errorf("wasted %v GPU-s, want %v", m.WastedGPUSeconds, tc.wastedGPUs)
			}
			if m.JobsCompleted != 4 {
				t.Errorf("%d jobs completed, want 4", m.JobsCompleted)
			}
		})
	}
}

// A hold lasts the hold period: when the replacement comes later, what the
// failed member freed goes to others when the hold expires, at that very
// time.
func TestFailedMemberHoldExpires(t *testing.T) {
	w := newWorkload().
		pool("n", 1, gpus(8), cpu(32)).
		job("train", at(0), runs(3600), task("w", 2, gpus(4)), fails(1200, 1, 600)).
		job("small", at(60), runs(600), task("w", 1, gpus(4))).
		build()
	// Default hold: 300 s, expires at 1500; small takes the GPUs then and
	// the replacement, created at 1800, waits until small ends at 2100.
	r := runWith(t, w, PolicyPhalanx, Options{})
	want := map[string]span{"small": {1500, 2100}, "train": {0, 3600 + 900}}
	if d := cmp.Diff(want, spans(r)); d != "" {
		t.Errorf("hold 300 s: spans (-want +got):\n%s", d)
	}
	// A hold of 900 s outlasts the restart delay.
	r = runWith(t, w, PolicyPhalanx, Options{HoldFailed: 900})
	want = map[string]span{"small": {4200, 4800}, "train": {0, 3600 + 600}}
	if d := cmp.Diff(want, spans(r)); d != "" {
		t.Errorf("hold 900 s: spans (-want +got):\n%s", d)
	}
}

// An elastic member's failure does not pause its job; a failure due after
// the job ends does not happen; a replacement due at once binds at once.
func TestFailureCases(t *testing.T) {
	w := newWorkload().
		pool("n", 1, gpus(8), cpu(32)).
		job("elastic", at(0), runs(1000), minMember(1), task("w", 2, gpus(4)), fails(100, 1, 10)).
		job("late", at(0), runs(100), task("w", 1, gpus(0), cpu(1)), fails(500, 0, 0)).
		job("instant", at(2000), runs(100), task("w", 2, gpus(4)), fails(50, 0, 0)).
		build()
	r := runWith(t, w, PolicyPhalanx, Options{Record: true})
	want := map[string]span{"elastic": {0, 1000}, "late": {0, 100}, "instant": {2000, 2100}}
	if d := cmp.Diff(want, spans(r)); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
	m := r.Metrics
	// elastic's replacement binds at 110; instant's at 2050, with no wait.
	if m.MemberFailures != 2 || Value(m.MaxReplacementWait) != 0 {
		t.Errorf("%d failures, max replacement wait %v; want 2 and 0", m.MemberFailures, Value(m.MaxReplacementWait))
	}
	var kinds []string
	for _, e := range r.Events {
		if e.Pod == "elastic-w-1" {
			kinds = append(kinds, fmt.Sprintf("%d %s", e.Time, e.Kind))
		}
	}
	wantKinds := []string{"0 bound", "0 running", "100 failed", "110 replaced", "110 bound", "110 running", "1000 completed"}
	if d := cmp.Diff(wantKinds, kinds); d != "" {
		t.Errorf("elastic-w-1 (-want +got):\n%s", d)
	}
}

// churnWorkload is randomWorkload with priorities and member failures, so
// that preemption, restarts and replacements interleave.
func churnWorkload(seed uint64, jobs int) *workload.Workload {
	w := randomWorkload(seed, jobs)
	rng := rand.New(rand.NewPCG(seed, 11))
	for i := range w.Jobs {
		j := &w.Jobs[i]
		j.Priority = int32(rng.IntN(3))
		if rng.IntN(3) == 0 && j.Duration > 1 {
			j.Failures = append(j.Failures, workload.Failure{
				At: rng.Int64N(j.Duration), Member: rng.IntN(j.Members()), RestartAfter: rng.Int64N(600),
			})
		}
	}
	return w
}

// Everything holds under churn: every job completes, nothing is held at the
// end, and the counts add up, under every policy.
func TestChurnInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		w := churnWorkload(seed, 120)
		for _, policy := range Policies {
			r := runWith(t, w, policy, Options{Record: true})
			m := r.Metrics
			if policy != PolicyPodByPod && m.JobsCompleted != m.JobsTotal-m.UnschedulableJobs {
				t.Errorf("seed %d %s: %d of %d completed (%d unschedulable, %d stuck)", seed, policy, m.JobsCompleted, m.JobsTotal, m.UnschedulableJobs, m.StuckJobs)
			}
			last := r.GPUs[len(r.GPUs)-1]
			if policy != PolicyPodByPod && (last.Running != 0 || last.Held != 0) {
				t.Errorf("seed %d %s: last sample %+v, want nothing held", seed, policy, last)
			}
			kinds := map[string]int{}
			for _, e := range r.Events {
				kinds[e.Kind]++
			}
			if kinds["failed"] != m.MemberFailures || kinds["evicted"] < m.EvictedMembers {
				t.Errorf("seed %d %s: events %v, metrics %+v", seed, policy, kinds, m)
			}
			if policy != PolicyPhalanx && m.PreemptedGangs != 0 {
				t.Errorf("seed %d %s: %d preemptions, want none", seed, policy, m.PreemptedGangs)
			}
			if m.MemberFailures == 0 {
				t.Errorf("seed %d %s: no failure happened; the test covers nothing", seed, policy)
			}
		}
	}
}
