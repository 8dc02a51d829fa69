// Package client_test checks that the generated clientset, informers and
// listers (hack/update-codegen.sh) fit together: objects written through the
// fake clientset are read back through the listers of the shared informer
// factory, both from the informers' first list and from their watch.
package client_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	v1alpha1 "github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	"github.com/phalanx-sched/phalanx/client/informers/externalversions"
)

func TestFakeClientsetThroughInformerListers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cs := fake.NewSimpleClientset()

	// The fake's tracker does not replay what happens between an informer's
	// list and its watch, so report each watch once it is open; objects are
	// created after that to test the watch path.
	watching := make(chan string, 8)
	cs.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts []metav1.ListOptions
		if w, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = append(opts, w.ListOptions)
		}
		w, err := cs.Tracker().Watch(action.GetResource(), action.GetNamespace(), opts...)
		if err != nil {
			return false, nil, err
		}
		watching <- action.GetResource().Resource
		return true, w, nil
	})

	// Before the informers start: seen by their first list.
	queue := &v1alpha1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "research"},
		Spec: v1alpha1.QueueSpec{
			Weight:     2,
			State:      v1alpha1.QueueOpen,
			Capability: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")},
		},
	}
	if _, err := cs.SchedulingV1alpha1().Queues().Create(ctx, queue, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create queue: %v", err)
	}
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "team-a"},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 4, Queue: "research"},
	}
	if _, err := cs.SchedulingV1alpha1().PodGroups("team-a").Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create podgroup: %v", err)
	}

	factory := externalversions.NewSharedInformerFactory(cs, 0)
	queues := factory.Scheduling().V1alpha1().Queues()
	podGroups := factory.Scheduling().V1alpha1().PodGroups()
	queueLister, pgLister := queues.Lister(), podGroups.Lister()
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}

	gotQ, err := queueLister.Get("research")
	if err != nil {
		t.Fatalf("queue lister: %v", err)
	}
	if gotQ.Spec.Weight != 2 || gotQ.Spec.Capability.Cpu().Cmp(resource.MustParse("64")) != 0 {
		t.Errorf("queue from lister: spec %+v", gotQ.Spec)
	}
	gotPG, err := pgLister.PodGroups("team-a").Get("train")
	if err != nil {
		t.Fatalf("podgroup lister: %v", err)
	}
	if gotPG.Spec.MinMember != 4 || gotPG.Spec.Queue != "research" {
		t.Errorf("podgroup from lister: spec %+v", gotPG.Spec)
	}
	if _, err := pgLister.PodGroups("team-b").Get("train"); err == nil {
		t.Errorf("podgroup lister found team-a's gang in team-b")
	}

	// After the watches are open: reach the listers through the watch.
	for open := map[string]bool{}; len(open) < 2; {
		select {
		case r := <-watching:
			open[r] = true
		case <-ctx.Done():
			t.Fatalf("informers' watches did not open: %v", ctx.Err())
		}
	}
	gotQ = gotQ.DeepCopy()
	gotQ.Status.Pending = 1
	if _, err := cs.SchedulingV1alpha1().Queues().UpdateStatus(ctx, gotQ, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update queue status: %v", err)
	}
	pg2 := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "eval", Namespace: "team-a", Labels: map[string]string{"stage": "eval"}},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 2, Queue: "research"},
	}
	if _, err := cs.SchedulingV1alpha1().PodGroups("team-a").Create(ctx, pg2, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create second podgroup: %v", err)
	}
	err = wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		q, err := queueLister.Get("research")
		if err != nil || q.Status.Pending != 1 {
			return false, nil
		}
		sel, err := pgLister.PodGroups("team-a").List(labels.SelectorFromSet(labels.Set{"stage": "eval"}))
		return err == nil && len(sel) == 1 && sel[0].Name == "eval", nil
	})
	if err != nil {
		t.Fatalf("watched changes did not reach the listers: %v", err)
	}
	all, err := pgLister.List(labels.Everything())
	if err != nil || len(all) != 2 {
		t.Errorf("podgroup lister across namespaces: %d items, err %v; want 2", len(all), err)
	}

	// The generic informer lookup knows both resources.
	for _, res := range []string{"queues", "podgroups"} {
		if _, err := factory.ForResource(v1alpha1.SchemeGroupVersion.WithResource(res)); err != nil {
			t.Errorf("generic informer for %s: %v", res, err)
		}
	}
}
