//go:build e2e

package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const gateKueue = "kueue.x-k8s.io/admission"

// TestSchedulingGates: a gang two of whose three members carry
// schedulingGates (as Kueue creates them before it admits the workload)
// stays Pending, nothing of it bound, and says how many members which gates
// hold; once the gates are removed it is bound whole.
func TestSchedulingGates(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("gates", 2).GPUs(4))
	startScheduler(t)

	b := gang("gated").Members(3).GPUs(2)
	pg := b.PodGroup()
	pg.Namespace = e.ns
	if _, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := &job{name: "gated", size: 3}
	for i, p := range b.Pods() {
		if i > 0 {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: gateKueue}}
		}
		e.createPod(p)
		j.pods = append(j.pods, p.Name)
	}
	e.eventually(30*time.Second, "the PodGroup says two members are gated",
		e.podGroupCondition("gated", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue,
			"2 of 3 members are held by schedulingGates ("+gateKueue+")"))
	e.eventually(30*time.Second, "the ungated member says why it waits",
		e.podCondition(j.pods[0], corev1.PodScheduled, corev1.ConditionFalse, "SchedulingGated", "held by schedulingGates"))
	e.consistently(holdStill, "nothing of the gang to be bound", e.noneBound(j))
	if err := e.podGroupPhase("gated", v1alpha1.PodGroupPending)(e.ctx); err != nil {
		t.Errorf("a gated gang is admitted: %v", err)
	}

	// Kueue admits the workload: it removes the gates.
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"schedulingGates": nil}})
	for _, name := range j.pods[1:] {
		if _, err := kube.CoreV1().Pods(e.ns).Patch(e.ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("remove the gates of %s: %v", name, err)
		}
	}
	e.eventually(time.Minute, "the gang is bound whole once its gates are gone", e.bound(j))
}
