//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pod constraints honoured inside the gang's transaction: required pod anti-affinity, topology
// spread, host ports, and JobSet's exclusive placement (required pod affinity and anti-affinity
// written by JobSet's own webhooks) under the real JobSet controller.

const (
	labelHostname = "kubernetes.io/hostname"
	labelZone     = "topology.kubernetes.io/zone"
)

// waitFor is how long a gang that cannot be placed is watched staying whole and unbound, once it
// said why it waits: the scheduler runs a cycle at least every second.
const waitFor = 3 * time.Second

// createWith is create with every pod of the job changed by edit first (its constraints).
func (e *env) createWith(b *jobBuilder, edit func(*corev1.Pod)) *job {
	e.t.Helper()
	if pg := b.PodGroup(); pg != nil {
		pg.Namespace = e.ns
		if _, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("create PodGroup %s: %v", pg.Name, err)
		}
	}
	j := &job{name: b.name, size: b.size()}
	for _, p := range b.Pods() {
		p.Namespace = e.ns
		edit(p)
		if _, err := kube.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("create pod %s: %v", p.Name, err)
		}
		j.pods = append(j.pods, p.Name)
	}
	return j
}

// ownJob selects the pods of the job named name (its tf-job-name label).
func ownJob(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{labelJob: name}}
}

// antiAffinity: required pod anti-affinity to the pods of the job named name on key.
func antiAffinity(name, key string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: ownJob(name), TopologyKey: key,
			}},
		}}
	}
}

// spread: a topology spread constraint (DoNotSchedule) over the pods of the job named name.
func spread(name, key string, maxSkew int32, minDomains *int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: ownJob(name), MinDomains: minDomains,
		}}
	}
}

// hostPort: the pod's container binds TCP port on the host.
func hostPort(port int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}}
	}
}

// cordon marks the node unschedulable, or schedulable again.
func (e *env) cordon(node string, on bool) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	if _, err := kube.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("cordon %s (%v): %v", node, on, err)
	}
}

// perDomain: j's pods are all bound, and the values of the nodes' label, by how many of j's pods
// each holds, are want (e.g. {"a": 2, "b": 2}); with label kubernetes.io/hostname, the nodes.
func (e *env) perDomain(j *job, label string, want map[string]int) check {
	return func(ctx context.Context) error {
		nodes, err := e.nodesOf(e.ctx, j)
		if err != nil {
			return err
		}
		labels, err := nodeLabels(e.ctx, label)
		if err != nil {
			return err
		}
		got := map[string]int{}
		where := map[string][]string{}
		for pod, node := range nodes {
			v := labels[node]
			got[v]++
			where[v] = append(where[v], pod+"@"+node)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("pods of %s per %s: %v, want %v (%v)", j.name, label, got, want, where)
		}
		return nil
	}
}

// nodeLabels returns the value of label on every node, by node name. The checks make their calls
// under the test's context, not the poll's: a call cut short by the poll's deadline would hide the
// check's last word.
func nodeLabels(ctx context.Context, label string) (map[string]string, error) {
	l, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range l.Items {
		out[n.Name] = n.Labels[label]
	}
	return out, nil
}

// distinctNodes: j's pods are all bound, no two on one node.
func (e *env) distinctNodes(j *job) check {
	return func(ctx context.Context) error {
		nodes, err := e.nodesOf(e.ctx, j)
		if err != nil {
			return err
		}
		byNode := map[string][]string{}
		for pod, node := range nodes {
			byNode[node] = append(byNode[node], pod)
		}
		if len(byNode) != len(nodes) {
			return fmt.Errorf("pods of %s share nodes: %v", j.name, byNode)
		}
		return nil
	}
}

// waitsSaying: the gang is whole and unbound, and its PodGroup's Unschedulable condition, every
// pod's PodScheduled=False condition and a FailedScheduling Event on its first pod all mention
// words.
func (e *env) waitsSaying(j *job, words ...string) {
	e.t.Helper()
	e.eventually(30*time.Second, j.name+"'s PodGroup says it waits on "+strings.Join(words, ", "),
		e.podGroupCondition(j.name, v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, words...))
	e.eventually(10*time.Second, j.name+"'s pods say so too",
		e.podsCondition(j, corev1.PodScheduled, corev1.ConditionFalse, words...))
	e.eventually(10*time.Second, "an Event says so", e.eventOn(j.pods[0], "FailedScheduling", words...))
	e.consistently(waitFor, j.name+" to stay whole and unbound", e.noneBound(j))
	if pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(e.ctx, j.name, metav1.GetOptions{}); err == nil {
		if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupUnschedulable); c != nil {
			e.t.Logf("%s waits: %s: %s", j.name, c.Reason, c.Message)
		}
	}
}

// TestPodAntiAffinityOnePerNode: 4 nodes with room for all; a gang of 4 whose members require
// pod anti-affinity to each other on kubernetes.io/hostname lands one a node (without it, packing
// would put them on one node). A second such gang, with one node cordoned, waits whole, saying
// pod anti-affinity keeps it out: 3 of its members would fit, not the fourth. Uncordoned, it runs
// one a node, beside the first (its anti-affinity is to its own pods only).
func TestPodAntiAffinityOnePerNode(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("paa", 4).CPU("8"))
	startScheduler(t)

	first := e.createWith(gang("first").Members(4).WorkerCPU("1"), antiAffinity("first", labelHostname))
	e.eventually(30*time.Second, "first runs", e.running(first))
	e.eventually(10*time.Second, "first is one a node", e.distinctNodes(first))

	e.cordon("paa-3", true)
	second := e.createWith(gang("second").Members(4).WorkerCPU("1"), antiAffinity("second", labelHostname))
	e.waitsSaying(second, "pod anti-affinity")
	e.consistently(time.Second, "first to keep running", e.running(first))

	e.cordon("paa-3", false)
	e.eventually(30*time.Second, "second runs once the node is back", e.running(second))
	e.eventually(10*time.Second, "second is one a node", e.distinctNodes(second))
}

// TestTopologySpread: 4 nodes with room for all, 2 in zone a and 2 in zone b. A gang of 4 that
// spreads over zones with maxSkew 1 lands 2 and 2 (packing alone would put it on one node). A
// gang of 3 that requires minDomains 3 of zones, of which there are 2, may put at most 1 pod in
// each (the global minimum counts as 0): it waits whole, saying topology spread keeps it out.
func TestTopologySpread(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("tsa", 2).CPU("8").Label(labelZone, "a"))
	e.addNodes(kwokNodes("tsb", 2).CPU("8").Label(labelZone, "b"))
	startScheduler(t)

	even := e.createWith(gang("even").Members(4).WorkerCPU("1"), spread("even", labelZone, 1, nil))
	e.eventually(30*time.Second, "even runs", e.running(even))
	e.eventually(10*time.Second, "even is 2 and 2 in the zones", e.perDomain(even, labelZone, map[string]int{"a": 2, "b": 2}))

	three := int32(3)
	wide := e.createWith(gang("wide").Members(3).WorkerCPU("1"), spread("wide", labelZone, 1, &three))
	e.waitsSaying(wide, "topology spread")
	e.consistently(time.Second, "even to keep running", e.running(even))
}

// TestHostPorts: 2 nodes with room for all. A gang of 2 pods binding host port 8080 lands on both
// nodes, one each (packing alone would put them on one). A gang of 2 binding 8080 again then waits,
// since both nodes have it in use; a gang of 3 binding 9090 waits too, its members being more than
// the nodes. A gang of 2 binding 9090 runs.
func TestHostPorts(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("hp", 2).CPU("8"))
	startScheduler(t)

	web := e.createWith(gang("web").Members(2).WorkerCPU("1"), hostPort(8080))
	e.eventually(30*time.Second, "web runs", e.running(web))
	e.eventually(10*time.Second, "web is one a node", e.distinctNodes(web))

	again := e.createWith(gang("again").Members(2).WorkerCPU("1"), hostPort(8080))
	e.waitsSaying(again, "host port in use")

	three := e.createWith(gang("three").Members(3).WorkerCPU("1"), hostPort(9090))
	e.waitsSaying(three, "host port in use")

	two := e.createWith(gang("two").Members(2).WorkerCPU("1"), hostPort(9090))
	e.eventually(30*time.Second, "two runs", e.running(two))
	e.eventually(10*time.Second, "two is one a node", e.distinctNodes(two))
	e.consistently(waitFor, "again and three to stay unbound, web to keep running",
		all(e.noneBound(again), e.noneBound(three), e.running(web)))
}

// TestOperatorJobSetExclusive: the JobSet controller and its webhooks, and a JobSet of 2 child
// Jobs of 2 pods with exclusive placement on racks (docs/examples/jobset-exclusive.yaml), on 3
// racks of 2 nodes, every node with room for the whole JobSet: only the pod affinity and
// anti-affinity JobSet's webhook gives the leaders, and the nodeSelector it gives the followers,
// keep the Jobs apart. All 4 pods end bound, each Job's pods within one rack, no rack shared. A
// second such JobSet, with one rack left, then waits whole, saying pod anti-affinity keeps it out.
func TestOperatorJobSetExclusive(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "jobset")
	for _, rack := range []string{"r1", "r2", "r3"} {
		e.addNodes(kwokNodes("jsx-"+rack, 2).CPU("8").Memory("32Gi").Label(labelRack, rack))
	}
	startScheduler(t)
	startControllerManager(t, "job-controller")
	startJobSet(t, e)

	js := example("jobset-exclusive.yaml", "excl", "10m") // running while the test looks
	if got := js.GetAnnotations()["alpha.jobset.sigs.k8s.io/exclusive-topology"]; got != labelRack {
		t.Fatalf("docs/examples/jobset-exclusive.yaml: exclusive topology %q, want %q", got, labelRack)
	}
	created, err := dyn.Resource(gvrJobSet).Namespace(e.ns).Create(e.ctx, js, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create JobSet: %v", err)
	}
	j := &opJob{w: jobSets, name: "excl", size: 4}
	e.eventually(time.Minute, "the leaders form a gang of 2, one a Job",
		e.derivedPodGroup("jobset-excl", 2, "jobset.x-k8s.io/v1alpha2", "JobSet", "excl", created.GetUID()))
	e.eventually(2*time.Minute, "the JobSet's 4 pods run", e.opRunning(j))
	e.eventually(10*time.Second, "each Job in a rack of its own", e.racksPerJob(j, 2))
	e.eventually(10*time.Second, "JobSet's webhook constrained them", e.exclusiveConstraints(j))
	e.consistently(waitFor, "the placement to hold", all(e.opRunning(j), e.racksPerJob(j, 2)))

	// A second such JobSet has one free rack for its 2 Jobs: one leader would fit there, not
	// both, so neither is bound (and no follower is created); they say why.
	js2 := example("jobset-exclusive.yaml", "excl2", "10m")
	if _, err := dyn.Resource(gvrJobSet).Namespace(e.ns).Create(e.ctx, js2, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create JobSet: %v", err)
	}
	j2 := &opJob{w: jobSets, name: "excl2", size: 2} // its leaders
	e.eventually(time.Minute, "excl2's leaders wait, saying pod anti-affinity keeps them out",
		e.opEvery(j2, "unbound, saying pod anti-affinity keeps it out", func(p *corev1.Pod) bool {
			return p.Spec.NodeName == "" && strings.Contains(podScheduledFalse(p), "pod anti-affinity")
		}))
	e.eventually(10*time.Second, "its PodGroup says so too",
		e.podGroupCondition("jobset-excl2", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "pod anti-affinity"))
	e.consistently(waitFor, "excl2 to stay unbound, excl to keep running in its racks",
		all(e.opNoneBound(j2), e.opCreated(j2), e.opRunning(j), e.racksPerJob(j, 2)))
	e.logWaiting(j2)
}

// TestOperatorJobSetFollowersRoom: the example's JobSet (2 Jobs of 2 pods, each Job alone in a
// rack) on racks of 2 nodes of 1 CPU, a pod's whole node. JobSet's webhook admits a Job's follower
// only once its leader is bound, pinned to the leader's rack. Another pod takes one node of rack
// r1, so a leader fits there but its follower does not. With racks r1 and r2 only, the leaders
// wait, saying their followers need room too, rather than start and hold a node of r1 for a
// follower that can never come. Once rack r3 comes, the JobSet runs whole, in r2 and r3.
func TestOperatorJobSetFollowersRoom(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "jobset")
	for _, rack := range []string{"r1", "r2"} {
		e.addNodes(kwokNodes("jsf-"+rack, 2).CPU("1").Memory("32Gi").Label(labelRack, rack))
	}
	startScheduler(t)
	startControllerManager(t, "job-controller")
	startJobSet(t, e)

	other := e.create(gang("other").Members(1).GPUs(0).WorkerCPU("1").NodeSelector(labelRack, "r1"))
	e.eventually(time.Minute, "the other pod runs", e.bound(other))
	js := example("jobset-exclusive.yaml", "fol", "10m")
	if _, err := dyn.Resource(gvrJobSet).Namespace(e.ns).Create(e.ctx, js, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create JobSet: %v", err)
	}
	leaders := &opJob{w: jobSets, name: "fol", size: 2}
	const want = "room for its 2 followers too, which JobSet fol admits once their job's leader is bound"
	e.eventually(time.Minute, "the leaders wait, saying their followers need room too",
		e.opEvery(leaders, "unbound, saying its followers need room too", func(p *corev1.Pod) bool {
			return p.Spec.NodeName == "" && strings.Contains(podScheduledFalse(p), want)
		}))
	e.consistently(waitFor, "the leaders to wait, and the other pod to run",
		all(e.opNoneBound(leaders), e.opCreated(leaders), e.bound(other)))

	e.addNodes(kwokNodes("jsf-r3", 2).CPU("1").Memory("32Gi").Label(labelRack, "r3"))
	j := &opJob{w: jobSets, name: "fol", size: 4}
	e.eventually(2*time.Minute, "the JobSet's 4 pods run", e.opRunning(j))
	e.eventually(10*time.Second, "each Job in a rack of its own, r2 and r3", all(e.racksPerJob(j, 2),
		e.opEvery(j, "outside rack r1", func(p *corev1.Pod) bool { return !strings.HasPrefix(p.Spec.NodeName, "jsf-r1") })))
	e.consistently(waitFor, "the JobSet and the other pod to keep running", all(e.opRunning(j), e.bound(other)))
}

// racksPerJob: the JobSet's pods are all bound, the pods of each of its jobs child Jobs within
// one rack, and no rack holds pods of two Jobs.
func (e *env) racksPerJob(j *opJob, jobs int) check {
	return func(ctx context.Context) error {
		pods, err := e.opPods(j)
		if err != nil {
			return err
		}
		rackOf, err := nodeLabels(e.ctx, labelRack)
		if err != nil {
			return err
		}
		racks := map[string]map[string]bool{}  // child Job -> racks
		owners := map[string]map[string]bool{} // rack -> child Jobs
		var where []string
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				return fmt.Errorf("pod %s is not bound", p.Name)
			}
			rack := rackOf[p.Spec.NodeName]
			child := p.Labels["batch.kubernetes.io/job-name"]
			if child == "" {
				return fmt.Errorf("pod %s has no batch.kubernetes.io/job-name label", p.Name)
			}
			if racks[child] == nil {
				racks[child] = map[string]bool{}
			}
			racks[child][rack] = true
			if owners[rack] == nil {
				owners[rack] = map[string]bool{}
			}
			owners[rack][child] = true
			where = append(where, fmt.Sprintf("%s@%s(%s)", p.Name, p.Spec.NodeName, rack))
		}
		sort.Strings(where)
		if len(racks) != jobs {
			return fmt.Errorf("pods of %d child Jobs, want %d: %v", len(racks), jobs, where)
		}
		for child, rs := range racks {
			if len(rs) != 1 {
				return fmt.Errorf("child Job %s spans racks %v: %v", child, rs, where)
			}
		}
		for rack, cs := range owners {
			if len(cs) != 1 {
				return fmt.Errorf("rack %s holds pods of child Jobs %v: %v", rack, cs, where)
			}
		}
		return nil
	}
}

// exclusiveConstraints: the JobSet's leaders (completion index 0) carry the required pod affinity
// and anti-affinity on the rack label that JobSet's pod webhook gives them, and its followers a
// nodeSelector for a rack, so that the placement checked is the constraints' doing.
func (e *env) exclusiveConstraints(j *opJob) check {
	return func(ctx context.Context) error {
		pods, err := e.opPods(j)
		if err != nil {
			return err
		}
		leaders := 0
		for _, p := range pods {
			if p.Annotations["batch.kubernetes.io/job-completion-index"] != "0" {
				if p.Spec.NodeSelector[labelRack] == "" {
					return fmt.Errorf("follower %s has no nodeSelector for %s: %v", p.Name, labelRack, p.Spec.NodeSelector)
				}
				continue
			}
			leaders++
			a := p.Spec.Affinity
			if a == nil || a.PodAffinity == nil || a.PodAntiAffinity == nil ||
				len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 ||
				len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 ||
				a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != labelRack {
				return fmt.Errorf("leader %s lacks the required pod affinity and anti-affinity on %s: %+v", p.Name, labelRack, a)
			}
		}
		if leaders != 2 {
			return fmt.Errorf("%d leaders, want 2", leaders)
		}
		return nil
	}
}
