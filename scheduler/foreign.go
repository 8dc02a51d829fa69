package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Users switching from another batch scheduler keep the job operators that
// create PodGroups of that scheduler's API: tf-operator with
// --enable-gang-scheduling writes kube-batch's or Volcano's, training-operator
// with scheduler-plugins writes scheduler-plugins'. Phalanx reads those
// PodGroups too, wherever the cluster serves their API, and treats them as
// its own for placement.

// ForeignPodGroups are the PodGroup APIs of other schedulers that Phalanx
// reads, in order of precedence after its own.
var ForeignPodGroups = []schema.GroupVersionResource{
	{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"},
	{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"},
	{Group: "scheduling.incubator.k8s.io", Version: "v1alpha1", Resource: "podgroups"},
	{Group: "scheduling.sigs.dev", Version: "v1alpha2", Resource: "podgroups"},
	{Group: "scheduling.sigs.k8s.io", Version: "v1alpha1", Resource: "podgroups"},
}

// foreignSpec holds the spec fields the PodGroup APIs of kube-batch,
// Volcano and scheduler-plugins share with ours, under the same JSON names.
type foreignSpec struct {
	MinMember              int32               `json:"minMember"`
	Queue                  string              `json:"queue,omitempty"`
	PriorityClassName      string              `json:"priorityClassName,omitempty"`
	MinResources           corev1.ResourceList `json:"minResources,omitempty"`
	ScheduleTimeoutSeconds *int32              `json:"scheduleTimeoutSeconds,omitempty"`
}

// fromForeign converts another scheduler's PodGroup into ours, keeping the
// annotations that carry what our spec has fields for (gangspec.go), the
// scheduler that claims it (claimsForeign) and, where its API has no queue,
// the queue the annotation scheduling.phalanx.dev/queue names. Fields
// Phalanx does not know are ignored; a spec it cannot read is an error that
// names the object and the field, among them a number its field cannot hold
// (minMember 2147483648 is not wrapped around). A minMember below 1 is
// kept: the core reports it.
func fromForeign(u *unstructured.Unstructured) (*v1alpha1.PodGroup, error) {
	var spec foreignSpec
	raw, _, err := unstructured.NestedMap(u.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: spec: %w", u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName(), err)
	}
	if err := fromUnstructured(raw, "spec", &spec); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName(), err)
	}
	annotations := map[string]string{annotationForeignAPI: u.GetAPIVersion()}
	for _, key := range []string{AnnotationEstimatedRuntime, AnnotationRequiredTopology, AnnotationGPUModel, AnnotationSchedulerName} {
		if v, ok := u.GetAnnotations()[key]; ok {
			annotations[key] = v
		}
	}
	if spec.Queue == "" {
		// scheduler-plugins' API has no queue: an annotation gives one.
		spec.Queue = u.GetAnnotations()[AnnotationQueue]
	}
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
			Generation: u.GetGeneration(), CreationTimestamp: u.GetCreationTimestamp(),
			Annotations: annotations, OwnerReferences: u.GetOwnerReferences(),
		},
		Spec: v1alpha1.PodGroupSpec{
			MinMember: spec.MinMember, Queue: spec.Queue, PriorityClassName: spec.PriorityClassName,
			MinResources: spec.MinResources, ScheduleTimeoutSeconds: spec.ScheduleTimeoutSeconds,
		},
	}, nil
}

// annotationForeignAPI marks, in the store only, a PodGroup read from
// another scheduler's API, with that API's version.
const annotationForeignAPI = "scheduling.phalanx.dev/read-from"

func isForeign(pg *v1alpha1.PodGroup) bool { return pg.Annotations[annotationForeignAPI] != "" }

// Foreign PodGroups are first-class: Phalanx writes their status, in their
// own API's schema, for the gangs whose pods it serves, and for those
// without pods yet that it claims (claimsForeign). Job operators wait on it:
// training-operator in Volcano mode creates no pod until the PodGroup's
// phase leaves Pending. Where the API has no status subresource (Volcano's
// PodGroup CRD as its installer ships it), the status is written in the
// object itself; either way it is one JSON patch guarded by the object's
// UID. A scheduler-plugins PodGroup that no one gave a phase yet gets
// Pending, whoever claims it (markPending).

// foreignKey names a PodGroup of another scheduler's API: its API group
// and namespace/name.
type foreignKey struct{ group, key string }

// foreignSchema says how an API group's PodGroup status is written.
type foreignSchema int

const (
	// volcanoSchema: phase Pending, Inqueue, Running, Unknown, Completed;
	// conditions; running, succeeded, failed counts (Volcano, kube-batch).
	volcanoSchema foreignSchema = iota
	// pluginsSchema: phase Pending, PreScheduling, Scheduling, Scheduled,
	// Running, Finished, Failed; running, succeeded, failed
	// counts; scheduleStartTime (scheduler-plugins).
	pluginsSchema
)

// foreignAPIs are, for each API group of ForeignPodGroups, its status
// schema and the scheduler name its operators put in pods: the instance
// serving that name claims the group's PodGroups that have no pods yet.
var foreignAPIs = map[string]struct {
	schema        foreignSchema
	schedulerName string
}{
	"scheduling.volcano.sh":       {volcanoSchema, "volcano"},
	"scheduling.incubator.k8s.io": {volcanoSchema, "kube-batch"},
	"scheduling.sigs.dev":         {volcanoSchema, "kube-batch"}, // kube-batch 0.5 and later
	"scheduling.x-k8s.io":         {pluginsSchema, "scheduler-plugins-scheduler"},
	"scheduling.sigs.k8s.io":      {pluginsSchema, "scheduler-plugins-scheduler"},
}

// claimsForeign reports whether this scheduler writes the status of a
// PodGroup of group that no pod names yet: the annotation
// scheduling.phalanx.dev/scheduler-name names one of our names, or we serve
// the scheduler name of that API's operators. Never by default: the
// scheduler of that API may be running beside us.
func (s *Store) claimsForeign(group string, annotations map[string]string) bool {
	return s.claimsAs(annotations, foreignAPIs[group].schedulerName)
}

// foreignGroup returns the API group a PodGroup was read from, or "" for
// ours.
func foreignGroup(pg *v1alpha1.PodGroup) string {
	gv, err := schema.ParseGroupVersion(pg.Annotations[annotationForeignAPI])
	if err != nil {
		return ""
	}
	return gv.Group
}

// foreignStatus translates our status of a gang into the schema of group.
// old is the object's status as read, whose transition and start times are
// kept when nothing changes.
func foreignStatus(group string, st v1alpha1.PodGroupStatus, v *gangView, old map[string]any, now metav1.Time) map[string]any {
	out := map[string]any{}
	count := func(key string, n int32) {
		if n != 0 {
			out[key] = int64(n)
		}
	}
	count("running", st.Running)
	count("succeeded", st.Succeeded)
	count("failed", st.Failed)
	if foreignAPIs[group].schema == pluginsSchema {
		out["phase"] = pluginsPhase(st, v)
		start, _ := old["scheduleStartTime"].(string)
		if start == "" {
			start = now.UTC().Format(time.RFC3339)
		}
		out["scheduleStartTime"] = start
		return out
	}
	phase := string(st.Phase)
	switch st.Phase {
	case v1alpha1.PodGroupSucceeded, v1alpha1.PodGroupFailed:
		phase = "Completed"
	}
	out["phase"] = phase
	var conds []any
	oldConds, _ := old["conditions"].([]any)
	for _, c := range st.Conditions {
		if c.Type != v1alpha1.PodGroupScheduled && c.Type != v1alpha1.PodGroupUnschedulable {
			continue
		}
		at := c.LastTransitionTime.UTC().Format(time.RFC3339)
		for _, o := range oldConds {
			if m, _ := o.(map[string]any); m != nil && m["type"] == c.Type && m["status"] == string(c.Status) {
				if t, _ := m["lastTransitionTime"].(string); t != "" {
					at = t
				}
			}
		}
		conds = append(conds, map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason,
			"message": c.Message, "lastTransitionTime": at})
	}
	if len(conds) > 0 {
		out["conditions"] = conds
	}
	return out
}

// pluginsPhase is the scheduler-plugins phase of a gang.
func pluginsPhase(st v1alpha1.PodGroupStatus, v *gangView) string {
	members := int(st.Pending + st.Running + st.Succeeded + st.Failed)
	switch {
	case st.Phase == v1alpha1.PodGroupSucceeded:
		return "Finished"
	case st.Phase == v1alpha1.PodGroupFailed:
		return "Failed"
	case v.bound >= v.minMember && int(st.Running) >= v.minMember:
		return "Running"
	case v.bound >= v.minMember:
		return "Scheduled"
	case v.bound > 0:
		return "Scheduling"
	case members >= v.minMember:
		return "PreScheduling"
	}
	return "Pending"
}

// VolcanoQueues is Volcano's Queue API. Where the cluster serves it, its
// Queues are queues of Phalanx too (a job operator names them in the
// PodGroups it writes); a Phalanx Queue of the same name wins.
var VolcanoQueues = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}

// volcanoQueue holds the fields of a Volcano Queue Phalanx reads.
type volcanoQueue struct {
	Spec struct {
		Weight      int32               `json:"weight,omitempty"`
		Capability  corev1.ResourceList `json:"capability,omitempty"`
		Reclaimable *bool               `json:"reclaimable,omitempty"`
		Guarantee   struct {
			Resource corev1.ResourceList `json:"resource,omitempty"`
		} `json:"guarantee,omitempty"`
	} `json:"spec"`
	Status struct {
		State string `json:"state,omitempty"`
	} `json:"status"`
}

// fromVolcanoQueue converts a Volcano Queue: its weight (at least 1),
// capability, guarantee and reclaimable; a queue whose state is Closed or
// Closing takes no new gangs.
func fromVolcanoQueue(u *unstructured.Unstructured) (*v1alpha1.Queue, error) {
	var vq volcanoQueue
	obj := map[string]any{"spec": u.Object["spec"], "status": u.Object["status"]}
	if obj["spec"] == nil {
		obj["spec"] = map[string]any{}
	}
	if obj["status"] == nil {
		obj["status"] = map[string]any{}
	}
	if err := fromUnstructured(obj, "", &vq); err != nil {
		return nil, fmt.Errorf("Volcano Queue %s: %w", u.GetName(), err)
	}
	if vq.Spec.Weight < 0 {
		return nil, fmt.Errorf("Volcano Queue %s: spec.weight %d is negative", u.GetName(), vq.Spec.Weight)
	}
	q := &v1alpha1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), UID: u.GetUID(), Generation: u.GetGeneration(),
			CreationTimestamp: u.GetCreationTimestamp(),
			Annotations:       map[string]string{annotationForeignAPI: u.GetAPIVersion()}},
		Spec: v1alpha1.QueueSpec{Weight: max(vq.Spec.Weight, 1), Capability: vq.Spec.Capability,
			Guarantee: vq.Spec.Guarantee.Resource, Reclaimable: vq.Spec.Reclaimable, State: v1alpha1.QueueOpen},
	}
	switch vq.Status.State {
	case "Closed", "Closing":
		q.Spec.State = v1alpha1.QueueClosed
	}
	return q, nil
}

// setVolcanoQueue converts a Volcano Queue into the store; one that cannot
// be read is reported, and its gangs say why they wait.
func (s *Scheduler) setVolcanoQueue(ctx context.Context) func(obj any) {
	return func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		q, err := fromVolcanoQueue(u)
		if err != nil {
			delete(s.store.volcanoQueues, u.GetName())
			if s.store.SetUnreadableQueue(u.GetName(), err.Error()) {
				s.reportUnreadable(ctx, "Queue.scheduling.volcano.sh", u, err)
			}
			return
		}
		if s.store.queues[u.GetName()] == nil {
			s.store.SetUnreadableQueue(u.GetName(), "")
		}
		s.store.res.vector(q.Spec.Capability) // their resources get dimensions now (Store.SetQueue)
		s.store.res.vector(q.Spec.Guarantee)
		s.store.volcanoQueues[q.Name] = q
	}
}

func (s *Scheduler) deleteVolcanoQueue(obj any) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(s.store.volcanoQueues, u.GetName())
		if s.store.queues[u.GetName()] == nil {
			s.store.SetUnreadableQueue(u.GetName(), "") // it may have been unreadable
		}
		s.store.forgetQueue(u.GetName())
	}
}
