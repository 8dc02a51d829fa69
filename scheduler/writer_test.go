package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	phalanxfake "github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestStatusWritesCoalesce: 20 gangs wait while every cycle changes what
// they lack, and the API server answers no status write until released.
// The writer keeps at most one pending write per object and a fixed number
// of goroutines, however many cycles run; once the API server answers, each
// PodGroup ends with the newest status, in far fewer writes than cycles
// asked for. (Before the writer, every cycle started a goroutine holding a
// copy of each changed object: 30 cycles left about 1,200 of them blocked.)
func TestStatusWritesCoalesce(t *testing.T) {
	const gangs, cycles = 20, 30
	var pgs, pods []k8sruntime.Object
	store := []func(*Store){}
	for i := range gangs {
		pg := testPodGroup(fmt.Sprintf("g%d", i), 2)
		pg.UID = types.UID("pg-" + pg.Name)
		pgs = append(pgs, pg)
		store = append(store, func(s *Store) { s.SetPodGroup(pg) })
		for j := range 2 {
			p := testPod(fmt.Sprintf("g%d-%d", i, j)).Group(pg.Name).GPUs(64).Obj()
			pods = append(pods, p)
			store = append(store, func(s *Store) { s.SetPod(p) })
		}
	}
	queue := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultQueue, UID: "q"}}
	kube := fake.NewClientset(pods...)
	client := phalanxfake.NewSimpleClientset(append(pgs, queue)...)
	release := make(chan struct{})
	var writes atomic.Int64
	block := func(clienttesting.Action) (bool, k8sruntime.Object, error) {
		<-release
		writes.Add(1)
		return false, nil, nil // on to the tracker
	}
	client.PrependReactor("patch", "*", block)
	kube.PrependReactor("patch", "pods", block)

	s, err := New(Options{StatusWorkers: 4}, kube, client, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range store {
		f(s.store)
	}
	s.store.SetQueue(queue)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		select {
		case <-release:
		default:
			close(release)
		}
		s.inflight.Wait()
	}()
	writersCtx, stopWriters := context.WithCancel(ctx)
	s.runWriters(writersCtx)
	s.cycle(ctx)
	base := runtime.NumGoroutine()
	for i := range cycles {
		// One more GPU free: every gang lacks one less, so every status
		// and every waiting pod's condition changes.
		s.store.SetNode(testNode(fmt.Sprintf("n%d", i), 1))
		s.cycle(ctx)
	}
	if grew := runtime.NumGoroutine() - base; grew > 4 {
		t.Errorf("%d cycles with the API server not answering started %d goroutines; want none beyond the writer's", cycles, grew)
	}
	objects := gangs + 2*gangs + 1 // PodGroups, pods, the queue
	if n := s.writer.pending(); n > objects {
		t.Errorf("%d writes wait for %d objects; want at most one each", n, objects)
	}
	close(release)
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return s.writer.pending() == 0 && s.writer.queue.Len() == 0, nil
	})
	if err != nil {
		t.Fatalf("the writer did not drain: %d pending", s.writer.pending())
	}
	stopWriters() // the writers finish the writes they took, then stop
	s.inflight.Wait()
	if n := writes.Load(); n > int64(2*objects) {
		t.Errorf("%d writes for %d objects over %d cycles; want the newest status of each written, not every one", n, objects, cycles)
	}
	want := s.verdicts["ns/g0"].message
	if !strings.Contains(want, fmt.Sprintf("the cluster has %d nvidia.com/gpu, the gang needs 128", cycles)) {
		t.Fatalf("the last verdict of g0 is %q; the test expects it to see %d GPUs of the 128 it needs", want, cycles)
	}
	for i := range gangs {
		pg, err := client.SchedulingV1alpha1().PodGroups("ns").Get(ctx, fmt.Sprintf("g%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupUnschedulable)
		if c == nil || c.Message != want {
			t.Errorf("PodGroup %s has Unschedulable %+v; want the newest message %q", pg.Name, c, want)
		}
	}
	p, err := kube.CoreV1().Pods("ns").Get(ctx, "g0-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			got = c.Message
		}
	}
	if !strings.HasSuffix(got, ": "+want) {
		t.Errorf("pod g0-0 says %q; want the newest message %q after its reason", got, want)
	}
}

// TestConditionNotWrittenOnBoundPod: a waiting member's condition was
// computed from the pod before it was bound; the write lands after the bind.
// The patch carries the old resourceVersion, so it conflicts, and the
// writer, reading the pod again, sees it bound and writes nothing.
func TestConditionNotWrittenOnBoundPod(t *testing.T) {
	pod := testPod("a").GPUs(1).Obj()
	pod.ResourceVersion = "1"
	bound := pod.DeepCopy()
	bound.ResourceVersion, bound.Spec.NodeName = "2", "n1"
	kube := fake.NewClientset(bound)
	var patches atomic.Int64
	kube.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		patches.Add(1)
		if !strings.Contains(string(a.(clienttesting.PatchAction).GetPatch()), `"resourceVersion":"2"`) {
			return true, nil, errConflict()
		}
		return false, nil, nil
	})
	s, err := New(Options{}, kube, phalanxfake.NewSimpleClientset(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	verd := verdict{reason: "Unschedulable", message: "0/1 members fit"}
	if err := s.patchCondition(context.Background(), pod, verd, metav1.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := kube.CoreV1().Pods("ns").Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			t.Errorf("the bound pod got PodScheduled=False: %+v", c)
		}
	}
	if n := patches.Load(); n != 1 {
		t.Errorf("%d patches; want 1, refused for its stale resourceVersion", n)
	}
}

func errConflict() error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "a", fmt.Errorf("stale resourceVersion"))
}

// TestStatusOwnership: an instance writes the status of a PodGroup whose
// pods it serves; one with no pods yet only if it claims it (annotation, or
// the default scheduler name); never one whose pods another scheduler
// serves. Queues likewise go by the annotation or the default name.
func TestStatusOwnership(t *testing.T) {
	claimed := testPodGroup("claimed", 1)
	claimed.Annotations = map[string]string{AnnotationSchedulerName: "volcano"}
	for _, tt := range []struct {
		names []string
		want  []string // PodGroups with a view
	}{
		{[]string{"phalanx"}, []string{"ns/mine", "ns/unclaimed"}},
		{[]string{"volcano"}, []string{"ns/claimed"}},
		{[]string{"other"}, []string{"ns/theirs"}},
	} {
		s := NewStore(tt.names)
		s.SetNode(testNode("n1", 4))
		s.SetPodGroup(testPodGroup("unclaimed", 1))
		s.SetPodGroup(claimed)
		s.SetPodGroup(testPodGroup("mine", 1))
		s.SetPod(testPod("mine-0").Group("mine").Scheduler("phalanx").Obj())
		s.SetPodGroup(testPodGroup("theirs", 1))
		s.SetPod(testPod("theirs-0").Group("theirs").Scheduler("other").Obj())
		_, views := s.Snapshot()
		var got []string
		for key, v := range views {
			if v.podGroup != nil {
				got = append(got, key)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("serving %v: statuses of %v; want %v", tt.names, got, tt.want)
		}
		if s.claims(nil) != slices.Contains(tt.names, "phalanx") || s.claims(claimed.Annotations) != slices.Contains(tt.names, "volcano") {
			t.Errorf("serving %v: claims an unannotated Queue %v, one annotated volcano %v", tt.names, s.claims(nil), s.claims(claimed.Annotations))
		}
	}
}
