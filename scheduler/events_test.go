package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

// TestPodEventsBounded: past PodEventQPS (after its burst), Events about
// single pods are skipped and counted; without a bound all go.
func TestPodEventsBounded(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, tc := range []struct {
		name          string
		qps           float64
		burst         int
		sent, skipped int
	}{
		{"bounded", 0.001, 3, 3, 7},
		{"unbounded", 0, 0, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorder := record.NewFakeRecorder(100)
			m := NewMetrics()
			s, err := New(Options{PodEventQPS: tc.qps, PodEventBurst: tc.burst}, nil, nil, m, recorder)
			if err != nil {
				t.Fatal(err)
			}
			for range 10 {
				s.podEvent(pod, corev1.EventTypeNormal, "Scheduled", "assigned")
			}
			if got := len(recorder.Events); got != tc.sent {
				t.Errorf("%d Events written, want %d", got, tc.sent)
			}
			if got := counterValue(t, m.PodEventsSkipped); got != float64(tc.skipped) {
				t.Errorf("phalanx_pod_events_skipped_total %v, want %d", got, tc.skipped)
			}
		})
	}
	if err := (&Options{PodEventQPS: -1}).Validate(); err == nil {
		t.Error("a negative --pod-event-qps was accepted")
	}
}
