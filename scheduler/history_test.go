package scheduler

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testQueue(name string) *v1alpha1.Queue {
	return &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.QueueSpec{Weight: 1}}
}

func TestRunTimesP90(t *testing.T) {
	var r *runTimes
	if got := r.p90(); got != 0 {
		t.Errorf("no history: %d, want 0", got)
	}
	r = &runTimes{}
	for i := int64(1); i <= 4; i++ {
		r.add(i, i*100)
	}
	if got := r.p90(); got != 0 {
		t.Errorf("4 gangs: %d, want 0 (fewer than %d)", got, historyMin)
	}
	r.add(5, 500)
	if got := r.p90(); got != 500 {
		t.Errorf("5 gangs of 100..500 s: p90 %d, want 500", got)
	}
	// 55 more: the p90 reads only the latest 20 finishes, run times
	// 4100..6000 s; 50 are kept, for the estimate factor.
	for i := int64(6); i <= 60; i++ {
		r.add(i, i*100)
	}
	if got, n := r.p90(), len(r.seconds); got != 5800 || n != historySize {
		t.Errorf("latest 20 of 4100..6000 s: p90 %d over %d kept, want 5800 over %d", got, n, historySize)
	}
	// A gang that finished before all of them is dropped at once.
	r.add(0, 1_000_000)
	if got, n := r.p90(), len(r.seconds); got != 5800 || n != historySize {
		t.Errorf("after an old finish: p90 %d over %d, want 5800 over %d", got, n, historySize)
	}
}

func (b *podBuilder) Ran(start, finish int64) *podBuilder {
	st := metav1.Unix(start, 0)
	b.p.Status.StartTime = &st
	if finish > 0 {
		b.p.Status.Phase = corev1.PodSucceeded
		b.p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.Unix(finish, 0)}}}}
	}
	return b
}

// A gang of a queue with no estimate of its own gets the p90 run time of
// that queue's latest completed gangs, once five have completed; a gang that
// did not succeed whole teaches nothing.
func TestEstimateFromHistory(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetNode(testNode("n1", 8))
	queued := func(b *podBuilder) *corev1.Pod {
		p := b.Obj()
		p.Annotations = map[string]string{AnnotationQueue: "research"}
		return p
	}
	s.SetPod(queued(testPod("waiting").GPUs(1)))
	estimate := func() int64 {
		t.Helper()
		snap, _ := s.Snapshot()
		g := gangByID(snap, "ns/waiting#pod")
		if g == nil {
			t.Fatal("the waiting gang is not in the snapshot")
		}
		return g.Estimate
	}
	for i := int64(0); i < 4; i++ {
		// Two members each: the run time spans the first start to the last finish.
		s.SetPod(queued(testPod("done-"+string(rune('a'+i))+"-0").ACK("done-"+string(rune('a'+i)), "2").On("n1", corev1.PodSucceeded).Ran(1000, 1000+60*(i+1))))
		s.SetPod(queued(testPod("done-"+string(rune('a'+i))+"-1").ACK("done-"+string(rune('a'+i)), "2").On("n1", corev1.PodSucceeded).Ran(1010, 1000+60*(i+1)+5)))
	}
	if got := estimate(); got != 0 {
		t.Errorf("after 4 gangs: estimate %d, want 0", got)
	}
	s.SetPod(queued(testPod("failed").Ran(1000, 9000).On("n1", corev1.PodFailed)))
	s.SetPod(queued(testPod("other-queue").On("n1", corev1.PodSucceeded).Ran(1000, 9000)))
	s.pods["uid-other-queue"].pod.Annotations[AnnotationQueue] = "elsewhere"
	if got := estimate(); got != 0 {
		t.Errorf("after a failed gang and one of another queue: estimate %d, want 0", got)
	}
	// The fifth, with no container times: the store's observations stand in.
	s.now = func() time.Time { return time.Unix(2000, 0) }
	s.SetPod(queued(testPod("late").On("n1", corev1.PodRunning)))
	s.now = func() time.Time { return time.Unix(2500, 0) }
	s.SetPod(queued(testPod("late").On("n1", corev1.PodSucceeded)))
	estimate()                         // records the completion
	if got := estimate(); got != 500 { // 65, 125, 185, 245, 500
		t.Errorf("after 5 gangs: estimate %d, want 500", got)
	}
	if got := len(s.history["research"].seconds); got != 5 {
		t.Errorf("research history holds %d run times, want 5 (each gang once)", got)
	}
}

// Releases: members of our gangs with an estimate give back their request
// and pod slot at start + estimate, passed or not, or when their grace
// period ends if they are being deleted; members with no estimate and pods
// of other schedulers are not counted on; nothing is computed when nothing
// reserves.
func TestReleases(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.now = func() time.Time { return time.Unix(5000, 0) }
	s.reserving = true
	s.SetNode(testNode("a", 8))
	s.SetNode(testNode("b", 8))
	pg := testPodGroup("train", 2)
	pg.Spec.EstimatedRuntimeSeconds = int64p(600)
	s.SetPodGroup(pg)
	s.SetPod(testPod("train-0").Group("train").GPUs(4).On("b", corev1.PodRunning).Ran(1000, 0).Obj())
	s.SetPod(testPod("train-1").Group("train").GPUs(2).On("a", corev1.PodPending).Obj()) // bound, not started
	evicted := testPod("train-2").Group("train").GPUs(1).On("b", corev1.PodRunning).Ran(1000, 0).Obj()
	evicted.DeletionTimestamp = &metav1.Time{Time: time.Unix(5030, 0)}
	s.SetPod(evicted)
	s.SetPod(testPod("unknown").GPUs(1).On("a", corev1.PodRunning).Ran(1000, 0).Obj())
	s.SetPod(testPod("theirs").Scheduler("default-scheduler").Deadline(60).GPUs(1).On("a", corev1.PodRunning).Ran(1000, 0).Obj())
	s.SetPod(testPod("done").Deadline(60).GPUs(1).On("a", corev1.PodSucceeded).Ran(1000, 1030).Obj())
	snap, _ := s.Snapshot()
	gpu := snap.Resources.Index("nvidia.com/gpu")
	amount := func(gpus int64) core.Vector {
		var v core.Vector
		v[core.Pods], v[gpu] = 1, gpus
		return v
	}
	want := []core.Release{
		{Node: 1, Amount: amount(4), At: 1600, Queue: "default"},
		{Node: 1, Amount: amount(1), At: 5030, Queue: "default"},
		{Node: 0, Amount: amount(2), At: 5600, Queue: "default"},
	}
	if diff := cmp.Diff(want, snap.Releases); diff != "" {
		t.Errorf("releases (-want +got):\n%s", diff)
	}
	s.reserving = false
	if snap, _ = s.Snapshot(); len(snap.Releases) != 0 {
		t.Errorf("%d releases while nothing reserves, want none", len(snap.Releases))
	}
}

// A queue whose gangs ran twice the estimates they declared gets its
// declared estimates doubled, once five such gangs have completed: the
// waiting gang's estimate, and the release of a running member, which
// moves when the factor does. Gangs that declared nothing, and the other
// queues, are not counted; with the correction off, estimates are as
// declared.
func TestEstimateCorrection(t *testing.T) {
	for _, correcting := range []bool{true, false} {
		s := NewStore([]string{"phalanx"})
		s.now = func() time.Time { return time.Unix(5000, 0) }
		s.reserving, s.correcting = true, correcting
		s.SetNode(testNode("n1", 8))
		s.SetQueue(testQueue("research"))
		s.SetQueue(testQueue("elsewhere"))
		pod := func(b *podBuilder, queue, estimate string) *corev1.Pod {
			p := b.Obj()
			p.Annotations = map[string]string{AnnotationQueue: queue}
			if estimate != "" {
				p.Annotations[AnnotationEstimatedRuntime] = estimate
			}
			return p
		}
		s.SetPod(pod(testPod("waiting").GPUs(1), "research", "1000"))
		s.SetPod(pod(testPod("running").GPUs(1).On("n1", corev1.PodRunning).Ran(4000, 0), "research", "600"))
		check := func(when string, factor int64) {
			t.Helper()
			snap, _ := s.Snapshot()
			if !correcting {
				factor = 1
			}
			if g := gangByID(snap, "ns/waiting#pod"); g == nil || g.Estimate != 1000*factor {
				t.Errorf("correcting %v, %s: waiting gang %+v, want estimate %d", correcting, when, g, 1000*factor)
			}
			if len(snap.Releases) != 1 || snap.Releases[0].At != 4000+600*factor {
				t.Errorf("correcting %v, %s: releases %+v, want one at %d", correcting, when, snap.Releases, 4000+600*factor)
			}
		}
		check("before anything completed", 1)
		for i := int64(0); i < 4; i++ {
			s.SetPod(pod(testPod("done-"+string(rune('a'+i))).On("n1", corev1.PodSucceeded).Ran(1000, 1600), "research", "300"))
			// Declared nothing, ran 100 times as long as those: not counted.
			s.SetPod(pod(testPod("blind-"+string(rune('a'+i))).On("n1", corev1.PodSucceeded).Ran(1000, 31000), "research", ""))
			// Another queue's, ran as declared.
			s.SetPod(pod(testPod("other-"+string(rune('a'+i))).On("n1", corev1.PodSucceeded).Ran(1000, 1300), "elsewhere", "300"))
		}
		check("after four that declared an estimate", 1)
		s.SetPod(pod(testPod("done-e").On("n1", corev1.PodSucceeded).Ran(1000, 1600), "research", "300"))
		s.Snapshot() // records the completion
		check("after five", 2)
		// A sixth ran four times its estimate: the median, hence the
		// factor, stays 2, but in sum the queue's gangs ran 4,200 s
		// against 3,600 s of corrected estimates, which the backlog
		// counts (core.WorkFactor).
		s.SetPod(pod(testPod("done-f").On("n1", corev1.PodSucceeded).Ran(1000, 2200), "research", "300"))
		s.Snapshot() // records the completion
		check("after six", 2)
		snap, _ := s.Snapshot()
		want := map[string]float64{"research": 4200.0 / 3600, "elsewhere": 1} // elsewhere: four, too few
		// Over the corrected estimates research's ratios are five 1s and a
		// 2: the 90th percentile (the 6th of 6) is 2.
		overrun := map[string]float64{"research": 2, "elsewhere": 1}
		if !correcting {
			want = map[string]float64{"research": 0, "elsewhere": 0}
			overrun = want
		}
		found := 0
		for _, q := range snap.Queues {
			if w, ok := want[q.Name]; ok {
				found++
				if math.Abs(q.WorkFactor-w) > 1e-12 {
					t.Errorf("correcting %v: queue %s's work factor %g, want %g", correcting, q.Name, q.WorkFactor, w)
				}
				if o := overrun[q.Name]; math.Abs(q.OverrunFactor-o) > 1e-12 {
					t.Errorf("correcting %v: queue %s's overrun factor %g, want %g", correcting, q.Name, q.OverrunFactor, o)
				}
			}
		}
		if found != 2 {
			t.Errorf("correcting %v: %d of the queues research and elsewhere in the snapshot, want both", correcting, found)
		}
	}
}

// A queue that padded its estimates twice over (ratios 0.5) and then halves
// them (ratios 2), as sim.TestEstimatesCorrectedByEra: once the new habit's
// gangs outnumber the old in its record, the factor moves to 2 for the gangs
// that arrived from the first of them on (core.FactorEras). A gang that
// arrived before, still waiting, keeps the factor of its time, as does the
// expected end of one that runs, and its view is not even copied again.
func TestEstimateCorrectionByEra(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.now = func() time.Time { return time.Unix(5000, 0) }
	s.reserving, s.correcting = true, true
	s.SetNode(testNode("n1", 8))
	s.SetQueue(testQueue("research"))
	pod := func(b *podBuilder, created int64, estimate string) *corev1.Pod {
		p := b.Obj()
		p.CreationTimestamp = metav1.Unix(created, 0)
		p.Annotations = map[string]string{AnnotationQueue: "research", AnnotationEstimatedRuntime: estimate}
		return p
	}
	for i := range int64(5) {
		s.SetPod(pod(testPod(fmt.Sprintf("padded-%d", i)).On("n1", corev1.PodSucceeded).Ran(1000, 1300), 100+i, "600"))
	}
	s.SetPod(pod(testPod("old").GPUs(1), 110, "1000"))
	s.SetPod(pod(testPod("old-run").GPUs(1).On("n1", corev1.PodRunning).Ran(4000, 0), 120, "600"))
	s.Snapshot() // records the completions
	check := func(when string, old, new, release int64) {
		t.Helper()
		snap, _ := s.Snapshot()
		if g := gangByID(snap, "ns/old#pod"); g == nil || g.Estimate != old {
			t.Errorf("%s: the gang that arrived before the change %+v, want estimate %d", when, g, old)
		}
		if g := gangByID(snap, "ns/new#pod"); new > 0 && (g == nil || g.Estimate != new) {
			t.Errorf("%s: the gang that arrived after the change %+v, want estimate %d", when, g, new)
		}
		if len(snap.Releases) != 1 || snap.Releases[0].At != release {
			t.Errorf("%s: releases %+v, want one at %d", when, snap.Releases, release)
		}
	}
	check("padded", 500, 0, 4300)
	s.SetPod(pod(testPod("new").GPUs(1), 210, "1000"))
	oldCache := s.gangs["ns/old#pod"].cache
	estimates := oldCache.estimates
	for i := range int64(6) {
		s.SetPod(pod(testPod(fmt.Sprintf("halved-%d", i)).On("n1", corev1.PodSucceeded).Ran(1000, 1300), 200+i, "150"))
	}
	s.Snapshot() // records the completions
	check("halved", 500, 2000, 4300)
	r := s.history["research"]
	if r.factor() != 2 || r.factorAt(110) != 0.5 || r.factorAt(200) != 2 {
		t.Errorf("factor %g now, %g for a gang that arrived at 110, %g at 200; want 2, 0.5, 2 (eras %v)",
			r.factor(), r.factorAt(110), r.factorAt(200), r.eras)
	}
	if oldCache.estimates != estimates {
		t.Errorf("the view of the gang whose era kept its factor was corrected again %d times", oldCache.estimates-estimates)
	}
}
