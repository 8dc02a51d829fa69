package scheduler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Claim adds a volume using the claim name.
func (b *podBuilder) Claim(name string) *podBuilder {
	b.p.Spec.Volumes = append(b.p.Spec.Volumes, corev1.Volume{Name: "v-" + name,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	return b
}

// Ephemeral adds a generic ephemeral volume named name.
func (b *podBuilder) Ephemeral(name string) *podBuilder {
	b.p.Spec.Volumes = append(b.p.Spec.Volumes, corev1.Volume{Name: name,
		VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
	return b
}

func zoneNode(name, zone string) *corev1.Node {
	n := testNode(name, 8)
	n.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	return n
}

func testClaim(name, volume, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: ptrTo(class)}}
}

// localVolume is a volume reachable from the named nodes only.
func localVolume(name string, nodes ...string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: nodes}}}}}}}}
}

func bindingClass(name string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, VolumeBindingMode: &mode}
}

// outcome runs a cycle and returns where each pod went and why each gang
// waits, with its reason.
func outcome(t *testing.T, s *Store) (map[string]string, map[string]string) {
	t.Helper()
	snap, _ := s.Snapshot()
	plan, diag := newCore(t).RunCycle(snap, 1000)
	bound, waiting := map[string]string{}, map[string]string{}
	for _, b := range plan.Binds {
		bound[b.Member] = b.Node
	}
	for _, st := range diag.Pending {
		waiting[strings.TrimSuffix(strings.TrimPrefix(st.Gang, "ns/"), "#pod")] = string(st.Reason) + ": " + st.Message()
	}
	return bound, waiting
}

// TestVolumeNodeAffinity: a pod whose claim is bound to a volume reachable
// from some nodes only goes to one of them; while the claim is missing or
// unbound the pod waits saying so, and it is placed as soon as the claim is
// bound. Claims that need delayed binding wait as UnsupportedConstraint.
func TestVolumeNodeAffinity(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue("default"))
	for _, n := range []string{"n1", "n2", "n3"} {
		s.SetNode(zoneNode(n, "zone-"+n))
	}
	s.SetStorageClass(bindingClass("local", storagev1.VolumeBindingWaitForFirstConsumer))
	s.SetStorageClass(bindingClass("fast", storagev1.VolumeBindingImmediate))
	s.SetPod(testPod("data").GPUs(1).Claim("data").Obj())
	s.SetPod(testPod("late").GPUs(1).Claim("late").Obj())
	s.SetPod(testPod("wffc").GPUs(1).Claim("wffc").Obj())
	s.SetPod(testPod("scratch").GPUs(1).Ephemeral("scratch").Obj())
	s.SetPod(testPod("dra").GPUs(1).Obj())
	s.pods["uid-dra"].pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
	s.SetPod(s.pods["uid-dra"].pod)
	s.SetClaim(testClaim("late", "", "fast"))
	s.SetClaim(testClaim("wffc", "", "local"))

	bound, waiting := outcome(t, s)
	if len(bound) != 0 {
		t.Errorf("bound %v, want nothing", bound)
	}
	want := map[string]string{
		"data":    "Invalid: pod data waits: persistentVolumeClaim ns/data not found",
		"late":    "Invalid: pod late waits: persistentVolumeClaim ns/late is not bound yet",
		"wffc":    "UnsupportedConstraint: pod wffc: spec.volumes[].persistentVolumeClaim: WaitForFirstConsumer volume binding (claim ns/wffc, StorageClass local)",
		"scratch": "Invalid: pod scratch waits: the claim ns/scratch-scratch of its ephemeral volume does not exist yet",
		"dra":     "UnsupportedConstraint: pod dra: spec.resourceClaims: dynamic resource allocation (claim gpu)",
	}
	if diff := cmp.Diff(want, waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}

	// The claims come and are bound; the volumes arrive after them.
	s.SetClaim(testClaim("data", "pv-data", "fast"))
	s.SetClaim(testClaim("late", "pv-late", "fast"))
	scratch := testClaim("scratch-scratch", "pv-scratch", "local")
	scratch.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "scratch", UID: "uid-scratch", Controller: ptrTo(true)}}
	s.SetClaim(scratch)
	_, waiting = outcome(t, s)
	if got := waiting["data"]; got != "Invalid: pod data waits: persistentVolumeClaim ns/data is bound to PersistentVolume pv-data, which does not exist" {
		t.Errorf("data waits with %q", got)
	}
	s.SetVolume(localVolume("pv-data", "n2"))
	zonal := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-late",
		Labels: map[string]string{corev1.LabelTopologyZone: "zone-n3"}}}
	s.SetVolume(zonal)
	s.SetVolume(localVolume("pv-scratch", "n1", "n3"))
	bound, waiting = outcome(t, s)
	if diff := cmp.Diff(map[string]string{"data": "n2", "late": "n3"}, map[string]string{"data": bound["data"], "late": bound["late"]}); diff != "" {
		t.Errorf("bound (-want +got):\n%s", diff)
	}
	if n := bound["scratch"]; n != "n1" && n != "n3" {
		t.Errorf("scratch bound to %q, want n1 or n3", n)
	}
	if _, ok := waiting["wffc"]; !ok {
		t.Errorf("wffc does not wait")
	}

	// A claim of an ephemeral volume that another pod owns is not the pod's.
	s.SetPod(testPod("thief").Ephemeral("scratch").Obj())
	theirs := testClaim("thief-scratch", "pv-scratch", "local")
	theirs.OwnerReferences = scratch.OwnerReferences
	s.SetClaim(theirs)
	_, waiting = outcome(t, s)
	if got := waiting["thief"]; !strings.Contains(got, "was not created for the pod's ephemeral volume") {
		t.Errorf("thief waits with %q", got)
	}
}

// TestVolumeZoneLabels: a volume's zone label admits the nodes of its zones
// (several joined by "__"), a node with only the GA label matches a beta
// one, and a node without any zone label is admitted.
func TestVolumeZoneLabels(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv",
		Labels: map[string]string{corev1.LabelFailureDomainBetaZone: "a__b"}}}
	var cons core.Constraints
	for _, terms := range zoneTerms(pv) {
		cons.VolumeAffinity = append(cons.VolumeAffinity, coreTerms(terms))
	}
	for _, tc := range []struct {
		labels map[string]string
		admits bool
	}{
		{map[string]string{corev1.LabelFailureDomainBetaZone: "a"}, true},
		{map[string]string{corev1.LabelFailureDomainBetaZone: "b"}, true},
		{map[string]string{corev1.LabelFailureDomainBetaZone: "c"}, false},
		{map[string]string{corev1.LabelTopologyZone: "b"}, true},
		{map[string]string{corev1.LabelTopologyZone: "c"}, false},
		{map[string]string{corev1.LabelTopologyRegion: "r"}, false}, // a node with zone labels but not this one
		{map[string]string{"kubernetes.io/hostname": "n"}, true},
	} {
		n := &core.Node{Name: "n", Labels: tc.labels}
		if got := core.Admits(n, &cons); got != tc.admits {
			t.Errorf("node labelled %v: admitted %v, want %v", tc.labels, got, tc.admits)
		}
	}
}

// TestMatchFieldsOnNodeName: matchFields on metadata.name, in a volume's
// node affinity, matches the node's name, not its hostname label, which may
// differ (cloud nodes are often named by their provider's ID).
func TestMatchFieldsOnNodeName(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue("default"))
	for _, name := range []string{"node-a", "node-b"} {
		n := testNode(name, 8)
		n.Labels = map[string]string{corev1.LabelHostname: "host-of-" + name}
		s.SetNode(n)
	}
	s.SetVolume(localVolume("pv", "node-b"))
	s.SetClaim(testClaim("data", "pv", "local"))
	s.SetPod(testPod("train").GPUs(1).Claim("data").Obj())
	if bound, waiting := outcome(t, s); bound["train"] != "node-b" {
		t.Errorf("bound %v, waiting %v; want train on node-b, the volume's node by name", bound, waiting)
	}
}
