package scheduler

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The ways a pod names its gang, as the tools users already run write them.
const (
	// AnnotationGroupName is kube-batch's and Volcano's annotation, written by
	// tf-operator with --enable-gang-scheduling.
	AnnotationGroupName = "scheduling.k8s.io/group-name"
	// LabelPodGroup is scheduler-plugins' label (training-operator >= 1.7).
	LabelPodGroup = "scheduling.x-k8s.io/pod-group"
	// LabelACKName and LabelACKMinAvailable are ACK's labels: the gang is
	// implied by them, with no PodGroup object.
	LabelACKName         = "pod-group.scheduling.sigs.k8s.io/name"
	LabelACKMinAvailable = "pod-group.scheduling.sigs.k8s.io/min-available"
)

// MembershipKind says how a pod joined its gang.
type MembershipKind string

// Membership kinds.
const (
	// ByPodGroup: the pod names a PodGroup object.
	ByPodGroup MembershipKind = "PodGroup"
	// ByLabels: the gang is implied by ACK's labels; no object exists.
	ByLabels MembershipKind = "Labels"
	// Single: the pod names no gang and is a gang of one.
	Single MembershipKind = "Single"
)

// Membership is the gang a pod belongs to.
type Membership struct {
	Kind MembershipKind
	// Name of the PodGroup or of the implied gang, unique within the pod's
	// namespace; for Single, the pod's own name.
	Name string
	// MinAvailable comes from ACK's label (ByLabels only).
	MinAvailable int32
	// Problem, when not empty, says what is wrong with the pod's gang labels;
	// the gang is reported invalid and not scheduled.
	Problem string
}

// GangKey is the gang's key in the scheduler's state: namespace/name, with
// implied and single gangs kept apart from PodGroup objects of the same name.
func (m Membership) GangKey(namespace string) string {
	switch m.Kind {
	case ByLabels:
		return namespace + "/" + m.Name + "#labels"
	case Single:
		return namespace + "/" + m.Name + "#pod"
	}
	return namespace + "/" + m.Name
}

// MembershipOf tells which gang pod belongs to. The annotation wins over the
// scheduler-plugins label, which wins over ACK's labels; a pod with none of
// them is a gang of one. It never fails: a malformed min-available is
// returned as a Problem.
func MembershipOf(pod *corev1.Pod) Membership {
	if name := strings.TrimSpace(pod.Annotations[AnnotationGroupName]); name != "" {
		return Membership{Kind: ByPodGroup, Name: name}
	}
	if name := strings.TrimSpace(pod.Labels[LabelPodGroup]); name != "" {
		return Membership{Kind: ByPodGroup, Name: name}
	}
	if name := strings.TrimSpace(pod.Labels[LabelACKName]); name != "" {
		m := Membership{Kind: ByLabels, Name: name, MinAvailable: 1}
		raw, ok := pod.Labels[LabelACKMinAvailable]
		if !ok {
			return m
		}
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
		switch {
		case err != nil:
			m.Problem = fmt.Sprintf("label %s=%q is not an integer", LabelACKMinAvailable, raw)
		case n < 1:
			m.Problem = fmt.Sprintf("label %s=%q must be at least 1", LabelACKMinAvailable, raw)
		default:
			m.MinAvailable = int32(n)
		}
		return m
	}
	return Membership{Kind: Single, Name: pod.Name}
}
