package scheduler

import (
	"fmt"

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
	if s.namespaces == nil {
		s.namespaces = map[string]labels.Set{}
	}
	s.namespaces[ns.Name] = labels.Set(ns.Labels)
}

// DeleteNamespace forgets a namespace.
func (s *Store) DeleteNamespace(name string) { delete(s.namespaces, name) }

// queueRefuses says why gangs of namespace may not use queue, or "" if
// they may (or the queue does not exist: the core says so).
func (s *Store) queueRefuses(queue, namespace string) string {
	q := s.queues[queue]
	if q == nil || q.Spec.NamespaceSelector == nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(q.Spec.NamespaceSelector)
	if err != nil {
		return fmt.Sprintf("queue %s has a namespaceSelector that cannot be read (%v): no namespace may use it", queue, err)
	}
	nsLabels, known := s.namespaces[namespace]
	if !known {
		return fmt.Sprintf("namespace %s is not known yet; queue %s admits namespaces by label (%s)", namespace, queue, sel)
	}
	if !sel.Matches(nsLabels) {
		return fmt.Sprintf("namespace %s may not use queue %s: its labels do not match the queue's namespaceSelector (%s)",
			namespace, queue, sel)
	}
	return ""
}
