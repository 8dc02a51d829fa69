package scheduler

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/record"
)

// unstructuredOf returns obj as the dynamic client would deliver it.
func unstructuredOf(t *testing.T, obj runtime.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind(kind)
	return u
}

// with returns a copy of u with the field at path set to value.
func with(t *testing.T, u *unstructured.Unstructured, value any, path ...string) *unstructured.Unstructured {
	t.Helper()
	u = u.DeepCopy()
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestFromUnstructuredNumbers(t *testing.T) {
	pg := unstructuredOf(t, testPodGroup("job", 2), "PodGroup")
	q := unstructuredOf(t, testQueue("research"), "Queue")
	condition := map[string]any{"type": "Scheduled", "status": "True", "reason": "Scheduled", "message": "",
		"lastTransitionTime": "2025-01-01T00:00:00Z", "observedGeneration": float64(1e19)}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		// want is a part of the error, "" for none.
		want string
	}{
		{"minMember at the CRD's bound", with(t, pg, int64(100000), "spec", "minMember"), ""},
		{"minMember at int32's bound", with(t, pg, int64(math.MaxInt32), "spec", "minMember"), ""},
		{"minMember as an integral float", with(t, pg, float64(3), "spec", "minMember"), ""},
		{"a negative minMember is the core's to report", with(t, pg, int64(-1), "spec", "minMember"), ""},
		{"minMember 2^31", with(t, pg, int64(1)<<31, "spec", "minMember"),
			"spec.minMember: 2147483648 does not fit in an int32 (-2147483648 to 2147483647)"},
		{"minMember that would wrap around to 1", with(t, pg, int64(1)<<32+1, "spec", "minMember"),
			"spec.minMember: 4294967297 does not fit in an int32"},
		{"minMember below int32", with(t, pg, int64(math.MinInt32)-1, "spec", "minMember"),
			"spec.minMember: -2147483649 does not fit in an int32"},
		{"minMember 2^31 as a float", with(t, pg, float64(1<<31), "spec", "minMember"),
			"spec.minMember: 2.147483648e+09 does not fit in an int32"},
		{"a fraction", with(t, pg, 1.5, "spec", "minMember"), "spec.minMember: 1.5 is not an integer"},
		{"a string", with(t, pg, "three", "spec", "minMember"), `spec.minMember: the string "three" is not an integer`},
		{"a pointer field", with(t, pg, int64(1)<<31, "spec", "scheduleTimeoutSeconds"),
			"spec.scheduleTimeoutSeconds: 2147483648 does not fit in an int32"},
		{"an int64 beyond int64", with(t, pg, float64(1e19), "spec", "estimatedRuntimeSeconds"),
			"spec.estimatedRuntimeSeconds: 1e+19 does not fit in an int64 (-9223372036854775808 to 9223372036854775807)"},
		{"a status count", with(t, pg, int64(1)<<31, "status", "pending"), "status.pending: 2147483648 does not fit"},
		{"metadata", with(t, pg, float64(1e19), "metadata", "generation"), "metadata.generation: 1e+19 does not fit"},
		{"a condition in a list", with(t, pg, []any{condition}, "status", "conditions"),
			"status.conditions[0].observedGeneration: 1e+19 does not fit"},
		{"quantities are left to the converter", with(t, pg, map[string]any{"nvidia.com/gpu": int64(2)}, "spec", "minResources"), ""},
		{"weight at the CRD's bound", with(t, q, int64(1000000), "spec", "weight"), ""},
		{"weight 2^31", with(t, q, int64(1)<<31, "spec", "weight"), "spec.weight: 2147483648 does not fit in an int32"},
		{"reserveAfterSeconds below int32", with(t, q, int64(math.MinInt32)-1, "spec", "reserveAfterSeconds"),
			"spec.reserveAfterSeconds: -2147483649 does not fit"},
		{"a Queue's status count", with(t, q, int64(1)<<40, "status", "running"), "status.running: 1099511627776 does not fit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch tc.obj.GetKind() {
			case "PodGroup":
				var got *v1alpha1.PodGroup
				if got, err = podGroupFromUnstructured(tc.obj); err == nil {
					want, _, _ := unstructured.NestedNumberAsFloat64(tc.obj.Object, "spec", "minMember")
					if float64(got.Spec.MinMember) != want {
						t.Errorf("minMember %d, want %v", got.Spec.MinMember, want)
					}
				}
			case "Queue":
				var got *v1alpha1.Queue
				if got, err = queueFromUnstructured(tc.obj); err == nil {
					want, _, _ := unstructured.NestedNumberAsFloat64(tc.obj.Object, "spec", "weight")
					if float64(got.Spec.Weight) != want {
						t.Errorf("weight %d, want %v", got.Spec.Weight, want)
					}
				}
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFromForeignNumbers(t *testing.T) {
	volcano := func(minMember any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
			"metadata": map[string]any{"name": "tfjob", "namespace": "ns"},
			"spec":     map[string]any{"minMember": minMember},
		}}
	}
	for _, tc := range []struct {
		minMember any
		want      string
	}{
		{int64(1) << 31, "PodGroup.scheduling.volcano.sh ns/tfjob: spec.minMember: 2147483648 does not fit in an int32"},
		{int64(1)<<32 + 2, "spec.minMember: 4294967298 does not fit in an int32"},
		{2.5, "spec.minMember: 2.5 is not an integer"},
		{"2", `spec.minMember: the string "2" is not an integer`},
	} {
		if _, err := fromForeign(volcano(tc.minMember)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("minMember %v: err = %v, want one containing %q", tc.minMember, err, tc.want)
		}
	}
	// A negative or zero minMember is read as it is; the core reports it.
	for _, minMember := range []any{int64(-1), int64(0), nil} {
		pg, err := fromForeign(volcano(minMember))
		if err != nil {
			t.Fatalf("minMember %v: %v", minMember, err)
		}
		s := NewStore([]string{"phalanx"})
		s.SetPod(testPod("w-0").Group("tfjob").Obj())
		s.SetForeignPodGroup("scheduling.volcano.sh", pg, nil)
		s.SetQueue(testQueue(v1alpha1.DefaultQueue))
		snap, _ := s.Snapshot()
		_, diag := newCore(t).RunCycle(snap, 1000)
		if len(diag.Pending) != 1 || diag.Pending[0].Reason != core.ReasonInvalid || !strings.Contains(diag.Pending[0].Message(), "minMember is") {
			t.Errorf("minMember %v: pending %+v, want Invalid saying what minMember is", minMember, diag.Pending)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func newCore(t *testing.T) *core.Scheduler {
	t.Helper()
	c, err := core.New(core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newDecodeScheduler returns a scheduler whose handlers can be called
// directly, with a recorder that keeps its Events.
func newDecodeScheduler(t *testing.T) (*Scheduler, *record.FakeRecorder) {
	t.Helper()
	recorder := record.NewFakeRecorder(100)
	s, err := New(Options{}, nil, nil, nil, recorder)
	if err != nil {
		t.Fatal(err)
	}
	return s, recorder
}

func events(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// pendingMessage runs a cycle and returns the reason and message the gang
// waits with.
func pendingMessage(t *testing.T, s *Store, gang string) (core.Reason, string) {
	t.Helper()
	snap, _ := s.Snapshot()
	_, diag := newCore(t).RunCycle(snap, 1000)
	for _, st := range diag.Pending {
		if st.Gang == gang {
			return st.Reason, st.Message()
		}
	}
	return "", ""
}

// TestUnreadablePodGroupIsSkipped: a PodGroup whose minMember an int32
// cannot hold is left out of the store, its gang says why it waits, and it
// is reported once; a healthy gang is not affected; fixing the PodGroup
// brings it back.
func TestUnreadablePodGroupIsSkipped(t *testing.T) {
	s, recorder := newDecodeScheduler(t)
	unread := unreadable{}
	set, del := s.setPodGroup(context.Background(), unread), s.deletePodGroup(unread)
	s.store.SetQueue(testQueue(v1alpha1.DefaultQueue))
	s.store.SetNode(testNode("n1", 4))
	s.store.SetPod(testPod("big-0").Group("big").GPUs(1).Obj())
	s.store.SetPod(testPod("ok-0").Group("ok").GPUs(1).Obj())

	good := unstructuredOf(t, testPodGroup("big", 1), "PodGroup")
	set(good)
	set(unstructuredOf(t, testPodGroup("ok", 1), "PodGroup"))
	if s.store.podGroups["ns/big"] == nil {
		t.Fatal("a readable PodGroup did not reach the store")
	}
	bad := with(t, good, int64(1)<<31, "spec", "minMember")
	set(bad)
	if s.store.podGroups["ns/big"] != nil {
		t.Errorf("the store kept the copy read before the PodGroup became unreadable")
	}
	reason, msg := pendingMessage(t, s.store, "ns/big")
	if reason != core.ReasonInvalid || !strings.Contains(msg, "PodGroup cannot be read: spec.minMember: 2147483648 does not fit in an int32") {
		t.Errorf("the gang of the unreadable PodGroup waits with %s %q", reason, msg)
	}
	if reason, msg := pendingMessage(t, s.store, "ns/ok"); reason != "" {
		t.Errorf("the healthy gang waits: %s %q", reason, msg)
	}
	if got := counterValue(t, s.metrics.UnreadableObjects.WithLabelValues("PodGroup")); got != 1 {
		t.Errorf("phalanx_unreadable_objects_total{kind=PodGroup} = %v, want 1", got)
	}
	evs := events(recorder)
	if len(evs) != 1 || !strings.Contains(evs[0], "Warning "+ReasonUnreadable) || !strings.Contains(evs[0], "spec.minMember") {
		t.Errorf("Events %q, want one Warning %s naming spec.minMember", evs, ReasonUnreadable)
	}

	// The same unreadable object again (a relist, an update of another
	// field) is not news.
	set(with(t, bad, map[string]any{"a": "b"}, "metadata", "labels"))
	if got := counterValue(t, s.metrics.UnreadableObjects.WithLabelValues("PodGroup")); got != 1 {
		t.Errorf("after the same reason again: counter = %v, want 1", got)
	}
	if evs := events(recorder); len(evs) != 0 {
		t.Errorf("Events %q after the same reason again, want none", evs)
	}

	set(with(t, good, int64(1), "spec", "minMember"))
	if reason, msg := pendingMessage(t, s.store, "ns/big"); reason != "" {
		t.Errorf("the fixed PodGroup's gang waits: %s %q", reason, msg)
	}
	set(bad)
	del(bad)
	if reason, msg := pendingMessage(t, s.store, "ns/big"); !strings.Contains(msg, "does not exist") {
		t.Errorf("after the unreadable PodGroup was deleted, its gang waits with %s %q, want one saying it does not exist", reason, msg)
	}
}

// TestUnreadableQueue: the gangs of a Queue that cannot be read wait
// saying so, not just that the queue does not exist.
func TestUnreadableQueue(t *testing.T) {
	s, recorder := newDecodeScheduler(t)
	set := s.setQueue(context.Background())
	s.store.SetNode(testNode("n1", 4))
	pg := testPodGroup("job", 1)
	pg.Spec.Queue = "research"
	s.store.SetPodGroup(pg)
	s.store.SetPod(testPod("job-0").Group("job").GPUs(1).Obj())

	good := unstructuredOf(t, testQueue("research"), "Queue")
	bad := with(t, good, int64(1)<<31, "spec", "weight")
	set(good)
	set(bad)
	if s.store.queues["research"] != nil {
		t.Errorf("the store kept the Queue read before it became unreadable")
	}
	reason, msg := pendingMessage(t, s.store, "ns/job")
	if want := `queue "research" cannot be read: spec.weight: 2147483648 does not fit in an int32`; !strings.Contains(msg, want) {
		t.Errorf("the gang waits with %s %q, want a message containing %q", reason, msg, want)
	}
	if got := counterValue(t, s.metrics.UnreadableObjects.WithLabelValues("Queue")); got != 1 {
		t.Errorf("phalanx_unreadable_objects_total{kind=Queue} = %v, want 1", got)
	}
	if evs := events(recorder); len(evs) != 1 || !strings.Contains(evs[0], "spec.weight") {
		t.Errorf("Events %q, want one naming spec.weight", evs)
	}
	set(good)
	if reason, msg := pendingMessage(t, s.store, "ns/job"); reason != "" {
		t.Errorf("the gang of the fixed Queue waits: %s %q", reason, msg)
	}
	set(bad)
	s.deleteQueue(bad)
	if reason, _ := pendingMessage(t, s.store, "ns/job"); reason != core.ReasonQueueNotFound {
		t.Errorf("the gang of a deleted Queue waits with %s, want %s", reason, core.ReasonQueueNotFound)
	}
}

// TestUnreadableOwnAndForeign: our PodGroup and another scheduler's of the
// same name, both unreadable: the gang gives our reason first, and each
// reason lasts as long as its object.
func TestUnreadableOwnAndForeign(t *testing.T) {
	s, _ := newDecodeScheduler(t)
	unread := unreadable{}
	ctx := context.Background()
	const volcano = "scheduling.volcano.sh"
	setOwn, delOwn := s.setPodGroup(ctx, unread), s.deletePodGroup(unread)
	setForeign, delForeign := s.setForeign(ctx, volcano, unread), s.deleteForeign(volcano, unread)
	s.store.SetQueue(testQueue(v1alpha1.DefaultQueue))
	s.store.SetPod(testPod("w-0").Group("tfjob").Obj())

	own := with(t, unstructuredOf(t, testPodGroup("tfjob", 1), "PodGroup"), int64(1)<<31, "spec", "minMember")
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": volcano + "/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "tfjob", "namespace": "ns"},
		"spec":     map[string]any{"minMember": 2.5},
	}}
	setForeign(foreign)
	setOwn(own)
	if _, msg := pendingMessage(t, s.store, "ns/tfjob"); !strings.Contains(msg, "spec.minMember: 2147483648") {
		t.Errorf("both unreadable: %q, want our PodGroup's reason", msg)
	}
	setForeign(with(t, foreign, 3.5, "spec", "minMember")) // the foreign one changes: ours still comes first
	if _, msg := pendingMessage(t, s.store, "ns/tfjob"); !strings.Contains(msg, "spec.minMember: 2147483648") {
		t.Errorf("after the foreign PodGroup changed: %q, want our PodGroup's reason", msg)
	}
	delOwn(own)
	if _, msg := pendingMessage(t, s.store, "ns/tfjob"); !strings.Contains(msg, "spec.minMember: 3.5 is not an integer") {
		t.Errorf("ours deleted: %q, want the foreign PodGroup's reason", msg)
	}
	delForeign(foreign)
	if _, msg := pendingMessage(t, s.store, "ns/tfjob"); !strings.Contains(msg, "does not exist") {
		t.Errorf("both deleted: %q, want one saying the PodGroup does not exist", msg)
	}
	if got := counterValue(t, s.metrics.UnreadableObjects.WithLabelValues("PodGroup."+volcano)); got != 2 {
		t.Errorf("phalanx_unreadable_objects_total{kind=PodGroup.%s} = %v, want 2 (two reasons)", volcano, got)
	}
}

// TestCRDBounds: every integer field of the generated CRDs has a minimum
// and a maximum within its format, every string field a maxLength, an
// enum or a pattern, and the decoder reads every value the CRD admits and
// refuses, naming the field, those its Go type cannot hold.
func TestCRDBounds(t *testing.T) {
	files, err := filepath.Glob("../deploy/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in ../deploy/crds: %v", err)
	}
	bases := map[string]*unstructured.Unstructured{
		"PodGroup": unstructuredOf(t, testPodGroup("job", 2), "PodGroup"),
		"Queue":    unstructuredOf(t, testQueue("research"), "Queue"),
	}
	decode := func(u *unstructured.Unstructured) error {
		if u.GetKind() == "Queue" {
			_, err := queueFromUnstructured(u)
			return err
		}
		_, err := podGroupFromUnstructured(u)
		return err
	}
	for _, file := range files {
		crd := readYAML(t, file)
		kind, _, _ := unstructured.NestedString(crd, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
		if bases[kind] == nil || len(versions) == 0 {
			t.Fatalf("%s: unexpected kind %q or no versions", file, kind)
		}
		schema, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema")
		n := 0
		walkSchema(nil, schema, func(path []string, prop map[string]any) {
			field := kind + " " + strings.Join(path, ".")
			switch prop["type"] {
			case "string":
				_, maxLength := prop["maxLength"]
				_, enum := prop["enum"]
				_, pattern := prop["pattern"]
				_, format := prop["format"] // date-time
				if !maxLength && !enum && !pattern && !format {
					t.Errorf("%s: a string without maxLength, enum or pattern", field)
				}
			case "integer":
				n++
				lo, okLo := number(prop["minimum"])
				hi, okHi := number(prop["maximum"])
				if !okLo || !okHi {
					t.Errorf("%s: minimum %v, maximum %v; want both", field, prop["minimum"], prop["maximum"])
					return
				}
				typeMax := float64(math.MaxInt64)
				if prop["format"] == "int32" {
					typeMax = math.MaxInt32
				}
				if lo < -typeMax-1 || hi > typeMax || lo > hi {
					t.Errorf("%s: bounds [%v, %v] beyond %v", field, lo, hi, prop["format"])
				}
				for _, v := range []float64{lo, hi} {
					if err := decode(with(t, bases[kind], int64(v), path...)); err != nil {
						t.Errorf("%s = %v, admitted by the CRD, does not decode: %v", field, int64(v), err)
					}
				}
				if prop["format"] == "int32" {
					err := decode(with(t, bases[kind], int64(math.MaxInt32)+1, path...))
					if err == nil || !strings.Contains(err.Error(), strings.Join(path, ".")) {
						t.Errorf("%s = 2^31 decodes, or its error does not name the field: %v", field, err)
					}
				}
			}
		})
		if n == 0 {
			t.Errorf("%s: no integer fields found; is the walk broken?", file)
		}
	}
}

// walkSchema calls f on every property below schema, by path, except
// metadata and the conditions (metav1.Condition, whose schema is
// apimachinery's).
func walkSchema(path []string, schema map[string]any, f func(path []string, prop map[string]any)) {
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		prop, _ := props[name].(map[string]any)
		sub := append(slices.Clip(path), name)
		if len(sub) == 1 && (name == "metadata" || name == "apiVersion" || name == "kind") || name == "conditions" {
			continue
		}
		if prop["type"] == "object" {
			if _, ok := prop["additionalProperties"]; ok {
				continue // a ResourceList of quantities
			}
			walkSchema(sub, prop, f)
			continue
		}
		f(sub, prop)
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}

func readYAML(t *testing.T, file string) map[string]any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]any{}
	if err := utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&out); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}
