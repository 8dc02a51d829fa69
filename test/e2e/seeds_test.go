//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// holdStill is how long a test watches a gang that must not start.
const holdStill = 5 * time.Second

// TestSeedTFJobs replays seeds 000/001: tf-operator with kube-batch on four
// nodes of one GPU. job1 (1 PS + 3 workers) runs; job2 (1 PS + 2 workers)
// waits whole, saying it is one GPU short, instead of starting its PS and
// one worker as the default scheduler does; it runs once job1 finishes.
func TestSeedTFJobs(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("seed-tf", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t, "kube-batch")

	job1 := e.create(tfJob("job1").PS(1).Workers(3).GPUsPerWorker(1).RunFor("25s").SchedulerName("kube-batch"))
	e.eventually(time.Minute, "job1's 4 pods run", e.running(job1))
	e.eventually(30*time.Second, "job1's PodGroup is Running", all(
		e.podGroupPhase("job1", v1alpha1.PodGroupRunning),
		e.podGroupCondition("job1", v1alpha1.PodGroupScheduled, metav1.ConditionTrue)))

	job2 := e.create(tfJob("job2").PS(1).Workers(2).GPUsPerWorker(1).RunFor("5s").SchedulerName("kube-batch"))
	e.eventually(30*time.Second, "job2's PodGroup says it is one GPU short",
		e.podGroupCondition("job2", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "2/3 members fit", "nvidia.com/gpu"))
	e.eventually(30*time.Second, "job2's pods carry PodScheduled=False",
		e.podsCondition(job2, corev1.PodScheduled, corev1.ConditionFalse, "2/3 members fit"))
	e.consistently(holdStill, "job2 to stay whole-pending while job1 runs", all(e.noneBound(job2), e.running(job1)))

	e.eventually(90*time.Second, "job1's pods succeed", e.inPhase(job1, corev1.PodSucceeded))
	e.eventually(time.Minute, "job2's 3 pods get nodes and run", e.started(job2))
	e.eventually(time.Minute, "job2's pods succeed", e.inPhase(job2, corev1.PodSucceeded))
	e.eventually(30*time.Second, "both PodGroups are Succeeded", all(
		e.podGroupPhase("job1", v1alpha1.PodGroupSucceeded),
		e.podGroupPhase("job2", v1alpha1.PodGroupSucceeded)))
	e.eventually(10*time.Second, "job2's PodGroup is no longer Unschedulable",
		e.podGroupCondition("job2", v1alpha1.PodGroupUnschedulable, metav1.ConditionFalse))

	// While a placed gang's pods start one by one the adapter may report
	// phase Unknown ("some members run but fewer than minMember") for a
	// moment; what must hold is Running before Succeeded, and never Failed.
	for _, pg := range []string{"job1", "job2"} {
		seen := e.phaseHistory(pg)
		t.Logf("PodGroup %s phases: %v", pg, seen)
		if !isSubsequence([]v1alpha1.PodGroupPhase{v1alpha1.PodGroupRunning, v1alpha1.PodGroupSucceeded}, seen) ||
			slices.Contains(seen, v1alpha1.PodGroupFailed) {
			t.Errorf("PodGroup %s went through phases %v; want Running then Succeeded, never Failed", pg, seen)
		}
	}
}

// TestSeedACKLabels replays seed 002: ACK's labels-only gang tf-smoke-gpu
// (1 PS + 4 workers of 2 GPUs, min-available 5, no PodGroup object) on 4
// GPUs waits whole, saying what it lacks; with 4 more GPUs it runs whole.
func TestSeedACKLabels(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("seed-ack-a", 2).GPUs(2))
	startScheduler(t)

	j := e.create(ackJob("tf-smoke-gpu").PS(1).Workers(4).GPUsPerWorker(2).MinAvailable("5"))
	e.eventually(30*time.Second, "the pods' PodScheduled condition says the gang is larger than the cluster",
		e.podsCondition(j, corev1.PodScheduled, corev1.ConditionFalse, "can never fit: the cluster has 4 nvidia.com/gpu, the gang needs 8 nvidia.com/gpu"))
	e.consistently(holdStill, "tf-smoke-gpu to stay whole-pending on 4 GPUs", e.noneBound(j))

	e.addNodes(kwokNodes("seed-ack-b", 2).GPUs(2))
	e.eventually(time.Minute, "tf-smoke-gpu's 5 pods run", e.running(j))
	e.eventually(10*time.Second, "no node over its GPUs", gpusWithinCapacity)
}

// isSubsequence reports whether want appears in got in order, not
// necessarily next to each other.
func isSubsequence[T comparable](want, got []T) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
