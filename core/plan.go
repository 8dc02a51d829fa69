package core

import (
	"fmt"
	"time"
)

// Bind places one member of a gang on a node.
type Bind struct {
	Gang   string
	Member string
	Node   string
}

// Eviction removes a running member to make room for a preemptor.
type Eviction struct {
	Gang   string
	Member string
	Node   string
	// Preemptor is the gang the room is made for.
	Preemptor string
	// Reclaim is true when the victim's queue is not the preemptor's.
	Reclaim bool
	// The priorities of the preemptor and of the victim's gang, which an
	// Event reports: preemption needs the first to be higher.
	PreemptorPriority, VictimPriority int32
}

// Plan is what a cycle decided. The caller carries it out through its own
// executor and reports the results back as state in the next snapshot.
type Plan struct {
	// Binds in the order they were decided: a gang's minimum is contiguous;
	// its elastic members come after every gang's minimum.
	Binds []Bind
	// Evictions in the order they were decided; a victim gang's evictions
	// are contiguous.
	Evictions []Eviction
	// Holds the cycle asks the caller to keep, for preemptors waiting for
	// their victims to terminate: pass them in the following snapshots
	// until the gang is placed or a grace period (the victims' plus a
	// margin) has passed. A gang's holds replace any it had before.
	Holds []Hold
	// Until is the earliest time, after the cycle's, at which a cycle over
	// the same snapshot might plan otherwise: every comparison the cycle made
	// with its time (a gang's wait against ReserveAfter or ReclaimAfter, a
	// backfill's estimated end against a reservation's start, the run time
	// evictions would lose) comes out the same at any time before it.
	// math.MaxInt64 when none would change. A caller whose snapshot has not
	// changed since may skip the cycles before it, as the simulator does
	// after a cycle that planned nothing; their diagnostics would differ only
	// in what they say of the time (when a reservation is expected to start).
	Until int64
}

// Reason classifies why a gang is still pending.
type Reason string

// Why a gang waits. The message of a GangStatus gives the details in words.
const (
	// ReasonUnschedulable: the cluster has not enough free resources, in
	// total or on fitting nodes, for the gang's minimum.
	ReasonUnschedulable Reason = "Unschedulable"
	// ReasonQueueAtCapability: placing the gang would take its queue past
	// the queue's capability.
	ReasonQueueAtCapability Reason = "QueueAtCapability"
	// ReasonQueueClosed: the gang's queue accepts no new placements.
	ReasonQueueClosed Reason = "QueueClosed"
	// ReasonQueueNotFound: the gang names a queue that does not exist.
	ReasonQueueNotFound Reason = "QueueNotFound"
	// ReasonExceedsCluster: the gang's minimum asks more of a resource than
	// all the cluster's nodes have together; it can never fit as the
	// cluster is.
	ReasonExceedsCluster Reason = "ExceedsCluster"
	// ReasonNotEnoughMembers: fewer members exist than MinMember.
	ReasonNotEnoughMembers Reason = "NotEnoughMembers"
	// ReasonInvalid: the gang's spec is malformed.
	ReasonInvalid Reason = "Invalid"
	// ReasonUnsupportedConstraint: a member declares a constraint the
	// scheduler does not implement (Gang.Unsupported names it).
	ReasonUnsupportedConstraint Reason = "UnsupportedConstraint"
	// ReasonBlocked: a strict-order policy stops at an earlier gang that
	// does not fit.
	ReasonBlocked Reason = "Blocked"
	// ReasonPreempting: the gang fits once members the cycle evicts, or
	// evicted before, have terminated; what they free is held for it.
	ReasonPreempting Reason = "Preempting"
)

// GangStatus says why one gang is still pending after a cycle. Its fields
// are cheap to produce; Message renders them in words only when asked, so
// that a cycle over thousands of waiting gangs formats nothing.
type GangStatus struct {
	Gang   string
	Reason Reason
	// Fit is how many of the members needed for MinMember fitted before the
	// transaction was rolled back; Need is how many were needed.
	Fit, Need int
	// Short is what the cluster lacks in total for the members that did not
	// fit, beyond everything free; zero when the gang is blocked by
	// fragmentation or constraints rather than by totals.
	Short Vector

	names     ResourceNames
	report    *nodeReport
	domains   *outsideDomains
	text      string
	blockedBy string
	// strictQueue names the StrictOrder queue a blocked gang waits in; empty
	// under the StrictFIFO ordering.
	strictQueue string
	// resvNodes, when > 0, is how many nodes are reserved for the gang,
	// from which it is expected to start at resvStart; now is the cycle's
	// time, for the message.
	resvNodes      int
	resvStart, now int64
	// resvAhead: the reservation was made ahead of the gang's due time,
	// resvStart; the gang may start sooner, as soon as it fits.
	resvAhead bool
	// overShare names the gang's queue when the gang is a reservation
	// candidate (it is due, or within Config.ReserveAhead of it) but got
	// none: the queue holds more than its deserved share, and what its own
	// members free would not fit the gang.
	overShare string
	// refused says why the preemption phase evicted nothing for the gang,
	// when it tried.
	refused refusal
}

// Reservation reports the nodes reserved for the gang and when it is
// expected to start on them (in RunCycle's time base), if it has a
// reservation. For a reservation made ahead of the gang's due time
// (ReservedAhead), start is that time: the gang starts by then, or sooner
// if it fits sooner.
func (s GangStatus) Reservation() (nodes int, start int64, ok bool) {
	return s.resvNodes, s.resvStart, s.resvNodes > 0
}

// ReservedAhead reports whether the gang's reservation was made ahead of
// its due time (Config.ReserveAhead), which is the reservation's start.
func (s GangStatus) ReservedAhead() bool { return s.resvNodes > 0 && s.resvAhead }

// Cause is the message without what is reserved for the gang: why it does
// not run now.
func (s GangStatus) Cause() string { return s.message() }

// Message says in words why the gang waits, e.g.
// "3/5 members fit; short 4 nvidia.com/gpu".
func (s GangStatus) Message() string {
	msg := s.message()
	switch {
	case s.resvNodes > 0 && s.resvAhead:
		msg += fmt.Sprintf("; %d node(s) reserved for it ahead of its due time; expected to start within %s",
			s.resvNodes, time.Duration(s.resvStart-s.now)*time.Second)
	case s.resvNodes > 0:
		msg += fmt.Sprintf("; %d node(s) reserved for it; expected to start in %s",
			s.resvNodes, time.Duration(s.resvStart-s.now)*time.Second)
	case s.overShare != "":
		msg += fmt.Sprintf("; in line for a reservation, but queue %s holds more than its deserved share and what its own gangs free "+
			"is not enough for it: nothing is reserved for it until the queue is back within its share", s.overShare)
	}
	return msg
}

func (s GangStatus) message() string {
	switch s.Reason {
	case ReasonUnschedulable:
		if s.domains != nil {
			return s.domains.describe(s.names)
		}
	case ReasonBlocked:
		if s.strictQueue != "" {
			return fmt.Sprintf("waiting behind gang %s, which does not fit: queue %s runs its gangs in strict order", s.blockedBy, s.strictQueue)
		}
		return fmt.Sprintf("waiting behind gang %s, which does not fit (strict FIFO)", s.blockedBy)
	default:
		return s.text
	}
	msg := fmt.Sprintf("%d/%d members fit", s.Fit, s.Need)
	if !s.Short.IsZero() {
		msg += "; short " + s.names.Format(s.Short)
	}
	if s.report != nil && (s.Short.IsZero() || s.report.filtered()) {
		msg += "; " + s.report.describe(s.names)
	}
	if s.refused != notRefused {
		msg += "; no preemption: " + refusalText[s.refused]
	}
	return msg
}

// refuse records why the preemption phase evicted nothing for the gang,
// unless no node could take its members whatever ran there.
func (s *GangStatus) refuse(why refusal) {
	if s.report == nil || !s.report.hopeless() {
		s.refused = why
	}
}

// Diagnostics describe the outcome of a cycle for every gang it looked at.
type Diagnostics struct {
	// Pending holds one status per gang that did not reach MinMember, in the
	// order the cycle considered them.
	Pending []GangStatus
	// Scheduled lists gangs that reached MinMember in this cycle.
	Scheduled []string
}
