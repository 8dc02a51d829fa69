//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestForeignPodGroups: tf-operator with --enable-gang-scheduling creates the
// PodGroup of the batch scheduler it was built for, kube-batch's (before and
// since 0.5) or Volcano's, not Phalanx's. Where the cluster serves such an API, Phalanx
// reads the gang's minMember from it: the gang waits whole, then runs whole
// once there is room.
func TestForeignPodGroups(t *testing.T) {
	for _, api := range []struct {
		name string
		gvr  schema.GroupVersionResource
		crd  string
	}{
		{"kube-batch", schema.GroupVersionResource{Group: "scheduling.incubator.k8s.io", Version: "v1alpha1", Resource: "podgroups"},
			"testdata/kube-batch-podgroup-crd.yaml"},
		{"kube-batch-0.5", schema.GroupVersionResource{Group: "scheduling.sigs.dev", Version: "v1alpha2", Resource: "podgroups"},
			"testdata/kube-batch-0.5-podgroup-crd.yaml"},
		// Volcano's CRD as generated from volcano.sh/apis (hack/operators/build.sh).
		{"volcano", volcanoPodGroups, ""},
	} {
		t.Run(api.name, func(t *testing.T) {
			e := newEnv(t)
			if api.crd == "" {
				installOperatorCRDs(t, e, "volcano")
			} else {
				installForeignAPI(t, e, api.crd, api.gvr)
			}
			e.addNodes(kwokNodes(api.name, 2).CPU("4").Memory("16Gi").GPUs(1))
			startScheduler(t, "kube-batch")

			j := e.create(tfJob("tfjob").PS(1).Workers(3).GPUsPerWorker(1).SchedulerName("kube-batch").ForeignPodGroup(api.gvr))
			e.eventually(30*time.Second, "the pods say the gang is larger than the cluster",
				e.podsCondition(j, "PodScheduled", "False", "can never fit: the cluster has 2 nvidia.com/gpu, the gang needs 3 nvidia.com/gpu"))
			e.consistently(holdStill, "the gang to stay whole-pending", e.noneBound(j))
			e.addNodes(kwokNodes(api.name+"-more", 1).CPU("4").Memory("16Gi").GPUs(1))
			e.eventually(time.Minute, "the gang runs whole", e.running(j))
		})
	}
}

// installForeignAPI installs the CRD in file and waits until its API serves.
func installForeignAPI(t *testing.T, e *env, file string, gvr schema.GroupVersionResource) {
	t.Helper()
	crds, err := readManifests(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if err := applyCRD(e.ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s not served: %v", gvr, err)
	}
}

// TestAPIInstalledLater: an operator's PodGroup API installed while Phalanx
// runs is read without a restart. Before, its gang waits saying the
// PodGroup does not exist; once the CRD is established and the PodGroup
// created, the gang runs.
func TestAPIInstalledLater(t *testing.T) {
	e := newEnv(t)
	gvr := schema.GroupVersionResource{Group: "scheduling.incubator.k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	crds, err := readManifests("testdata/kube-batch-podgroup-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Start from a cluster without the API, whatever ran before.
	for _, crd := range crds {
		if err := dyn.Resource(crdGVR).Delete(e.ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		e.eventually(time.Minute, "the CRD is gone", func(ctx context.Context) error {
			_, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("CRD %s still exists (%v)", crd.GetName(), err)
		})
	}
	e.addNodes(kwokNodes("later", 2).GPUs(1))
	startScheduler(t, "kube-batch")

	b := tfJob("later").Workers(2).GPUsPerWorker(1).SchedulerName("kube-batch").ForeignPodGroup(gvr)
	j := &job{name: "later", size: 2}
	for _, p := range b.Pods() {
		j.pods = append(j.pods, e.createPod(p).Name)
	}
	e.eventually(30*time.Second, "the pods say their PodGroup does not exist",
		e.podsCondition(j, corev1.PodScheduled, corev1.ConditionFalse, "PodGroup", "does not exist"))
	installForeignAPI(t, e, "testdata/kube-batch-podgroup-crd.yaml", gvr)
	pg := b.PodGroup()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "PodGroup",
		"metadata": map[string]any{"name": pg.Name, "namespace": e.ns},
		"spec":     map[string]any{"minMember": int64(pg.Spec.MinMember)},
	}}
	if _, err := dyn.Resource(gvr).Namespace(e.ns).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(time.Minute, "the gang runs whole", e.running(j))
}

// TestPluginsPodGroupGetsPending: a scheduler-plugins PodGroup that no pod
// names yet gets phase Pending from Phalanx, as from that API's own
// controller, even though Phalanx serving "phalanx" does not claim it. The
// update is what training-operator in that mode needs when it missed its
// PodGroup in its cache (see TestOperatorTrainingSchedulerPlugins). That a
// PodGroup named by another scheduler's pods is left alone is checked by
// scheduler.TestMarkPending: here the two informers' order would decide it.
func TestPluginsPodGroupGetsPending(t *testing.T) {
	e := newEnv(t)
	installOperatorCRDs(t, e, "scheduler-plugins")
	startScheduler(t)
	create := func(name string) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvrSPPodGroup.GroupVersion().String(), "kind": "PodGroup",
			"metadata": map[string]any{"name": name, "namespace": e.ns},
			"spec":     map[string]any{"minMember": int64(3)},
		}}
		if _, err := dyn.Resource(gvrSPPodGroup).Namespace(e.ns).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	phase := func(name string) (string, error) {
		u, err := dyn.Resource(gvrSPPodGroup).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return p, nil
	}
	create("job")
	e.eventually(30*time.Second, "the PodGroup without pods says phase Pending", func(ctx context.Context) error {
		if p, err := phase("job"); err != nil || p != "Pending" {
			return fmt.Errorf("phase %q (%v)", p, err)
		}
		return nil
	})
}
