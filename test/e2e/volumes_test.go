//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestVolumeNodeAffinity: a pod whose claim is bound (statically: the
// volume's claimRef and the claim's volumeName name each other) to a local
// PersistentVolume of one node lands on that node, among several that
// would fit it; a pod whose claim does not exist waits saying so, and is
// placed on the volume's node once the claim is created; a pod whose
// unbound claim needs WaitForFirstConsumer binding waits with reason
// UnsupportedConstraint.
func TestVolumeNodeAffinity(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("vol", 4).GPUs(8))
	startScheduler(t)
	const target = "vol-2"

	e.createVolume("data", target)
	e.createClaim("data", e.volumeName("data"), "")
	e.createPod(withClaim(makePod("reader").GPUs(1), "data"))
	e.eventually(time.Minute, "the pod runs on the volume's node", e.podOn("reader", target))

	// The claim comes after the pod.
	e.createVolume("late", target)
	e.createPod(withClaim(makePod("late-reader").GPUs(1), "late"))
	e.eventually(30*time.Second, "the pod says its claim does not exist",
		e.podCondition("late-reader", corev1.PodScheduled, corev1.ConditionFalse, "persistentVolumeClaim "+e.ns+"/late not found"))
	e.consistently(holdStill, "the pod to stay unbound", e.unbound("late-reader"))
	e.createClaim("late", e.volumeName("late"), "")
	e.eventually(time.Minute, "once the claim exists the pod runs on the volume's node", e.podOn("late-reader", target))

	// Delayed binding is not implemented.
	class := e.createClass(storagev1.VolumeBindingWaitForFirstConsumer)
	e.createClaim("wffc", "", class)
	e.createPod(withClaim(makePod("wffc-reader").GPUs(1), "wffc"))
	e.eventually(30*time.Second, "the pod waits, refused as unsupported",
		e.podCondition("wffc-reader", corev1.PodScheduled, corev1.ConditionFalse,
			"UnsupportedConstraint", "spec.volumes[].persistentVolumeClaim: WaitForFirstConsumer volume binding", e.ns+"/wffc"))
	e.consistently(holdStill, "the pod to stay unbound", e.unbound("wffc-reader"))
}

// withClaim mounts the claim in the pod.
func withClaim(b *podBuilder, claim string) *corev1.Pod {
	p := b.Obj()
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return p
}

// volumeName is the cluster-wide name of the test's volume name.
func (e *env) volumeName(name string) string { return e.ns + "-" + name }

// createVolume creates a local PersistentVolume on node, pre-bound to the
// claim name of the test's namespace, and deletes it when the test ends.
func (e *env) createVolume(name, node string) {
	e.t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.volumeName(name)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: "",
			ClaimRef:         &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: e.ns, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: "/mnt/" + name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create PersistentVolume %s: %v", pv.Name, err)
	}
	e.t.Cleanup(func() { e.deleteUnprotected(pv.Name, "") })
}

// createClaim creates a claim, bound to volume when it is not "", of the
// StorageClass class ("" for none), and deletes it when the test ends.
func (e *env) createClaim(name, volume, class string) {
	e.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:       volume,
			StorageClassName: &class,
		},
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, pvc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create PersistentVolumeClaim %s: %v", name, err)
	}
	e.t.Cleanup(func() { e.deleteUnprotected("", name) })
}

// createClass creates a StorageClass of the binding mode, named after the
// test's namespace, and deletes it when the test ends.
func (e *env) createClass(mode storagev1.VolumeBindingMode) string {
	e.t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: e.ns}, Provisioner: "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode}
	if _, err := kube.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create StorageClass: %v", err)
	}
	e.t.Cleanup(func() {
		if err := kube.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("cleanup: delete StorageClass %s: %v", sc.Name, err)
		}
	})
	return sc.Name
}

// deleteUnprotected deletes the volume (or the claim of the test's
// namespace) and removes its protection finalizer, which only the
// controller manager, absent here, would remove.
func (e *env) deleteUnprotected(volume, claim string) {
	ctx := context.Background()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	var err error
	if volume != "" {
		if err = kube.CoreV1().PersistentVolumes().Delete(ctx, volume, metav1.DeleteOptions{}); err == nil {
			_, err = kube.CoreV1().PersistentVolumes().Patch(ctx, volume, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	} else {
		if err = kube.CoreV1().PersistentVolumeClaims(e.ns).Delete(ctx, claim, metav1.DeleteOptions{}); err == nil {
			_, err = kube.CoreV1().PersistentVolumeClaims(e.ns).Patch(ctx, claim, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Errorf("cleanup: delete %s%s: %v", volume, claim, err)
	}
}
