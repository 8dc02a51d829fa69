//go:build e2e

package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestOverflowingRequests is issue 9's report: pods requesting more than an
// int64 of millicores or bytes can hold were bound onto a 64-CPU, 8-GPU
// node, and cpu 9223372036854775807 was called "a negative amount of
// resource #0". Each must wait, saying which resource and value it cannot
// count, and stay unbound; an ordinary pod still runs beside them.
func TestOverflowingRequests(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("ovf", 1).CPU("64").GPUs(8))
	startScheduler(t)

	// The API server returns quantities in canonical form: 1e16 reads
	// 10e15, and so does the message.
	for _, tc := range []struct {
		pod, resource, quantity, shown string
	}{
		{"cpu-1e16", "cpu", "1e16", "cpu=10e15"},
		{"memory-1e19", "memory", "1e19", "memory=10e18"},
		{"gpu-1e19", string(resourceGPU), "1e19", "nvidia.com/gpu=10e18"},
		{"cpu-maxint64", "cpu", "9223372036854775807", "cpu=9223372036854775807"},
	} {
		e.createPod(withLimit(makePod(tc.pod), tc.resource, tc.quantity))
		e.eventually(30*time.Second, tc.pod+"'s PodScheduled condition names "+tc.shown,
			e.podCondition(tc.pod, corev1.PodScheduled, corev1.ConditionFalse, tc.shown, "more than Phalanx can count"))
	}
	e.consistently(holdStill, "the pods Phalanx cannot count to stay unbound",
		all(e.unbound("cpu-1e16"), e.unbound("memory-1e19"), e.unbound("gpu-1e19"), e.unbound("cpu-maxint64")))

	e.createPod(makePod("ordinary").CPU("4").GPUs(2).Obj())
	e.eventually(30*time.Second, "an ordinary pod runs", e.podRunning("ordinary"))
	if err := all(e.unbound("cpu-1e16"), e.unbound("memory-1e19"), e.unbound("gpu-1e19"), e.unbound("cpu-maxint64"))(e.ctx); err != nil {
		e.dump()
		t.Fatalf("a pod Phalanx cannot count was bound: %v", err)
	}
}

// withLimit sets a limit of the pod's container, which the API server
// copies into its requests.
func withLimit(b *podBuilder, name, quantity string) *corev1.Pod {
	p := b.Obj()
	p.Spec.Containers[0].Resources.Limits[corev1.ResourceName(name)] = resource.MustParse(quantity)
	return p
}
