package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Builders for adapter tests.

func testNode(name string, gpus int64) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI),
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: alloc, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

type podBuilder struct{ p *corev1.Pod }

func testPod(name string) *podBuilder {
	return &podBuilder{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), CreationTimestamp: metav1.Unix(100, 0)},
		Spec:       corev1.PodSpec{SchedulerName: "phalanx", Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}}
}
func (b *podBuilder) GPUs(n int64) *podBuilder {
	b.p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}
	return b
}
func (b *podBuilder) CPU(q string) *podBuilder {
	b.p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	return b
}
func (b *podBuilder) Group(pg string) *podBuilder {
	b.p.Annotations = map[string]string{AnnotationGroupName: pg}
	return b
}
func (b *podBuilder) ACK(name, min string) *podBuilder {
	b.p.Labels = map[string]string{LabelACKName: name, LabelACKMinAvailable: min}
	return b
}
func (b *podBuilder) On(node string, phase corev1.PodPhase) *podBuilder {
	b.p.Spec.NodeName, b.p.Status.Phase = node, phase
	return b
}
func (b *podBuilder) Scheduler(n string) *podBuilder { b.p.Spec.SchedulerName = n; return b }
func (b *podBuilder) Obj() *corev1.Pod               { return b.p }

func testPodGroup(name string, min int32) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1, CreationTimestamp: metav1.Unix(50, 0)},
		Spec: v1alpha1.PodGroupSpec{MinMember: min}}
}

func gangByID(s *core.Snapshot, id string) *core.Gang {
	for _, g := range s.Gangs {
		if g.ID == id {
			return g
		}
	}
	return nil
}

func TestStoreSnapshot(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetNode(testNode("n1", 4))
	s.SetNode(testNode("n2", 4))
	s.SetPodGroup(testPodGroup("job", 3))
	// Two members of job are bound already, one waits; a pod of another
	// scheduler uses a GPU of n2; an ACK gang waits; a finished pod holds
	// nothing.
	s.SetPod(testPod("job-0").Group("job").GPUs(1).On("n1", corev1.PodRunning).Obj())
	s.SetPod(testPod("job-1").Group("job").GPUs(1).On("n1", corev1.PodRunning).Obj())
	s.SetPod(testPod("job-2").Group("job").GPUs(1).Obj())
	s.SetPod(testPod("other").Scheduler("default-scheduler").GPUs(1).On("n2", corev1.PodRunning).Obj())
	s.SetPod(testPod("ack-0").ACK("tf", "2").GPUs(2).Obj())
	s.SetPod(testPod("ack-1").ACK("tf", "2").GPUs(2).Obj())
	s.SetPod(testPod("done").GPUs(4).On("n2", corev1.PodSucceeded).Obj())

	snap, views := s.Snapshot()
	gpu := snap.Resources.Index("nvidia.com/gpu")
	if gpu < 0 {
		t.Fatalf("nvidia.com/gpu not registered: %v", snap.Resources)
	}
	used := map[string]int64{}
	for _, n := range snap.Nodes {
		used[n.Name] = n.Used[gpu]
	}
	if diff := cmp.Diff(map[string]int64{"n1": 2, "n2": 1}, used); diff != "" {
		t.Errorf("GPUs used (-want +got):\n%s", diff)
	}
	job := gangByID(snap, "ns/job")
	if job == nil || job.MinMember != 3 || job.Bound != 2 || len(job.Pending) != 1 || job.Arrival != 50 {
		t.Errorf("gang ns/job = %+v, want min 3, bound 2, 1 pending, arrival 50", job)
	}
	ack := gangByID(snap, "ns/tf#labels")
	if ack == nil || ack.MinMember != 2 || len(ack.Pending) != 2 || ack.Pending[0].Request[gpu] != 2 {
		t.Errorf("ACK gang = %+v, want min 2 with 2 pending of 2 GPUs", ack)
	}
	if gangByID(snap, "ns/other#pod") != nil {
		t.Errorf("a pod of another scheduler became a gang")
	}
	if v := views["ns/job"]; v.nRunning != 2 || v.nPending != 1 {
		t.Errorf("job counts running %d pending %d, want 2 and 1", v.nRunning, v.nPending)
	}

	// Assume holds the node's resources until Forget.
	if !s.Assume("uid-job-2", "n2") {
		t.Fatal("Assume refused a pending pod")
	}
	snap, _ = s.Snapshot()
	if got := snap.Nodes[1].Used[gpu]; got != 2 {
		t.Errorf("after Assume, n2 uses %d GPUs, want 2", got)
	}
	if gangByID(snap, "ns/job") != nil {
		t.Errorf("an assumed member is still pending")
	}
	s.Forget("uid-job-2")
	snap, _ = s.Snapshot()
	if got := snap.Nodes[1].Used[gpu]; got != 1 {
		t.Errorf("after Forget, n2 uses %d GPUs, want 1", got)
	}
	// Deleting a bound pod frees its node.
	s.DeletePod("uid-job-0")
	snap, _ = s.Snapshot()
	if got := snap.Nodes[0].Used[gpu]; got != 1 {
		t.Errorf("after deleting job-0, n1 uses %d GPUs, want 1", got)
	}
}

func TestStoreBadGangs(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetNode(testNode("n1", 4))
	s.SetPod(testPod("orphan").Group("missing").GPUs(1).Obj())
	s.SetPod(testPod("bad-min").ACK("x", "abc").Obj())
	s.SetPod(testPod("mix-0").ACK("mix", "2").Obj())
	s.SetPod(testPod("mix-1").ACK("mix", "3").Obj())
	snap, views := s.Snapshot()
	want := map[string]string{
		"ns/missing":    "PodGroup ns/missing does not exist",
		"ns/x#labels":   `label pod-group.scheduling.sigs.k8s.io/min-available="abc" is not an integer`,
		"ns/mix#labels": "members disagree on pod-group.scheduling.sigs.k8s.io/min-available",
	}
	for id, text := range want {
		g := gangByID(snap, id)
		if g == nil || !strings.Contains(g.Invalid, text) {
			t.Errorf("gang %s: invalid = %+v, want it to mention %q", id, g, text)
		}
	}
	if !views["ns/missing"].missingPG {
		t.Errorf("missing PodGroup not flagged")
	}
}

func TestPodGroupStatus(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	pg := testPodGroup("job", 3)
	tests := []struct {
		name      string
		view      gangView
		last      *verdict
		admitted  bool
		phase     v1alpha1.PodGroupPhase
		condition string // type of the True condition
	}{
		{"waiting, queue admits", gangView{minMember: 3, nPending: 3}, &verdict{reason: "Unschedulable", message: "2/3 members fit; short 1 nvidia.com/gpu"}, true,
			v1alpha1.PodGroupInqueue, v1alpha1.PodGroupUnschedulable},
		{"waiting, queue full", gangView{minMember: 3, nPending: 3}, &verdict{reason: "QueueAtCapability", message: "queue q is at its capability"}, false,
			v1alpha1.PodGroupPending, v1alpha1.PodGroupUnschedulable},
		{"running", gangView{minMember: 3, bound: 3, nRunning: 3}, nil, true, v1alpha1.PodGroupRunning, v1alpha1.PodGroupScheduled},
		{"succeeded", gangView{minMember: 3, bound: 3, nSucceeded: 3}, nil, true, v1alpha1.PodGroupSucceeded, v1alpha1.PodGroupScheduled},
		{"failed", gangView{minMember: 3, bound: 1, nSucceeded: 1, nFailed: 2}, nil, true, v1alpha1.PodGroupFailed, ""},
		// The operator deleted the other members once the job ended (mpi-operator's cleanPodPolicy Running).
		{"succeeded, others deleted", gangView{minMember: 4, bound: 1, nSucceeded: 1}, nil, true, v1alpha1.PodGroupSucceeded, ""},
		{"partly running", gangView{minMember: 3, bound: 1, nRunning: 1, nPending: 2}, nil, true, v1alpha1.PodGroupUnknown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.view
			v.podGroup = pg
			st := podGroupStatus(pg.Status, &v, tt.last, tt.admitted, now)
			if st.Phase != tt.phase {
				t.Errorf("phase %s, want %s", st.Phase, tt.phase)
			}
			for _, c := range st.Conditions {
				if c.Status == metav1.ConditionTrue && c.Type != tt.condition {
					t.Errorf("condition %s is True, want only %q", c.Type, tt.condition)
				}
			}
			if tt.condition != "" && !meta.IsStatusConditionTrue(st.Conditions, tt.condition) {
				t.Errorf("condition %s not True: %+v", tt.condition, st.Conditions)
			}
			if tt.last != nil {
				c := meta.FindStatusCondition(st.Conditions, v1alpha1.PodGroupUnschedulable)
				if c == nil || c.Message != tt.last.message || c.Reason != tt.last.reason {
					t.Errorf("Unschedulable condition %+v, want reason %s message %q", c, tt.last.reason, tt.last.message)
				}
			}
			// Computing again from the written status changes nothing, so
			// nothing is written twice.
			again := podGroupStatus(st, &v, tt.last, tt.admitted, metav1.NewTime(now.Add(time.Minute)))
			if statusChanged(st, again) {
				t.Errorf("a second computation changed the status:\n%s", cmp.Diff(st, again))
			}
		})
	}
}

func TestVerdictTimeout(t *testing.T) {
	pg := testPodGroup("job", 3) // created at 50
	limit := int32(60)
	pg.Spec.ScheduleTimeoutSeconds = &limit
	v := &gangView{podGroup: pg}
	st := core.GangStatus{Reason: core.ReasonQueueClosed}
	if got := verdictOf(v, st, 100, nil); got.reason != string(core.ReasonQueueClosed) {
		t.Errorf("before the timeout: reason %s", got.reason)
	}
	if got := verdictOf(v, st, 111, nil); got.reason != ReasonTimeout || !strings.Contains(got.message, "scheduleTimeoutSeconds (60 s)") {
		t.Errorf("after the timeout: %+v", got)
	}
}

func TestVerdictSaysPartialGangsHoldNodes(t *testing.T) {
	v := &gangView{minMember: 4, bound: 1}
	got := verdictOf(v, core.GangStatus{Reason: core.ReasonQueueClosed}, 0, nil)
	if !strings.HasPrefix(got.message, "1/4 members hold nodes while the rest waits") {
		t.Errorf("message %q does not say the gang is partly bound", got.message)
	}
}

// A pod may reach the store before its node (informers race at start, and a
// node may be deleted and added again): its usage must count once the node
// appears, and go with the node when it leaves.
func TestPodBeforeNode(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetPod(testPod("early").GPUs(1).On("n1", corev1.PodRunning).Obj())
	s.SetNode(testNode("n1", 1))
	snap, _ := s.Snapshot()
	gpu := snap.Resources.Index("nvidia.com/gpu")
	if got := snap.Nodes[0].Used[gpu]; got != 1 {
		t.Fatalf("n1 uses %d GPUs after its pod arrived first, want 1", got)
	}
	s.DeleteNode("n1")
	s.SetNode(testNode("n1", 1))
	snap, _ = s.Snapshot()
	if got := snap.Nodes[0].Used[gpu]; got != 1 {
		t.Errorf("n1 uses %d GPUs after it left and came back, want 1", got)
	}
	s.DeletePod("uid-early")
	snap, _ = s.Snapshot()
	if got := snap.Nodes[0].Used[gpu]; got != 0 {
		t.Errorf("n1 uses %d GPUs after its pod was deleted, want 0", got)
	}
}

func TestForeignPodGroups(t *testing.T) {
	kubeBatch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.incubator.k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "tfjob", "namespace": "ns"},
		"spec":     map[string]any{"minMember": int64(3), "queue": "research", "minResources": map[string]any{"nvidia.com/gpu": "2"}},
	}}
	pg, err := fromForeign(kubeBatch)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Spec.MinMember != 3 || pg.Spec.Queue != "research" || !isForeign(pg) || pg.Spec.MinResources.Name("nvidia.com/gpu", resource.DecimalSI).Value() != 2 {
		t.Errorf("converted PodGroup = %+v", pg)
	}
	bad := kubeBatch.DeepCopy()
	bad.Object["spec"] = map[string]any{"minMember": "three"}
	if _, err := fromForeign(bad); err == nil || !strings.Contains(err.Error(), "ns/tfjob") {
		t.Errorf("unreadable spec: err = %v, want one naming ns/tfjob", err)
	}

	// A gang finds a foreign PodGroup by name; ours wins over it.
	s := NewStore([]string{"phalanx"})
	s.SetPod(testPod("w-0").Group("tfjob").Obj())
	s.SetForeignPodGroup("scheduling.incubator.k8s.io", pg, nil)
	snap, views := s.Snapshot()
	if g := gangByID(snap, "ns/tfjob"); g == nil || g.MinMember != 3 || g.Queue != "research" || g.Invalid != "" {
		t.Errorf("gang from a kube-batch PodGroup = %+v", g)
	}
	if !isForeign(views["ns/tfjob"].podGroup) {
		t.Errorf("the view does not know the PodGroup is foreign")
	}
	s.SetPodGroup(testPodGroup("tfjob", 1))
	snap, _ = s.Snapshot()
	if g := gangByID(snap, "ns/tfjob"); g == nil || g.MinMember != 1 {
		t.Errorf("our own PodGroup should win: %+v", g)
	}
	s.SetUnreadablePodGroup("ns/other", "spec.minMember: cannot read")
	s.SetPod(testPod("o-0").Group("other").Obj())
	snap, _ = s.Snapshot()
	if g := gangByID(snap, "ns/other"); g == nil || !strings.Contains(g.Invalid, "cannot be read") {
		t.Errorf("unreadable foreign PodGroup: %+v", g)
	}
}

// A PodGroup whose pods do not exist yet has a view, so that its status
// (phase Inqueue) is written: some operators create pods only after that.
func TestPodGroupWithoutPods(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	pg := testPodGroup("early", 4)
	pg.Spec.Queue = "research"
	s.SetPodGroup(pg)
	snap, views := s.Snapshot()
	v := views["ns/early"]
	if v == nil || v.podGroup != pg || v.minMember != 4 || v.queue != "research" {
		t.Fatalf("view of a PodGroup without pods = %+v", v)
	}
	if gangByID(snap, "ns/early") != nil {
		t.Errorf("a gang without pods was handed to the core")
	}
	st := podGroupStatus(pg.Status, v, nil, true, metav1.NewTime(time.Unix(100, 0)))
	if st.Phase != v1alpha1.PodGroupInqueue {
		t.Errorf("phase %s, want Inqueue", st.Phase)
	}
}

// An operator deletes a finished job's PodGroup while its pods may still
// run. Its bound members stay a gang of the PodGroup's minMember, queue and
// priority, never loose pods of minMember 1 whose extras any gang may
// preempt; once they end, the gang and what was kept of it go.
func TestDeletedPodGroupKeepsMinMember(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.preempting = true
	s.SetNode(testNode("n1", 2))
	pg := testPodGroup("a", 2)
	pg.Spec.Queue = "research"
	s.SetPodGroup(pg)
	s.SetPod(testPod("a-0").Group("a").GPUs(1).On("n1", corev1.PodRunning).Obj())
	s.SetPod(testPod("a-1").Group("a").GPUs(1).On("n1", corev1.PodRunning).Obj())
	s.DeletePodGroup("ns", "a")
	snap, views := s.Snapshot()
	if v := views["ns/a"]; v == nil || v.minMember != 2 || v.queue != "research" {
		t.Fatalf("view after the PodGroup was deleted: %+v", v)
	}
	if len(snap.Running) != 1 || snap.Running[0].MinMember != 2 || snap.Running[0].Queue != "research" {
		t.Errorf("running gangs %+v; want a, minMember 2, in research", snap.Running)
	}
	// A replacement waits for the PodGroup, saying why.
	s.SetPod(testPod("a-2").Group("a").GPUs(1).Obj())
	snap, _ = s.Snapshot()
	if g := gangByID(snap, "ns/a"); g == nil || !strings.Contains(g.Invalid, "was deleted") {
		t.Errorf("a member of a deleted PodGroup: %+v", g)
	}
	s.DeletePod("uid-a-2")
	// The members end: nothing is kept; a new gang of the name starts afresh.
	s.DeletePod("uid-a-0")
	s.DeletePod("uid-a-1")
	if len(s.gone) != 0 {
		t.Errorf("kept %v after the members ended", s.gone)
	}
	s.SetPod(testPod("a-9").Group("a").GPUs(1).Obj())
	snap, _ = s.Snapshot()
	if g := gangByID(snap, "ns/a"); g == nil || !strings.Contains(g.Invalid, "does not exist") {
		t.Errorf("a new pod of the deleted PodGroup's name: %+v", g)
	}
}

// TestPodsWithNodeNameUseRoom: a pod created with spec.nodeName set is
// bound already, whichever scheduler it names: it is never placed, and what
// it requests counts against its node, so a waiting member that would fit
// only without it waits.
func TestPodsWithNodeNameUseRoom(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue(v1alpha1.DefaultQueue))
	s.SetNode(testNode("n1", 4))
	s.SetNode(testNode("n2", 4))
	// Neither has started: the kubelet has not seen them yet.
	s.SetPod(testPod("ours-pinned").GPUs(3).On("n1", corev1.PodPending).Obj())
	s.SetPod(testPod("theirs-pinned").Scheduler("default-scheduler").GPUs(2).On("n2", corev1.PodPending).Obj())
	s.SetPod(testPod("waiting").GPUs(3).Obj())

	snap, _ := s.Snapshot()
	gpu := snap.Resources.Index("nvidia.com/gpu")
	used := map[string]int64{}
	for _, n := range snap.Nodes {
		used[n.Name] = n.Used[gpu]
	}
	if diff := cmp.Diff(map[string]int64{"n1": 3, "n2": 2}, used); diff != "" {
		t.Errorf("GPUs used (-want +got):\n%s", diff)
	}
	for _, g := range snap.Gangs {
		if g.ID != "ns/waiting#pod" {
			t.Errorf("gang %s is pending, want only ns/waiting#pod", g.ID)
		}
	}
	plan, diag := newCore(t).RunCycle(snap, 1000)
	if len(plan.Binds) != 0 || len(diag.Pending) != 1 {
		t.Errorf("binds %v, pending %v: want waiting to wait, 3 GPUs free on no node", plan.Binds, diag.Pending)
	}
	// The pinned pod of ours leaves: waiting fits on n1.
	s.DeletePod("uid-ours-pinned")
	snap, _ = s.Snapshot()
	plan, _ = newCore(t).RunCycle(snap, 1001)
	if len(plan.Binds) != 1 || plan.Binds[0].Node != "n1" {
		t.Errorf("binds %v, want waiting on n1", plan.Binds)
	}
}
