package scheduler

import corev1 "k8s.io/api/core/v1"

// unsupportedOf names the first field of the pod that asks for what Phalanx
// does not implement, with the pod's value; "" when there is none. Such a
// pod's gang waits with reason UnsupportedConstraint.
func unsupportedOf(pod *corev1.Pod) string {
	if len(pod.Spec.ResourceClaims) > 0 {
		return "spec.resourceClaims: dynamic resource allocation (claim " + pod.Spec.ResourceClaims[0].Name + ")"
	}
	return ""
}
