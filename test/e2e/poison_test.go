//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPoison: a PodGroup whose minMember and a Queue whose weight an int32
// cannot hold, stored while the CRDs had no maximum (as they once had
// none), must not stop a fresh scheduler. It becomes Ready, a healthy gang
// in another namespace runs, and the gangs that need the unreadable objects
// wait saying why. With the generated CRDs the API server refuses such
// values, naming the field.
func TestPoison(t *testing.T) {
	healthy := newEnv(t)
	poisoned := newEnv(t)
	healthy.addNodes(kwokNodes("poison", 1).GPUs(4))
	ctx := healthy.ctx

	const tooBig = int64(1) << 31 // 2147483648
	badPG := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": scheduler.PodGroupsResource.GroupVersion().String(), "kind": "PodGroup",
		"metadata": map[string]any{"name": "big", "namespace": poisoned.ns},
		"spec":     map[string]any{"minMember": tooBig},
	}}
	badQueue := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": scheduler.QueuesResource.GroupVersion().String(), "kind": "Queue",
		"metadata": map[string]any{"name": poisoned.ns + "-heavy"},
		"spec":     map[string]any{"weight": tooBig},
	}}
	pgs := dyn.Resource(scheduler.PodGroupsResource).Namespace(poisoned.ns)
	queues := dyn.Resource(scheduler.QueuesResource)

	// Serve the CRDs without the maxima, store the objects, then serve the
	// generated CRDs again (also at the end, whatever happens).
	t.Cleanup(func() {
		if err := installCRDs(context.Background()); err != nil {
			t.Errorf("cleanup: restore the generated CRDs: %v", err)
		}
		err := queues.Delete(context.Background(), badQueue.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: delete queue %s: %v", badQueue.GetName(), err)
		}
	})
	dropMaximum(t, ctx, "podgroups."+scheduler.PodGroupsResource.Group, "spec", "minMember")
	dropMaximum(t, ctx, "queues."+scheduler.QueuesResource.Group, "spec", "weight")
	poisoned.eventually(30*time.Second, "the API server stores PodGroup minMember 2^31 and Queue weight 2^31", func(ctx context.Context) error {
		if _, err := pgs.Create(ctx, badPG, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if _, err := queues.Create(ctx, badQueue, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
	if err := installCRDs(ctx); err != nil {
		t.Fatalf("restore the generated CRDs: %v", err)
	}
	poisoned.eventually(30*time.Second, "the generated CRDs refuse minMember 2^31 and weight 2^31, naming the field", func(ctx context.Context) error {
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		probe := badPG.DeepCopy()
		probe.SetName("probe")
		if _, err := pgs.Create(ctx, probe, dry); err == nil || contains("", err.Error(), []string{"minMember"}) != nil {
			return fmt.Errorf("PodGroup minMember 2^31: err = %v, want a refusal naming minMember", err)
		}
		probe = badQueue.DeepCopy()
		probe.SetName(badQueue.GetName() + "-probe")
		if _, err := queues.Create(ctx, probe, dry); err == nil || contains("", err.Error(), []string{"weight"}) != nil {
			return fmt.Errorf("Queue weight 2^31: err = %v, want a refusal naming weight", err)
		}
		return nil
	})
	if got, err := pgs.Get(ctx, badPG.GetName(), metav1.GetOptions{}); err != nil {
		t.Fatalf("the unreadable PodGroup is gone: %v", err)
	} else if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "minMember"); n != tooBig {
		t.Fatalf("the stored PodGroup has minMember %d, want %d", n, tooBig)
	}

	// Gangs that need the unreadable objects, and a healthy one.
	poisoned.createPod(makePod("big-0").CPU("1").Group("big").Obj())
	poisoned.createPod(makePod("big-1").CPU("1").Group("big").Obj())
	heavy := poisoned.create(gang("heavy").Members(1).GPUs(1).Queue(badQueue.GetName()))
	fine := healthy.create(gang("fine").Members(2).GPUs(1))

	startScheduler(t) // fails unless the scheduler becomes Ready
	healthy.eventually(time.Minute, "the healthy gang runs", healthy.running(fine))
	poisoned.eventually(30*time.Second, "the unreadable PodGroup's pods say it cannot be read",
		all(poisoned.podCondition("big-0", corev1.PodScheduled, corev1.ConditionFalse, "PodGroup cannot be read", "spec.minMember", "2147483648"),
			poisoned.podCondition("big-1", corev1.PodScheduled, corev1.ConditionFalse, "PodGroup cannot be read")))
	poisoned.eventually(30*time.Second, "the gang of the unreadable Queue says the queue cannot be read",
		poisoned.podsCondition(heavy, corev1.PodScheduled, corev1.ConditionFalse,
			fmt.Sprintf("queue %q cannot be read", badQueue.GetName()), "spec.weight"))
	poisoned.eventually(30*time.Second, "a Warning Event on the PodGroup names the field",
		eventAbout(poisoned.ns, "big", scheduler.ReasonUnreadable, "spec.minMember", "2147483648"))
	poisoned.eventually(30*time.Second, "a Warning Event on the Queue names the field",
		eventAbout(metav1.NamespaceDefault, badQueue.GetName(), scheduler.ReasonUnreadable, "spec.weight"))
	poisoned.consistently(holdStill, "the gangs of unreadable objects to stay unbound",
		all(poisoned.unbound("big-0"), poisoned.unbound("big-1"), poisoned.noneBound(heavy)))
}

// dropMaximum updates the installed CRD so that the field at path, in the
// schema of every version, has no maximum.
func dropMaximum(t *testing.T, ctx context.Context, crdName string, path ...string) {
	t.Helper()
	crd, err := dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get CRD %s: %v", crdName, err)
	}
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil || len(versions) == 0 {
		t.Fatalf("CRD %s has no versions: %v", crdName, err)
	}
	fields := []string{"schema", "openAPIV3Schema"}
	for _, p := range path {
		fields = append(fields, "properties", p)
	}
	for _, v := range versions {
		version, _ := v.(map[string]any)
		if _, found, _ := unstructured.NestedFieldNoCopy(version, append(fields, "maximum")...); !found {
			t.Fatalf("CRD %s: %v has no maximum to drop", crdName, path)
		}
		unstructured.RemoveNestedField(version, append(fields, "maximum")...)
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update CRD %s: %v", crdName, err)
	}
}

// eventAbout: a Warning Event of the given reason about the object
// namespace/name has a message containing every one of words.
func eventAbout(namespace, name, reason string, words ...string) check {
	return eventOf(namespace, name, corev1.EventTypeWarning, reason, words)
}
