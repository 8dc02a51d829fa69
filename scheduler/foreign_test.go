package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

func volcanoPodGroup(name string, min int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "u-" + name},
		"spec":     map[string]any{"minMember": min},
	}}
}

// A Volcano PodGroup without pods (training-operator creates none until its
// phase leaves Pending) is claimed by the instance serving "volcano", not by
// one serving only "phalanx" (Volcano itself may run beside it), and its
// status says Inqueue in Volcano's schema.
func TestVolcanoPodGroupWithoutPods(t *testing.T) {
	pg, err := fromForeign(volcanoPodGroup("tfjob", 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		names []string
		claim bool
	}{{[]string{"phalanx"}, false}, {[]string{"volcano"}, true}, {[]string{"phalanx", "volcano"}, true}} {
		s := NewStore(tc.names)
		s.SetForeignPodGroup("scheduling.volcano.sh", pg, nil)
		_, views := s.Snapshot()
		if got := views["ns/tfjob"] != nil; got != tc.claim {
			t.Errorf("serving %v: claimed = %v, want %v", tc.names, got, tc.claim)
		}
	}
	s := NewStore([]string{"volcano"})
	s.SetForeignPodGroup("scheduling.volcano.sh", pg, nil)
	_, views := s.Snapshot()
	v := views["ns/tfjob"]
	now := metav1.NewTime(time.Unix(1000, 0))
	st := foreignStatus("scheduling.volcano.sh", podGroupStatus(v1alpha1.PodGroupStatus{}, v, nil, true, now), v, nil, now)
	if st["phase"] != "Inqueue" {
		t.Errorf("status %v, want phase Inqueue", st)
	}
	st = foreignStatus("scheduling.volcano.sh", podGroupStatus(v1alpha1.PodGroupStatus{}, v, nil, false, now), v, nil, now)
	if st["phase"] != "Pending" {
		t.Errorf("not admitted: status %v, want phase Pending", st)
	}
}

// The status of a waiting, then running, then finished gang, in Volcano's
// and scheduler-plugins' schemas; condition times are kept while a
// condition does not change.
func TestForeignStatus(t *testing.T) {
	s := NewStore([]string{"volcano"})
	pg, _ := fromForeign(volcanoPodGroup("tfjob", 2))
	s.SetForeignPodGroup("scheduling.volcano.sh", pg, nil)
	s.SetPod(testPod("w-0").Scheduler("volcano").Group("tfjob").GPUs(1).Obj())
	s.SetPod(testPod("w-1").Scheduler("volcano").Group("tfjob").GPUs(1).Obj())
	_, views := s.Snapshot()
	v := views["ns/tfjob"]
	t0, t1 := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	waiting := &verdict{reason: "Unschedulable", message: "1/2 members fit; short 1 nvidia.com/gpu"}
	ours := func(now metav1.Time) v1alpha1.PodGroupStatus {
		return podGroupStatus(v1alpha1.PodGroupStatus{}, v, waiting, true, now)
	}
	st := foreignStatus("scheduling.volcano.sh", ours(t0), v, nil, t0)
	conds, _ := st["conditions"].([]any)
	var unsched map[string]any
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == v1alpha1.PodGroupUnschedulable {
			unsched = m
		}
	}
	if st["phase"] != "Inqueue" || unsched == nil || unsched["status"] != "True" ||
		!strings.Contains(unsched["message"].(string), "short 1 nvidia.com/gpu") {
		t.Fatalf("waiting gang, Volcano status %v", st)
	}
	again := foreignStatus("scheduling.volcano.sh", ours(t1), v, st, t1)
	if statusChanged(st, again) {
		t.Errorf("nothing changed but the clock, yet the status differs:\n%v\n%v", st, again)
	}
	plugins := foreignStatus("scheduling.x-k8s.io", ours(t0), v, nil, t0)
	if plugins["phase"] != "PreScheduling" || plugins["scheduleStartTime"] != "1970-01-01T00:16:40Z" {
		t.Errorf("waiting gang, scheduler-plugins status %v", plugins)
	}
	if p2 := foreignStatus("scheduling.x-k8s.io", ours(t1), v, plugins, t1); p2["scheduleStartTime"] != plugins["scheduleStartTime"] {
		t.Errorf("scheduleStartTime moved: %v", p2)
	}

	// Both members bound and running.
	s.SetPod(testPod("w-0").Scheduler("volcano").Group("tfjob").GPUs(1).On("n1", corev1.PodRunning).Obj())
	s.SetPod(testPod("w-1").Scheduler("volcano").Group("tfjob").GPUs(1).On("n1", corev1.PodRunning).Obj())
	_, views = s.Snapshot()
	v = views["ns/tfjob"]
	run := podGroupStatus(v1alpha1.PodGroupStatus{}, v, nil, true, t1)
	if st := foreignStatus("scheduling.volcano.sh", run, v, nil, t1); st["phase"] != "Running" || st["running"] != int64(2) {
		t.Errorf("running gang, Volcano status %v", st)
	}
	if st := foreignStatus("scheduling.x-k8s.io", run, v, nil, t1); st["phase"] != "Running" || st["running"] != int64(2) || st["scheduled"] != nil {
		t.Errorf("running gang, scheduler-plugins status %v", st)
	}
	// Finished.
	s.SetPod(testPod("w-0").Scheduler("volcano").Group("tfjob").GPUs(1).On("n1", corev1.PodSucceeded).Obj())
	s.SetPod(testPod("w-1").Scheduler("volcano").Group("tfjob").GPUs(1).On("n1", corev1.PodSucceeded).Obj())
	_, views = s.Snapshot()
	v = views["ns/tfjob"]
	done := podGroupStatus(v1alpha1.PodGroupStatus{}, v, nil, true, t1)
	if st := foreignStatus("scheduling.volcano.sh", done, v, nil, t1); st["phase"] != "Completed" || st["succeeded"] != int64(2) {
		t.Errorf("finished gang, Volcano status %v", st)
	}
	if st := foreignStatus("scheduling.x-k8s.io", done, v, nil, t1); st["phase"] != "Finished" {
		t.Errorf("finished gang, scheduler-plugins status %v", st)
	}
}

func TestVolcanoQueue(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
		"metadata": map[string]any{"name": "research"},
		"spec": map[string]any{"weight": int64(3), "capability": map[string]any{"nvidia.com/gpu": "8"},
			"guarantee": map[string]any{"resource": map[string]any{"nvidia.com/gpu": "2"}}, "reclaimable": false},
		"status": map[string]any{"state": "Open"},
	}}
	q, err := fromVolcanoQueue(u)
	if err != nil {
		t.Fatal(err)
	}
	if q.Spec.Weight != 3 || q.Spec.Capability.Name("nvidia.com/gpu", "").Value() != 8 ||
		q.Spec.Guarantee.Name("nvidia.com/gpu", "").Value() != 2 || q.Spec.Reclaimable == nil || *q.Spec.Reclaimable ||
		q.Spec.State != v1alpha1.QueueOpen {
		t.Errorf("converted Queue %+v", q.Spec)
	}
	closed := u.DeepCopy()
	closed.Object["status"] = map[string]any{"state": "Closing"}
	if q, err := fromVolcanoQueue(closed); err != nil || q.Spec.State != v1alpha1.QueueClosed {
		t.Errorf("closing queue: %v %v", q, err)
	}
	bad := u.DeepCopy()
	bad.Object["spec"] = map[string]any{"weight": int64(1) << 40}
	if _, err := fromVolcanoQueue(bad); err == nil || !strings.Contains(err.Error(), "weight") {
		t.Errorf("weight 2^40: err = %v, want one naming spec.weight", err)
	}

	// A gang of a Volcano Queue is scheduled in it; a Queue of ours of the
	// same name wins.
	s := NewStore([]string{"phalanx"})
	s.volcanoQueues["research"] = q
	snap, _ := s.Snapshot()
	if len(snap.Queues) != 1 || snap.Queues[0].Name != "research" || snap.Queues[0].Weight != 3 {
		t.Errorf("queues %+v", snap.Queues)
	}
	s.SetQueue(&v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "research"}, Spec: v1alpha1.QueueSpec{Weight: 7}})
	snap, _ = s.Snapshot()
	if len(snap.Queues) != 1 || snap.Queues[0].Weight != 7 {
		t.Errorf("ours should win: %+v", snap.Queues)
	}
}

func TestCRDServes(t *testing.T) {
	crd := func(established bool, sub map[string]any) *unstructured.Unstructured {
		status := "False"
		if established {
			status = "True"
		}
		version := map[string]any{"name": "v1beta1", "served": true}
		if sub != nil {
			version["subresources"] = sub
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"spec":   map[string]any{"group": "scheduling.volcano.sh", "versions": []any{version}},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": status}}},
		}}
	}
	for _, tc := range []struct {
		name              string
		u                 *unstructured.Unstructured
		version           string
		served, statusSub bool
	}{
		{"no subresources", crd(true, nil), "v1beta1", true, false},
		{"empty subresources (Volcano's installer)", crd(true, map[string]any{}), "v1beta1", true, false},
		{"status subresource", crd(true, map[string]any{"status": map[string]any{}}), "v1beta1", true, true},
		{"not established", crd(false, nil), "v1beta1", false, false},
		{"another version", crd(true, nil), "v1alpha1", false, false},
	} {
		served, sub := crdServes(tc.u, tc.version)
		if served != tc.served || sub != tc.statusSub {
			t.Errorf("%s: served %v status %v, want %v %v", tc.name, served, sub, tc.served, tc.statusSub)
		}
	}
}

// A gang that can never fit is not admitted (phase Inqueue): in Volcano
// mode the operator would create pods that can never run.
func TestNotAdmittedBeyondTheCluster(t *testing.T) {
	s, _ := newDecodeScheduler(t)
	pg, _ := fromForeign(volcanoPodGroup("big", 5))
	pg.Spec.MinResources = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("5")}
	s.store.SetForeignPodGroup("scheduling.volcano.sh", pg, nil)
	four, _ := s.store.res.vector(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")})
	eight, _ := s.store.res.vector(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")})
	q := &core.Queue{Name: "default", Capability: core.Unbounded()}
	v := &gangView{podGroup: pg, minMember: 5}
	if ok, why := s.admitted(v, q, four, nil); ok || why != "can never fit: the cluster has 4 nvidia.com/gpu, the PodGroup's minResources ask 5 nvidia.com/gpu" {
		t.Errorf("5 GPUs of minResources on a cluster of 4: admitted %v, %q", ok, why)
	}
	if ok, why := s.admitted(v, q, eight, nil); !ok {
		t.Errorf("5 GPUs of minResources not admitted on a cluster of 8: %s", why)
	}
	if ok, _ := s.admitted(&gangView{podGroup: pg}, q, eight, &verdict{reason: string(core.ReasonExceedsCluster)}); ok {
		t.Errorf("a gang the core says can never fit was admitted")
	}
	if ok, why := s.admitted(&gangView{podGroup: pg, queue: "gone"}, nil, eight, nil); ok || why != `queue "gone" does not exist` {
		t.Errorf("a gang of a missing queue: admitted %v, %q", ok, why)
	}
}

// An admitted Volcano PodGroup without pods says, after 10 s and then once
// a minute, how long it has waited for its operator's pods: a status that
// changes, so that an operator which missed the Inqueue event hears of it
// again.
func TestAwaitingPods(t *testing.T) {
	s, _ := newDecodeScheduler(t)
	pg, _ := fromForeign(volcanoPodGroup("job", 2))
	s.store.SetForeignPodGroup("scheduling.volcano.sh", pg, nil)
	v := &gangView{podGroup: pg, minMember: 2, info: &gangInfo{name: "job"}}
	message := func(at int64) string {
		now := metav1.NewTime(time.Unix(at, 0))
		st := foreignStatus("scheduling.volcano.sh", podGroupStatus(v1alpha1.PodGroupStatus{}, v, nil, true, now), v, nil, now)
		s.awaitingPods("ns/job", v, st, now)
		for _, c := range st["conditions"].([]any) {
			if m := c.(map[string]any); m["type"] == v1alpha1.PodGroupScheduled {
				return m["message"].(string)
			}
		}
		return ""
	}
	first := message(1000)
	if got := message(1005); got != first {
		t.Errorf("after 5 s: %q, want %q unchanged", got, first)
	}
	ten := message(1012)
	if !strings.Contains(ten, "no pod of the gang exists after 10s") || message(1050) != ten {
		t.Errorf("after 12 s and 50 s: %q", ten)
	}
	if got := message(1075); !strings.Contains(got, "after 1m0s") || !strings.Contains(got, "Inqueue) at 00:16:40") {
		t.Errorf("after 75 s: %q", got)
	}
	v.nPending = 2 // the operator created them
	if got := message(1080); strings.Contains(got, "no pod") {
		t.Errorf("with pods: %q", got)
	}
	if _, ok := s.inqueueSince["ns/job"]; ok {
		t.Errorf("still counting once the pods exist")
	}
}

// A PodGroup of scheduler-plugins' schema whose status has no phase gets
// phase Pending, once per resourceVersion read, as that API's controller
// gives it; not while another scheduler's pods name it, nor when the gang
// is served here (its whole status is written then), nor in Volcano's
// schema, nor once it has a phase.
func TestMarkPending(t *testing.T) {
	const group = "scheduling.x-k8s.io"
	gvr, _ := foreignResource(group)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "job", "namespace": "ns", "uid": "u-job", "resourceVersion": "7"},
		"spec":     map[string]any{"minMember": int64(3)},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "PodGroupList"}, obj.DeepCopy())
	s, _ := newDecodeScheduler(t)
	s.opts.Dynamic = dyn
	s.foreignStatusSub[group] = true
	key := writeKey{kindForeignPhase, group + "/ns/job"}
	set := func(u *unstructured.Unstructured) {
		t.Helper()
		pg, err := fromForeign(u)
		if err != nil {
			t.Fatal(err)
		}
		status, _, _ := unstructured.NestedMap(u.Object, "status")
		s.store.SetForeignPodGroup(group, pg, status)
	}
	queued := func(views map[string]*gangView) (writeJob, bool) {
		s.markPending(views)
		return s.writer.take(key)
	}

	set(obj)
	job, ok := queued(nil)
	if !ok {
		t.Fatal("no phase written for a PodGroup without one")
	}
	if err := job.do(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(gvr).Namespace("ns").Get(context.Background(), "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Pending" {
		t.Errorf("phase %q after the write, want Pending", phase)
	}
	if _, ok := queued(nil); ok {
		t.Error("written again under the same resourceVersion")
	}

	// Read again without a phase (the write lost to another): written again.
	obj.SetResourceVersion("8")
	set(obj)
	if _, ok := queued(map[string]*gangView{"ns/job": {}}); ok {
		t.Error("written while the gang is served here")
	}
	s.store.others["ns/job"] = 1
	if _, ok := queued(nil); ok {
		t.Error("written while another scheduler's pods name it")
	}
	delete(s.store.others, "ns/job")
	if _, ok := queued(nil); !ok {
		t.Error("not written under a new resourceVersion")
	}

	// It has a phase now: nothing more, and nothing kept.
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(unstructured.SetNestedField(obj.Object, "Pending", "status", "phase"))
	obj.SetResourceVersion("9")
	set(obj)
	if _, ok := queued(nil); ok {
		t.Error("written with a phase")
	}
	if len(s.phaseTried) != 0 || len(s.store.unphased) != 0 {
		t.Errorf("kept: tried %v, unphased %v", s.phaseTried, s.store.unphased)
	}

	// Volcano's schema is not marked: its operators wait for Inqueue, and
	// Pending tells them nothing new.
	vc, _ := fromForeign(volcanoPodGroup("vjob", 2))
	s.store.SetForeignPodGroup("scheduling.volcano.sh", vc, nil)
	if len(s.store.unphased) != 0 {
		t.Errorf("a Volcano PodGroup is marked: %v", s.store.unphased)
	}
}

// TestMarkPendingWaits: a PodGroup just created gets its phase only once it
// is pendingDelay old, after the operator's own first updates of it.
func TestMarkPendingWaits(t *testing.T) {
	const group = "scheduling.x-k8s.io"
	gvr, _ := foreignResource(group)
	created := time.Unix(1000, 0)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "job", "namespace": "ns", "uid": "u-job", "resourceVersion": "7",
			"creationTimestamp": created.UTC().Format(time.RFC3339)},
		"spec": map[string]any{"minMember": int64(3)},
	}}
	s, _ := newDecodeScheduler(t)
	s.opts.Dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "PodGroupList"}, obj.DeepCopy())
	pg, err := fromForeign(obj)
	if err != nil {
		t.Fatal(err)
	}
	s.store.SetForeignPodGroup(group, pg, nil)
	key := writeKey{kindForeignPhase, group + "/ns/job"}
	for _, tt := range []struct {
		age   time.Duration
		write bool
	}{{0, false}, {2 * time.Second, false}, {pendingDelay, true}} {
		s.opts.Now = func() time.Time { return created.Add(tt.age) }
		s.markPending(nil)
		if _, ok := s.writer.take(key); ok != tt.write {
			t.Errorf("a PodGroup %v old: phase written %v, want %v", tt.age, ok, tt.write)
		}
	}
}

// An MPIJob whose launcher comes once the workers are Ready: its gang is the
// workers until the launcher exists, then the workers and the launcher,
// whether mpi-operator wrote the PodGroup (--gang-scheduling: minMember =
// workers + 1) or Phalanx derived it (minMember = workers). Any other
// owner, policy or minMember is read as written.
func TestMPIJobLauncherAfterWorkers(t *testing.T) {
	mpi := ownerKindOf(t, kindMPIJob, "v2beta1")
	const waits = `{"launcherCreationPolicy":"WaitForWorkersReady","mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":3}}}`
	const atStartup = `{"mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":3}}}`
	yes := true
	for _, tc := range []struct {
		name       string
		derived    bool   // Phalanx's own PodGroup, not Volcano's
		spec       string // the MPIJob's; "" for none read
		apiVersion string
		min        int32
		launcher   bool // the launcher pod exists
		want       int
	}{
		{"waits", false, waits, "kubeflow.org/v2beta1", 4, false, 3},
		{"launcher created", false, waits, "kubeflow.org/v2beta1", 4, true, 4},
		{"derived", true, waits, "kubeflow.org/v2beta1", 3, false, 3},
		{"derived, launcher created", true, waits, "kubeflow.org/v2beta1", 3, true, 4},
		{"explicit minimum", false, waits, "kubeflow.org/v2beta1", 2, true, 2},
		{"at startup", false, atStartup, "kubeflow.org/v2beta1", 4, false, 4},
		{"not read yet", false, "", "kubeflow.org/v2beta1", 4, false, 4},
		{"training-operator", false, waits, "kubeflow.org/v1", 4, false, 4},
	} {
		var pg *v1alpha1.PodGroup
		ref := metav1.OwnerReference{APIVersion: tc.apiVersion, Kind: kindMPIJob, Name: "job1", UID: "uid-mpijob-job1"}
		if tc.derived {
			pg = testPodGroup("job1", tc.min)
			pg.OwnerReferences = []metav1.OwnerReference{ref}
		} else {
			ref.Controller = &yes
			u := volcanoPodGroup("job1", int64(tc.min))
			u.SetOwnerReferences([]metav1.OwnerReference{ref})
			var err error
			if pg, err = fromForeign(u); err != nil {
				t.Fatal(err)
			}
		}
		s := NewStore([]string{"volcano", "phalanx"})
		if tc.spec != "" {
			s.SetOwner(mpi.gvr, mpi.kind, ownerObj(t, mpi, "job1", tc.spec))
		}
		if tc.derived {
			s.SetPodGroup(pg)
		} else {
			s.SetForeignPodGroup("scheduling.volcano.sh", pg, nil)
		}
		pods := []string{"job1-worker-0", "job1-worker-1", "job1-worker-2"}
		if tc.launcher {
			pods = append(pods, "job1-launcher-x")
		}
		for _, name := range pods {
			p := testPod(name).GPUs(1).Obj()
			p.Spec.SchedulerName = "volcano"
			p.Annotations = map[string]string{AnnotationGroupName: "job1"}
			role := "worker"
			if strings.Contains(name, "launcher") {
				role = "launcher"
			}
			p.Labels = map[string]string{labelKubeflowOperator: "mpi-operator", labelKubeflowJobRole: role, labelKubeflowJobName: "job1"}
			s.SetPod(p)
		}
		_, views := s.Snapshot()
		v := views["ns/job1"]
		if v == nil {
			t.Fatalf("%s: no gang", tc.name)
		}
		if v.minMember != tc.want {
			t.Errorf("%s: PodGroup minMember %d: the gang's is %d, want %d", tc.name, tc.min, v.minMember, tc.want)
		}
	}
}

// Every PodGroup API read has a status schema and a scheduler name.
func TestForeignAPIsComplete(t *testing.T) {
	for _, gvr := range ForeignPodGroups {
		if api, ok := foreignAPIs[gvr.Group]; !ok || api.schedulerName == "" {
			t.Errorf("%s: no entry in foreignAPIs", gvr)
		}
	}
}
