package scheduler

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Which namespaces may use which queue.
//
// Queues are cluster-wide and a gang names its queue itself (a PodGroup's
// spec.queue, or a pod's annotation scheduling.phalanx.dev/queue), so on a
// cluster shared between teams nothing but the Queue can say who may use
// it: its spec.namespaceSelector, matched against the labels of the gang's
// namespace. A gang whose namespace does not match waits with reason
// QueueNotAllowed; the core sees it as invalid, so it is never placed and
// never preempts or reclaims anything. A Queue without a selector admits
// every namespace, as a cluster of one tenant expects.

// SetNamespace records a namespace's labels.
func (s *Store) SetNamespace(ns *corev1.Namespace) {
	if old, ok := s.namespaces[ns.Name]; !ok || !labels.Equals(old, ns.Labels) {
		s.epoch++
	}
	s.namespaces[ns.Name] = labels.Set(ns.Labels)
}

// DeleteNamespace forgets a namespace.
func (s *Store) DeleteNamespace(name string) {
	s.epoch++
	delete(s.namespaces, name)
}

// admission is a Queue's namespaceSelector, parsed once when the Queue is
// set rather than for every gang in every cycle; err says why it cannot be.
type admission struct {
	selector labels.Selector
	err      error
}

// setAdmission parses q's namespaceSelector; a Queue without one admits
// every namespace and needs no entry.
func (s *Store) setAdmission(q *v1alpha1.Queue) {
	if q.Spec.NamespaceSelector == nil {
		delete(s.admissions, q.Name)
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(q.Spec.NamespaceSelector)
	s.admissions[q.Name] = admission{selector: sel, err: err}
}

// queueRefuses says why gangs of namespace may not use queue, or "" if
// they may (or the queue does not exist: the core says so).
func (s *Store) queueRefuses(queue, namespace string) string {
	a, selective := s.admissions[queue]
	switch {
	case !selective:
		return ""
	case a.err != nil:
		return fmt.Sprintf("queue %s has a namespaceSelector that cannot be read (%v): no namespace may use it", queue, a.err)
	}
	nsLabels, known := s.namespaces[namespace]
	if !known {
		return fmt.Sprintf("namespace %s is not known yet; queue %s admits namespaces by label (%s)", namespace, queue, a.selector)
	}
	if !a.selector.Matches(nsLabels) {
		return fmt.Sprintf("namespace %s may not use queue %s: its labels do not match the queue's namespaceSelector (%s)",
			namespace, queue, a.selector)
	}
	return ""
}
