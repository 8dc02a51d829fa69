package scheduler

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	phalanxfake "github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestSnapshotCacheMatchesFresh applies random changes to a store and,
// after each, compares the snapshot built with the gangs' caches (views.go)
// with one built from nothing: a change that fails to invalidate what it
// changes shows as a difference.
func TestSnapshotCacheMatchesFresh(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { cacheRun(t, seed, 400) })
	}
}

func cacheRun(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	clock := time.Unix(10000, 0)
	s := NewStore([]string{"phalanx"})
	s.now = func() time.Time { return clock }
	s.reserving, s.preempting = true, true
	nodes := []string{"n0", "n1", "n2", "n3"}
	for _, n := range nodes[:3] {
		s.SetNode(testNode(n, 8))
	}
	var uids []types.UID
	pick := func() *corev1.Pod {
		if len(uids) == 0 {
			return nil
		}
		if p := s.pods[uids[rng.Intn(len(uids))]]; p != nil {
			return p.pod.DeepCopy()
		}
		return nil
	}
	groups := []string{"a", "b", "c"}
	queues := []string{v1alpha1.DefaultQueue, "q1", "q2"}
	classes := []string{"low", "high"}
	namespaces := []string{"ns", "other"}
	for step := 0; step < steps; step++ {
		op := rng.Intn(21)
		switch op {
		case 0, 1, 2: // a new pod
			name := fmt.Sprintf("p%d", step)
			b := testPod(name).GPUs(int64(1 + rng.Intn(3)))
			b.p.Namespace = namespaces[rng.Intn(len(namespaces))]
			switch rng.Intn(4) {
			case 0:
				b.Group(groups[rng.Intn(len(groups))])
			case 1:
				b.ACK("ack"+groups[rng.Intn(len(groups))], fmt.Sprint(1+rng.Intn(3)))
			case 2:
				b.p.Annotations = map[string]string{AnnotationQueue: queues[rng.Intn(len(queues))]}
			}
			if rng.Intn(3) == 0 {
				if b.p.Annotations == nil {
					b.p.Annotations = map[string]string{}
				}
				b.p.Annotations[AnnotationEstimatedRuntime] = fmt.Sprintf("%dm", 1+rng.Intn(60))
			}
			switch rng.Intn(4) {
			case 0:
				b.Claim("c") // waits until the claim is bound (op 18)
			case 1:
				if b.p.Labels == nil {
					b.p.Labels = map[string]string{}
				}
				b.p.Labels["tf-job"] = "tf" // a gang of the PodDisruptionBudget (op 19)
			}
			if rng.Intn(3) == 0 {
				b.On(nodes[rng.Intn(len(nodes))], corev1.PodRunning)
				b.p.Status.StartTime = &metav1.Time{Time: clock.Add(-time.Duration(rng.Intn(600)) * time.Second)}
			}
			b.p.CreationTimestamp = metav1.NewTime(clock)
			s.SetPod(b.Obj())
			uids = append(uids, b.p.UID)
		case 3: // a pod runs, succeeds or fails
			if p := pick(); p != nil {
				phases := []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}
				p.Status.Phase = phases[rng.Intn(len(phases))]
				if p.Status.StartTime == nil {
					p.Status.StartTime = &metav1.Time{Time: clock}
				}
				s.SetPod(p)
			}
		case 4: // bound by the API server
			if p := pick(); p != nil && p.Spec.NodeName == "" {
				p.Spec.NodeName = nodes[rng.Intn(len(nodes))]
				s.SetPod(p)
			}
		case 5:
			if p := pick(); p != nil {
				s.DeletePod(p.UID)
			}
		case 6:
			if p := pick(); p != nil {
				if !s.Assume(p.UID, nodes[rng.Intn(len(nodes))]) {
					s.Forget(p.UID)
				}
			}
		case 7: // a PodGroup comes or changes
			pg := testPodGroup(groups[rng.Intn(len(groups))], int32(1+rng.Intn(3)))
			pg.Namespace = namespaces[rng.Intn(len(namespaces))]
			pg.Spec.Queue = queues[rng.Intn(len(queues))]
			if rng.Intn(2) == 0 {
				pg.Spec.PriorityClassName = classes[rng.Intn(len(classes))]
			}
			s.SetPodGroup(pg)
		case 8:
			s.DeletePodGroup(namespaces[rng.Intn(len(namespaces))], groups[rng.Intn(len(groups))])
		case 9: // a Queue comes, changes, or only its status changes
			q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: queues[rng.Intn(len(queues))]},
				Spec: v1alpha1.QueueSpec{Weight: int32(1 + rng.Intn(3))}}
			if rng.Intn(2) == 0 {
				q.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}
			}
			q.Status.Running = int32(rng.Intn(5))
			s.SetQueue(q)
		case 10:
			s.DeleteQueue(queues[rng.Intn(len(queues))])
		case 11:
			s.SetPriorityClass(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: classes[rng.Intn(len(classes))]},
				Value: int32(rng.Intn(1000))})
		case 12:
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[rng.Intn(len(namespaces))]}}
			if rng.Intn(2) == 0 {
				ns.Labels = map[string]string{"team": "x"}
			}
			s.SetNamespace(ns)
		case 13: // a node comes or goes: the node order changes
			n := nodes[rng.Intn(len(nodes))]
			if rng.Intn(2) == 0 {
				s.SetNode(testNode(n, 8))
			} else {
				s.DeleteNode(n)
			}
		case 14:
			if p := pick(); p != nil {
				s.MarkEvicting(p.UID)
			}
		case 15:
			if p := pick(); p != nil {
				s.EvictionRefused(p.UID, "ns/a", "refused")
			}
		case 16:
			clock = clock.Add(time.Duration(1+rng.Intn(20)) * time.Second)
		case 17:
			s.SetUnreadableQueue(queues[rng.Intn(len(queues))], []string{"", "bad"}[rng.Intn(2)])
		case 18: // the claim comes, is bound, or goes
			if rng.Intn(3) == 0 {
				s.DeleteClaim("ns", "c")
			} else {
				s.SetClaim(testClaim("c", []string{"", "pv-1"}[rng.Intn(2)], ""))
			}
		case 19: // the PodDisruptionBudget's minimum or only its status changes
			s.SetPDB(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "tf", Namespace: "ns", UID: "uid-pdb"},
				Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(int32(2 + rng.Intn(2)))),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tf-job": "tf"}}},
				Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: int32(rng.Intn(5))}})
		case 20:
			s.DeletePDB("ns", "tf")
		}
		// The cycle's own snapshot, which fills the caches; handed back as
		// the scheduler does, so that the fresh one below is built in its
		// memory.
		s.Recycle(s.Snapshot())
		saved := map[string]*gangCache{}
		for key, g := range s.gangs {
			saved[key], g.cache = g.cache, nil
		}
		freshSnap, fresh := s.Snapshot()
		for key, g := range s.gangs {
			g.cache = saved[key]
		}
		cachedSnap, cached := s.Snapshot()
		if !reflect.DeepEqual(freshSnap, cachedSnap) {
			t.Fatalf("step %d (op %d): the cached snapshot differs from a fresh one:\nfresh  %+v\ncached %+v", step, op, freshSnap, cachedSnap)
		}
		for key, v := range fresh {
			if !reflect.DeepEqual(v, cached[key]) {
				t.Fatalf("step %d (op %d): the cached view of %s differs from a fresh one:\nfresh  %+v\ncached %+v", step, op, key, v, cached[key])
			}
		}
		if len(fresh) != len(cached) {
			t.Fatalf("step %d: %d fresh views, %d cached", step, len(fresh), len(cached))
		}
		for _, g := range cachedSnap.Gangs {
			if g != nil && !g.SealHolds() {
				t.Fatalf("step %d (op %d): gang %s changed after Seal without a new Seal", step, op, g.ID)
			}
		}
	}
}

// TestSnapshotReusesViews: a gang that did not change keeps its view, a
// change of one of its pods or of a PriorityClass makes it anew.
func TestSnapshotReusesViews(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetNode(testNode("n1", 4))
	s.SetPodGroup(testPodGroup("a", 1))
	s.SetPod(testPod("a-0").Group("a").GPUs(1).Obj())
	s.SetPod(testPod("b-0").GPUs(1).Obj())
	_, v1 := s.Snapshot()
	_, v2 := s.Snapshot()
	if v1["ns/a"] != v2["ns/a"] || v1["ns/b-0#pod"] != v2["ns/b-0#pod"] {
		t.Fatalf("unchanged gangs got new views")
	}
	s.SetPod(testPod("a-0").Group("a").GPUs(2).Obj())
	_, v3 := s.Snapshot()
	if v3["ns/a"] == v2["ns/a"] || v3["ns/b-0#pod"] != v2["ns/b-0#pod"] {
		t.Fatalf("a pod's change should renew its gang's view only")
	}
	s.SetPriorityClass(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 10})
	_, v4 := s.Snapshot()
	if v4["ns/b-0#pod"] == v3["ns/b-0#pod"] {
		t.Fatalf("a PriorityClass should renew every view")
	}
}

// TestDroppedWriteIsHandedAgain: a cycle skips a gang whose view and verdict
// are those it last published, unless the writer gave up on one of its
// writes since (here the first write finds no pod): the next cycle hands
// that write again though nothing of the gang changed.
func TestDroppedWriteIsHandedAgain(t *testing.T) {
	pod := testPod("w-0").GPUs(64).Obj()
	kube := fake.NewClientset(pod)
	client := phalanxfake.NewSimpleClientset(&v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultQueue}})
	var refused atomic.Bool
	kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, k8sruntime.Object, error) {
		if refused.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewNotFound(corev1.Resource("pods"), "w-0") // the writer gives up at once
		}
		return false, nil, nil
	})
	s, err := New(Options{StatusWorkers: 1}, kube, client, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.store.SetNode(testNode("n1", 8))
	s.store.SetQueue(&v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultQueue}})
	s.store.SetPod(pod)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); s.inflight.Wait() }()
	s.runWriters(ctx)
	condition := func() string {
		p, err := kube.CoreV1().Pods("ns").Get(ctx, "w-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				return c.Message
			}
		}
		return ""
	}
	deadline := time.Now().Add(10 * time.Second)
	for condition() == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the pod never got its PodScheduled condition; the write refused once was not handed again (refused: %v)", refused.Load())
		}
		s.drain() // the writer's report that it gave up
		s.cycle(ctx)
		time.Sleep(20 * time.Millisecond)
	}
	if !refused.Load() {
		t.Fatalf("the first write was not refused: the test did not test a dropped write")
	}
}

// TestConfirmationsCounted: the informer's news that a pod is bound where
// the store assumed it is counted as a confirmation (the loop runs no cycle
// for a batch of only those); a bind elsewhere, a phase change or a new pod
// is not.
func TestConfirmationsCounted(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetNode(testNode("n1", 8))
	s.SetNode(testNode("n2", 8))
	a := testPod("a").GPUs(1).Obj()
	b := testPod("b").GPUs(1).Obj()
	s.SetPod(a)
	s.SetPod(b)
	s.Assume(a.UID, "n1")
	s.Assume(b.UID, "n1")
	if s.confirmations != 0 {
		t.Fatalf("%d confirmations before any news", s.confirmations)
	}
	s.SetPod(testPod("a").GPUs(1).On("n1", corev1.PodPending).Obj())
	if s.confirmations != 1 {
		t.Fatalf("a bound where assumed: %d confirmations, want 1", s.confirmations)
	}
	s.SetPod(testPod("b").GPUs(1).On("n2", corev1.PodPending).Obj())
	s.SetPod(testPod("a").GPUs(1).On("n1", corev1.PodRunning).Obj())
	s.SetPod(testPod("c").GPUs(1).Obj())
	if s.confirmations != 1 {
		t.Fatalf("a bind elsewhere, a phase change and a new pod made %d confirmations, want still 1", s.confirmations)
	}
}
