//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

var kubeBatchPodGroups = schema.GroupVersionResource{Group: "scheduling.incubator.k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// TestKubeBatchPodGroup: tf-operator with --enable-gang-scheduling creates
// kube-batch's PodGroup, not Phalanx's. Where the cluster serves that API,
// Phalanx reads the gang's minMember from it: the gang waits whole, then
// runs whole once there is room.
func TestKubeBatchPodGroup(t *testing.T) {
	e := newEnv(t)
	crds, err := readManifests("testdata/kube-batch-podgroup-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if err := applyCRD(e.ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(kubeBatchPodGroups).Namespace(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kube-batch's PodGroup API not served: %v", err)
	}
	e.addNodes(kwokNodes("kb", 2).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t, "kube-batch")

	j := e.create(tfJob("tfjob").PS(1).Workers(3).GPUsPerWorker(1).SchedulerName("kube-batch").KubeBatch())
	e.eventually(30*time.Second, "the pods say the gang is one GPU short",
		e.podsCondition(j, "PodScheduled", "False", "3/4 members fit", "short 1 nvidia.com/gpu"))
	e.consistently(holdStill, "the gang to stay whole-pending", e.noneBound(j))
	e.addNodes(kwokNodes("kb-more", 1).CPU("4").Memory("16Gi").GPUs(1))
	e.eventually(time.Minute, "the gang runs whole", e.running(j))
}
