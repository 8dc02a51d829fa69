package scheduler

import corev1 "k8s.io/api/core/v1"

// lastAppliedAnnotation is where kubectl apply keeps the whole object it
// applied: often the largest part of a pod's metadata, and never read here.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// leanPod strips pod, in place, to what the scheduler reads of it, and
// returns it; the informer's cache keeps it so, and at 150,000 pods the
// cache is most of the scheduler's memory. In place, because the informer
// still holds the whole list it read when the transform runs: a copy would
// add to that peak. It keeps the metadata (without managed fields and
// kubectl's last-applied copy), every field of the spec that podspec.go
// lists as handled or unsupported, the few ignored ones that other parts
// read (the grace period and the active deadline), and of the status the
// phase, the PodScheduled condition, the start time and the containers'
// terminations.
// The rest of a container is dropped (image, command, env, mounts, probes,
// ...), and so are affinity preferences and the volumes that are not
// claims.
//
// A container's limit is dropped where it has a request of the same
// resource: it only stands in for a missing request (resources.go).
//
// Nothing of a pod is ever written back from the cache: binds, evictions
// and condition patches name the pod, and a patch carries only what it
// changes.
func leanPod(pod *corev1.Pod) *corev1.Pod {
	pod.ManagedFields = nil
	delete(pod.Annotations, lastAppliedAnnotation)
	s := &pod.Spec
	leanContainers(s.InitContainers)
	leanContainers(s.Containers)
	*s = corev1.PodSpec{
		Volumes:                       claimVolumes(s.Volumes),
		InitContainers:                s.InitContainers,
		Containers:                    s.Containers,
		TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
		ActiveDeadlineSeconds:         s.ActiveDeadlineSeconds,
		NodeSelector:                  s.NodeSelector,
		NodeName:                      s.NodeName,
		Affinity:                      requiredAffinity(s.Affinity),
		SchedulerName:                 s.SchedulerName,
		Tolerations:                   s.Tolerations,
		PriorityClassName:             s.PriorityClassName,
		Priority:                      s.Priority,
		PreemptionPolicy:              s.PreemptionPolicy,
		Overhead:                      s.Overhead,
		TopologySpreadConstraints:     s.TopologySpreadConstraints,
		SchedulingGates:               s.SchedulingGates,
		ResourceClaims:                s.ResourceClaims,
		Resources:                     s.Resources,
	}
	st := &pod.Status
	*st = corev1.PodStatus{Phase: st.Phase, Conditions: scheduledCondition(st.Conditions), StartTime: st.StartTime,
		ContainerStatuses: terminations(st.ContainerStatuses)}
	return pod
}

// leanContainers keeps of each container its resources and restart policy
// (a sidecar's requests count), and its host ports, which bind a node.
func leanContainers(cs []corev1.Container) {
	for i := range cs {
		c := &cs[i]
		uncoverLimits(&c.Resources)
		*c = corev1.Container{Ports: hostPorts(c.Ports), RestartPolicy: c.RestartPolicy, Resources: c.Resources}
	}
}

// requiredAffinity is a without its preferences, which Phalanx ignores.
func requiredAffinity(a *corev1.Affinity) *corev1.Affinity {
	if a == nil {
		return nil
	}
	out := &corev1.Affinity{}
	if n := a.NodeAffinity; n != nil {
		out.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: n.RequiredDuringSchedulingIgnoredDuringExecution}
	}
	if p := a.PodAffinity; p != nil {
		out.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: p.RequiredDuringSchedulingIgnoredDuringExecution}
	}
	if p := a.PodAntiAffinity; p != nil {
		out.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: p.RequiredDuringSchedulingIgnoredDuringExecution}
	}
	return out
}

// hostPorts are the ports of ps that bind a port of the node.
func hostPorts(ps []corev1.ContainerPort) []corev1.ContainerPort {
	out := ps[:0]
	for _, p := range ps {
		if p.HostPort > 0 {
			out = append(out, corev1.ContainerPort{HostPort: p.HostPort, Protocol: p.Protocol, HostIP: p.HostIP})
		}
	}
	clear(ps[len(out):])
	if len(out) == 0 {
		return nil
	}
	return out
}

// uncoverLimits drops r's limits of the resources it requests.
func uncoverLimits(r *corev1.ResourceRequirements) {
	for name := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			delete(r.Limits, name)
		}
	}
	if len(r.Limits) == 0 {
		r.Limits = nil
	}
}

// claimVolumes are the volumes backed by a PersistentVolumeClaim, named or
// ephemeral: the only ones whose node affinity binds the pod (volumes.go).
func claimVolumes(vs []corev1.Volume) []corev1.Volume {
	out := vs[:0]
	for _, v := range vs {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: v.PersistentVolumeClaim, Ephemeral: v.Ephemeral}})
		}
	}
	clear(vs[len(out):]) // what the dropped volumes held
	if len(out) == 0 {
		return nil
	}
	return out
}

// scheduledCondition keeps of cs the PodScheduled condition, which says
// when a pod was bound and what the scheduler last wrote (status.go).
func scheduledCondition(cs []corev1.PodCondition) []corev1.PodCondition {
	out := cs[:0]
	for _, c := range cs {
		if c.Type == corev1.PodScheduled {
			out = append(out, c)
		}
	}
	clear(cs[len(out):])
	if len(out) == 0 {
		return nil
	}
	return out
}

// terminations keeps of the containers' statuses their terminations,
// which say when a pod finished (history.go).
func terminations(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	out := ss[:0]
	for _, cs := range ss {
		if t := cs.State.Terminated; t != nil {
			out = append(out, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: t}})
		}
	}
	clear(ss[len(out):])
	if len(out) == 0 {
		return nil
	}
	return out
}
