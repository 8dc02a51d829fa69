package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGroupPhase is where a gang stands.
// +kubebuilder:validation:Enum=Pending;Inqueue;Running;Succeeded;Failed;Unknown
type PodGroupPhase string

// The phases of a PodGroup.
const (
	// PodGroupPending: the gang waits; its queue cannot yet hold its minResources.
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupInqueue: the gang's minResources fit its queue; job operators
	// create the pods once they see this.
	PodGroupInqueue PodGroupPhase = "Inqueue"
	// PodGroupRunning: at least minMember members are bound (and running or
	// starting).
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupSucceeded: the members finished and at least minMember succeeded.
	PodGroupSucceeded PodGroupPhase = "Succeeded"
	// PodGroupFailed: the members finished and fewer than minMember succeeded.
	PodGroupFailed PodGroupPhase = "Failed"
	// PodGroupUnknown: some members run but fewer than minMember are bound.
	PodGroupUnknown PodGroupPhase = "Unknown"
)

// Condition types and reasons of a PodGroup.
const (
	// PodGroupScheduled is True once the gang has reached minMember.
	PodGroupScheduled = "Scheduled"
	// PodGroupUnschedulable is True while the gang waits; its reason and
	// message say why.
	PodGroupUnschedulable = "Unschedulable"
	// PodGroupReserved is True while nodes are reserved for the gang as
	// they free up; its message gives the expected start. It turns False
	// when the reservation ends.
	PodGroupReserved = "Reserved"
)

// PodGroupSpec describes a gang.
type PodGroupSpec struct {
	// MinMember is how many pods must run together; none runs before they
	// all can. At most 100000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +kubebuilder:default=1
	MinMember int32 `json:"minMember"`

	// Queue the gang belongs to. Defaults to "default".
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Queue string `json:"queue,omitempty"`

	// PriorityClassName orders gangs within their queue.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// MinResources is what the gang needs to start, used to admit it to its
	// queue (phase Inqueue) before its pods exist.
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`

	// ScheduleTimeoutSeconds, if set, marks the gang Unschedulable with
	// reason Timeout once it has waited that long.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`

	// EstimatedRuntimeSeconds is how long the gang runs once started. The
	// scheduler counts on it to tell when the gang's nodes free up for a
	// gang that holds a reservation, and lets the gang use nodes reserved
	// for another only if it ends before that gang starts (backfill).
	// Unset, the estimate comes from the pods' activeDeadlineSeconds or
	// from the run times of the queue's recent gangs, if any.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3153600000
	// +optional
	EstimatedRuntimeSeconds *int64 `json:"estimatedRuntimeSeconds,omitempty"`

	// RequiredTopology is a node label key, one of the scheduler's topology
	// levels (--topology), such as phalanx.dev/rack: the gang's minimum must
	// fit within one domain of that level (nodes sharing the label's value),
	// or the gang waits.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +optional
	RequiredTopology string `json:"requiredTopology,omitempty"`

	// GPUModel restricts the members to nodes whose GPU-model label (the
	// scheduler's --gpu-model-label, nvidia.com/gpu.product by default) has
	// this value.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +optional
	GPUModel string `json:"gpuModel,omitempty"`
}

// PodGroupStatus is what the scheduler observed and decided.
type PodGroupStatus struct {
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`
	// Member counts by pod phase.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Running int32 `json:"running,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Conditions: Scheduled, and Unschedulable with why.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation this status describes.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=9007199254740991
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// QueuePosition is the waiting gang's place in its queue, from 1: the
	// order in which the scheduler visits the queue's waiting gangs (gangs
	// holding some members first, then by priority, then, with
	// --shortest-first, by estimated run time, then by arrival). Unset
	// while the gang runs, and when the scheduler has not forecast it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	QueuePosition int32 `json:"queuePosition,omitempty"`
	// ExpectedStartTime is when the waiting gang is forecast to start: the
	// scheduler runs its own cycle forward from its current state, with
	// running gangs ending at their estimates and no new arrivals (as
	// Slurm's squeue --start does). Unset when the gang is not forecast to
	// start within the forecast's horizon, or runs.
	// +optional
	ExpectedStartTime *metav1.Time `json:"expectedStartTime,omitempty"`
	// ExpectedReservationTime is when nodes are forecast to be reserved for
	// the waiting gang (the forecast of ExpectedStartTime): once it has
	// waited out the reservation threshold (reserveAfter, and the backlog
	// with reserveAfterBacklog), or is within reserveAhead of it (with the
	// backlog, once it has waited reserveAfter), and is among the first
	// gangs in line. Unset
	// once nodes are reserved for it (the Reserved condition says since
	// when), when reservations are off, when the forecast starts it without
	// one or does not reserve for it within its horizon, and while the gang
	// runs.
	// +optional
	ExpectedReservationTime *metav1.Time `json:"expectedReservationTime,omitempty"`
}

// PodGroup is a gang of pods that Phalanx places all-or-nothing.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pg;podgroup,categories=phalanx
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="MinMember",type=integer,JSONPath=`.spec.minMember`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.spec.queue`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Unschedulable")].reason`
// +kubebuilder:printcolumn:name="Expected Start",type=string,format=date-time,JSONPath=`.status.expectedStartTime`
// +kubebuilder:printcolumn:name="Position",type=integer,priority=1,JSONPath=`.status.queuePosition`
// +kubebuilder:printcolumn:name="Reservation",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Reserved")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodGroupSpec `json:"spec,omitempty"`
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupList is a list of PodGroups.
//
// +kubebuilder:object:root=true
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

// QueueState says whether a queue accepts new placements.
// +kubebuilder:validation:Enum=Open;Closed
type QueueState string

// Queue states.
const (
	QueueOpen   QueueState = "Open"
	QueueClosed QueueState = "Closed"
)

// DefaultQueue is the queue of gangs that name none; the scheduler creates it
// at start if it is missing.
const DefaultQueue = "default"

// QueueSpec describes a tenant's share.
type QueueSpec struct {
	// Weight is the queue's share relative to the other queues, from 1
	// to 1000000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +kubebuilder:default=1
	// +optional
	Weight int32 `json:"weight,omitempty"`
	// Capability caps what the queue's gangs may hold; resources not listed
	// are not capped.
	// +optional
	Capability corev1.ResourceList `json:"capability,omitempty"`
	// Guarantee is what the queue deserves whatever the weights say.
	// +optional
	Guarantee corev1.ResourceList `json:"guarantee,omitempty"`
	// State Closed stops new placements; running gangs are left alone.
	// +kubebuilder:default=Open
	// +optional
	State QueueState `json:"state,omitempty"`
	// ReserveAfterSeconds is how long a gang of this queue that does not
	// fit waits before the scheduler reserves nodes for it as they free up.
	// Unset, the scheduler's --reserve-after applies. With the scheduler's
	// --reserve-ahead, the nodes may be reserved up to that long before,
	// for a reservation that starts when the gang has waited this long.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ReserveAfterSeconds *int32 `json:"reserveAfterSeconds,omitempty"`
	// PreemptMinRuntimeSeconds is how long a gang of this queue runs
	// before a gang of higher priority in the queue may preempt it, counted
	// from the start of each member. 0 protects nothing. Unset, the
	// scheduler's --preempt-min-runtime applies.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	PreemptMinRuntimeSeconds *int32 `json:"preemptMinRuntimeSeconds,omitempty"`
	// ReclaimMinRuntimeSeconds is how long a gang of this queue runs
	// before another queue may reclaim its room, counted from the start of
	// each member. 0 protects nothing. Unset, the scheduler's
	// --reclaim-min-runtime applies.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ReclaimMinRuntimeSeconds *int32 `json:"reclaimMinRuntimeSeconds,omitempty"`
	// Reclaimable false keeps other queues from reclaiming what this
	// queue's gangs hold, even beyond its deserved share.
	// +kubebuilder:default=true
	// +optional
	Reclaimable *bool `json:"reclaimable,omitempty"`
	// StrictOrder runs the queue's gangs strictly by priority then
	// creation: the first that does not fit blocks the later ones, and the
	// scheduler reserves nodes for it at once, without waiting for
	// reserveAfterSeconds.
	// +optional
	StrictOrder bool `json:"strictOrder,omitempty"`
	// NamespaceSelector says which namespaces may put gangs in this queue,
	// by their labels (every namespace has kubernetes.io/metadata.name).
	// A gang of another namespace that names the queue waits with reason
	// QueueNotAllowed and never preempts. Unset, every namespace may, as
	// on a cluster of one tenant; set it on every queue of a shared
	// cluster.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// QueueStatus is what the queue holds and waits for.
type QueueStatus struct {
	// Allocated is what the queue's bound pods request.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
	// Deserved is the queue's fair share of the schedulable nodes: their
	// resources dealt among the queues by weight, each up to what it holds
	// and its gangs ask for and up to its capability, and at least its
	// guarantee. A queue holding more than it deserves may be reclaimed
	// from.
	// +optional
	Deserved corev1.ResourceList `json:"deserved,omitempty"`
	// Pending counts gangs waiting for their minimum.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// Running counts gangs at or above their minimum.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Running int32 `json:"running,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Queue is a tenant's share of the cluster: gangs name it in
// PodGroup.spec.queue.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=q,categories=phalanx
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pending`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`
// +kubebuilder:printcolumn:name="GPUs",type=string,JSONPath=`.status.allocated.nvidia\.com/gpu`
// +kubebuilder:printcolumn:name="Deserved GPUs",type=string,JSONPath=`.status.deserved.nvidia\.com/gpu`
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec QueueSpec `json:"spec,omitempty"`
	// +optional
	Status QueueStatus `json:"status,omitempty"`
}

// QueueList is a list of Queues.
//
// +kubebuilder:object:root=true
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}
