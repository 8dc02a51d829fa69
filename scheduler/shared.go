package scheduler

import (
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sharedMax is how many entries a table of the sharer holds before it
// forgets them all.
const sharedMax = 4096

// sharer gives the pods the informer caches one copy of the parts that many
// of them have alike: a job's container requests, the tolerations every pod
// is given by default, the labels and owner of a gang's members. Each pod
// decodes its own copy; a map of one or two requests alone takes about 700
// bytes of heap, a map of three labels about half that, and sharing them
// saves about a third of the cache (BenchmarkPodCacheBytes).
//
// What it gives out is read only, as is everything in an informer's cache:
// nothing here writes into a cached pod's maps or slices (binds, evictions
// and patches name the pod). Parts are equal when every field is: a
// quantity by its canonical value and format, as Quantity.String and Cmp
// see it.
//
// Its tables forget everything when one holds sharedMax entries: a pod
// keeps what it was given, and under churn the tables stay small. Pods of
// one gang are created, and so listed and watched, together.
type sharer struct {
	mu        sync.Mutex
	key       []byte
	names     []string
	resources map[string]corev1.ResourceList
	strings   map[string]map[string]string
	tols      map[string][]corev1.Toleration
	owners    map[string][]metav1.OwnerReference
}

func newSharer() *sharer {
	return &sharer{
		resources: map[string]corev1.ResourceList{},
		strings:   map[string]map[string]string{},
		tols:      map[string][]corev1.Toleration{},
		owners:    map[string][]metav1.OwnerReference{},
	}
}

// share replaces, in place, the parts of a lean pod that another cached
// pod has alike with that pod's, and returns the pod.
func (s *sharer) share(pod *corev1.Pod) *corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	pod.Labels = s.stringMap(pod.Labels)
	pod.Annotations = s.stringMap(pod.Annotations)
	pod.OwnerReferences = s.ownerRefs(pod.OwnerReferences)
	spec := &pod.Spec
	spec.NodeSelector = s.stringMap(spec.NodeSelector)
	spec.Tolerations = s.tolerations(spec.Tolerations)
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			r.Requests, r.Limits = s.resourceList(r.Requests), s.resourceList(r.Limits)
		}
	}
	spec.Overhead = s.resourceList(spec.Overhead)
	if spec.Resources != nil {
		spec.Resources.Requests, spec.Resources.Limits = s.resourceList(spec.Resources.Requests), s.resourceList(spec.Resources.Limits)
	}
	return pod
}

// shared returns the entry of table under s.key, storing v there if there
// is none.
func shared[V any](s *sharer, table map[string]V, v V) V {
	if have, ok := table[string(s.key)]; ok {
		return have
	}
	if len(table) >= sharedMax {
		clear(table)
	}
	table[string(s.key)] = v
	return v
}

func (s *sharer) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	s.names = s.names[:0]
	for k := range m {
		s.names = append(s.names, k)
	}
	slices.Sort(s.names)
	s.key = s.key[:0]
	for _, k := range s.names {
		s.key = append(append(append(append(s.key, k...), 0), m[k]...), 0)
	}
	return shared(s, s.strings, m)
}

func (s *sharer) resourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	s.names = s.names[:0]
	for k := range l {
		s.names = append(s.names, string(k))
	}
	slices.Sort(s.names)
	s.key = s.key[:0]
	for _, k := range s.names {
		q := l[corev1.ResourceName(k)]
		s.key = append(append(s.key, k...), 0, byte(len(q.Format)))
		s.key = append(s.key, q.Format...)
		if q.IsZero() {
			// CanonicalizeBytes returns a constant for zero, not the key
			// it was given to append to.
			s.key = append(s.key, '0', 0)
			continue
		}
		num, suffix := q.CanonicalizeBytes(s.key)
		s.key = append(append(num, suffix...), 0)
	}
	return shared(s, s.resources, l)
}

func (s *sharer) tolerations(ts []corev1.Toleration) []corev1.Toleration {
	if len(ts) == 0 {
		return ts
	}
	s.key = s.key[:0]
	for _, t := range ts {
		s.key = append(append(append(append(append(append(append(append(s.key,
			t.Key...), 0), t.Operator...), 0), t.Value...), 0), t.Effect...), 0)
		if t.TolerationSeconds != nil {
			s.key = strconv.AppendInt(s.key, *t.TolerationSeconds, 10)
		}
		s.key = append(s.key, 1)
	}
	return shared(s, s.tols, ts)
}

func (s *sharer) ownerRefs(rs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(rs) == 0 {
		return rs
	}
	s.key = s.key[:0]
	flag := func(b *bool) byte {
		switch {
		case b == nil:
			return '-'
		case *b:
			return 't'
		}
		return 'f'
	}
	for _, r := range rs {
		s.key = append(append(append(append(append(append(append(append(s.key,
			r.APIVersion...), 0), r.Kind...), 0), r.Name...), 0), r.UID...), 0)
		s.key = append(s.key, flag(r.Controller), flag(r.BlockOwnerDeletion), 1)
	}
	return shared(s, s.owners, rs)
}
