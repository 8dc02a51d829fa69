package scheduler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestStopAPIRemovesWhatWasDelivered: when an API's CRD goes, everything
// the loop was given of it leaves the store, also an object the informer
// had already dropped while its deletion still waited in the inbox (that
// event is dropped once the informer stops).
func TestStopAPIRemovesWhatWasDelivered(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	object := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
			"metadata": map[string]any{"name": name, "namespace": "ns"}}}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "JobSetList"}, object("a"), object("b"))
	// The fake client sends an object's deletion only to the watches open
	// then: the test deletes once the informer's is.
	watching := make(chan struct{}, 1)
	dyn.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := dyn.Tracker().Watch(action.GetResource(), action.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		select { // open now
		case watching <- struct{}{}:
		default:
		}
		return true, w, nil
	})
	s, _ := newDecodeScheduler(t)
	s.opts.Dynamic = dyn
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stored := map[string]bool{} // what the store holds of the API
	api := optionalAPI{gvr: gvr,
		set: func(obj any) { stored[obj.(*unstructured.Unstructured).GetName()] = true },
		del: func(obj any) { delete(stored, obj.(*unstructured.Unstructured).GetName()) }}
	w := &apiWatcher{s: s, ctx: ctx, apis: []optionalAPI{api}, running: map[schema.GroupVersionResource]*runningAPI{}}
	if w.start(api, false) == nil {
		t.Fatal("the API did not start")
	}
	loop := func(until func() bool) { // the loop's part: run what comes to the inbox
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !until() {
			select {
			case f := <-s.inbox:
				f()
			case <-deadline:
				t.Fatalf("the store holds %v", stored)
			}
		}
	}
	loop(func() bool { return len(stored) == 2 })
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the informer opened no watch")
	}

	if err := dyn.Resource(gvr).Namespace("ns").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, exists, _ := w.running[gvr].inf.GetStore().GetByKey("ns/b"); !exists {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the informer never saw the deletion")
		}
	}
	w.stopAPI(api) // before the loop ran the deletion waiting in the inbox
	if len(stored) != 0 {
		t.Errorf("after the API stopped the store holds %v, want nothing", stored)
	}
	for len(s.inbox) > 0 { // the late deletion changes nothing
		(<-s.inbox)()
	}
	if len(stored) != 0 {
		t.Errorf("after the late events the store holds %v", stored)
	}
}
