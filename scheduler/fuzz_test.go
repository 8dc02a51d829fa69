package scheduler

import (
	"math"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The fuzzers below feed the adapter's readers what a user or another
// controller may write into a Pod, a foreign PodGroup or a Queue, run one
// cycle over the result, and check that nothing panics, that every amount
// handed to the core lies within [0, maxAmount], and that what is bound
// fits where it is bound, counted with the quantities as written rather than
// with the adapter's conversion of them.

// fuzzCycle runs one cycle over s with reservations, preemption and a
// topology level turned on, so that every part of the cycle reads the
// snapshot, and renders every diagnostic.
func fuzzCycle(t *testing.T, s *Store) (*core.Snapshot, core.Plan, core.Diagnostics) {
	t.Helper()
	s.reserving, s.preempting = true, true
	snap, _ := s.Snapshot()
	for _, g := range snap.Gangs {
		for _, m := range g.Pending {
			inBounds(t, "member "+m.Name+"'s request", m.Request, false)
		}
	}
	for _, n := range snap.Nodes {
		inBounds(t, "node "+n.Name+"'s allocatable", n.Allocatable, false)
	}
	for _, q := range snap.Queues {
		inBounds(t, "queue "+q.Name+"'s capability", q.Capability, true)
		inBounds(t, "queue "+q.Name+"'s guarantee", q.Guarantee, false)
	}
	sched, err := core.New(core.Config{ReserveAfter: 60, Preemption: true, Topology: []string{"zone"}})
	if err != nil {
		t.Fatal(err)
	}
	plan, diag := sched.RunCycle(snap, 1000)
	for _, st := range diag.Pending {
		_ = st.Message()
	}
	return snap, plan, diag
}

// inBounds fails t unless every dimension of v is within [0, maxAmount], or
// core.Unlimited when unlimited is allowed.
func inBounds(t *testing.T, what string, v core.Vector, unlimited bool) {
	t.Helper()
	for d, n := range v {
		if (n < 0 || n > maxAmount) && !(unlimited && n == core.Unlimited) {
			t.Errorf("%s has %d in dimension %d, out of [0, %d]", what, n, d, maxAmount)
		}
	}
}

// ceiling is q rounded up to the core's unit of the named resource, as a
// Quantity; q must be within the bound.
func ceiling(name corev1.ResourceName, q resource.Quantity) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(q.MilliValue(), resource.DecimalSI)
	}
	return *resource.NewQuantity(q.Value(), resource.DecimalSI)
}

// withinCapacity fails t when the pods on some node that received a bind
// request, together, more than the node's allocatable. Requests are summed
// as the quantities the pods wrote.
func withinCapacity(t *testing.T, s *Store, plan core.Plan) {
	t.Helper()
	bound := map[string]map[string]bool{} // node -> pod names bound there by the plan
	for _, b := range plan.Binds {
		if bound[b.Node] == nil {
			bound[b.Node] = map[string]bool{}
		}
		bound[b.Node][b.Member] = true
	}
	for node, names := range bound {
		info := s.nodes[node]
		if info == nil {
			t.Fatalf("a member was bound to %s, which the store does not know", node)
		}
		sum := corev1.ResourceList{}
		for _, p := range s.pods {
			if p.pod.Spec.NodeName == node && !p.terminal || p.pod.Spec.NodeName == "" && names[p.pod.Name] {
				addTo(sum, podRequests(p.pod))
			}
		}
		for name, used := range sum {
			if used.Sign() <= 0 {
				continue
			}
			alloc, ok := nodeAllocatable[name]
			if !ok {
				t.Errorf("pods requesting %s=%s were bound to %s, which has none", name, used.String(), node)
				continue
			}
			if used.Cmp(alloc) > 0 {
				t.Errorf("the pods bound to %s request %s=%s, more than its %s", node, name, used.String(), alloc.String())
			}
		}
	}
}

// nodeAllocatable is fuzzNodes' allocatable.
var nodeAllocatable = rl("cpu", "64", "memory", "512Gi", "pods", "110", "nvidia.com/gpu", "8")

// fuzzNodes adds two nodes of 64 CPUs and 8 GPUs in two zones.
func fuzzNodes(s *Store) {
	for _, zone := range []string{"a", "b"} {
		n := bigNode("n-" + zone)
		n.Status.Allocatable = nodeAllocatable.DeepCopy()
		n.Labels = map[string]string{"zone": zone}
		s.SetNode(n)
	}
}

// setQuantity sets name to the quantity raw spells in list, when it spells
// one; an empty raw sets nothing.
func setQuantity(list corev1.ResourceList, name corev1.ResourceName, raw string) {
	if q, err := resource.ParseQuantity(raw); err == nil {
		list[name] = q
	}
}

// FuzzPodReader: a pod built from fuzzed requests (containers, an init
// container, overhead), gang labels and annotations and priority, copied into
// a gang of up to four members, one of them possibly bound already.
func FuzzPodReader(f *testing.F) {
	type seed struct {
		cpu, memory, gpus, cpu2, initCPU, overhead string
		group, ackName, ackMin, queue              string
		estimate, topology, model                  string
		pgMin, priority                            int32
		members                                    uint8
		firstBound                                 bool
	}
	for _, s := range []seed{
		{cpu: "4", memory: "16Gi", gpus: "2", members: 3},
		{cpu: "1e16", members: 1},
		{memory: "1e19"},
		{gpus: "1e19"},
		{cpu: "9223372036854775807"},
		{cpu: "-1", cpu2: "2"},
		{cpu: "6e11", cpu2: "6e11"},
		{memory: "9e18", overhead: "9e18"},
		{cpu: "1", initCPU: "1e16"},
		{gpus: "3", group: "train", pgMin: 3, members: 3, estimate: "1h", topology: "zone"},
		{gpus: "8", group: "big", pgMin: -1, members: 2},
		{gpus: "1", ackName: "tf", ackMin: "99999999999", members: 2},
		{gpus: "1", ackName: "tf", ackMin: "2", members: 2, queue: "research", model: "A100", firstBound: true},
		{cpu: "0.0001", memory: "0.5", gpus: "0", priority: math.MaxInt32, firstBound: true},
		{cpu: "1e16", firstBound: true, members: 2},
	} {
		f.Add(s.cpu, s.memory, s.gpus, s.cpu2, s.initCPU, s.overhead, s.group, s.ackName, s.ackMin, s.queue,
			s.estimate, s.topology, s.model, s.pgMin, s.priority, s.members, s.firstBound)
	}
	f.Fuzz(func(t *testing.T, cpu, memory, gpus, cpu2, initCPU, overhead, group, ackName, ackMin, queue,
		estimate, topology, model string, pgMin, priority int32, members uint8, firstBound bool) {
		s := NewStore([]string{"phalanx"})
		s.SetQueue(testQueue(v1alpha1.DefaultQueue))
		fuzzNodes(s)
		if name := strings.TrimSpace(group); name != "" && pgMin != 0 {
			s.SetPodGroup(testPodGroup(name, pgMin))
		}
		n := int(members%4) + 1
		for i := 0; i < n; i++ {
			first, second, init, over := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
			setQuantity(first, corev1.ResourceCPU, cpu)
			setQuantity(first, corev1.ResourceMemory, memory)
			setQuantity(first, "nvidia.com/gpu", gpus)
			setQuantity(second, corev1.ResourceCPU, cpu2)
			setQuantity(init, corev1.ResourceCPU, initCPU)
			setQuantity(over, corev1.ResourceMemory, overhead)
			b := testPod("m-"+string(rune('0'+i))).Containers(first, second).Init(init).Overhead(over).Priority(priority)
			for k, v := range map[string]string{AnnotationGroupName: group, AnnotationQueue: queue,
				AnnotationEstimatedRuntime: estimate, AnnotationRequiredTopology: topology, AnnotationGPUModel: model} {
				if v != "" {
					b.Annotate(k, v)
				}
			}
			if ackName != "" {
				b.p.Labels = map[string]string{LabelACKName: ackName, LabelACKMinAvailable: ackMin}
			}
			if i == 0 && firstBound {
				b.On("n-a", corev1.PodRunning)
			}
			s.SetPod(b.Obj())
		}
		_, plan, _ := fuzzCycle(t, s)
		withinCapacity(t, s, plan)
		for _, b := range plan.Binds {
			for _, p := range s.pods {
				if p.pod.Name != b.Member {
					continue
				}
				for name, q := range podRequests(p.pod) {
					if q.Sign() < 0 {
						t.Errorf("pod %s, which requests %s=%s, was bound", p.pod.Name, name, q.String())
					}
				}
			}
		}
	})
}

// FuzzForeignPodGroup: another scheduler's PodGroup with a fuzzed spec. A
// minMember outside 1..2^31-1 is refused or makes the gang invalid; it never
// wraps around into a valid one.
func FuzzForeignPodGroup(f *testing.F) {
	f.Add(uint8(0), int64(3), 0.0, "", "research", "nvidia.com/gpu", "2", int64(600))
	f.Add(uint8(0), int64(1)<<32+1, 0.0, "", "", "", "", int64(0))
	f.Add(uint8(0), int64(-1), 0.0, "", "", "cpu", "1e16", int64(1)<<32+5)
	f.Add(uint8(0), int64(math.MaxInt64), 0.0, "", "", "memory", "-1", int64(-1))
	f.Add(uint8(1), int64(0), 4294967297.0, "", "", "", "", int64(0))
	f.Add(uint8(1), int64(0), 2.5, "", "", "", "", int64(0))
	f.Add(uint8(1), int64(0), 1e300, "", "", "", "", int64(0))
	f.Add(uint8(1), int64(0), -2147483648.0, "", "", "", "", int64(0))
	f.Add(uint8(2), int64(0), 0.0, "3", "", "", "", int64(0))
	f.Add(uint8(3), int64(0), 0.0, "", "q", "nvidia.com/gpu", "1e19", int64(0))
	f.Fuzz(func(t *testing.T, kind uint8, minInt int64, minFloat float64, minString, queue, resName, resValue string, timeout int64) {
		spec := map[string]any{"queue": queue, "scheduleTimeoutSeconds": timeout}
		// want is the minMember the PodGroup must carry, or 0 when the
		// value is out of 1..MaxInt32 and must be refused or invalid.
		var want int64
		switch kind % 4 {
		case 0:
			spec["minMember"] = minInt
			want = minInt
		case 1:
			spec["minMember"] = minFloat
			if minFloat == math.Trunc(minFloat) && minFloat >= 1 && minFloat <= math.MaxInt32 {
				want = int64(minFloat)
			}
		case 2:
			spec["minMember"] = minString
		}
		if want < 1 || want > math.MaxInt32 {
			want = 0
		}
		if resName != "" {
			spec["minResources"] = map[string]any{resName: resValue}
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
			"metadata": map[string]any{"name": "pg", "namespace": "ns"},
			"spec":     spec,
		}}
		pg, err := fromForeign(u)
		if err != nil {
			if pg != nil {
				t.Errorf("fromForeign returned a PodGroup with error %v", err)
			}
			return
		}
		if want != 0 && int64(pg.Spec.MinMember) != want {
			t.Errorf("minMember %v (%T) became %d", spec["minMember"], spec["minMember"], pg.Spec.MinMember)
		}
		if st := pg.Spec.ScheduleTimeoutSeconds; st != nil && int64(*st) != timeout {
			t.Errorf("scheduleTimeoutSeconds %d became %d", timeout, *st)
		}
		r := newRegistry()
		v, _ := r.vector(pg.Spec.MinResources)
		inBounds(t, "minResources", v, false)

		s := NewStore([]string{"phalanx"})
		s.SetQueue(testQueue(v1alpha1.DefaultQueue))
		fuzzNodes(s)
		s.SetForeignPodGroup("scheduling.volcano.sh", pg, nil)
		s.SetPod(testPod("w-0").Group("pg").GPUs(1).Obj())
		s.SetPod(testPod("w-1").Group("pg").GPUs(1).Obj())
		_, plan, diag := fuzzCycle(t, s)
		if want != 0 {
			return
		}
		for _, b := range plan.Binds {
			t.Errorf("minMember %v (%T) read as %d, and member %s was bound", spec["minMember"], spec["minMember"], pg.Spec.MinMember, b.Member)
		}
		for _, st := range diag.Pending {
			if st.Reason != core.ReasonInvalid {
				t.Errorf("minMember %v (%T) read as %d: the gang waits with reason %s, want %s",
					spec["minMember"], spec["minMember"], pg.Spec.MinMember, st.Reason, core.ReasonInvalid)
			}
		}
	})
}

// FuzzQueueReader: a Queue with fuzzed weight, capability, guarantee and
// thresholds, with three pods in it. What its pods are bound to never
// exceeds a capability they wrote within the bound.
func FuzzQueueReader(f *testing.F) {
	f.Add(int32(1), "", "", "", "", "", int32(0), uint8(0), false, false, "1", uint8(1))
	f.Add(int32(-5), "1e16", "-1Gi", "4", "1e16", "1e19", int32(30), uint8(1), true, false, "2", uint8(2))
	f.Add(int32(math.MaxInt32), "9223372036854775807", "1e19", "-2", "-1", "-1", int32(-1), uint8(2), false, true, "1e16", uint8(8))
	f.Add(int32(0), "3", "", "2", "", "", int32(math.MaxInt32), uint8(0), false, false, "1", uint8(1))
	f.Add(int32(2), "0.0001", "0.5", "1", "0.5", "1", int32(60), uint8(0), true, false, "0.0001", uint8(1))
	f.Fuzz(func(t *testing.T, weight int32, capCPU, capMemory, capGPUs, guarCPU, guarGPUs string, reserveAfter int32,
		reclaimable uint8, strictOrder, closed bool, podCPU string, podGPUs uint8) {
		q := testQueue("q")
		q.Spec.Weight, q.Spec.StrictOrder = weight, strictOrder
		q.Spec.Capability, q.Spec.Guarantee = corev1.ResourceList{}, corev1.ResourceList{}
		setQuantity(q.Spec.Capability, corev1.ResourceCPU, capCPU)
		setQuantity(q.Spec.Capability, corev1.ResourceMemory, capMemory)
		setQuantity(q.Spec.Capability, "nvidia.com/gpu", capGPUs)
		setQuantity(q.Spec.Guarantee, corev1.ResourceCPU, guarCPU)
		setQuantity(q.Spec.Guarantee, "nvidia.com/gpu", guarGPUs)
		if reserveAfter != 0 {
			q.Spec.ReserveAfterSeconds = &reserveAfter
		}
		if reclaimable%3 != 0 {
			yes := reclaimable%3 == 1
			q.Spec.Reclaimable = &yes
		}
		if closed {
			q.Spec.State = v1alpha1.QueueClosed
		}
		s := NewStore([]string{"phalanx"})
		s.SetQueue(testQueue(v1alpha1.DefaultQueue))
		s.SetQueue(q)
		fuzzNodes(s)
		requests := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(podGPUs%9), resource.DecimalSI)}
		setQuantity(requests, corev1.ResourceCPU, podCPU)
		for _, name := range []string{"a", "b", "c"} {
			s.SetPod(testPod(name).Containers(requests.DeepCopy()).Annotate(AnnotationQueue, "q").Obj())
		}
		_, plan, _ := fuzzCycle(t, s)
		withinCapacity(t, s, plan)
		if closed && len(plan.Binds) > 0 {
			t.Errorf("%d pods of a closed queue were bound", len(plan.Binds))
		}
		used := corev1.ResourceList{}
		for range plan.Binds {
			addTo(used, requests)
		}
		for name, limit := range q.Spec.Capability {
			if limit.Cmp(bound(name)) > 0 {
				continue // unlimited
			}
			allowed := resource.Quantity{}
			if limit.Sign() > 0 {
				allowed = ceiling(name, limit)
			}
			if u, ok := used[name]; ok && u.Sign() > 0 && u.Cmp(allowed) > 0 {
				t.Errorf("queue q's capability is %s=%s, and its bound pods request %s", name, limit.String(), u.String())
			}
		}
	})
}
