package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	phalanxfake "github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// TestForecastStatus: nodes a and b of 8 GPUs are full with the gang
// "running", started at 500 with an estimate of 900 s (it ends at 1400).
// At 1000, "big" (2 x 8 GPUs, 100 s) waits first in its queue and is
// forecast to start at 1400; "after" (8 GPUs, created later) second, at
// 1500, when big ends. Their PodGroups get status.queuePosition and
// status.expectedStartTime, off the cycle; "running" gets neither.
func TestForecastStatus(t *testing.T) {
	pgs := map[string]*v1alpha1.PodGroup{}
	for _, pg := range []struct {
		name     string
		min      int32
		created  int64
		estimate int64
	}{{"running", 2, 400, 900}, {"big", 2, 600, 100}, {"after", 1, 700, 0}} {
		p := testPodGroup(pg.name, pg.min)
		p.UID = types.UID("uid-pg-" + pg.name)
		p.CreationTimestamp = metav1.Unix(pg.created, 0)
		if pg.estimate > 0 {
			p.Spec.EstimatedRuntimeSeconds = int64p(pg.estimate)
		}
		pgs[pg.name] = p
	}
	pods := []*corev1.Pod{
		testPod("running-0").Group("running").GPUs(8).On("a", corev1.PodRunning).Ran(500, 0).Obj(),
		testPod("running-1").Group("running").GPUs(8).On("b", corev1.PodRunning).Ran(500, 0).Obj(),
		testPod("big-0").Group("big").GPUs(8).Obj(),
		testPod("big-1").Group("big").GPUs(8).Obj(),
		testPod("after-0").Group("after").GPUs(8).Obj(),
	}
	client := phalanxfake.NewSimpleClientset(pgs["running"], pgs["big"], pgs["after"], testQueue(v1alpha1.DefaultQueue))
	kube := fake.NewClientset()
	now := time.Unix(1000, 0)
	s, err := New(Options{ForecastPeriod: time.Minute, Now: func() time.Time { return now }}, kube, client, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.store.SetQueue(testQueue(v1alpha1.DefaultQueue))
	s.store.SetNode(testNode("a", 8))
	s.store.SetNode(testNode("b", 8))
	for _, pg := range pgs {
		s.store.SetPodGroup(pg)
	}
	for _, p := range pods {
		s.store.SetPod(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); s.inflight.Wait() }()
	s.runWriters(ctx)

	s.cycle(ctx) // starts the forecast
	if !s.fc.running {
		t.Fatalf("no forecast started")
	}
	s.cycle(ctx)       // another cycle while it runs starts none
	for s.fc.running { // the loop's part: run what comes to the inbox
		select {
		case f := <-s.inbox:
			f()
		case <-time.After(10 * time.Second):
			t.Fatalf("the forecast never reported")
		}
	}
	s.cycle(ctx) // publishes it
	type shown struct {
		position int32
		start    int64
	}
	status := func(name string) shown {
		pg, err := client.SchedulingV1alpha1().PodGroups("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := shown{position: pg.Status.QueuePosition, start: -1}
		if pg.Status.ExpectedStartTime != nil {
			got.start = pg.Status.ExpectedStartTime.Unix()
		}
		return got
	}
	want := map[string]shown{"big": {1, 1400}, "after": {2, 1500}, "running": {0, -1}}
	waitFor(t, func() bool {
		for name, w := range want {
			if status(name) != w {
				return false
			}
		}
		return true
	}, func() string {
		return "statuses " + fmtShown(status("big")) + " " + fmtShown(status("after")) + " " + fmtShown(status("running"))
	})

	// No forecast before the period has passed, however many cycles.
	now = time.Unix(1030, 0)
	s.cycle(ctx)
	if s.fc.running {
		t.Fatalf("a forecast started before its period passed")
	}

	// running ends at 1460, a minute after its estimate: big, forecast
	// at 1400, starts 60 s late, and the metric says so.
	now = time.Unix(1460, 0)
	for _, p := range pods[:2] {
		s.store.DeletePod(p.UID)
	}
	s.cycle(ctx)
	if got, want := gathered(t, s.metrics, "phalanx_queue_start_forecast_error_seconds"),
		[]string{"direction=late,queue=default count 1 sum 60"}; !cmp.Equal(got, want) {
		t.Errorf("start forecast errors %v, want %v", got, want)
	}
}

// TestStartForecastError: a gang's start is weighed against the expected
// start of the first forecast that saw it waiting, whatever later ones
// said; gangs placed by the cycle a forecast read, gangs never forecast to
// start and gangs that left are not weighed.
func TestStartForecastError(t *testing.T) {
	s := &Scheduler{metrics: NewMetrics()}
	s.applyForecast(core.Forecast{Gangs: []core.GangForecast{
		{Gang: "placed", Queue: "q", Position: 1, Start: 1000, Starts: true},
		{Gang: "late", Queue: "q", Position: 2, Start: 2000, Starts: true},
		{Gang: "early", Queue: "q", Position: 3, Start: 5000, Starts: true},
		{Gang: "never", Queue: "q", Position: 4},
		{Gang: "gone", Queue: "r", Position: 1, Start: 3000, Starts: true},
	}}, 1000)
	s.applyForecast(core.Forecast{Gangs: []core.GangForecast{
		{Gang: "late", Queue: "q", Position: 1, Start: 2500, Starts: true},
		{Gang: "early", Queue: "q", Position: 2, Start: 4500, Starts: true},
		{Gang: "never", Queue: "q", Position: 3, Start: 9000, Starts: true},
	}}, 1060)
	if want := map[string]int64{"late": 2000, "early": 5000, "never": 0}; !cmp.Equal(s.fc.first, want) {
		t.Errorf("first expected starts %v, want %v", s.fc.first, want)
	}
	for _, g := range []struct {
		key string
		at  int64
	}{{"placed", 1000}, {"late", 2600}, {"early", 4000}, {"never", 3000}, {"gone", 3100}, {"late", 2700}} {
		s.observeStart(g.key, "q", g.at)
	}
	if got, want := gathered(t, s.metrics, "phalanx_queue_start_forecast_error_seconds"),
		[]string{"direction=early,queue=q count 1 sum 1000", "direction=late,queue=q count 1 sum 600"}; !cmp.Equal(got, want) {
		t.Errorf("start forecast errors %v, want %v", got, want)
	}
	if len(s.fc.first) != 0 {
		t.Errorf("gangs still remembered after their start: %v", s.fc.first)
	}
}

func fmtShown[T any](v T) string { return fmt.Sprintf("%+v", v) }

func waitFor(t *testing.T, ok func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestApplyForecast: gangs the forecast starts at its own time were placed
// by the cycle it read and leave their queue, the others move up; an
// expected start that moves by less than the slack keeps its old value, so
// its status is not rewritten.
func TestApplyForecast(t *testing.T) {
	s := &Scheduler{}
	s.applyForecast(core.Forecast{Gangs: []core.GangForecast{
		{Gang: "placed", Queue: "q", Position: 1, Start: 1000, Starts: true},
		{Gang: "next", Queue: "q", Position: 2, Start: 2000, Starts: true},
		{Gang: "never", Queue: "q", Position: 3},
		{Gang: "other", Queue: "r", Position: 1, Start: 1000 + 16*3600, Starts: true},
	}}, 1000)
	want := map[string]forecastEntry{"next": {1, 2000, 0}, "never": {2, 0, 0}, "other": {1, 1000 + 16*3600, 0}}
	if diff := cmp.Diff(want, s.fc.byGang, cmp.AllowUnexported(forecastEntry{})); diff != "" {
		t.Errorf("first forecast (-want +got):\n%s", diff)
	}
	// 60 s later: next moves by 60 s (the least slack), other by 59 min
	// (under a sixteenth of 16 h); never gets a start.
	s.applyForecast(core.Forecast{Gangs: []core.GangForecast{
		{Gang: "next", Queue: "q", Position: 1, Start: 2060, Starts: true},
		{Gang: "never", Queue: "q", Position: 2, Start: 9000, Starts: true},
		{Gang: "other", Queue: "r", Position: 1, Start: 1000 + 16*3600 + 59*60, Starts: true},
	}}, 1060)
	want = map[string]forecastEntry{"next": {1, 2000, 0}, "never": {2, 9000, 0}, "other": {1, 1000 + 16*3600, 0}}
	if diff := cmp.Diff(want, s.fc.byGang, cmp.AllowUnexported(forecastEntry{})); diff != "" {
		t.Errorf("second forecast (-want +got):\n%s", diff)
	}
	// Past the slack: rewritten.
	s.applyForecast(core.Forecast{Gangs: []core.GangForecast{{Gang: "next", Queue: "q", Position: 1, Start: 2100, Starts: true}}}, 1060)
	if got := s.fc.byGang["next"]; got != (forecastEntry{1, 2100, 0}) {
		t.Errorf("next moved by 100 s, past the slack of 65: %+v, want the new start", got)
	}
}

// TestApplyForecastReserved: the time nodes are forecast to be reserved for
// a gang is kept while it lies ahead of the forecast's time (a gang
// reserved at that time holds its reservation already), and like the start
// it is rewritten only past the slack.
func TestApplyForecastReserved(t *testing.T) {
	s := &Scheduler{}
	s.applyForecast(core.Forecast{Gangs: []core.GangForecast{
		{Gang: "later", Queue: "q", Position: 1, Start: 9000, Starts: true, Reserved: 5000, Reserves: true},
		{Gang: "now", Queue: "r", Position: 1, Start: 3000, Starts: true, Reserved: 1000, Reserves: true},
		{Gang: "never", Queue: "s", Position: 1, Start: 2000, Starts: true},
	}}, 1000)
	want := map[string]forecastEntry{"later": {1, 9000, 5000}, "now": {1, 3000, 0}, "never": {1, 2000, 0}}
	if diff := cmp.Diff(want, s.fc.byGang, cmp.AllowUnexported(forecastEntry{})); diff != "" {
		t.Errorf("first forecast (-want +got):\n%s", diff)
	}
	// 60 s later: later's reservation moves by 4 min, under a sixteenth of
	// the 70 min left; then by 10 min, past it.
	s.applyForecast(core.Forecast{Gangs: []core.GangForecast{
		{Gang: "later", Queue: "q", Position: 1, Start: 9000, Starts: true, Reserved: 5240, Reserves: true}}}, 1060)
	if got := s.fc.byGang["later"]; got != (forecastEntry{1, 9000, 5000}) {
		t.Errorf("reservation moved by 240 s: %+v, want the old one kept", got)
	}
	s.applyForecast(core.Forecast{Gangs: []core.GangForecast{
		{Gang: "later", Queue: "q", Position: 1, Start: 9000, Starts: true, Reserved: 5600, Reserves: true}}}, 1060)
	if got := s.fc.byGang["later"]; got != (forecastEntry{1, 9000, 5600}) {
		t.Errorf("reservation moved by 600 s: %+v, want the new one", got)
	}
}

// TestForecastOfReserved: a reserved gang's expected start is its
// reservation's while that lies ahead, with or without a forecast; then
// the forecast's. A reserved gang expects no reservation. A reservation
// made ahead of the gang's due time starts then at the latest: a forecast
// that starts the gang sooner wins, a later one does not.
func TestForecastOfReserved(t *testing.T) {
	resv := &verdict{reserved: true, resv: reservation{nodes: 2, start: 5000}}
	ahead := &verdict{reserved: true, resv: reservation{nodes: 2, start: 5000, ahead: true}}
	for _, tc := range []struct {
		name     string
		forecast *forecastEntry // nil: no forecast yet
		last     *verdict
		now      int64
		want     forecastEntry
	}{
		{"no forecast", nil, resv, 1000, forecastEntry{0, 5000, 0}},
		{"with a forecast", &forecastEntry{1, 5040, 0}, resv, 1000, forecastEntry{1, 5000, 0}},
		{"reservation due", &forecastEntry{1, 5040, 0}, resv, 5000, forecastEntry{1, 5040, 0}},
		{"not reserved", &forecastEntry{1, 5040, 0}, nil, 1000, forecastEntry{1, 5040, 0}},
		{"not reserved yet", &forecastEntry{1, 5040, 2000}, nil, 1000, forecastEntry{1, 5040, 2000}},
		{"reserved already", &forecastEntry{1, 5040, 2000}, resv, 1000, forecastEntry{1, 5000, 0}},
		{"expected reservation passed", &forecastEntry{1, 5040, 2000}, nil, 2000, forecastEntry{1, 5040, 0}},
		{"reserved ahead, forecast sooner", &forecastEntry{1, 3000, 0}, ahead, 1000, forecastEntry{1, 3000, 0}},
		{"reserved once due, forecast sooner", &forecastEntry{1, 3000, 0}, resv, 1000, forecastEntry{1, 5000, 0}},
		{"reserved ahead, forecast later", &forecastEntry{1, 5040, 0}, ahead, 1000, forecastEntry{1, 5000, 0}},
		{"reserved ahead, not forecast to start", &forecastEntry{1, 0, 0}, ahead, 1000, forecastEntry{1, 5000, 0}},
	} {
		s := &Scheduler{}
		if tc.forecast != nil {
			s.fc.byGang = map[string]forecastEntry{"big": *tc.forecast}
		}
		if got := s.forecastOf("big", tc.last, tc.now); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
