package scheduler

import corev1 "k8s.io/api/core/v1"

// This file says what Phalanx does with every field of a PodSpec that could
// bear on where a pod runs. Each field is in exactly one of three lists,
// and TestPodSpecFieldsAreListed walks corev1.PodSpec by reflection and
// fails on a field in none of them, so a field that a new Kubernetes
// release adds is decided on, never silently ignored. docs/constraints.md
// renders the lists as a table; the test also checks that it names every
// field.
//
// Paths use the JSON names; "[]" marks a list. expandedFields are walked
// into instead of being listed themselves.

// expandedFields are the fields whose own fields are listed.
var expandedFields = map[string]bool{
	"affinity":                 true,
	"affinity.nodeAffinity":    true,
	"affinity.podAffinity":     true,
	"affinity.podAntiAffinity": true,
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution":                   true,
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms": true,
	"affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution":                    true,
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution":                true,
	"containers":                 true,
	"containers[].ports":         true,
	"containers[].resources":     true,
	"initContainers":             true,
	"initContainers[].ports":     true,
	"initContainers[].resources": true,
	"resources":                  true,
	"topologySpreadConstraints":  true,
	"volumes":                    true,
}

// handledFields are honoured, each as the text says.
var handledFields = withContainers(map[string]string{
	"nodeName":           "the pod is bound already: never placed, and its requests count against its node",
	"nodeSelector":       "the node must carry every label",
	"schedulerName":      "Phalanx places the pods that name one of its --scheduler-name values; the others' pods only use room",
	"schedulingGates":    "the pod is not placed while it has gates; a gang whose minimum needs gated members waits (SchedulingGated)",
	"tolerations":        "NoSchedule and NoExecute taints repel pods that do not tolerate them",
	"overhead":           "added to the pod's requests",
	"priority":           "orders gangs in their queue, and chooses preemption victims",
	"priorityClassName":  "resolved by the API server into priority (a PodGroup's own priorityClassName wins)",
	"preemptionPolicy":   "Never: the gang does not preempt",
	"resources.requests": "pod-level requests replace the containers' sum for cpu, memory and hugepages",
	"resources.limits":   "stand in for missing pod-level requests",
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchExpressions": "node affinity: one term must hold",
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchFields":      "node affinity on metadata.name",
	"affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].labelSelector":                       "required pod affinity, inside the gang's transaction",
	"affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].namespaces":                          "required pod affinity",
	"affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].namespaceSelector":                   "required pod affinity",
	"affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].topologyKey":                         "required pod affinity",
	"affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].matchLabelKeys":                      "folded into the selector with the pod's own values",
	"affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].mismatchLabelKeys":                   "folded into the selector with the pod's own values",
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].labelSelector":                   "required pod anti-affinity, both ways, inside the gang's transaction",
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].namespaces":                      "required pod anti-affinity",
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].namespaceSelector":               "required pod anti-affinity",
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].topologyKey":                     "required pod anti-affinity",
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].matchLabelKeys":                  "folded into the selector with the pod's own values",
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].mismatchLabelKeys":               "folded into the selector with the pod's own values",
	"topologySpreadConstraints[].maxSkew":                                                                       "topology spread (whenUnsatisfiable DoNotSchedule), counting the gang's own members",
	"topologySpreadConstraints[].topologyKey":                                                                   "topology spread",
	"topologySpreadConstraints[].whenUnsatisfiable":                                                             "DoNotSchedule is honoured; ScheduleAnyway is a preference, ignored: Phalanx places by GPU packing",
	"topologySpreadConstraints[].labelSelector":                                                                 "topology spread",
	"topologySpreadConstraints[].minDomains":                                                                    "topology spread",
	"topologySpreadConstraints[].nodeAffinityPolicy":                                                            "topology spread",
	"topologySpreadConstraints[].nodeTaintsPolicy":                                                              "topology spread",
	"topologySpreadConstraints[].matchLabelKeys":                                                                "topology spread: folded into the selector with the pod's own values",
	"volumes[].persistentVolumeClaim":                                                                           "the bound PersistentVolume's node affinity and zone labels; a claim missing, unbound or bound to a missing volume waits; an unbound WaitForFirstConsumer claim is refused",
	"volumes[].ephemeral":                                                                                       "as persistentVolumeClaim, for the claim <pod>-<volume> its controller creates and the pod owns",
}, map[string]string{
	"resources.requests": "summed over the containers, with sidecars and init containers as kube-scheduler counts them",
	"resources.limits":   "stand in for missing requests",
	"restartPolicy":      "Always on an init container makes it a sidecar, whose requests run beside the containers'",
	"ports[].hostPort":   "two pods binding the same host port, protocol and IP never share a node",
	"ports[].protocol":   "part of a host port",
	"ports[].hostIP":     "part of a host port",
})

// unsupportedFields make a pod wait with reason UnsupportedConstraint,
// naming the field (unsupportedOf and volumes.go).
var unsupportedFields = withContainers(map[string]string{
	"resourceClaims":   "dynamic resource allocation: Phalanx does not allocate ResourceClaims",
	"resources.claims": "dynamic resource allocation (pod-level)",
}, map[string]string{
	"resources.claims": "dynamic resource allocation (names an entry of spec.resourceClaims, which is refused)",
})

// ignoredFields do not bear on placement, or are preferences; each says why.
var ignoredFields = withContainers(map[string]string{
	"affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution":    "a preference; Phalanx places by GPU packing",
	"affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution":     "a preference; Phalanx places by GPU packing",
	"affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution": "a preference; Phalanx places by GPU packing",
	"ephemeralContainers":            "added to running pods only; kube-scheduler does not count them either",
	"restartPolicy":                  "not a scheduling field",
	"terminationGracePeriodSeconds":  "not a scheduling field",
	"activeDeadlineSeconds":          "not a scheduling field",
	"dnsPolicy":                      "not a scheduling field",
	"dnsConfig":                      "not a scheduling field",
	"serviceAccountName":             "not a scheduling field",
	"serviceAccount":                 "not a scheduling field (deprecated alias of serviceAccountName)",
	"automountServiceAccountToken":   "not a scheduling field",
	"hostNetwork":                    "its container ports are host ports, which the API server copies into containers[].ports[].hostPort",
	"hostPID":                        "not a scheduling field",
	"hostIPC":                        "not a scheduling field",
	"shareProcessNamespace":          "not a scheduling field",
	"securityContext":                "not a scheduling field",
	"imagePullSecrets":               "not a scheduling field",
	"hostname":                       "not a scheduling field",
	"subdomain":                      "not a scheduling field",
	"hostAliases":                    "not a scheduling field",
	"readinessGates":                 "not a scheduling field",
	"runtimeClassName":               "the RuntimeClass admission plugin copies its overhead, nodeSelector and tolerations into the pod, which are honoured",
	"enableServiceLinks":             "not a scheduling field",
	"setHostnameAsFQDN":              "not a scheduling field",
	"os":                             "kube-scheduler does not filter on it either; select nodes with nodeSelector kubernetes.io/os",
	"hostUsers":                      "not a scheduling field (the kubelet refuses a pod its node cannot run)",
	"volumes[].name":                 "not a scheduling field",
	"volumes[].hostPath":             "no node constraint",
	"volumes[].emptyDir":             "no node constraint (its sizeLimit is not a request; ephemeral-storage requests are)",
	"volumes[].gitRepo":              "no node constraint",
	"volumes[].secret":               "no node constraint",
	"volumes[].configMap":            "no node constraint",
	"volumes[].downwardAPI":          "no node constraint",
	"volumes[].projected":            "no node constraint",
	"volumes[].image":                "no node constraint",
	"volumes[].nfs":                  "no node constraint",
	"volumes[].glusterfs":            "no node constraint",
	"volumes[].cephfs":               "no node constraint",
	"volumes[].flocker":              "no node constraint",
	"volumes[].azureFile":            "no node constraint",
	"volumes[].quobyte":              "no node constraint",
	"volumes[].flexVolume":           "no node constraint",
	"volumes[].csi":                  "inline CSI volume: no node constraint; the driver's per-node attach limit is not counted",
	"volumes[].gcePersistentDisk":    "in-tree disk: conflicts between pods and attach limits are not checked (the kubelet refuses a conflicting mount)",
	"volumes[].awsElasticBlockStore": "in-tree disk: conflicts between pods and attach limits are not checked (the kubelet refuses a conflicting mount)",
	"volumes[].azureDisk":            "in-tree disk: attach limits are not checked",
	"volumes[].cinder":               "in-tree disk: attach limits are not checked",
	"volumes[].iscsi":                "in-tree disk: read-write conflicts between pods are not checked",
	"volumes[].rbd":                  "in-tree disk: read-write conflicts between pods are not checked",
	"volumes[].fc":                   "in-tree disk: no node constraint",
	"volumes[].vsphereVolume":        "in-tree disk: no node constraint",
	"volumes[].photonPersistentDisk": "in-tree disk: no node constraint",
	"volumes[].portworxVolume":       "in-tree disk: no node constraint",
	"volumes[].scaleIO":              "in-tree disk: no node constraint",
	"volumes[].storageos":            "in-tree disk: no node constraint",
}, map[string]string{
	"name":                     "not a scheduling field",
	"image":                    "not a scheduling field",
	"command":                  "not a scheduling field",
	"args":                     "not a scheduling field",
	"workingDir":               "not a scheduling field",
	"envFrom":                  "not a scheduling field",
	"env":                      "not a scheduling field",
	"resizePolicy":             "not a scheduling field (in-place resize is the kubelet's)",
	"volumeMounts":             "not a scheduling field",
	"volumeDevices":            "not a scheduling field",
	"livenessProbe":            "not a scheduling field",
	"readinessProbe":           "not a scheduling field",
	"startupProbe":             "not a scheduling field",
	"lifecycle":                "not a scheduling field",
	"terminationMessagePath":   "not a scheduling field",
	"terminationMessagePolicy": "not a scheduling field",
	"imagePullPolicy":          "not a scheduling field",
	"securityContext":          "not a scheduling field",
	"stdin":                    "not a scheduling field",
	"stdinOnce":                "not a scheduling field",
	"tty":                      "not a scheduling field",
	"ports[].name":             "not a scheduling field",
	"ports[].containerPort":    "not a scheduling field (a host port is what binds the node)",
})

// withContainers returns pod, with each entry of each (a field of a
// container) added for containers[] and initContainers[], unless pod has
// that path already.
func withContainers(pod, each map[string]string) map[string]string {
	for _, list := range []string{"containers[].", "initContainers[]."} {
		for field, text := range each {
			if _, ok := pod[list+field]; !ok {
				pod[list+field] = text
			}
		}
	}
	return pod
}

// unsupportedOf names the first field of the pod that asks for what Phalanx
// does not implement, with the pod's value; "" when there is none. Such a
// pod's gang waits with reason UnsupportedConstraint. The claims of its
// volumes are judged in volumes.go.
func unsupportedOf(pod *corev1.Pod) string {
	if len(pod.Spec.ResourceClaims) > 0 {
		return "spec.resourceClaims: dynamic resource allocation (claim " + pod.Spec.ResourceClaims[0].Name + ")"
	}
	return ""
}
