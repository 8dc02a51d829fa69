package scheduler

import (
	"fmt"

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
// its own for placement. It never writes their status: their schema and
// their controllers are not ours.

// ForeignPodGroups are the PodGroup APIs of other schedulers that Phalanx
// reads, in order of precedence after its own.
var ForeignPodGroups = []schema.GroupVersionResource{
	{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"},
	{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"},
	{Group: "scheduling.incubator.k8s.io", Version: "v1alpha1", Resource: "podgroups"},
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
// annotations that carry what our spec has fields for (gangspec.go). Fields
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
	for _, key := range []string{AnnotationEstimatedRuntime, AnnotationRequiredTopology, AnnotationGPUModel} {
		if v, ok := u.GetAnnotations()[key]; ok {
			annotations[key] = v
		}
	}
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			Generation: u.GetGeneration(), CreationTimestamp: u.GetCreationTimestamp(),
			Annotations: annotations,
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
