package scheduler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Partial gangs: a gang that holds some members but not its minimum.
//
// A gang is bound member by member, so a scheduler killed in the middle of
// binding one leaves it partial; so does a member lost while its gang ran,
// until its replacement is placed. Such members hold their nodes idle. Two
// rules keep that bounded:
//
//  1. The core completes partial gangs before any other gang, whatever their
//     priority or their queue's share (core/cycle.go), so that no later gang
//     takes the room the rest needs.
//  2. A partial gang that makes no progress for --partial-gang-timeout (its
//     latest bind, or the creation of its newest waiting member, is older
//     than that) while the rest still does not fit has its bound members
//     evicted: nothing then holds room for a gang that cannot run, and the
//     gang waits whole, as any other. The PodGroup's status says when this
//     will happen, and an Event on each member says it did.
//
// The times come from the API server (the pods' PodScheduled condition and
// creation time), so a restarted scheduler keeps the same deadline.

// partialDeadline returns what the status of partial gang v adds to its
// message: when its members will be evicted, or that they are being
// evicted now, which it starts when the deadline has passed.
func (s *Scheduler) partialDeadline(ctx context.Context, v *gangView, now time.Time) string {
	timeout := s.opts.PartialGangTimeout
	deadline := time.Unix(v.partialSince, 0).Add(timeout)
	if now.Before(deadline) {
		return fmt.Sprintf("; it is completed before other gangs, and unless the rest fits by %s its bound members are evicted",
			deadline.UTC().Format(time.RFC3339))
	}
	s.releasePartial(ctx, v, timeout)
	return fmt.Sprintf("; the rest did not fit within --partial-gang-timeout (%v): its bound members are evicted, and the gang waits whole", timeout)
}

// releasePartial evicts the bound members of partial gang v that are not
// terminating already.
func (s *Scheduler) releasePartial(ctx context.Context, v *gangView, timeout time.Duration) {
	for _, p := range v.info.members {
		if !p.holds() || p.assumed || p.pod.DeletionTimestamp != nil || s.store.evicting[p.pod.UID] {
			continue
		}
		s.store.MarkEvicting(p.pod.UID)
		why := fmt.Sprintf("Evicted from %s: gang %s held %d of its %d members for more than %v without the rest fitting; "+
			"its members are released so that they hold no room for a gang that cannot run", p.node, v.info.name, v.bound, v.minMember, timeout)
		s.postEviction(ctx, p.pod, "partial", v.info.key, nil, corev1.EventTypeWarning, "PartialGangReleased", why, nil)
	}
}
