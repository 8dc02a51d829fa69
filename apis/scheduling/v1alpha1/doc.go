// Package v1alpha1 holds Phalanx's API in group scheduling.phalanx.dev:
// PodGroup, a gang of pods placed all-or-nothing, and Queue, a tenant's share
// of the cluster.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.phalanx.dev
package v1alpha1
