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
)

// TestLeaderFailover runs two replicas on one Lease: exactly one schedules;
// when it stops, the other takes over and schedules the next gang.
func TestLeaderFailover(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("le", 2).GPUs(2))
	_, err := kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "phalanx-system"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	lease := func(id string) *scheduler.LeaderElection {
		return &scheduler.LeaderElection{Namespace: "phalanx-system", Name: "phalanx-failover-e2e", Identity: id,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
	}
	stopA, readyA := startSchedulerWith(t, restConfig, lease("a"), true)
	_, readyB := startSchedulerWith(t, restConfig, lease("b"), false)

	first := e.create(gang("first").Members(2).GPUs(1))
	e.eventually(time.Minute, "the leader binds the first gang", e.bound(first))
	b, _ := electing.Load("b")
	e.consistently(holdStill, "one replica leads, the other stands by", func(context.Context) error {
		if !readyA() || readyB() {
			return fmt.Errorf("replica a ready=%v, b ready=%v; want only a", readyA(), readyB())
		}
		if !b.(*scheduler.Scheduler).Standby() {
			return fmt.Errorf("replica b is not a standby (its /readyz would fail, and a Deployment of two never rolls out)")
		}
		return nil
	})

	stopA() // releases the Lease
	e.eventually(time.Minute, "the standby takes over", func(context.Context) error {
		if !readyB() || b.(*scheduler.Scheduler).Standby() {
			return fmt.Errorf("replica b does not lead yet")
		}
		return nil
	})
	second := e.create(gang("second").Members(2).GPUs(1))
	e.eventually(time.Minute, "the new leader binds the second gang", e.bound(second))
}
