package scheduler

import (
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestQueueNamespaceSelector: queue team-b admits namespaces labelled
// team=b. A high-priority pod of namespace tenant-a naming team-b waits with
// reason QueueNotAllowed and evicts nothing; the same pod in tenant-b
// preempts team-b's low-priority gang. A queue without a selector admits
// every namespace.
func TestQueueNamespaceSelector(t *testing.T) {
	for _, tt := range []struct {
		ns       string
		selector *metav1.LabelSelector
		allowed  bool
	}{
		{"tenant-a", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}, false},
		{"tenant-b", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}, true},
		{"tenant-a", nil, true},
		{"unknown", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}, false},
		{"tenant-b", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}, false},
	} {
		s := NewStore([]string{"phalanx"})
		s.SetNode(testNode("n1", 4))
		s.SetNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{"team": "a"}}})
		s.SetNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b", Labels: map[string]string{"team": "b"}}})
		s.SetQueue(&v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}, Spec: v1alpha1.QueueSpec{Weight: 1, NamespaceSelector: tt.selector}})
		victim := testPod("b-0").GPUs(4).Priority(1).On("n1", corev1.PodRunning).Obj()
		victim.Namespace, victim.UID = "tenant-b", "uid-b-0"
		victim.Annotations = map[string]string{AnnotationQueue: "team-b"}
		s.SetPod(victim)
		intruder := testPod("x").GPUs(4).Priority(1000).Obj()
		intruder.Namespace = tt.ns
		intruder.Annotations = map[string]string{AnnotationQueue: "team-b"}
		s.SetPod(intruder)
		s.preempting = true

		sched, err := core.New(core.Config{GPU: "nvidia.com/gpu", Preemption: true})
		if err != nil {
			t.Fatal(err)
		}
		snap, views := s.Snapshot()
		plan, diag := sched.RunCycle(snap, 1000)
		key := tt.ns + "/x#pod"
		var verd verdict
		for _, st := range diag.Pending {
			if st.Gang == key {
				verd = verdictOf(views[key], st, 1000, nil)
			}
		}
		if tt.allowed {
			if len(plan.Evictions) != 1 || verd.reason == ReasonQueueNotAllowed {
				t.Errorf("%s, selector %v: evictions %v, verdict %+v; want team-b's gang preempted", tt.ns, tt.selector, plan.Evictions, verd)
			}
			continue
		}
		if len(plan.Evictions) != 0 || len(plan.Binds) != 0 {
			t.Errorf("%s, selector %v: a gang its queue does not admit evicted %v, bound %v", tt.ns, tt.selector, plan.Evictions, plan.Binds)
		}
		if verd.reason != ReasonQueueNotAllowed || !strings.Contains(verd.message, "team-b") {
			t.Errorf("%s, selector %v: verdict %+v; want QueueNotAllowed naming the queue", tt.ns, tt.selector, verd)
		}
	}
}
