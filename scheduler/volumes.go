package scheduler

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// This file turns a pod's PersistentVolumeClaims into placement constraints.
//
// A claim bound to a PersistentVolume (spec.volumeName) restricts the pod to
// the nodes the volume's spec.nodeAffinity admits, and to the zones and
// regions of its topology labels, as kube-scheduler's VolumeBinding and
// VolumeZone filters do: each becomes one entry of core.Constraints'
// VolumeAffinity. A generic ephemeral volume (volumes[].ephemeral) is the
// claim <pod>-<volume> its controller creates, and is read the same way
// once that claim exists and belongs to the pod.
//
// Phalanx does not provision or bind volumes (kube-scheduler's delayed
// binding): a claim that is not bound and whose StorageClass binds
// WaitForFirstConsumer would never be bound, so its pod waits with
// UnsupportedConstraint. A claim that does not exist yet, is not bound yet
// under Immediate binding, or is bound to a volume that does not exist,
// makes its pod wait saying so until the claim or the volume changes: the
// store recomputes the constraints of the pods that use a claim whenever
// the claim, its volume or a StorageClass changes.

// volumeState holds the claims, volumes and StorageClasses the store knows,
// and which of our pods use which claim.
type volumeState struct {
	claims  map[string]*corev1.PersistentVolumeClaim // namespace/name
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
	// users holds, by claim key, the pods of ours whose volumes name it.
	users map[string]map[types.UID]bool
}

func newVolumeState() *volumeState {
	return &volumeState{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{},
		classes: map[string]*storagev1.StorageClass{}, users: map[string]map[types.UID]bool{}}
}

// podClaim is a claim one of a pod's volumes uses.
type podClaim struct {
	key string // namespace/name
	// ephemeral: the claim of a generic ephemeral volume, which must be
	// owned by the pod.
	ephemeral bool
}

// podClaims lists the claims of the pod's volumes, in volume order.
func podClaims(pod *corev1.Pod) []podClaim {
	var out []podClaim
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, podClaim{key: pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName})
		case v.Ephemeral != nil:
			out = append(out, podClaim{key: pod.Namespace + "/" + pod.Name + "-" + v.Name, ephemeral: true})
		}
	}
	return out
}

// volumeAffinity returns the node affinity the pod's bound volumes require,
// one entry a volume label or node affinity. When a claim keeps the pod
// from being placed for now, wait says why; when it needs what Phalanx
// does not implement, unsupported names the field. Both name the claim.
func (s *Store) volumeAffinity(pod *corev1.Pod) (terms [][]corev1.NodeSelectorTerm, wait, unsupported string) {
	vs := s.volumes
	for _, c := range podClaims(pod) {
		pvc := vs.claims[c.key]
		field := "spec.volumes[].persistentVolumeClaim"
		if c.ephemeral {
			field = "spec.volumes[].ephemeral"
		}
		switch {
		case pvc == nil:
			if c.ephemeral {
				return nil, fmt.Sprintf("the claim %s of its ephemeral volume does not exist yet", c.key), ""
			}
			return nil, fmt.Sprintf("persistentVolumeClaim %s not found", c.key), ""
		case c.ephemeral && !metav1.IsControlledBy(pvc, pod):
			return nil, fmt.Sprintf("persistentVolumeClaim %s was not created for the pod's ephemeral volume (the pod does not own it)", c.key), ""
		case pvc.DeletionTimestamp != nil:
			return nil, fmt.Sprintf("persistentVolumeClaim %s is being deleted", c.key), ""
		case pvc.Spec.VolumeName == "":
			class := claimClass(pvc)
			if sc := vs.classes[class]; sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
				return nil, "", fmt.Sprintf("%s: WaitForFirstConsumer volume binding (claim %s, StorageClass %s)", field, c.key, class)
			}
			if class != "" && vs.classes[class] == nil {
				return nil, fmt.Sprintf("persistentVolumeClaim %s is not bound yet and its StorageClass %s does not exist", c.key, class), ""
			}
			return nil, fmt.Sprintf("persistentVolumeClaim %s is not bound yet", c.key), ""
		}
		pv := vs.volumes[pvc.Spec.VolumeName]
		if pv == nil {
			return nil, fmt.Sprintf("persistentVolumeClaim %s is bound to PersistentVolume %s, which does not exist", c.key, pvc.Spec.VolumeName), ""
		}
		if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
			terms = append(terms, na.Required.NodeSelectorTerms)
		}
		terms = append(terms, zoneTerms(pv)...)
	}
	return terms, "", ""
}

// claimClass is the StorageClass a claim names, by its field or the older
// annotation.
func claimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c := pvc.Spec.StorageClassName; c != nil {
		return *c
	}
	return pvc.Annotations[corev1.BetaStorageClassAnnotation]
}

// zoneLabels are the topology labels of a volume that restrict its nodes,
// each with the label a node may carry instead (the GA form of a beta
// label).
var zoneLabels = []struct{ key, ga string }{
	{corev1.LabelFailureDomainBetaZone, corev1.LabelTopologyZone},
	{corev1.LabelFailureDomainBetaRegion, corev1.LabelTopologyRegion},
	{corev1.LabelTopologyZone, ""},
	{corev1.LabelTopologyRegion, ""},
}

// zoneTerms expresses the topology labels of pv as node affinity, one entry
// a label: the node's label (or its GA form, when the node lacks the beta
// one) must be one of the volume's values (several are joined by "__");
// a node without any of these labels is admitted, as in a single-zone
// cluster whose nodes carry none.
func zoneTerms(pv *corev1.PersistentVolume) [][]corev1.NodeSelectorTerm {
	var out [][]corev1.NodeSelectorTerm
	for _, l := range zoneLabels {
		value, ok := pv.Labels[l.key]
		if !ok {
			continue
		}
		values := zoneValues(value)
		if len(values) == 0 {
			continue // unreadable; kube-scheduler ignores it too
		}
		entry := []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: l.key, Operator: corev1.NodeSelectorOpIn, Values: values}}}}
		if l.ga != "" {
			entry = append(entry, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: l.key, Operator: corev1.NodeSelectorOpDoesNotExist},
				{Key: l.ga, Operator: corev1.NodeSelectorOpIn, Values: values}}})
		}
		none := corev1.NodeSelectorTerm{}
		for _, k := range zoneLabels {
			none.MatchExpressions = append(none.MatchExpressions, corev1.NodeSelectorRequirement{Key: k.key, Operator: corev1.NodeSelectorOpDoesNotExist})
		}
		out = append(out, append(entry, none))
	}
	return out
}

// zoneValues splits a zone label's value into its zones, sorted, without
// blanks.
func zoneValues(value string) []string {
	var out []string
	for _, z := range strings.Split(value, "__") {
		if z = strings.TrimSpace(z); z != "" {
			out = append(out, z)
		}
	}
	sort.Strings(out)
	return out
}

// volumesKey is the canonical text of volume affinity, for the key of
// interned constraints.
func volumesKey(volumes [][]corev1.NodeSelectorTerm) string {
	if len(volumes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\x03volumes")
	for _, terms := range volumes {
		b.WriteString(constraintsKey(nil, terms, nil))
		b.WriteString("\x03")
	}
	return b.String()
}

// setConstraints computes what p, a pod of ours, may run on: its interned
// constraints, and why its volumes keep it waiting or are unsupported. It
// also records which claims p uses, so that a change to one of them
// recomputes p. Only the loop goroutine calls it.
func (s *Store) setConstraints(p *podInfo) {
	s.forgetClaims(p)
	claims := podClaims(p.pod)
	if len(claims) == 0 {
		p.cons, p.volumeWait, p.unsupported = s.constraints.of(p.pod, nil), "", unsupportedOf(p.pod)
		return
	}
	for _, c := range claims {
		if s.volumes.users[c.key] == nil {
			s.volumes.users[c.key] = map[types.UID]bool{}
		}
		s.volumes.users[c.key][p.pod.UID] = true
	}
	terms, wait, unsupported := s.volumeAffinity(p.pod)
	p.cons, p.volumeWait = s.constraints.of(p.pod, terms), wait
	if p.unsupported = unsupportedOf(p.pod); p.unsupported == "" {
		p.unsupported = unsupported
	}
}

// forgetClaims removes p from the users of the claims it used.
func (s *Store) forgetClaims(p *podInfo) {
	if p == nil {
		return
	}
	for _, c := range podClaims(p.pod) {
		if users := s.volumes.users[c.key]; users != nil {
			delete(users, p.pod.UID)
			if len(users) == 0 {
				delete(s.volumes.users, c.key)
			}
		}
	}
}

// refreshClaim recomputes the constraints of the pods that use the claim.
func (s *Store) refreshClaim(key string) {
	uids := make([]types.UID, 0, len(s.volumes.users[key]))
	for uid := range s.volumes.users[key] {
		uids = append(uids, uid)
	}
	for _, uid := range uids {
		if p := s.pods[uid]; p != nil {
			s.setConstraints(p)
			s.touch(p.gang) // what a view reads of its volumes is the pod's
		}
	}
}

// usedClaims returns the keys of the claims some pod of ours uses, those
// for which keep holds.
func (s *Store) usedClaims(keep func(key string) bool) []string {
	var keys []string
	for key := range s.volumes.users {
		if keep(key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// SetClaim adds or replaces a PersistentVolumeClaim.
func (s *Store) SetClaim(pvc *corev1.PersistentVolumeClaim) {
	key := pvc.Namespace + "/" + pvc.Name
	s.volumes.claims[key] = pvc
	s.refreshClaim(key)
}

// DeleteClaim removes a PersistentVolumeClaim; the pods that use it wait.
func (s *Store) DeleteClaim(namespace, name string) {
	key := namespace + "/" + name
	delete(s.volumes.claims, key)
	s.refreshClaim(key)
}

// SetVolume adds or replaces a PersistentVolume.
func (s *Store) SetVolume(pv *corev1.PersistentVolume) {
	s.volumes.volumes[pv.Name] = pv
	s.refreshVolume(pv)
}

// DeleteVolume removes a PersistentVolume.
func (s *Store) DeleteVolume(pv *corev1.PersistentVolume) {
	delete(s.volumes.volumes, pv.Name)
	s.refreshVolume(pv)
}

// refreshVolume recomputes the pods whose claims are bound to pv: the claim
// its claimRef names, and any claim whose volumeName names it.
func (s *Store) refreshVolume(pv *corev1.PersistentVolume) {
	var ref string
	if r := pv.Spec.ClaimRef; r != nil {
		ref = r.Namespace + "/" + r.Name
	}
	for _, key := range s.usedClaims(func(key string) bool {
		pvc := s.volumes.claims[key]
		return key == ref || pvc != nil && pvc.Spec.VolumeName == pv.Name
	}) {
		s.refreshClaim(key)
	}
}

// SetStorageClass adds or replaces a StorageClass; the pods whose claims
// are not bound are recomputed (their binding mode may have changed).
func (s *Store) SetStorageClass(sc *storagev1.StorageClass) {
	s.volumes.classes[sc.Name] = sc
	s.refreshUnbound()
}

// DeleteStorageClass removes a StorageClass.
func (s *Store) DeleteStorageClass(name string) {
	delete(s.volumes.classes, name)
	s.refreshUnbound()
}

func (s *Store) refreshUnbound() {
	for _, key := range s.usedClaims(func(key string) bool {
		pvc := s.volumes.claims[key]
		return pvc == nil || pvc.Spec.VolumeName == ""
	}) {
		s.refreshClaim(key)
	}
}
