package scheduler

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons the adapter adds to the core's.
const (
	ReasonPodGroupNotFound = "PodGroupNotFound"
	// ReasonQueueNotAllowed: the gang's namespace may not use its queue.
	ReasonQueueNotAllowed = "QueueNotAllowed"
	ReasonScheduled       = "Scheduled"
	ReasonWaiting         = "Waiting"
	// ReasonReserved and ReasonNotReserved are the reasons of the Reserved
	// condition.
	ReasonReserved    = "Reserved"
	ReasonNotReserved = "NotReserved"
	// ReasonSchedulingGated: the gang's minimum needs members whose
	// schedulingGates are not all removed yet (the API server gives such a
	// pod this reason too).
	ReasonSchedulingGated = "SchedulingGated"
)

// verdict is the outcome of the latest cycle for one gang.
type verdict struct {
	reason  string
	message string
	// reserved: nodes are reserved for the gang (reservation.go).
	reserved bool
	resv     reservation
}

// ReasonTimeout replaces the core's reason once a gang has waited longer
// than its PodGroup's scheduleTimeoutSeconds.
const ReasonTimeout = "Timeout"

// verdictOf turns a core status into the adapter's words. now is the cycle's
// time, in Unix seconds; last is the gang's previous verdict (nil if none):
// a reservation made ahead keeps the start last published while it moves
// little (reservation.steady).
func verdictOf(v *gangView, st core.GangStatus, now int64, last *verdict) verdict {
	if v.missingPG {
		return verdict{reason: ReasonPodGroupNotFound, message: st.Message()}
	}
	if v.notAllowed {
		return verdict{reason: ReasonQueueNotAllowed, message: st.Message()}
	}
	if v.heldByGates {
		return verdict{reason: ReasonSchedulingGated, message: st.Message()}
	}
	msg, resv, reserved := reservationOf(st)
	if reserved {
		resv = resv.steady(last, now)
		msg += "; " + resv.text(now)
	}
	if v.modelMissing {
		msg = fmt.Sprintf("no node has GPU model %s (label %s); %s", v.gpuModel, v.gpuModelLabel, msg)
	}
	if pg := v.podGroup; pg != nil && pg.Spec.ScheduleTimeoutSeconds != nil {
		waited := now - pg.CreationTimestamp.Unix()
		if limit := int64(*pg.Spec.ScheduleTimeoutSeconds); waited > limit {
			return verdict{reason: ReasonTimeout, message: fmt.Sprintf("waiting for more than scheduleTimeoutSeconds (%d s): %s", limit, msg),
				reserved: reserved, resv: resv}
		}
	}
	if len(v.coming) > 0 && st.Reason == core.ReasonUnschedulable {
		msg += fmt.Sprintf("; the gang starts only with room for %s too, %s", v.comingWhat, v.comingWhy)
	}
	if v.bound > 0 && v.bound < v.minMember {
		// After a failed bind or a lost member: say that the members already
		// bound hold their nodes while the rest waits.
		msg = fmt.Sprintf("%d/%d members hold nodes while the rest waits; %s", v.bound, v.minMember, msg)
	}
	return verdict{reason: string(st.Reason), message: msg, reserved: reserved, resv: resv}
}

// podGroupStatus computes the status a PodGroup should have. It is a pure
// function of the gang's view, the latest verdict (nil when the gang is not
// waiting) and whether the gang's queue admits its minResources; conditions
// keep their transition time when they do not change.
func podGroupStatus(old v1alpha1.PodGroupStatus, v *gangView, last *verdict, admitted bool, now metav1.Time) v1alpha1.PodGroupStatus {
	st := *old.DeepCopy()
	st.Pending, st.Running, st.Succeeded, st.Failed = v.nPending, v.nRunning, v.nSucceeded, v.nFailed
	if v.podGroup != nil {
		st.ObservedGeneration = v.podGroup.Generation
	}
	min := int32(v.minMember)
	members := v.nPending + v.nRunning + v.nSucceeded + v.nFailed
	switch {
	case members > 0 && v.nRunning == 0 && v.nPending == 0 && (v.nSucceeded >= min || v.nFailed == 0):
		// Ended: succeeded when enough members did, or when every member
		// left did (an operator deletes the workers of a job whose launcher
		// succeeded: mpi-operator's cleanPodPolicy Running).
		st.Phase = v1alpha1.PodGroupSucceeded
	case members > 0 && v.nPending == 0 && v.nRunning == 0:
		st.Phase = v1alpha1.PodGroupFailed
	case int32(v.bound) >= min:
		st.Phase = v1alpha1.PodGroupRunning // bound whole; members may still be starting
	case v.nRunning > 0:
		st.Phase = v1alpha1.PodGroupUnknown
	case admitted:
		st.Phase = v1alpha1.PodGroupInqueue
	default:
		st.Phase = v1alpha1.PodGroupPending
	}
	scheduled := int32(v.bound) >= min && min > 0
	set := func(typ string, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
			Message: msg, ObservedGeneration: st.ObservedGeneration, LastTransitionTime: now})
	}
	switch {
	case scheduled:
		msg := fmt.Sprintf("%d/%d members bound", v.bound, v.minMember)
		set(v1alpha1.PodGroupScheduled, true, ReasonScheduled, msg)
		set(v1alpha1.PodGroupUnschedulable, false, ReasonScheduled, msg)
	case last != nil:
		set(v1alpha1.PodGroupScheduled, false, last.reason, last.message)
		set(v1alpha1.PodGroupUnschedulable, true, last.reason, last.message)
	default:
		msg := fmt.Sprintf("%d/%d members bound", v.bound, v.minMember)
		set(v1alpha1.PodGroupScheduled, false, ReasonWaiting, msg)
	}
	// Reserved is True while the gang holds a reservation; a gang that
	// never held one does not carry the condition.
	switch {
	case !scheduled && last != nil && last.reserved:
		set(v1alpha1.PodGroupReserved, true, ReasonReserved, last.resv.text(now.Unix()))
	case meta.FindStatusCondition(st.Conditions, v1alpha1.PodGroupReserved) != nil:
		reason, msg := ReasonNotReserved, "no node is reserved for the gang"
		if scheduled {
			reason, msg = ReasonScheduled, fmt.Sprintf("%d/%d members bound", v.bound, v.minMember)
		}
		set(v1alpha1.PodGroupReserved, false, reason, msg)
	}
	return st
}

// statusChanged reports whether writing desired over current would change
// anything.
func statusChanged(current, desired any) bool { return !equality.Semantic.DeepEqual(current, desired) }

// podScheduledCondition is the PodScheduled=False condition of a waiting
// member, or false when the pod already carries it unchanged.
func podScheduledCondition(pod *corev1.Pod, last verdict, now metav1.Time) (corev1.PodCondition, bool) {
	msg := last.message
	if last.reason != corev1.PodReasonUnschedulable {
		msg = last.reason + ": " + msg // the pod's reason is always Unschedulable
	}
	want := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: now}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return corev1.PodCondition{}, false
		}
	}
	return want, true
}

// queueStatus computes a Queue's status from the cycle's views.
func queueStatus(old v1alpha1.QueueStatus, allocated, deserved corev1.ResourceList, pending, running int32) v1alpha1.QueueStatus {
	st := *old.DeepCopy()
	st.Allocated, st.Deserved, st.Pending, st.Running = allocated, deserved, pending, running
	return st
}
