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
)

// PodGroupSpec describes a gang.
type PodGroupSpec struct {
	// MinMember is how many pods must run together; none runs before they
	// all can.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	MinMember int32 `json:"minMember"`

	// Queue the gang belongs to. Defaults to "default".
	// +optional
	Queue string `json:"queue,omitempty"`

	// PriorityClassName orders gangs within their queue.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// MinResources is what the gang needs to start, used to admit it to its
	// queue (phase Inqueue) before its pods exist.
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`

	// ScheduleTimeoutSeconds, if set, marks the gang Unschedulable with
	// reason Timeout once it has waited that long.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// PodGroupStatus is what the scheduler observed and decided.
type PodGroupStatus struct {
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`
	// Member counts by pod phase.
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// +optional
	Running int32 `json:"running,omitempty"`
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Conditions: Scheduled, and Unschedulable with why.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
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
	// Weight is the queue's share relative to the other queues.
	// +kubebuilder:validation:Minimum=1
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
}

// QueueStatus is what the queue holds and waits for.
type QueueStatus struct {
	// Allocated is what the queue's bound pods request.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
	// Pending counts gangs waiting for their minimum.
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// Running counts gangs at or above their minimum.
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
