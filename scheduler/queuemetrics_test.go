package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	phalanxfake "github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

// gathered returns the series of the metric name as "label=value,...
// value" lines, sorted.
func gathered(t *testing.T, m *Metrics, name string) []string {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			var v float64
			switch {
			case s.Gauge != nil:
				v = s.GetGauge().GetValue()
			case s.Counter != nil:
				v = s.GetCounter().GetValue()
			case s.Histogram != nil:
				h := s.GetHistogram()
				out = append(out, strings.Join(labels, ",")+" count "+strconv.FormatUint(h.GetSampleCount(), 10)+
					" sum "+strconv.FormatFloat(h.GetSampleSum(), 'g', -1, 64))
				continue
			}
			out = append(out, strings.Join(labels, ",")+" "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

// TestQueueMetrics: after cycles, each queue's pending and running gangs,
// its allocated resources, its admission waits and its estimate, work and
// overrun factors are exported, and a queue that goes loses its series, its
// histograms and counters among them.
func TestQueueMetrics(t *testing.T) {
	queueA := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "qa"}, Spec: v1alpha1.QueueSpec{Weight: 1}}
	queueB := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "qb"}, Spec: v1alpha1.QueueSpec{Weight: 1}}
	fits := testPodGroup("fits", 2)
	fits.Spec.Queue = "a"
	big := testPodGroup("big", 2)
	big.Spec.Queue = "b"
	pods := []k8sruntime.Object{
		testPod("fits-0").Group("fits").GPUs(2).Obj(), testPod("fits-1").Group("fits").GPUs(2).Obj(),
		testPod("big-0").Group("big").GPUs(8).Obj(), testPod("big-1").Group("big").GPUs(8).Obj(),
	}
	m := NewMetrics()
	s, err := New(Options{Now: func() time.Time { return time.Unix(110, 0) }, CorrectEstimates: true}, fake.NewClientset(pods...),
		phalanxfake.NewSimpleClientset(queueA, queueB, fits, big), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.store.history["a"] = &runTimes{}
	// a's latest gangs ran 1.5 times their estimates but one, which ran 3
	// times: the median is 1.5, the sum 1,800 s against 1,000 s of
	// estimates, 1.2 times 1.5; over the corrected estimates the ratios are
	// 1, 1, 1, 1 and 2, whose 90th percentile is 2.
	for i := range int64(4) {
		s.store.history["a"].addGang(fmt.Sprintf("ns/done-%d", i), i, 300, 200, 0)
	}
	s.store.history["a"].addGang("ns/done-4", 4, 600, 200, 0)
	s.store.SetNode(testNode("n0", 8))
	s.store.SetQueue(queueA)
	s.store.SetQueue(queueB)
	s.store.SetPodGroup(fits)
	s.store.SetPodGroup(big)
	for _, p := range pods {
		s.store.SetPod(p.(*corev1.Pod))
	}
	ctx := context.Background()
	s.cycle(ctx) // fits is placed (its binds wait: no call workers run)
	s.cycle(ctx) // and counts as running
	check := func(name string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, gathered(t, m, name)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	check("phalanx_queue_pending_gangs", "queue=a 0", "queue=b 1")
	check("phalanx_queue_running_gangs", "queue=a 1", "queue=b 0")
	check("phalanx_queue_allocated", "queue=a,resource=nvidia.com/gpu 4", "queue=a,resource=pods 2")
	// 8 GPUs between a (holds 4 and 2 pod slots, asks nothing more) and b
	// (asks 16; a waiting member's request has no pod slot), equal weights:
	// a deserves what it demands, b the 4 GPUs left.
	check("phalanx_queue_deserved", "queue=a,resource=nvidia.com/gpu 4", "queue=a,resource=pods 2",
		"queue=b,resource=nvidia.com/gpu 4")
	// fits arrived with its PodGroup at 50 and was placed at 110.
	check("phalanx_queue_admission_wait_seconds", "queue=a count 1 sum 60")
	check("phalanx_queue_estimate_factor", "queue=a 1.5", "queue=b 1")
	check("phalanx_queue_work_factor", "queue=a 1.2", "queue=b 1")
	check("phalanx_queue_overrun_factor", "queue=a 2", "queue=b 1")

	// b's histograms and counters, had it any, go with it too.
	m.QueueAdmissionWait.WithLabelValues("b").Observe(5)
	m.QueueStartForecastError.WithLabelValues("b", "late").Observe(60)
	m.QueueEvictedPods.WithLabelValues("b", "reclaim").Inc()
	m.QueueGPUSecondsLost.WithLabelValues("b").Add(8)
	s.store.DeleteQueue("b")
	s.cycle(ctx)
	check("phalanx_queue_admission_wait_seconds", "queue=a count 1 sum 60")
	check("phalanx_queue_start_forecast_error_seconds")
	check("phalanx_queue_evicted_pods_total")
	check("phalanx_queue_preempted_gpu_seconds_total")
	check("phalanx_queue_pending_gangs", "queue=a 0")
	check("phalanx_queue_running_gangs", "queue=a 1")
	check("phalanx_queue_estimate_factor", "queue=a 1.5")
	check("phalanx_queue_work_factor", "queue=a 1.2")
	check("phalanx_queue_overrun_factor", "queue=a 2")
}

// TestEvictionMetrics: the pods of a gang evicted for preemption count
// against their queue, with the GPU time they had run.
func TestEvictionMetrics(t *testing.T) {
	s, m, ctx := preemptTrain(t, false)
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		s.drain() // the loop's part: the accepted evictions' counts
		return len(gathered(t, m, "phalanx_queue_evicted_pods_total")) > 0 &&
			gathered(t, m, "phalanx_queue_evicted_pods_total")[0] == "kind=preempt,queue=default 2", nil
	})
	if err != nil {
		t.Fatalf("evicted pods: %v", gathered(t, m, "phalanx_queue_evicted_pods_total"))
	}
	// Two pods of 2 GPUs, each bound for 600 s.
	if got, want := gathered(t, m, "phalanx_queue_preempted_gpu_seconds_total"), []string{"queue=default 2400"}; !cmp.Equal(got, want) {
		t.Errorf("GPU time lost %v, want %v", got, want)
	}
}

// TestMetricsDocumented: docs/metrics.md names every metric the scheduler
// registers.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	names := registeredMetrics(t)
	for _, name := range names {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/metrics.md does not document %s", name)
		}
	}
}

// registeredMetrics are the names of the phalanx_ metrics NewMetrics
// registers.
func registeredMetrics(t *testing.T) []string {
	t.Helper()
	m := NewMetrics()
	// Vectors export nothing until a series exists: give each one.
	m.PendingGangs.WithLabelValues("x")
	m.StatusWrites.WithLabelValues("x", "y")
	m.Evictions.WithLabelValues("x", "y")
	m.UnreadableObjects.WithLabelValues("x")
	m.QueuePendingGangs.WithLabelValues("x")
	m.QueueRunningGangs.WithLabelValues("x")
	m.QueueAllocated.WithLabelValues("x", "y")
	m.QueueDeserved.WithLabelValues("x", "y")
	m.QueueAdmissionWait.WithLabelValues("x")
	m.QueueStartForecastError.WithLabelValues("x", "y")
	m.QueueEvictedPods.WithLabelValues("x", "y")
	m.QueueGPUSecondsLost.WithLabelValues("x")
	m.QueueEstimateFactor.WithLabelValues("x")
	m.QueueWorkFactor.WithLabelValues("x")
	m.QueueOverrunFactor.WithLabelValues("x")
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		if name := f.GetName(); strings.HasPrefix(name, "phalanx_") {
			names = append(names, name)
		}
	}
	// Every metric of the struct must have been gathered: a vector not
	// given a series above would be missed.
	collectors := 0
	typ := reflect.TypeOf(*m)
	for i := 0; i < typ.NumField(); i++ {
		if typ.Field(i).Type.Implements(reflect.TypeOf((*prometheus.Collector)(nil)).Elem()) && typ.Field(i).Name != "Registry" {
			collectors++
		}
	}
	if len(names) != collectors {
		t.Fatalf("gathered %d phalanx_ metrics, but Metrics has %d: give every vector a series in registeredMetrics", len(names), collectors)
	}
	return names
}

// TestDashboardQueries: every query of the Grafana dashboard in deploy/
// names metrics the scheduler exports, and the dashboard shows every
// per-queue metric.
func TestDashboardQueries(t *testing.T) {
	data, err := os.ReadFile("../deploy/grafana/phalanx-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	exported := map[string]bool{}
	for _, name := range registeredMetrics(t) {
		exported[name] = true
	}
	used := map[string]bool{}
	metricName := regexp.MustCompile(`phalanx_[a-z_]+`)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			for _, name := range metricName.FindAllString(target.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if trimmed, ok := strings.CutSuffix(name, suffix); ok && exported[trimmed] {
						base = trimmed
					}
				}
				if !exported[base] {
					t.Errorf("panel %q queries %s, which the scheduler does not export", p.Title, name)
				}
				used[base] = true
			}
		}
	}
	for name := range exported {
		if strings.HasPrefix(name, "phalanx_queue_") && !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
}

// TestEvictionOfAGonePod: a victim that is gone from the API server when
// its eviction is posted counts as gone, and not against its queue: no run
// time was thrown away for the preemptor.
func TestEvictionOfAGonePod(t *testing.T) {
	s, m, ctx := preemptTrain(t, true)
	want := []string{"kind=preempt,result=gone 1", "kind=preempt,result=ok 1"}
	wantPods := []string{"kind=preempt,queue=default 1"}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		s.drain()
		return cmp.Equal(gathered(t, m, "phalanx_evictions_total"), want) &&
			cmp.Equal(gathered(t, m, "phalanx_queue_evicted_pods_total"), wantPods), nil
	})
	if err != nil {
		t.Fatalf("evictions %v, want %v; evicted pods %v, want %v", gathered(t, m, "phalanx_evictions_total"), want,
			gathered(t, m, "phalanx_queue_evicted_pods_total"), wantPods)
	}
	if got, want := gathered(t, m, "phalanx_queue_preempted_gpu_seconds_total"), []string{"queue=default 1200"}; !cmp.Equal(got, want) {
		t.Errorf("GPU time lost %v, want %v", got, want)
	}
}

// TestLateRefusalForgotten: a refused eviction whose answer comes back
// after its pod and its preemptor went leaves nothing behind.
func TestLateRefusalForgotten(t *testing.T) {
	s, err := New(Options{Preemption: true}, fake.NewClientset(), phalanxfake.NewSimpleClientset(), NewMetrics(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.store.SetQueue(testQueue("default"))
	s.store.SetNode(testNode("a", 4))
	s.store.EvictionRefused("uid-gone", "ns/placed-and-gone", "refused by a PodDisruptionBudget")
	s.cycle(context.Background())
	if len(s.store.refused) != 0 || len(s.store.refusals) != 0 {
		t.Errorf("after a cycle: refused %v, refusals %v; want both empty", s.store.refused, s.store.refusals)
	}
}

// TestEvictionAfterItsQueueWent: an eviction accepted after its queue was
// deleted does not bring back the queue's series, which went with it.
func TestEvictionAfterItsQueueWent(t *testing.T) {
	s, m, ctx := preemptTrain(t, false)
	s.store.DeleteQueue("default") // before the loop hears of the evictions
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cmp.Equal(gathered(t, m, "phalanx_evictions_total"), []string{"kind=preempt,result=ok 2"}), nil
	})
	if err != nil {
		t.Fatalf("evictions %v, want 2 accepted", gathered(t, m, "phalanx_evictions_total"))
	}
	s.drain()
	for _, name := range []string{"phalanx_queue_evicted_pods_total", "phalanx_queue_preempted_gpu_seconds_total"} {
		if got := gathered(t, m, name); len(got) > 0 {
			t.Errorf("%s has series %v of a deleted queue", name, got)
		}
	}
}

// preemptTrain runs a cycle in which urgent, of higher priority, preempts
// train, a gang of two pods of 2 GPUs bound since 1000 on nodes a and b, at
// 1600; with gone, train-1 is gone from the API server already. The call
// workers run until the test ends.
func preemptTrain(t *testing.T, gone bool) (*Scheduler, *Metrics, context.Context) {
	t.Helper()
	train0 := testPod("train-0").Group("train").GPUs(2).On("a", corev1.PodRunning).Obj()
	train1 := testPod("train-1").Group("train").GPUs(2).On("b", corev1.PodRunning).Obj()
	urgent := testPod("urgent").GPUs(4).Priority(100).Obj()
	kube := fake.NewClientset(train0, train1, urgent)
	if gone {
		kube = fake.NewClientset(train0, urgent)
	}
	m := NewMetrics()
	s, err := New(Options{Preemption: true, Now: func() time.Time { return time.Unix(1600, 0) }}, kube,
		phalanxfake.NewSimpleClientset(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.store.now = func() time.Time { return time.Unix(1000, 0) } // first seen bound at 1000
	s.store.SetQueue(testQueue("default"))
	s.store.SetNode(testNode("a", 4))
	s.store.SetNode(testNode("b", 4))
	s.store.SetPodGroup(testPodGroup("train", 2))
	for _, p := range []*corev1.Pod{train0, train1, urgent} {
		s.store.SetPod(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); s.inflight.Wait() })
	s.runCallers(ctx)
	s.cycle(ctx)
	return s, m, ctx
}
