//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
)

// TestEstimateCorrection: five gangs of a queue declare 2 s and run about
// 4 s each. Their queue's estimate factor, exported as
// phalanx_queue_estimate_factor, becomes the median of their ratios, about
// 2, and its work factor (phalanx_queue_work_factor) about 1. Gang first then declares 20 s and runs; gang big, reserved behind it,
// is expected to start at first's start plus 20 s times the factor, not
// plus the 20 s declared.
func TestEstimateCorrection(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("est", 1).GPUs(8))
	one := int32(1)
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1, ReserveAfterSeconds: &one})
	metrics := startSchedulerMetrics(t, scheduler.Options{CorrectEstimates: true})

	var done []*job
	for i := range 5 {
		done = append(done, e.create(gang(fmt.Sprintf("done-%d", i)).Members(1).GPUs(1).Queue(queue).Estimate(2).RunFor("4s")))
	}
	for _, j := range done {
		e.eventually(time.Minute, j.name+" succeeds", e.inPhase(j, corev1.PodSucceeded))
	}
	// gauge reads the queue's series of a gauge, 0 when it has none.
	gauge := func(name string) (float64, error) {
		families, err := metrics.Registry.Gather()
		if err != nil {
			return 0, err
		}
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == queue {
					return m.GetGauge().GetValue(), nil
				}
			}
		}
		return 0, nil
	}
	var factor, work float64
	e.eventually(30*time.Second, "the queue's estimate and work factors are exported", func(context.Context) error {
		var err error
		if factor, err = gauge("phalanx_queue_estimate_factor"); err != nil {
			return err
		}
		if work, err = gauge("phalanx_queue_work_factor"); err != nil {
			return err
		}
		// Each ran 4 s, give or take the second the API's times are
		// rounded to, against 2 s declared: the median about 2, and the
		// sum of run times about that of the corrected estimates.
		if factor < 1.5 || factor > 3 {
			return fmt.Errorf("factor %g for queue %s, want about 2", factor, queue)
		}
		if work < 0.5 || work > 2 {
			return fmt.Errorf("work factor %g for queue %s (estimate factor %g), want about 1", work, queue, factor)
		}
		return nil
	})

	first := e.create(gang("first").Members(1).GPUs(8).Queue(queue).Estimate(20).RunFor("40s"))
	e.eventually(30*time.Second, "first runs", e.running(first))
	pods, err := e.pods(e.ctx, first)
	if err != nil || pods[0].Status.StartTime == nil {
		t.Fatalf("first's pod has no start time: %v", err)
	}
	corrected := core.CorrectEstimate(20, factor, math.MaxInt64)
	expected := pods[0].Status.StartTime.Add(time.Duration(corrected) * time.Second).UTC().Format(time.RFC3339)

	e.create(gang("big").Members(1).GPUs(8).Queue(queue).RunFor("1s"))
	e.eventually(30*time.Second, fmt.Sprintf("big is expected to start %d s after first started (20 s declared, times %g)", corrected, factor),
		e.expectedStart("big", expected))
}
