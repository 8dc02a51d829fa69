//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/scheduler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	volcanoPodGroups = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	volcanoQueues    = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
)

// TestVolcanoPodGroupStatus: Phalanx serving the scheduler name volcano,
// on Volcano's CRDs (generated from volcano.sh/apis, no status
// subresource, as Volcano's installer ships them). A Volcano PodGroup
// without pods, in a Volcano Queue, goes Inqueue (training-operator creates
// pods only then); with its pods bound it goes Running, with Volcano's
// counts; Phalanx's Events name phalanx as their source, not volcano.
func TestVolcanoPodGroupStatus(t *testing.T) {
	e := newEnv(t)
	installOperatorCRDs(t, e, "volcano")
	e.addNodes(kwokNodes("volcano", 2).GPUs(1))
	startScheduler(t, "volcano")

	queue := e.ns + "-research"
	q := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
		"metadata": map[string]any{"name": queue},
		"spec":     map[string]any{"weight": int64(1), "capability": map[string]any{"nvidia.com/gpu": "2"}},
	}}
	if _, err := dyn.Resource(volcanoQueues).Create(e.ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(volcanoQueues).Delete(context.Background(), queue, metav1.DeleteOptions{}) })
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "job", "namespace": e.ns},
		"spec":     map[string]any{"minMember": int64(2), "queue": queue, "minResources": map[string]any{"nvidia.com/gpu": "2"}},
	}}
	if _, err := dyn.Resource(volcanoPodGroups).Namespace(e.ns).Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, "the PodGroup without pods goes Inqueue", e.volcanoPhase("job", "Inqueue"))

	j := &job{name: "job", size: 2}
	for _, p := range tfJob("job").Workers(2).GPUsPerWorker(1).SchedulerName("volcano").Pods() {
		j.pods = append(j.pods, e.createPod(p).Name)
	}
	e.eventually(time.Minute, "the gang runs whole", e.running(j))
	e.eventually(30*time.Second, "the PodGroup goes Running with 2 running", func(ctx context.Context) error {
		if err := e.volcanoPhase("job", "Running")(ctx); err != nil {
			return err
		}
		u, err := dyn.Resource(volcanoPodGroups).Namespace(e.ns).Get(ctx, "job", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n, _, _ := unstructured.NestedInt64(u.Object, "status", "running"); n != 2 {
			return fmt.Errorf("status.running = %d, want 2", n)
		}
		return nil
	})
	e.eventually(30*time.Second, "the pods' Scheduled Events come from phalanx", func(ctx context.Context) error {
		l, err := kube.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", "Scheduled").String()})
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return fmt.Errorf("no Scheduled Event yet")
		}
		for _, ev := range l.Items {
			if ev.Source.Component != scheduler.EventComponent {
				return fmt.Errorf("Event %s on %s has source %q, want %q", ev.Reason, ev.InvolvedObject.Name, ev.Source.Component, scheduler.EventComponent)
			}
		}
		return nil
	})
}

// volcanoPhase: the Volcano PodGroup name has status.phase phase.
func (e *env) volcanoPhase(name, phase string) check {
	return func(ctx context.Context) error {
		u, err := dyn.Resource(volcanoPodGroups).Namespace(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if got != phase {
			st, _, _ := unstructured.NestedMap(u.Object, "status")
			return fmt.Errorf("Volcano PodGroup %s: phase %q, want %q (status %v)", name, got, phase, st)
		}
		return nil
	}
}
