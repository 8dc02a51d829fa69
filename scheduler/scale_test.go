package scheduler

// Benchmarks of the adapter's cycle at the scale of issue 12: 5,000 nodes x
// 8 GPUs and 150,000 pods, half bound, half waiting, with no API server: the
// store is filled directly and the cycle's API calls are queued, never sent.
//
//	go test ./scheduler -run '^$' -bench Scale -benchtime 10x -benchmem

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// scaleCluster fills s with nodes x 8 GPUs and pods. Without fit, the bound
// half takes every GPU with one-GPU pods plus CPU-only pods, and the
// waiting half asks for GPUs that do not come free, so every cycle keeps
// all of it waiting. With fit, the bound half takes half the GPUs and the
// waiting half asks for the other half and for CPUs, so that all of it
// fits. Gangs are of 1, 8 and 64 members in turn, by the ACK labels. It
// returns how many waiting pods belong to the last gang, which lacks
// members when pods is not a whole number of gangs.
func scaleCluster(s *Store, nodes, pods int, fit bool) (short int) {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("256"), corev1.ResourceMemory: resource.MustParse("2Ti"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8"),
	}
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("node-%05d", i)
		s.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: alloc, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
	}
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	sizes := []int{1, 8, 64}
	gang, left := 0, 0
	size := 0
	gpusBound, gpusAsked := 0, 0
	boundGPUs := nodes * 8
	if fit {
		boundGPUs = nodes * 4
	}
	for i := 0; i < pods; i++ {
		if left == 0 {
			size = sizes[gang%len(sizes)]
			gang++
			left = size
		}
		left--
		bound := i < pods/2
		name := fmt.Sprintf("p-%06d", i)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fmt.Sprintf("team-%d", gang%10), UID: types.UID("uid-" + name),
				CreationTimestamp: metav1.Unix(int64(1000+gang), 0),
				Labels:            map[string]string{LabelACKName: "g" + strconv.Itoa(gang), LabelACKMinAvailable: strconv.Itoa(size)}},
			Spec:   corev1.PodSpec{SchedulerName: "phalanx", Containers: []corev1.Container{{Name: "c", Image: "none"}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		}
		switch {
		case !bound && (!fit || gpusAsked < nodes*8-boundGPUs):
			p.Spec.Containers[0].Resources.Limits = gpu
			gpusAsked++
		case !bound:
			p.Spec.Containers[0].Resources.Requests = cpu
		case gpusBound < boundGPUs:
			p.Spec.Containers[0].Resources.Limits = gpu
			p.Spec.NodeName = fmt.Sprintf("node-%05d", gpusBound/8)
			p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &metav1.Time{Time: time.Unix(2000, 0)}
			gpusBound++
		default:
			p.Spec.Containers[0].Resources.Requests = cpu
			p.Spec.NodeName = fmt.Sprintf("node-%05d", i%nodes)
			p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &metav1.Time{Time: time.Unix(2000, 0)}
		}
		s.SetPod(p)
	}
	if left > 0 {
		return size - left
	}
	return 0
}

func scaleScheduler(b *testing.B, opts Options, fit bool) (*Scheduler, int) {
	b.Helper()
	opts.Now = func() time.Time { return time.Unix(10000, 0) }
	s, err := New(opts, nil, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.store.SetQueue(&v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultQueue}, Spec: v1alpha1.QueueSpec{Weight: 1}})
	short := scaleCluster(s.store, 5000, 150000, fit)
	return s, short
}

// BenchmarkScaleSnapshot: Store.Snapshot alone, after a first one (the
// state of every cycle but the first).
func BenchmarkScaleSnapshot(b *testing.B) {
	s, _ := scaleScheduler(b, Options{}, false)
	s.store.Snapshot()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snap, _ := s.store.Snapshot()
		if len(snap.Gangs) == 0 {
			b.Fatal("no waiting gangs")
		}
	}
}

// BenchmarkScaleCycle: a whole cycle (snapshot, core, verdicts, statuses)
// with nothing changed since the previous one.
func BenchmarkScaleCycle(b *testing.B) {
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"plain", Options{}},
		{"preemption-reservations", Options{Preemption: true, ReserveAfter: time.Minute}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := scaleScheduler(b, c.opts, false)
			ctx := context.Background()
			s.cycle(ctx)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.cycle(ctx)
			}
		})
	}
}

// BenchmarkScaleFirstCycle: the first cycle after a start, when the waiting
// half (75,000 pods, 20,000 GPUs and 55,000 CPUs) fits: a snapshot with
// no view computed yet, the core placing every gang, and the binds queued.
func BenchmarkScaleFirstCycle(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, short := scaleScheduler(b, Options{}, true)
		b.StartTimer()
		s.cycle(ctx)
		b.StopTimer()
		if n := len(s.calls.calls); n != 75000-short {
			b.Fatalf("%d binds queued, want 75,000 less the %d members of the last gang, which lacks some", n, short)
		}
		b.StartTimer()
	}
}

// BenchmarkScaleBindingCycle: a cycle while the first cycle's 75,000 binds
// are in flight and nothing else changed.
func BenchmarkScaleBindingCycle(b *testing.B) {
	ctx := context.Background()
	s, _ := scaleScheduler(b, Options{}, true)
	s.cycle(ctx)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.cycle(ctx)
	}
}

// BenchmarkScaleCycleEstimateFactor: a cycle when every gang declares an
// estimate and the queue's estimate factor changed since the previous
// cycle (a completion moved its median), so that every view, release and
// running gang of the queue is computed again (the gangs of every arrival
// are in the era that moved); "unchanged" is the same
// cluster with the factor as it was, for comparison.
func BenchmarkScaleCycleEstimateFactor(b *testing.B) {
	for _, change := range []bool{false, true} {
		name := map[bool]string{false: "unchanged", true: "changed"}[change]
		b.Run(name, func(b *testing.B) {
			s, _ := scaleScheduler(b, Options{Preemption: true, ReserveAfter: time.Minute, CorrectEstimates: true}, false)
			for _, p := range s.store.pods {
				pod := p.pod.DeepCopy()
				pod.Annotations = map[string]string{AnnotationEstimatedRuntime: "1h"}
				s.store.SetPod(pod)
			}
			ctx := context.Background()
			s.cycle(ctx)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if change {
					// What recordCompletion does when the factor moves,
					// here for gangs of every arrival (one era).
					if s.store.history[v1alpha1.DefaultQueue] == nil {
						s.store.history[v1alpha1.DefaultQueue] = &runTimes{}
					}
					f := []float64{1.5, 2}[i%2]
					s.store.history[v1alpha1.DefaultQueue].setEras(core.FactorEras{{From: math.MinInt64, Factor: f}})
					s.store.factorGen[v1alpha1.DefaultQueue]++
				}
				s.cycle(ctx)
			}
		})
	}
}
