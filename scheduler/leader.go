package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// LeaderElection configures RunLeading.
type LeaderElection struct {
	// Namespace and Name of the Lease; Identity of this replica.
	Namespace, Name, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod as client-go's leader
	// election uses them; zero means 15 s, 10 s and 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// RunLeading runs the scheduler only while this replica holds the Lease, so
// that of several replicas exactly one schedules. It returns when ctx ends
// or leadership is lost; the caller should then exit, as a new leader may
// already be binding.
func (s *Scheduler) RunLeading(ctx context.Context, le LeaderElection) error {
	if le.LeaseDuration == 0 {
		le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.Namespace, le.Name,
		s.opts.ElectionKube.CoreV1(), s.opts.ElectionKube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: le.Identity})
	if err != nil {
		return fmt.Errorf("scheduler: leader election: %w", err)
	}
	logger := klog.FromContext(ctx)
	// client-go runs OnStartedLeading in a goroutine of its own and does not
	// wait for it; finished lets RunLeading wait until Run has returned, so
	// that no bind is still in flight when it returns.
	var (
		mu       sync.Mutex
		finished chan struct{}
		runErr   error
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: le.Name,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				s.leading.Store(true)
				logger.Info("Leading", "lease", klog.KRef(le.Namespace, le.Name), "identity", le.Identity)
				done := make(chan struct{})
				mu.Lock()
				finished = done
				mu.Unlock()
				err := s.Run(ctx)
				mu.Lock()
				runErr = err
				mu.Unlock()
				close(done)
			},
			OnStoppedLeading: func() {
				logger.Info("Not leading any more", "lease", klog.KRef(le.Namespace, le.Name), "identity", le.Identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("scheduler: leader election: %w", err)
	}
	s.electing.Store(true)
	defer s.electing.Store(false)
	elector.Run(ctx)
	mu.Lock()
	done := finished
	mu.Unlock()
	if done != nil {
		<-done
	}
	mu.Lock()
	defer mu.Unlock()
	return runErr
}
