package scheduler

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSharerKeepsEveryPodAsItWas: a pod given shared parts equals the pod
// it was, field for field, over random pods and over pods that differ
// from each other in one value only.
func TestSharerKeepsEveryPodAsItWas(t *testing.T) {
	sh := newSharer()
	var pods []*corev1.Pod
	for seed := int64(1); seed <= 30; seed++ {
		pods = append(pods, randomPods(seed, 10)...)
	}
	// Alike but for one value each: a shared part must not hide it.
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "x", "role": "worker"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u", Controller: ptr(true)}}},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"gpu": "a100"},
				Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr(int64(300))}},
				Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	}
	variants := []func(p *corev1.Pod){
		func(p *corev1.Pod) {},
		func(p *corev1.Pod) { p.Labels = map[string]string{"app": "x", "role": "ps"} },
		func(p *corev1.Pod) { p.Labels = map[string]string{"app": "x", "rolE": "worker"} },
		func(p *corev1.Pod) { p.Labels = map[string]string{"app": "x\x00role", "": "worker"} },
		func(p *corev1.Pod) { p.OwnerReferences[0].Controller = ptr(false) },
		func(p *corev1.Pod) { p.OwnerReferences[0].UID = "v" },
		func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"gpu": "h100"} },
		func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr(int64(30)) },
		func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = nil },
		func(p *corev1.Pod) { p.Spec.Tolerations[0].Effect = corev1.TaintEffectNoExecute },
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1073741824")
		},
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("2Gi")
		},
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1001m")
		},
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
		},
		// A zero amount: its key must keep what came before it.
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")}
		},
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("0")
		},
		// Printed alike ("1500m"), but a sum with them prints otherwise.
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(1500, resource.BinarySI)
		},
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1500m")
		},
	}
	for round := 0; round < 2; round++ { // the second round is given what the first stored
		for _, v := range variants {
			p := base()
			v(p)
			pods = append(pods, p)
		}
	}
	for i, pod := range pods {
		want := leanPod(pod.DeepCopy())
		got := sh.share(leanPod(pod.DeepCopy()))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("pod %d (%s): sharing changed it (-lean +shared):\n%s", i, pod.Name, diff)
		}
		// cmp compares quantities by value (Quantity.Equal): the same
		// amount written otherwise ("1Gi", "1073741824") must stay so.
		for c := range want.Spec.Containers {
			for name, q := range want.Spec.Containers[c].Resources.Requests {
				g := got.Spec.Containers[c].Resources.Requests[name]
				if q.String() != g.String() || q.Format != g.Format {
					t.Fatalf("pod %d: %s is %s (%s), shared %s (%s)", i, name, q.String(), q.Format, g.String(), g.Format)
				}
			}
		}
	}
}

// TestSharerShares: pods alike are given one copy of each part.
func TestSharerShares(t *testing.T) {
	sh := newSharer()
	pods := make([]*corev1.Pod, 8)
	for i := range pods {
		pods[i] = leanPod(operatorPod(i).DeepCopy())                            // a copy: the fixture gives Requests and Limits one map
		pods[i].Labels = map[string]string{"job": "bert", LabelACKName: "bert"} // operatorPod's differ by rank
		sh.share(pods[i])
	}
	same := func(what string, f func(p *corev1.Pod) any) {
		t.Helper()
		first := reflect.ValueOf(f(pods[0])).UnsafePointer()
		for i, p := range pods[1:] {
			if reflect.ValueOf(f(p)).UnsafePointer() != first {
				t.Errorf("pod %d has a copy of its own of %s", i+1, what)
			}
		}
	}
	same("the labels", func(p *corev1.Pod) any { return p.Labels })
	same("the requests", func(p *corev1.Pod) any { return p.Spec.Containers[0].Resources.Requests })
	same("the tolerations", func(p *corev1.Pod) any { return p.Spec.Tolerations })
	same("the owner references", func(p *corev1.Pod) any { return p.OwnerReferences })
}

// TestSharerForgets: the tables never hold more than sharedMax entries.
func TestSharerForgets(t *testing.T) {
	sh := newSharer()
	for i := range 3 * sharedMax {
		sh.share(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"i": fmt.Sprint(i)}}})
		if n := len(sh.strings); n > sharedMax {
			t.Fatalf("after %d pods the table of string maps holds %d entries", i+1, n)
		}
	}
}

// TestConstraintsCacheForgets: pods pinned each to a node of its own (a
// DaemonSet's, on a cluster whose nodes come and go) do not grow the cache
// of constraints past its bound, and pods alike still share theirs.
func TestConstraintsCacheForgets(t *testing.T) {
	c := newConstraintsCache()
	pinned := func(node string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}}}
	}
	for i := range 3 * constraintsMax {
		c.of(pinned(fmt.Sprintf("node-%d", i)), nil)
		c.withLabel(nil, "gpu", fmt.Sprint(i))
	}
	if len(c.byKey) > constraintsMax || len(c.labelled) > constraintsMax {
		t.Errorf("the cache holds %d and %d constraints, more than %d", len(c.byKey), len(c.labelled), constraintsMax)
	}
	if a, b := c.of(pinned("n"), nil), c.of(pinned("n"), nil); a != b {
		t.Errorf("two pods with the same constraints do not share them")
	}
}
