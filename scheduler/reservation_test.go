package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reservationStore: nodes a and b of 8 GPUs; b runs a 4-GPU job started at
// t=100 and estimated to run 900 s (so it ends at 1000); the 16-GPU gang big
// has waited since t=0 in a queue that reserves after 60 s; then a gang with
// no estimate and one that ends in 100 s arrive.
func reservationStore(t *testing.T) *Store {
	t.Helper()
	s := NewStore([]string{"phalanx"})
	after := int32(60)
	q := testQueue(v1alpha1.DefaultQueue)
	q.Spec.ReserveAfterSeconds = &after
	s.SetQueue(q)
	s.SetNode(testNode("a", 8))
	s.SetNode(testNode("b", 8))
	running := testPodGroup("running", 1)
	running.Spec.EstimatedRuntimeSeconds = int64p(900)
	s.SetPodGroup(running)
	s.SetPod(testPod("running-0").Group("running").GPUs(4).On("b", corev1.PodRunning).Ran(100, 0).Obj())
	big := testPodGroup("big", 2)
	big.CreationTimestamp = metav1.Unix(0, 0)
	s.SetPodGroup(big)
	s.SetPod(testPod("big-0").Group("big").GPUs(8).Obj())
	s.SetPod(testPod("big-1").Group("big").GPUs(8).Obj())
	late := func(b *podBuilder) *corev1.Pod {
		p := b.Obj()
		p.CreationTimestamp = metav1.Unix(400, 0)
		return p
	}
	s.SetPod(late(testPod("unknown").GPUs(4)))
	s.SetPod(late(testPod("short").GPUs(4).Annotate(AnnotationEstimatedRuntime, "100s")))
	return s
}

// The core's reservation reaches the adapter: the reserved gang's verdict
// states its expected start as a time, the same every cycle, and its
// PodGroup carries Reserved=True; a gang with a short estimate backfills, one
// without waits.
func TestReservationVerdict(t *testing.T) {
	s := reservationStore(t)
	sched, err := core.New(core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var first verdict
	for _, now := range []int64{500, 501} {
		snap, views := s.Snapshot()
		plan, diag := sched.RunCycle(snap, now)
		if len(plan.Binds) != 1 || plan.Binds[0].Member != "short" {
			t.Fatalf("at %d binds %+v, want only short (backfill)", now, plan.Binds)
		}
		verdicts := map[string]verdict{}
		for _, st := range diag.Pending {
			verdicts[st.Gang] = verdictOf(views[st.Gang], st, now, nil)
		}
		big := verdicts["ns/big"]
		want := "2 node(s) reserved for it; expected to start at 1970-01-01T00:16:40Z"
		if !big.reserved || big.resv != (reservation{nodes: 2, start: 1000}) || !strings.HasSuffix(big.message, want) {
			t.Fatalf("at %d big's verdict %+v, want a reservation of 2 nodes from 1000 and a message ending %q", now, big, want)
		}
		if strings.Contains(big.message, "expected to start in") {
			t.Errorf("big's message %q still counts down", big.message)
		}
		if u := verdicts["ns/unknown#pod"]; u.reserved || !strings.Contains(u.message, "reserved for gang ns/big") {
			t.Errorf("unknown's verdict %+v does not say the nodes are reserved", u)
		}
		if now == 500 {
			first = big
		} else if big != first {
			t.Errorf("big's verdict changed from one cycle to the next:\n%+v\n%+v", first, big)
		}
	}

	v := &gangView{minMember: 2, nPending: 2, podGroup: testPodGroup("big", 2)}
	at := metav1.NewTime(time.Unix(501, 0))
	st := podGroupStatus(v1alpha1.PodGroupStatus{}, v, &first, true, at)
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.PodGroupReserved)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonReserved || !strings.Contains(c.Message, "expected to start at 1970-01-01T00:16:40Z") {
		t.Errorf("Reserved condition %+v, want True with the expected start", c)
	}
	if u := meta.FindStatusCondition(st.Conditions, v1alpha1.PodGroupUnschedulable); u == nil || !strings.Contains(u.Message, "reserved for it") {
		t.Errorf("Unschedulable condition %+v does not mention the reservation", u)
	}
	// Once the gang runs, the reservation is over.
	v.bound, v.nPending, v.nRunning = 2, 0, 2
	st = podGroupStatus(st, v, nil, true, at)
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.PodGroupReserved); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Reserved condition %+v after the gang was scheduled, want False", c)
	}
	// A gang that never held a reservation has no such condition.
	other := podGroupStatus(v1alpha1.PodGroupStatus{}, v, nil, true, at)
	if c := meta.FindStatusCondition(other.Conditions, v1alpha1.PodGroupReserved); c != nil {
		t.Errorf("a gang never reserved carries %+v", c)
	}
}

// Past the expected start (a running gang overran its estimate), the
// message no longer names a time that has gone by.
func TestReservationOverdue(t *testing.T) {
	r := reservation{nodes: 1, start: 100}
	if got := r.text(100); !strings.Contains(got, "as soon as running members past their estimated end finish") {
		t.Errorf("overdue reservation: %q", got)
	}
	// Made ahead of the gang's due time: "by" that time, until it passes.
	ahead := reservation{nodes: 2, start: 100, ahead: true}
	if got, want := ahead.text(40), "2 node(s) reserved for it ahead of its due time; expected to start by 1970-01-01T00:01:40Z"; got != want {
		t.Errorf("reservation ahead: %q, want %q", got, want)
	}
	if got := ahead.text(100); !strings.Contains(got, "as soon as running members past their estimated end finish") {
		t.Errorf("reservation ahead, due: %q", got)
	}
	msg, got, ok := reservationOf(core.GangStatus{Reason: core.ReasonQueueClosed})
	if ok || got != (reservation{}) || msg != "" {
		t.Errorf("a status without a reservation: %q %+v %v", msg, got, ok)
	}
}

// TestReservationSteady: a reservation made ahead keeps the start last
// published while the new one lies within a minute or a sixteenth of the
// time left; a reservation made once due, a larger move, another number of
// nodes, or a start that has passed take the new one.
func TestReservationSteady(t *testing.T) {
	last := &verdict{reserved: true, resv: reservation{nodes: 2, start: 17000, ahead: true}}
	for _, tc := range []struct {
		name string
		r    reservation
		last *verdict
		now  int64
		want int64
	}{
		{"ahead, moved 30 s", reservation{nodes: 2, start: 17030, ahead: true}, last, 1000, 17000},
		{"ahead, moved 1000 s, a sixteenth of 16000 s left", reservation{nodes: 2, start: 18000, ahead: true}, last, 2000, 17000},
		{"ahead, moved 1100 s", reservation{nodes: 2, start: 18100, ahead: true}, last, 2000, 18100},
		{"once due", reservation{nodes: 2, start: 17030}, last, 1000, 17030},
		{"after one once due", reservation{nodes: 2, start: 17030, ahead: true}, &verdict{reserved: true, resv: reservation{nodes: 2, start: 17000}}, 1000, 17030},
		{"other nodes", reservation{nodes: 3, start: 17030, ahead: true}, last, 1000, 17030},
		{"no previous", reservation{nodes: 2, start: 17030, ahead: true}, nil, 1000, 17030},
		{"previous passed", reservation{nodes: 2, start: 17030, ahead: true}, last, 17000, 17030},
	} {
		if got := tc.r.steady(tc.last, tc.now).start; got != tc.want {
			t.Errorf("%s: start %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestNewValidatesOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"negative reserve-after", Options{ReserveAfter: -time.Second}, "negative"},
		{"a level given twice", Options{Topology: []string{"phalanx.dev/rack", "phalanx.dev/rack"}}, "given twice"},
		{"an empty level", Options{Topology: []string{""}}, "empty label key"},
	} {
		if _, err := New(tt.opts, nil, nil, nil, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want one saying %q", tt.name, err, tt.want)
		}
	}
	s, err := New(Options{ReserveAfter: 1500 * time.Millisecond, GPUModelLabel: "example.com/gpu-model"}, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.store.reserving || s.store.gpuModelLabel != "example.com/gpu-model" {
		t.Errorf("store reserving %v, GPU model label %q", s.store.reserving, s.store.gpuModelLabel)
	}
}
