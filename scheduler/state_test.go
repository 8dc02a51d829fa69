package scheduler

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	phalanxfake "github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"
)

// TestStateSurvivesRestart: a member of a running gang is lost; its room
// is held. The state recorded then, restored into the store of a new
// scheduler that lists the same pods, gives the same hold, so the greedy
// pod does not take the room; and the queue's run times come back too,
// without counting a gang twice when its finished pods are still listed,
// with the estimates they declared (the queue's estimate factor).
func TestStateSurvivesRestart(t *testing.T) {
	old := trainStore(300)
	old.SetPod(testPod("greedy").GPUs(4).Obj())
	old.DeletePod("uid-train-0")
	old.history["default"] = &runTimes{}
	for i := range int64(6) {
		// Each ran twice its declared estimate.
		old.history["default"].addGang("ns/done-"+string(rune('a'+i)), 100+i, 60*(i+1), 30*(i+1), 10+i)
	}
	// An era its latest run times alone would not give back: the gangs
	// that arrived before 13 ran half their estimates.
	old.history["default"].setEras(core.FactorEras{{From: math.MinInt64, Factor: 0.5}, {From: 13, Factor: 2}})
	data, err := json.Marshal(old.savedState())
	if err != nil {
		t.Fatal(err)
	}

	fresh := trainStore(300) // what the new scheduler's informers list
	fresh.SetPod(testPod("greedy").GPUs(4).Obj())
	fresh.DeletePod("uid-train-0")
	fresh.holds = map[string][]heldRoom{} // a new process knows of no hold
	if got := cycleNodes(t, fresh, core.Config{}); got["greedy"] != "a" {
		t.Fatalf("the test expects greedy to take the lost member's room without the state; got %v", got)
	}
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	fresh.restore(st)
	if got := cycleNodes(t, fresh, core.Config{}); len(got) != 0 {
		t.Errorf("after restoring the state, the held room was given: %v", got)
	}
	want, _ := old.Snapshot()
	got, _ := fresh.Snapshot()
	if diff := cmp.Diff(want.Holds, got.Holds); diff != "" {
		t.Errorf("holds (-old +restored):\n%s", diff)
	}
	if p, q := old.history["default"].p90(), fresh.history["default"].p90(); p != q || p == 0 {
		t.Errorf("p90 run time %d after the restart, %d before", q, p)
	}
	if f := fresh.history["default"].factor(); f != 2 {
		t.Errorf("estimate factor %g after the restart, want 2", f)
	}
	if e, was := fresh.history["default"].eras, old.history["default"].eras; !slices.Equal(e, was) {
		t.Errorf("eras %v after the restart, %v before", e, was)
	}
	if w, was := fresh.history["default"].workFactor(), old.history["default"].workFactor(); w != was {
		t.Errorf("work factor %g after the restart, %g before", w, was)
	}
	fresh.restore(st) // restored twice: nothing counted twice
	if n := len(fresh.history["default"].finish); n != 6 {
		t.Errorf("%d run times after restoring twice; want 6", n)
	}
	// An expired hold is not restored.
	later := trainStore(300)
	later.DeletePod("uid-train-0")
	later.holds = map[string][]heldRoom{}
	later.now = func() time.Time { return time.Unix(2000, 0) }
	later.restore(st)
	if len(later.holds) != 0 {
		t.Errorf("a hold that expired at 1300 was restored at 2000: %v", later.holds)
	}
}

// TestStateIgnoresUnreadableAmounts: a recorded hold whose amount cannot be
// read is dropped, not restored as zero.
func TestStateIgnoresUnreadableAmounts(t *testing.T) {
	s := trainStore(300)
	s.DeletePod("uid-train-0")
	s.holds = map[string][]heldRoom{}
	s.restore(savedState{Holds: map[string][]savedHold{"ns/train": {{Node: "a", Until: 5000,
		Amount: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}}}})
	if len(s.holds) != 0 {
		t.Errorf("restored %v", s.holds)
	}
}

// FuzzRestoreState: whatever JSON the state ConfigMap holds, restoring it
// neither panics nor leaves a queue's history longer than historySize, its
// run times or estimates out of range, or its estimate factor outside the
// bounds core.EstimateFactor keeps.
func FuzzRestoreState(f *testing.F) {
	f.Add(`{"history":{"default":[{"gang":"ns/a","finish":100,"seconds":60,"estimate":30}]}}`)
	f.Add(`{"history":{"q":[{"finish":1,"seconds":9223372036854775807,"estimate":-5},{"finish":-3,"seconds":1,"estimate":1}]}}`)
	f.Add(`{"holds":{"ns/train":[{"node":"a","amount":{"nvidia.com/gpu":"2"},"until":99999}]}}`)
	f.Add(`{"history":{"q":[{"finish":100,"seconds":60,"estimate":30,"arrival":20}]},"eras":{"q":[{"from":-9223372036854775808,"factor":0.5},{"from":20,"factor":2}],"r":[{"from":5,"factor":0}]}}`)
	f.Fuzz(func(t *testing.T, data string) {
		var st savedState
		if json.Unmarshal([]byte(data), &st) != nil {
			return
		}
		s := trainStore(300)
		s.restore(st)
		for queue, r := range s.history {
			if n := len(r.seconds); n > historySize || n != len(r.estimates) || n != len(r.finish) || n != len(r.gangs) || n != len(r.arrivals) {
				t.Fatalf("queue %s: %d run times, %d estimates, %d finishes, %d gangs (at most %d)", queue, n,
					len(r.estimates), len(r.finish), len(r.gangs), historySize)
			}
			for i, secs := range r.seconds {
				if secs <= 0 || secs > maxEstimate || r.estimates[i] < 0 || r.estimates[i] > maxEstimate {
					t.Fatalf("queue %s: run time %d, estimate %d restored", queue, secs, r.estimates[i])
				}
			}
			if f := r.factor(); !(f >= 1e-3 && f <= 1e3) {
				t.Fatalf("queue %s: estimate factor %g", queue, f)
			}
			if !r.eras.Valid() {
				t.Fatalf("queue %s: eras %v", queue, r.eras)
			}
			if w := r.workFactor(); !(w >= 1e-3 && w <= 1e3) {
				t.Fatalf("queue %s: work factor %g", queue, w)
			}
		}
		s.Snapshot() // and the store still builds a snapshot
	})
}

// TestDeletedQueueForgotten: the run times of a queue go with it, from the
// store and from the state a new leader reads, so a cluster whose teams
// come and go does not grow the ConfigMap for ever. (The state keeps the
// run times of a queue it does not know yet: at a new leader's first
// cycles its informers may still be delivering the Queues.)
func TestDeletedQueueForgotten(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	for _, q := range []string{"kept", "gone", "volcano"} {
		s.history[q] = &runTimes{}
		s.history[q].addGang("ns/done", 100, 60, 30, 10)
		s.historyGen[q]++
	}
	s.SetQueue(testQueue("kept"))
	s.SetQueue(testQueue("gone"))
	s.volcanoQueues["volcano"] = testQueue("volcano")

	s.DeleteQueue("gone")
	s.DeleteQueue("volcano") // a Phalanx Queue of that name never existed; Volcano's still does
	if _, ok := s.history["gone"]; ok || s.historyGen["gone"] != 0 {
		t.Errorf("the deleted queue's run times are kept: %+v", s.history["gone"])
	}
	if s.history["volcano"] == nil {
		t.Errorf("the run times of a queue that Volcano still serves were dropped")
	}
	var saved []string
	for q := range s.savedState().History {
		saved = append(saved, q)
	}
	slices.Sort(saved)
	if want := []string{"kept", "volcano"}; !slices.Equal(saved, want) {
		t.Errorf("state saves the run times of %v, want %v", saved, want)
	}
}

// TestStateFitsAConfigMap: with more queues than a ConfigMap holds the
// runs of, each keeps fewer of its latest, and the state stays writable.
func TestStateFitsAConfigMap(t *testing.T) {
	s, err := New(Options{}, fake.NewClientset(), phalanxfake.NewSimpleClientset(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.stateName = "phalanx-state-phalanx"
	for q := range 400 {
		name := fmt.Sprintf("team-%03d", q)
		s.store.SetQueue(testQueue(name))
		s.store.history[name] = &runTimes{}
		for i := range int64(historySize) {
			s.store.history[name].addGang(fmt.Sprintf("%s/a-job-with-a-rather-long-name-%d", name, i), 1_700_000_000+i, 3600+i, 3000, 1_699_990_000+i)
		}
	}
	if full, _ := json.Marshal(s.store.savedState()); len(full) <= stateBudget {
		t.Fatalf("the test's state is %d bytes, within the budget: it tests nothing", len(full))
	}
	s.saveState()
	if n := len(s.lastState); n == 0 || n > stateBudget {
		t.Fatalf("state of %d bytes handed to the writer, want some and at most %d", n, stateBudget)
	}
	var st savedState
	if err := json.Unmarshal(s.lastState, &st); err != nil {
		t.Fatal(err)
	}
	runs := st.History["team-000"]
	if len(runs) == 0 || len(runs) >= historySize || runs[len(runs)-1].Finish != 1_700_000_000+historySize-1 {
		t.Errorf("team-000 keeps %d runs ending %+v; want fewer than %d, the latest among them", len(runs), runs[len(runs)-1:], historySize)
	}
}
