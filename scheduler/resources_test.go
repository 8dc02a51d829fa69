package scheduler

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rl builds a ResourceList from name, quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// Containers replaces the pod's containers with one per ResourceList of
// requests.
func (b *podBuilder) Containers(requests ...corev1.ResourceList) *podBuilder {
	b.p.Spec.Containers = nil
	for _, r := range requests {
		b.p.Spec.Containers = append(b.p.Spec.Containers, corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: r}})
	}
	return b
}

func (b *podBuilder) Init(requests corev1.ResourceList) *podBuilder {
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Requests: requests}})
	return b
}

func (b *podBuilder) Overhead(o corev1.ResourceList) *podBuilder { b.p.Spec.Overhead = o; return b }

// TestPodRequestBounds: a pod's requests, summed as kube-scheduler sums
// them, become amounts within [0, maxAmount]; one outside is a problem that
// names the resource, the value and the bound, however large the value. The
// value is in canonical form, as the API server returns it: 1e16 reads
// 10e15.
func TestPodRequestBounds(t *testing.T) {
	const tooMany = "more than Phalanx can count"
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		cpu     int64
		memory  int64
		gpus    int64
		problem string // "" for none
	}{
		{name: "ordinary", pod: testPod("p").Containers(rl("cpu", "1500m", "memory", "2Gi", "nvidia.com/gpu", "8")).Obj(),
			cpu: 1500, memory: 2 << 30, gpus: 8},
		{name: "cpu 1e16", pod: testPod("p").Containers(rl("cpu", "1e16")).Obj(),
			cpu: maxAmount, problem: "requests cpu=10e15, " + tooMany + " (at most 1e12)"},
		{name: "memory 1e19", pod: testPod("p").Containers(rl("memory", "1e19")).Obj(),
			memory: maxAmount, problem: "requests memory=10e18, " + tooMany + " (at most 1e15)"},
		{name: "gpu 1e19", pod: testPod("p").Containers(rl("nvidia.com/gpu", "1e19")).Obj(),
			gpus: maxAmount, problem: "requests nvidia.com/gpu=10e18, " + tooMany + " (at most 1e15)"},
		{name: "cpu MaxInt64", pod: testPod("p").Containers(rl("cpu", "9223372036854775807")).Obj(),
			cpu: maxAmount, problem: "requests cpu=9223372036854775807, " + tooMany},
		{name: "memory 16Ei, which the parser caps at 2^63-1", pod: testPod("p").Containers(rl("memory", "16Ei")).Obj(),
			memory: maxAmount, problem: "requests memory=9223372036854775807, " + tooMany},
		{name: "cpu at the bound", pod: testPod("p").Containers(rl("cpu", "1e12")).Obj(), cpu: maxAmount},
		{name: "cpu just past the bound", pod: testPod("p").Containers(rl("cpu", "1000000000000001m")).Obj(),
			cpu: maxAmount, problem: "requests cpu=1000000000000001m, " + tooMany},
		{name: "negative cpu", pod: testPod("p").Containers(rl("cpu", "-1", "memory", "1Gi")).Obj(),
			memory: 1 << 30, problem: "requests cpu=-1, a negative amount"},
		{name: "negative gpu", pod: testPod("p").Containers(rl("nvidia.com/gpu", "-2")).Obj(),
			problem: "requests nvidia.com/gpu=-2, a negative amount"},
		{name: "two containers, each within the bound, past it together",
			pod: testPod("p").Containers(rl("cpu", "6e11"), rl("cpu", "6e11")).Obj(),
			cpu: maxAmount, problem: "requests cpu=1200e9, " + tooMany},
		{name: "two containers whose sum overflows int64",
			pod:    testPod("p").Containers(rl("memory", "9e18"), rl("memory", "9e18")).Obj(),
			memory: maxAmount, problem: "requests memory=18e18, " + tooMany},
		{name: "init container", pod: testPod("p").Containers(rl("cpu", "1")).Init(rl("cpu", "1e16")).Obj(),
			cpu: maxAmount, problem: "requests cpu=10e15, " + tooMany},
		{name: "overhead", pod: testPod("p").Containers(rl("memory", "1Gi")).Overhead(rl("memory", "1e19")).Obj(),
			memory: maxAmount, problem: "requests memory=" + func() string {
				q := resource.MustParse("1Gi")
				q.Add(resource.MustParse("1e19"))
				return q.String()
			}() + ", " + tooMany},
		{name: "a limit standing in for a request",
			pod: func() *corev1.Pod {
				p := testPod("p").Obj()
				p.Spec.Containers[0].Resources.Limits = rl("nvidia.com/gpu", "1e19")
				return p
			}(),
			gpus: maxAmount, problem: "requests nvidia.com/gpu=10e18, " + tooMany},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry()
			got, problem := r.vector(podRequests(tc.pod))
			if !strings.Contains(problem, tc.problem) || (tc.problem == "") != (problem == "") {
				t.Errorf("problem %q, want one containing %q", problem, tc.problem)
			}
			want := core.Vector{core.CPU: tc.cpu, core.Memory: tc.memory}
			if tc.gpus != 0 {
				want[r.names.Index("nvidia.com/gpu")] = tc.gpus
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("vector (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCapacityBounds: a node's allocatable and a queue's guarantee beyond
// the bound count as the bound, a queue's capability beyond it as
// unlimited; negative amounts count as 0. Nothing wraps around.
func TestCapacityBounds(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	n := testNode("huge", 0)
	n.Status.Allocatable = rl("cpu", "1e16", "memory", "-1", "pods", "9223372036854775807", "nvidia.com/gpu", "1e19")
	s.SetNode(n)
	q := testQueue("research")
	q.Spec.Capability = rl("cpu", "1e16", "memory", "-1Gi", "nvidia.com/gpu", "4")
	q.Spec.Guarantee = rl("cpu", "1e16", "memory", "-5", "nvidia.com/gpu", "1e19")
	s.SetQueue(q)
	snap, _ := s.Snapshot()
	gpu := snap.Resources.Index("nvidia.com/gpu")
	if gpu < 0 {
		t.Fatalf("nvidia.com/gpu not registered: %v", snap.Resources)
	}
	alloc := core.Vector{core.CPU: maxAmount, core.Pods: maxAmount}
	alloc[gpu] = maxAmount
	if diff := cmp.Diff(alloc, snap.Nodes[0].Allocatable); diff != "" {
		t.Errorf("node allocatable (-want +got):\n%s", diff)
	}
	capability := core.Unbounded()
	capability[core.Memory], capability[gpu] = 0, 4
	guarantee := core.Vector{core.CPU: maxAmount}
	guarantee[gpu] = maxAmount
	if diff := cmp.Diff(capability, snap.Queues[0].Capability); diff != "" {
		t.Errorf("queue capability (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(guarantee, snap.Queues[0].Guarantee); diff != "" {
		t.Errorf("queue guarantee (-want +got):\n%s", diff)
	}
}

// bigNode is a ready node of 64 CPUs, 512Gi and 8 GPUs.
func bigNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: rl("cpu", "64", "memory", "512Gi", "pods", "110", "nvidia.com/gpu", "8"),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// TestOverflowingRequestsWait is issue 9's report: pods requesting more
// than any int64 can hold were bound onto a 64-CPU, 8-GPU node. Each must
// wait, invalid, with a message naming the resource and the value, while an
// ordinary pod is bound.
func TestOverflowingRequestsWait(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue(v1alpha1.DefaultQueue))
	s.SetNode(bigNode("n1"))
	want := map[string]string{
		"cpu-1e16":    "pod cpu-1e16: requests cpu=10e15, more than Phalanx can count (at most 1e12)",
		"memory-1e19": "pod memory-1e19: requests memory=10e18, more than Phalanx can count (at most 1e15)",
		"gpu-1e19":    "pod gpu-1e19: requests nvidia.com/gpu=10e18, more than Phalanx can count (at most 1e15)",
		"cpu-maxint":  "pod cpu-maxint: requests cpu=9223372036854775807, more than Phalanx can count (at most 1e12)",
		"cpu-minus":   "pod cpu-minus: requests cpu=-1, a negative amount",
	}
	s.SetPod(testPod("cpu-1e16").Containers(rl("cpu", "1e16")).Obj())
	s.SetPod(testPod("memory-1e19").Containers(rl("memory", "1e19")).Obj())
	s.SetPod(testPod("gpu-1e19").Containers(rl("nvidia.com/gpu", "1e19")).Obj())
	s.SetPod(testPod("cpu-maxint").Containers(rl("cpu", "9223372036854775807")).Obj())
	s.SetPod(testPod("cpu-minus").Containers(rl("cpu", "-1")).Obj())
	s.SetPod(testPod("fine").Containers(rl("cpu", "4", "nvidia.com/gpu", "2")).Obj())

	snap, _ := s.Snapshot()
	sched, err := core.New(core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	plan, diag := sched.RunCycle(snap, 1000)
	got := map[string]string{}
	for _, st := range diag.Pending {
		if st.Reason != core.ReasonInvalid {
			t.Errorf("gang %s waits with reason %s, want %s: %s", st.Gang, st.Reason, core.ReasonInvalid, st.Message())
		}
		got[strings.TrimSuffix(strings.TrimPrefix(st.Gang, "ns/"), "#pod")] = st.Message()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pending gangs' messages (-want +got):\n%s", diff)
	}
	var bound []string
	for _, b := range plan.Binds {
		bound = append(bound, b.Member)
	}
	if diff := cmp.Diff([]string{"fine"}, bound); diff != "" {
		t.Errorf("bound pods (-want +got):\n%s", diff)
	}
}

// Sidecar adds a restartable init container (restartPolicy Always).
func (b *podBuilder) Sidecar(requests corev1.ResourceList) *podBuilder {
	always := corev1.ContainerRestartPolicyAlways
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: "sidecar",
		Resources: corev1.ResourceRequirements{Requests: requests}, RestartPolicy: &always})
	return b
}

// PodLevel sets the pod-level requests (spec.resources).
func (b *podBuilder) PodLevel(requests corev1.ResourceList) *podBuilder {
	b.p.Spec.Resources = &corev1.ResourceRequirements{Requests: requests}
	return b
}

// TestEffectiveRequests: what a pod asks of its node is what runs at once
// at its busiest: the containers with the sidecars, or an init container
// with the sidecars declared before it; pod-level requests replace the sum
// for cpu and memory; the overhead is added.
func TestEffectiveRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{name: "containers sum", pod: testPod("p").Containers(rl("cpu", "1"), rl("cpu", "2", "memory", "1Gi")).Obj(),
			want: rl("cpu", "3", "memory", "1Gi")},
		{name: "a larger init container", pod: testPod("p").Containers(rl("cpu", "1")).Init(rl("cpu", "3")).Obj(),
			want: rl("cpu", "3")},
		{name: "a sidecar runs beside the containers", pod: testPod("p").Containers(rl("cpu", "1")).Sidecar(rl("cpu", "2")).Obj(),
			want: rl("cpu", "3")},
		// The init container runs with the sidecar declared before it:
		// 3 + 1 = 4 beats containers and sidecar, 1 + 1 = 2.
		{name: "init after a sidecar", pod: testPod("p").Containers(rl("cpu", "1")).Sidecar(rl("cpu", "1")).Init(rl("cpu", "3")).Obj(),
			want: rl("cpu", "4")},
		// Declared before the sidecar, the init container runs alone: 3.
		{name: "init before a sidecar", pod: testPod("p").Containers(rl("cpu", "1")).Init(rl("cpu", "3")).Sidecar(rl("cpu", "1")).Obj(),
			want: rl("cpu", "3")},
		// Two sidecars and a GPU init container after the first one only.
		{name: "per resource", pod: testPod("p").Containers(rl("cpu", "1", "memory", "1Gi")).
			Sidecar(rl("memory", "2Gi")).Init(rl("memory", "4Gi", "nvidia.com/gpu", "1")).Sidecar(rl("cpu", "500m")).Obj(),
			want: rl("cpu", "1500m", "memory", "6Gi", "nvidia.com/gpu", "1")},
		{name: "overhead", pod: testPod("p").Containers(rl("cpu", "1")).Sidecar(rl("cpu", "1")).Overhead(rl("cpu", "250m", "memory", "100Mi")).Obj(),
			want: rl("cpu", "2250m", "memory", "100Mi")},
		{name: "pod-level requests replace cpu and memory", pod: testPod("p").Containers(rl("cpu", "1", "memory", "1Gi", "ephemeral-storage", "1Gi")).
			PodLevel(rl("cpu", "4", "memory", "8Gi")).Overhead(rl("cpu", "1")).Obj(),
			want: rl("cpu", "5", "memory", "8Gi", "ephemeral-storage", "1Gi")},
		{name: "hugepages and ephemeral-storage", pod: testPod("p").Containers(rl("hugepages-2Mi", "512Mi", "ephemeral-storage", "10Gi")).
			Init(rl("ephemeral-storage", "20Gi")).Obj(),
			want: rl("hugepages-2Mi", "512Mi", "ephemeral-storage", "20Gi")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podRequests(tc.pod)
			if !equalLists(got, tc.want) {
				t.Errorf("podRequests = %v, want %v", got, tc.want)
			}
		})
	}
}

// equalLists compares ResourceLists by amount, whatever their formats.
func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if w, ok := b[name]; !ok || q.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// storageNode is a ready node that reports, as real ones do,
// ephemeral-storage and hugepages (of which it has none of one size).
func storageNode(name string) *corev1.Node {
	n := bigNode(name)
	n.Status.Allocatable = rl("cpu", "64", "memory", "512Gi", "pods", "110", "nvidia.com/gpu", "8",
		"ephemeral-storage", "100Gi", "hugepages-1Gi", "0", "hugepages-2Mi", "1Gi", "example.com/fpga", "2")
	return n
}

// TestResourcesOnDemand: a resource gets a dimension only when a pod of
// ours asks for it, so nodes that report many resources use none; once it
// has one, the node's allocatable and what the pods already bound there
// hold (those of another scheduler too) count on it.
func TestResourcesOnDemand(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue(v1alpha1.DefaultQueue))
	s.SetNode(storageNode("n1"))
	// A pod of another scheduler uses 30Gi of n1's disk before any pod of
	// ours asks for disk.
	s.SetPod(testPod("daemon").Scheduler("default-scheduler").Containers(rl("ephemeral-storage", "30Gi")).On("n1", corev1.PodRunning).Obj())
	snap, _ := s.Snapshot()
	if diff := cmp.Diff(core.ResourceNames{"cpu", "memory", "pods"}, snap.Resources); diff != "" {
		t.Fatalf("dimensions before any pod asks (-want +got):\n%s", diff)
	}

	s.SetPod(testPod("big-disk").Containers(rl("cpu", "1", "ephemeral-storage", "80Gi")).Obj())
	s.SetPod(testPod("small-disk").Containers(rl("cpu", "1", "ephemeral-storage", "70Gi")).Obj())
	s.SetPod(testPod("pages").Containers(rl("hugepages-2Mi", "512Mi")).Obj())
	s.SetPod(testPod("fpga").Containers(rl("example.com/fpga", "3")).Obj())
	snap, _ = s.Snapshot()
	disk := snap.Resources.Index("ephemeral-storage")
	if disk < 0 || snap.Resources.Index("hugepages-2Mi") < 0 || snap.Resources.Index("example.com/fpga") < 0 {
		t.Fatalf("requested resources have no dimension: %v", snap.Resources)
	}
	if snap.Resources.Index("hugepages-1Gi") >= 0 || snap.Resources.Index("nvidia.com/gpu") >= 0 {
		t.Errorf("resources no pod asks for got dimensions: %v", snap.Resources)
	}
	if got, want := snap.Nodes[0].Allocatable[disk], int64(100<<30); got != want {
		t.Errorf("n1's ephemeral-storage = %d, want %d", got, want)
	}
	if got, want := snap.Nodes[0].Used[disk], int64(30<<30); got != want {
		t.Errorf("n1 uses %d of ephemeral-storage, want %d (the other scheduler's pod)", got, want)
	}
	plan, diag := newCore(t).RunCycle(snap, 1000)
	var bound []string
	for _, b := range plan.Binds {
		bound = append(bound, b.Member)
	}
	// 30Gi + 70Gi fill the disk: big-disk waits; 3 FPGAs never fit in 2.
	if diff := cmp.Diff([]string{"pages", "small-disk"}, sorted(bound)); diff != "" {
		t.Errorf("bound (-want +got):\n%s", diff)
	}
	waiting := map[string]string{}
	for _, st := range diag.Pending {
		waiting[st.Gang] = st.Message()
	}
	if msg := waiting["ns/big-disk#pod"]; !strings.Contains(msg, "ephemeral-storage") {
		t.Errorf("big-disk waits with %q, want a message naming ephemeral-storage", msg)
	}
	if msg := waiting["ns/fpga#pod"]; !strings.Contains(msg, "example.com/fpga") {
		t.Errorf("fpga waits with %q, want a message naming example.com/fpga", msg)
	}

	// The other scheduler's pod ends: its room is given back on the
	// dimension it got after it was bound.
	s.DeletePod("uid-daemon")
	snap, _ = s.Snapshot()
	if got := snap.Nodes[0].Used[disk]; got != 0 {
		t.Errorf("after the other pod left, n1 uses %d of ephemeral-storage, want 0", got)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
