package scheduler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodTermsOf(t *testing.T) {
	ignore, honor := corev1.NodeInclusionPolicyIgnore, corev1.NodeInclusionPolicyHonor
	three := int32(3)
	pod := testPod("p").Obj()
	pod.Labels = map[string]string{"job": "j1", "index": "0"}
	pod.Spec.Affinity = &corev1.Affinity{
		PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Namespaces:    []string{"data"}, TopologyKey: "zone"}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1,
				PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "rack"}}}},
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "job", Operator: metav1.LabelSelectorOpExists}}},
			MismatchLabelKeys: []string{"job"}, NamespaceSelector: &metav1.LabelSelector{}, TopologyKey: "rack"}}},
	}
	pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: &three,
			LabelSelector: &metav1.LabelSelector{}, MatchLabelKeys: []string{"job"}, NodeAffinityPolicy: &ignore, NodeTaintsPolicy: &honor},
		{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway},
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "i", Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 9000}}}}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP, HostIP: "10.0.0.1"}}

	got, key := podTermsOf(pod)
	want := podTerms{
		PodAffinity: []core.PodAffinityTerm{{Selector: &core.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Namespaces: []string{"data"}, TopologyKey: "zone"}},
		PodAntiAffinity: []core.PodAffinityTerm{{Selector: &core.LabelSelector{MatchExpressions: []core.Requirement{
			{Key: "job", Operator: core.SelectorExists}, {Key: "job", Operator: core.SelectorNotIn, Values: []string{"j1"}}}},
			NamespaceSelector: &core.LabelSelector{}, TopologyKey: "rack"}},
		Spread: []core.SpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", MinDomains: 3, IgnoreNodeAffinity: true, HonorTaints: true,
			Selector: &core.LabelSelector{MatchExpressions: []core.Requirement{{Key: "job", Operator: core.SelectorIn, Values: []string{"j1"}}}}}},
		HostPorts: []core.HostPort{{Port: 9000}, {Port: 53, Protocol: "UDP", IP: "10.0.0.1"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("podTermsOf (-want +got):\n%s", d)
	}
	if key == "" {
		t.Error("a pod with terms has an empty key")
	}
	if _, k := podTermsOf(testPod("plain").Obj()); k != "" {
		t.Errorf("a pod without terms has key %q", k)
	}
}

func TestConstraintsInternPodTerms(t *testing.T) {
	c := newConstraintsCache()
	mk := func(name, job string) *corev1.Pod {
		p := testPod(name).Obj()
		p.Labels = map[string]string{"job": job}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone",
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{}, MatchLabelKeys: []string{"job"}}}
		return p
	}
	a, b, other := c.of(mk("a", "j1"), nil), c.of(mk("b", "j1"), nil), c.of(mk("c", "j2"), nil)
	if a == nil || a != b {
		t.Errorf("two pods of one job should share constraints: %p %p", a, b)
	}
	if a == other {
		t.Error("pods of two jobs share constraints though matchLabelKeys gives them different selectors")
	}
}

// The snapshot carries the pods on nodes only when a pod needs them: a
// pending member asks about pods, or a bound pod keeps others away.
func TestSnapshotPodsOnlyWhenAsked(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetNode(testNode("n1", 8))
	s.SetPod(testPod("web").On("n1", corev1.PodRunning).Scheduler("default-scheduler").Obj())
	s.SetPod(testPod("p").Group("g").GPUs(1).Obj())
	s.SetPodGroup(testPodGroup("g", 1))
	if snap, _ := s.Snapshot(); len(snap.Pods) != 0 {
		t.Fatalf("no pod asks about pods, yet the snapshot lists %d", len(snap.Pods))
	}
	away := testPod("db").On("n1", corev1.PodRunning).Scheduler("default-scheduler").Obj()
	away.Labels = map[string]string{"app": "db"}
	away.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{}, TopologyKey: "kubernetes.io/hostname"}}}}
	s.SetPod(away)
	snap, _ := s.Snapshot()
	if len(snap.Pods) != 2 {
		t.Fatalf("a bound pod with anti-affinity: want the 2 bound pods listed, got %d", len(snap.Pods))
	}
	var withTerms int
	for _, p := range snap.Pods {
		if p.Constraints != nil && len(p.Constraints.PodAntiAffinity) == 1 {
			withTerms++
		}
	}
	if withTerms != 1 {
		t.Errorf("want one listed pod carrying its anti-affinity, got %d", withTerms)
	}
	if g := snap.Gangs[0]; g.Pending[0].Namespace != "ns" {
		t.Errorf("member namespace %q", g.Pending[0].Namespace)
	}
	// The anti-affinity pod selects every pod: the member may not join it.
	sched, _ := core.New(core.Config{GPU: "nvidia.com/gpu"})
	if plan, diag := sched.RunCycle(snap, 0); len(plan.Binds) != 0 || len(diag.Pending) != 1 {
		t.Errorf("the member should wait beside an anti-affine pod: binds %v", plan.Binds)
	}
	s.DeletePod(away.UID)
	if snap, _ := s.Snapshot(); len(snap.Pods) != 0 {
		t.Errorf("after the anti-affine pod left, the snapshot still lists %d pods", len(snap.Pods))
	}
}
