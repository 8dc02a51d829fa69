package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	phalanxfake "github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestFailedBindIsRepaired: the API server refuses the first bind of one
// member of a gang. The gang's other member is bound; the next cycle places
// the refused member again, and the gang ends whole. (A narrow test of the
// loop on a fake clientset; the e2e suite runs the rest against a real API
// server.)
func TestFailedBindIsRepaired(t *testing.T) {
	pg := testPodGroup("job", 2)
	a := testPod("job-a").Group("job").GPUs(1).Obj()
	b := testPod("job-b").Group("job").GPUs(1).Obj()
	kube := fake.NewClientset(testNode("n1", 2), a, b)
	client := phalanxfake.NewSimpleClientset(pg, &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultQueue}})

	var mu sync.Mutex
	attempts := map[string]int{}
	kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binding := action.(clienttesting.CreateAction).GetObject().(*corev1.Binding)
		mu.Lock()
		attempts[binding.Name]++
		first := attempts[binding.Name] == 1
		mu.Unlock()
		if binding.Name == "job-a" && first {
			return true, nil, errors.New("injected: the API server refused the bind")
		}
		obj, err := kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), binding.Namespace, binding.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.Spec.NodeName = binding.Target.Name
		return true, nil, kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace)
	})

	metrics := NewMetrics()
	s, err := New(Options{CyclePeriod: 50 * time.Millisecond}, kube, client, metrics, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"job-a", "job-b"} {
			p, err := kube.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName == "" {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the gang was not completed after a failed bind: %v (bind attempts %v)", err, attempts)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts["job-a"] != 2 || attempts["job-b"] != 1 {
		t.Errorf("bind attempts %v, want job-a twice (refused, then repaired) and job-b once", attempts)
	}
}

// TestCallsRunInOrder: binds and evictions start in the order the loop
// queued them, so a cycle's plan order (partial gangs first) holds at the
// API server; with several workers every call still runs once.
func TestCallsRunInOrder(t *testing.T) {
	for _, workers := range []int{1, 8} {
		s := &Scheduler{opts: Options{BindWorkers: workers}, calls: newCallQueue()}
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var order []int
		var all sync.WaitGroup
		const n = 500
		all.Add(n)
		for i := range n {
			s.dispatch(func() {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				all.Done()
			})
		}
		s.runCallers(ctx)
		all.Wait()
		cancel()
		s.inflight.Wait()
		if len(order) != n {
			t.Fatalf("%d workers: %d calls ran, want %d", workers, len(order), n)
		}
		if workers == 1 {
			for i, got := range order {
				if got != i {
					t.Fatalf("1 worker: call %d ran in place %d", got, i)
				}
			}
		}
	}
}
