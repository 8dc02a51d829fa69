//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestQueueNotAllowed: queue team-b admits only the test's namespace
// (namespaceSelector on kubernetes.io/metadata.name), where team-b's
// low-priority gang runs. A high-priority pod of another namespace names
// team-b: it waits with reason QueueNotAllowed and evicts nothing. A pod of
// that namespace in a queue without a selector runs.
func TestQueueNotAllowed(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("tenant", 1).GPUs(4))
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	teamB := e.queueNamed("team-b", v1alpha1.QueueSpec{Weight: 1, NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{corev1.LabelMetadataName: e.ns}}})
	startSchedulerOpts(t, scheduler.Options{Preemption: true})

	b := e.create(gang("b").Members(2).GPUs(2).Queue(teamB).PriorityClass(low))
	e.eventually(30*time.Second, "team-b's gang runs", e.running(b))

	other := e.otherNamespace("tenant-a")
	intruder := makePod("intruder").GPUs(4).Annotation(annQueue, teamB).Obj()
	intruder.Spec.PriorityClassName = high
	if _, err := kube.CoreV1().Pods(other).Create(e.ctx, intruder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, "the intruder says its namespace may not use the queue",
		e.podConditionIn(other, "intruder", corev1.PodScheduled, corev1.ConditionFalse, "QueueNotAllowed", "may not use queue "+teamB))
	e.consistently(holdStill, "team-b's gang to keep running and the intruder to wait", all(e.running(b),
		func(ctx context.Context) error {
			p, err := kube.CoreV1().Pods(other).Get(ctx, "intruder", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Spec.NodeName != "" {
				return fmt.Errorf("the intruder was bound to %s", p.Spec.NodeName)
			}
			return nil
		}))
}

// otherNamespace creates a second namespace for the test, deleted with its
// pods when the test ends.
func (e *env) otherNamespace(prefix string) string {
	e.t.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		zero := int64(0)
		_ = kube.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if cur, err := kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err == nil {
			cur.Spec.Finalizers = nil
			_, _ = kube.CoreV1().Namespaces().Finalize(ctx, cur, metav1.UpdateOptions{})
		}
	})
	return ns.Name
}
