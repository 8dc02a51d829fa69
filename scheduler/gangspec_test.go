package scheduler

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseEstimate(t *testing.T) {
	tests := []struct {
		raw     string
		want    int64
		problem string // in the error, when one is expected
	}{
		{raw: "90", want: 90},
		{raw: " 600 ", want: 600},
		{raw: "90s", want: 90},
		{raw: "1h30m", want: 5400},
		{raw: "1.5s", want: 2},
		{raw: "500ms", want: 1},
		{raw: "3153600000", want: 3153600000},
		{raw: "", problem: "empty"},
		{raw: "0", problem: "at least 1 second"},
		{raw: "-5", problem: "at least 1 second"},
		{raw: "-1m", problem: "at least 1s"},
		{raw: "0s", problem: "at least 1s"},
		{raw: "soon", problem: "neither a duration"},
		{raw: "1e3", problem: "neither a duration"},
		{raw: "3153600001", problem: "too large"},
		{raw: "99999999999999999999", problem: "too large"},
		{raw: "2000000h", problem: "too large"},
	}
	for _, tt := range tests {
		got, err := ParseEstimate(tt.raw)
		switch {
		case tt.problem == "" && err != nil:
			t.Errorf("ParseEstimate(%q): %v, want %d", tt.raw, err, tt.want)
		case tt.problem == "" && got != tt.want:
			t.Errorf("ParseEstimate(%q) = %d, want %d", tt.raw, got, tt.want)
		case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
			t.Errorf("ParseEstimate(%q) = %d, %v; want an error saying %q", tt.raw, got, err, tt.problem)
		}
	}
}

// FuzzParseEstimate: whatever the text, the parser returns an error or an
// estimate within bounds that agrees with the integer or duration the text
// spells.
func FuzzParseEstimate(f *testing.F) {
	for _, seed := range []string{"90", "1h30m", "1.5s", "500ms", "0", "-1", "", " 7 ", "1e3", "3153600001",
		"99999999999999999999", "9223372036854775807ns", "+5", "1h-1m", "\x00", "٣"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := ParseEstimate(raw)
		if err != nil {
			if got != 0 {
				t.Errorf("ParseEstimate(%q) = %d with error %v", raw, got, err)
			}
			return
		}
		if got < 1 || got > maxEstimate {
			t.Fatalf("ParseEstimate(%q) = %d, out of [1, %d]", raw, got, maxEstimate)
		}
		s := strings.TrimSpace(raw)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if n != got {
				t.Errorf("ParseEstimate(%q) = %d, want %d", raw, got, n)
			}
			return
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("ParseEstimate(%q) = %d, but it is neither an integer nor a duration", raw, got)
		}
		if secs := time.Duration(got) * time.Second; secs < d || secs-d >= time.Second {
			t.Errorf("ParseEstimate(%q) = %d s, not %v rounded up to a second", raw, got, d)
		}
	})
}

func (b *podBuilder) Annotate(k, v string) *podBuilder {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	b.p.Annotations[k] = v
	return b
}

func (b *podBuilder) Deadline(secs int64) *podBuilder {
	b.p.Spec.ActiveDeadlineSeconds = &secs
	return b
}

func (b *podBuilder) NodeSelector(k, v string) *podBuilder {
	b.p.Spec.NodeSelector = map[string]string{k: v}
	return b
}

func int64p(v int64) *int64 { return &v }

// TestGangSpec: where a gang's estimate, required topology and GPU model
// come from, in which order, and what a bad value says.
func TestGangSpec(t *testing.T) {
	type want struct {
		estimate int64
		declared bool // core.Gang.EstimateDeclared
		level    string
		model    string
		invalid  string // a part of the gang's Invalid text; "" means valid
	}
	tests := []struct {
		name string
		pg   func(s *Store)
		pods []*podBuilder
		want want
	}{
		{
			name: "PodGroup fields",
			pg: func(s *Store) {
				pg := testPodGroup("job", 1)
				pg.Spec.EstimatedRuntimeSeconds = int64p(300)
				pg.Spec.RequiredTopology, pg.Spec.GPUModel = "phalanx.dev/rack", "A100"
				pg.Annotations = map[string]string{AnnotationEstimatedRuntime: "1h"} // the field wins
				s.SetPodGroup(pg)
			},
			pods: []*podBuilder{testPod("job-0").Group("job").Annotate(AnnotationEstimatedRuntime, "2h").Deadline(60)},
			want: want{estimate: 300, declared: true, level: "phalanx.dev/rack", model: "A100"},
		},
		{
			name: "PodGroup annotations win over the members'",
			pg: func(s *Store) {
				pg := testPodGroup("job", 1)
				pg.Annotations = map[string]string{AnnotationEstimatedRuntime: "1h", AnnotationGPUModel: "H100"}
				s.SetPodGroup(pg)
			},
			pods: []*podBuilder{testPod("job-0").Group("job").Annotate(AnnotationEstimatedRuntime, "2h").Annotate(AnnotationGPUModel, "A100")},
			want: want{estimate: 3600, declared: true, model: "H100"},
		},
		{
			name: "ACK gang: the members' annotations",
			pods: []*podBuilder{
				testPod("ack-0").ACK("ack", "2").Annotate(AnnotationEstimatedRuntime, "90").Annotate(AnnotationRequiredTopology, "phalanx.dev/rack"),
				testPod("ack-1").ACK("ack", "2").Annotate(AnnotationEstimatedRuntime, "90"),
			},
			want: want{estimate: 90, declared: true, level: "phalanx.dev/rack"},
		},
		{
			name: "the smallest activeDeadlineSeconds",
			pods: []*podBuilder{testPod("ack-0").ACK("ack", "2").Deadline(600), testPod("ack-1").ACK("ack", "2").Deadline(300)},
			want: want{estimate: 300},
		},
		{
			name: "nothing known",
			pods: []*podBuilder{testPod("solo")},
			want: want{},
		},
		{
			name: "a bad estimate",
			pods: []*podBuilder{testPod("solo").Annotate(AnnotationEstimatedRuntime, "soon")},
			want: want{invalid: `annotation phalanx.dev/estimated-runtime="soon" of the members: neither a duration`},
		},
		{
			name: "a bad estimate on the PodGroup",
			pg: func(s *Store) {
				pg := testPodGroup("job", 1)
				pg.Annotations = map[string]string{AnnotationEstimatedRuntime: "-3m"}
				s.SetPodGroup(pg)
			},
			pods: []*podBuilder{testPod("job-0").Group("job")},
			want: want{invalid: `annotation phalanx.dev/estimated-runtime="-3m" of PodGroup job: must be at least 1s`},
		},
		{
			name: "members disagree",
			pods: []*podBuilder{
				testPod("ack-0").ACK("ack", "2").Annotate(AnnotationGPUModel, "A100"),
				testPod("ack-1").ACK("ack", "2").Annotate(AnnotationGPUModel, "V100"),
			},
			want: want{invalid: `members disagree on annotation phalanx.dev/gpu-model: "A100" and "V100"`},
		},
		{
			name: "a topology that is not a label key",
			pods: []*podBuilder{testPod("solo").Annotate(AnnotationRequiredTopology, "rack please")},
			want: want{invalid: `annotation phalanx.dev/required-topology="rack please" of the members is not a node label key`},
		},
		{
			name: "a GPU model that is not a label value",
			pods: []*podBuilder{testPod("solo").Annotate(AnnotationGPUModel, "A100 80GB")},
			want: want{invalid: `annotation phalanx.dev/gpu-model="A100 80GB" of the members is not a label value`},
		},
		{
			name: "a GPU model against the pod's own nodeSelector",
			pods: []*podBuilder{testPod("solo").Annotate(AnnotationGPUModel, "A100").NodeSelector(DefaultGPUModelLabel, "V100")},
			want: want{model: "A100", invalid: "the gang's GPU model A100 conflicts with pod solo's nodeSelector nvidia.com/gpu.product=V100"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore([]string{"phalanx"})
			s.SetNode(testNode("n1", 8))
			if tt.pg != nil {
				tt.pg(s)
			}
			for _, p := range tt.pods {
				s.SetPod(p.GPUs(1).Obj())
			}
			snap, _ := s.Snapshot()
			if len(snap.Gangs) != 1 {
				t.Fatalf("%d gangs, want 1", len(snap.Gangs))
			}
			g := snap.Gangs[0]
			if tt.want.invalid != "" {
				if !strings.Contains(g.Invalid, tt.want.invalid) {
					t.Errorf("invalid %q, want it to say %q", g.Invalid, tt.want.invalid)
				}
				return
			}
			if g.Invalid != "" {
				t.Fatalf("invalid: %s", g.Invalid)
			}
			got := want{estimate: g.Estimate, declared: g.EstimateDeclared, level: g.RequiredLevel}
			if c := g.Pending[0].Constraints; c != nil {
				got.model = c.NodeSelector[DefaultGPUModelLabel]
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("gang spec (-want +got):\n%s", diff)
			}
		})
	}
}

// Members of a gang with a GPU model share one set of constraints, which
// keep the pods' own.
func TestGPUModelConstraints(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetNode(testNode("n1", 8))
	pg := testPodGroup("job", 2)
	pg.Spec.GPUModel = "A100"
	s.SetPodGroup(pg)
	s.SetPod(testPod("job-0").Group("job").GPUs(1).NodeSelector("zone", "a").Obj())
	s.SetPod(testPod("job-1").Group("job").GPUs(1).NodeSelector("zone", "a").Obj())
	snap, views := s.Snapshot()
	g := gangByID(snap, "ns/job")
	a, b := g.Pending[0].Constraints, g.Pending[1].Constraints
	if a == nil || a != b {
		t.Fatalf("members' constraints %p and %p, want one shared set", a, b)
	}
	if diff := cmp.Diff(map[string]string{"zone": "a", DefaultGPUModelLabel: "A100"}, a.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	if !views["ns/job"].modelMissing {
		t.Errorf("no node has an A100, but the view does not say so")
	}
	got := verdictOf(views["ns/job"], core.GangStatus{Reason: core.ReasonUnschedulable}, 0, nil)
	if !strings.HasPrefix(got.message, "no node has GPU model A100 (label nvidia.com/gpu.product)") {
		t.Errorf("message %q does not say that no node has the model", got.message)
	}
	n := testNode("a100", 8)
	n.Labels = map[string]string{DefaultGPUModelLabel: "A100"}
	s.SetNode(n)
	if _, views = s.Snapshot(); views["ns/job"].modelMissing {
		t.Errorf("a node has an A100 now, but the view says none does")
	}
}

func TestForeignPodGroupKeepsSpecAnnotations(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "tfjob", "namespace": "ns", "annotations": map[string]any{
			AnnotationEstimatedRuntime: "2h", AnnotationGPUModel: "A100", AnnotationSchedulerName: "phalanx-b", "unrelated": "x"}},
		"spec": map[string]any{"minMember": int64(2)},
	}}
	pg, err := fromForeign(u)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{annotationForeignAPI: "scheduling.volcano.sh/v1beta1", AnnotationEstimatedRuntime: "2h", AnnotationGPUModel: "A100",
		AnnotationSchedulerName: "phalanx-b"}
	if diff := cmp.Diff(want, pg.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	// The instance the annotation names claims the PodGroup before its pods
	// exist; another does not, though it serves Volcano's name.
	for names, want := range map[string]bool{"phalanx-b": true, "phalanx,volcano": false} {
		s := NewStore(strings.Split(names, ","))
		if got := s.claimsForeign("scheduling.volcano.sh", pg.Annotations); got != want {
			t.Errorf("scheduler %s claims a PodGroup annotated for phalanx-b: %v, want %v", names, got, want)
		}
	}
}

// TestForeignPodGroupQueue: scheduler-plugins' PodGroups have no queue; the
// PodGroup's annotation names one, or else its members' annotation.
func TestForeignPodGroupQueue(t *testing.T) {
	plugins := func(name string, annotations map[string]any) *v1alpha1.PodGroup {
		t.Helper()
		pg, err := fromForeign(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"name": name, "namespace": "ns", "annotations": annotations},
			"spec":     map[string]any{"minMember": int64(1)},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return pg
	}
	s := NewStore([]string{"phalanx"})
	s.SetForeignPodGroup("scheduling.x-k8s.io", plugins("annotated", map[string]any{AnnotationQueue: "research"}), nil)
	s.SetForeignPodGroup("scheduling.x-k8s.io", plugins("bare", nil), nil)
	s.SetForeignPodGroup("scheduling.x-k8s.io", plugins("plain", nil), nil)
	s.SetPod(testPod("a-0").Group("annotated").Annotate(AnnotationQueue, "ignored").Obj())
	s.SetPod(testPod("b-0").Group("bare").Annotate(AnnotationQueue, "team-b").Obj())
	s.SetPod(testPod("p-0").Group("plain").Obj())
	_, views := s.Snapshot()
	for key, want := range map[string]string{"ns/annotated": "research", "ns/bare": "team-b", "ns/plain": v1alpha1.DefaultQueue} {
		if v := views[key]; v == nil || v.queue != want {
			t.Errorf("%s: view %+v, want queue %s", key, v, want)
		}
	}
}

func TestQueueSpec(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	after, no := int32(30), false
	q := testQueue("research")
	q.Spec.ReserveAfterSeconds, q.Spec.Reclaimable = &after, &no
	s.SetQueue(q)
	s.SetQueue(testQueue("default"))
	snap, _ := s.Snapshot()
	got := map[string][2]any{}
	for _, q := range snap.Queues {
		got[q.Name] = [2]any{q.ReserveAfter, q.NoReclaim}
	}
	want := map[string][2]any{"research": {int64(30), true}, "default": {int64(0), false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
	if !s.reservations() {
		t.Errorf("a queue with reserveAfterSeconds does not turn on releases")
	}
}
