package scheduler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podWith(labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels, Annotations: annotations}}
}

func TestMembershipOf(t *testing.T) {
	tests := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		want        Membership
	}{
		{"tf-operator annotation", nil, map[string]string{AnnotationGroupName: "tfjob"}, Membership{Kind: ByPodGroup, Name: "tfjob"}},
		{"scheduler-plugins label", map[string]string{LabelPodGroup: "pg"}, nil, Membership{Kind: ByPodGroup, Name: "pg"}},
		{"annotation wins over label", map[string]string{LabelPodGroup: "b"}, map[string]string{AnnotationGroupName: "a"}, Membership{Kind: ByPodGroup, Name: "a"}},
		{"ACK labels", map[string]string{LabelACKName: "tf-smoke-gpu", LabelACKMinAvailable: "5"}, nil, Membership{Kind: ByLabels, Name: "tf-smoke-gpu", MinAvailable: 5}},
		{"ACK name without min", map[string]string{LabelACKName: "x"}, nil, Membership{Kind: ByLabels, Name: "x", MinAvailable: 1}},
		{"ACK min not a number", map[string]string{LabelACKName: "x", LabelACKMinAvailable: "five"}, nil,
			Membership{Kind: ByLabels, Name: "x", MinAvailable: 1, Problem: `label pod-group.scheduling.sigs.k8s.io/min-available="five" is not an integer`}},
		{"ACK min zero", map[string]string{LabelACKName: "x", LabelACKMinAvailable: "0"}, nil,
			Membership{Kind: ByLabels, Name: "x", MinAvailable: 1, Problem: `label pod-group.scheduling.sigs.k8s.io/min-available="0" must be at least 1`}},
		{"blank annotation is no group", nil, map[string]string{AnnotationGroupName: "  "}, Membership{Kind: Single, Name: "p"}},
		{"nothing", nil, nil, Membership{Kind: Single, Name: "p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MembershipOf(podWith(tt.labels, tt.annotations))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGangKeysDoNotCollide(t *testing.T) {
	a := Membership{Kind: ByPodGroup, Name: "x"}.GangKey("ns")
	b := Membership{Kind: ByLabels, Name: "x"}.GangKey("ns")
	c := Membership{Kind: Single, Name: "x"}.GangKey("ns")
	if a == b || b == c || a == c {
		t.Errorf("keys collide: %q %q %q", a, b, c)
	}
}

func FuzzMembershipOf(f *testing.F) {
	f.Add("tf", "", "", "5")
	f.Add("", "pg", "", "")
	f.Add("", "", "ack", "-3")
	f.Add("", "", "ack", "99999999999999999999")
	f.Fuzz(func(t *testing.T, ann, pg, ack, min string) {
		pod := podWith(map[string]string{LabelPodGroup: pg, LabelACKName: ack, LabelACKMinAvailable: min}, map[string]string{AnnotationGroupName: ann})
		m := MembershipOf(pod)
		if m.Name == "" {
			t.Fatalf("empty gang name for %+v", m)
		}
		if m.Kind == ByLabels && m.Problem == "" && m.MinAvailable < 1 {
			t.Fatalf("min-available %d accepted", m.MinAvailable)
		}
	})
}
