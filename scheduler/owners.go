package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
)

// Gangs derived from the pods' workloads, as NVIDIA KAI Scheduler's
// podgrouper derives them: a pod served by Phalanx that names no gang
// (MembershipOf says Single) but belongs to a workload that only runs whole
// is put in that workload's gang. In order of precedence:
//
//   - JobSet (jobset.x-k8s.io/v1alpha2; pod label jobset.sigs.k8s.io/jobset-name):
//     one gang per JobSet, minMember = sum over spec.replicatedJobs of
//     replicas x min(parallelism, completions). With
//     spec.startupPolicy.startupPolicyOrder InOrder the JobSet controller
//     creates a replicated job only once the previous one is ready, so each
//     replicated job is a gang of its own (pod label
//     jobset.sigs.k8s.io/replicatedjob-name); with dependsOn, only once the
//     replicated job it names is Ready or Complete, so the replicated jobs
//     that name the same one (or none) are a gang. With exclusive placement
//     (annotation alpha.jobset.sigs.k8s.io/exclusive-topology on the
//     JobSet or a replicated job's template, without
//     alpha.jobset.sigs.k8s.io/node-selector), JobSet's webhooks admit a
//     job's followers only once its leader (completion index 0) is bound,
//     and pin them to the leader's domain: the gang's minimum is then the
//     leaders, one a job, placed together in their exclusive domains, and
//     only where their followers fit too (followersAfterLeaders); the
//     followers join as they come, into the room held for them.
//   - LeaderWorkerSet (leaderworkerset.x-k8s.io/v1; pod labels
//     leaderworkerset.sigs.k8s.io/name and /group-index): one gang per group,
//     minMember = the pods' annotation leaderworkerset.sigs.k8s.io/size;
//     with startupPolicy LeaderReady or exclusive placement the controller
//     creates the workers only once the leader is Ready or bound, so the
//     gang is the leader until they exist (workersAfterLeader).
//   - Kubeflow training-operator jobs (kubeflow.org/v1 TFJob, PyTorchJob,
//     MPIJob, XGBoostJob, PaddleJob, JAXJob; pod label
//     training.kubeflow.org/job-name and the job as controller) whose
//     operator made no PodGroup: minMember =
//     spec.runPolicy.schedulingPolicy.minAvailable, else, for an elastic
//     PyTorchJob or PaddleJob, elasticPolicy.minReplicas plus the Master
//     replicas, else the sum of every replica spec's replicas (default 1).
//     mpi-operator's MPIJob (kubeflow.org/v2beta1): minAvailable, else the
//     workers plus the launcher (whose pod a batch Job owns: it is found by
//     the label training.kubeflow.org/operator-name=mpi-operator); with
//     launcherCreationPolicy WaitForWorkersReady the operator creates the
//     launcher only once the workers are Ready, so minMember is the workers
//     (the launcher counts once it exists: launcherAfterWorkers), and a
//     minAvailable above them is the job's problem.
//   - RayCluster (ray.io/v1; pod label ray.io/cluster): minMember = the head
//     plus, for every worker group not suspended, minReplicas x numOfHosts.
//   - Indexed batch Job (pod annotation batch.kubernetes.io/job-completion-index,
//     the Job as controller): minMember = parallelism (default 1), at most
//     completions.
//   - PodDisruptionBudget (policy/v1) of the pod's namespace whose selector
//     matches it and whose minAvailable is an integer of at least 2, as
//     Kubeflow 0.3's tf-operator declared gangs: minMember = minAvailable.
//     Pods of ReplicaSets, StatefulSets, DaemonSets and ReplicationControllers
//     are left out: a PodDisruptionBudget over a service is no gang.
//
// Any other pod stays a gang of one. The gang is a PodGroup of ours, named
// after the workload (derivedName), which Phalanx creates from the loop
// through the status writer (createDerivedPodGroups): owned by the workload,
// so that the garbage collector deletes it with it, and annotated with
// AnnotationDerivedFrom. The pods are members of that PodGroup as if they
// named it, so once it exists it is a gang like any other; until then the
// gang waits, saying why (explainDerived). Workload objects are read through
// dynamic informers where the cluster serves their API (ownerAPIs), Jobs and
// PodDisruptionBudgets through typed ones (ownerHandlers); each is read on
// its own and never trusted: a field that is missing, negative or too large
// makes the gang wait with a message naming it.

// Keys the workload controllers write on their pods.
const (
	labelJobSetName           = "jobset.sigs.k8s.io/jobset-name"
	labelJobSetReplicatedJob  = "jobset.sigs.k8s.io/replicatedjob-name"
	annotationJobSetExclusive = "alpha.jobset.sigs.k8s.io/exclusive-topology"
	annotationJobSetNodeSel   = "alpha.jobset.sigs.k8s.io/node-selector"
	labelLWSName              = "leaderworkerset.sigs.k8s.io/name"
	labelLWSGroupIndex        = "leaderworkerset.sigs.k8s.io/group-index"
	annotationLWSSize         = "leaderworkerset.sigs.k8s.io/size"
	labelLWSWorkerIndex       = "leaderworkerset.sigs.k8s.io/worker-index"
	annotationLWSExclusive    = "leaderworkerset.sigs.k8s.io/exclusive-topology"
	labelKubeflowJobName      = "training.kubeflow.org/job-name"
	labelKubeflowOperator     = "training.kubeflow.org/operator-name"
	labelKubeflowJobRole      = "training.kubeflow.org/job-role"
	labelRayCluster           = "ray.io/cluster"
	annotationJobIndex        = batchv1.JobCompletionIndexAnnotation // batch.kubernetes.io/job-completion-index
)

// What Phalanx writes on the PodGroups it derives.
const (
	// AnnotationDerivedFrom names the workload a PodGroup was derived
	// from, as Kind/name.
	AnnotationDerivedFrom = "scheduling.phalanx.dev/derived-from"
	// LabelDerivedFromKind is the Kind of that workload, for selectors:
	// kubectl get pg -l scheduling.phalanx.dev/derived-from-kind=Job.
	LabelDerivedFromKind = "scheduling.phalanx.dev/derived-from-kind"
)

// maxDerivedMin is the largest minMember a PodGroup may have (the CRD's
// bound).
const maxDerivedMin = 100000

// recreateAfter is how long after handing the writer a PodGroup's creation
// it is handed again if the PodGroup still does not exist.
const recreateAfter = 30 * time.Second

// ownerKind describes a workload kind read through a dynamic informer.
type ownerKind struct {
	gvr  schema.GroupVersionResource
	kind string
}

// Kinds of workload.
const (
	kindJobSet     = "JobSet"
	kindLWS        = "LeaderWorkerSet"
	kindMPIJob     = "MPIJob"
	kindRayCluster = "RayCluster"
	kindJob        = "Job"
	kindPDB        = "PodDisruptionBudget"
)

// mpiWaitForWorkersReady is the launcherCreationPolicy of an mpi-operator
// MPIJob whose launcher the operator creates once every worker is Ready.
const mpiWaitForWorkersReady = "WaitForWorkersReady"

// launcherAfterWorkers is the minimum of the gang of PodGroup pg when an
// mpi-operator MPIJob owns pg and creates its launcher only once every
// worker is Ready (launcherCreationPolicy WaitForWorkersReady): the workers,
// and the launcher once it exists. A gang that counted the launcher before
// it exists could never be whole: no gang scheduler lets the workers be
// Ready first (kubeflow/mpi-operator issue 608, which mpi-operator's own
// PodGroups, minMember = workers + 1, run into). Once the launcher exists,
// it is part of the minimum: the workers then hold their GPUs for it, and a
// gang that holds them without it is partial, completed before any other
// gang or released (partial.go). ok is false for any other PodGroup, for a
// minMember that is neither the workers nor the workers and the launcher,
// and while the MPIJob is not read.
//
// Until the launcher exists and while no member holds a node, coming is
// the launcher as the MPIJob's template describes it, if Phalanx is to
// place it: the gang's first placement finds room for it too, and keeps
// that room for it while the workers start (comingRoom), so that the
// workers never run with no room left for their launcher. nil otherwise.
func (s *Store) launcherAfterWorkers(pg *v1alpha1.PodGroup, g *gangInfo) (min int, ok bool, coming *corev1.Pod) {
	o, _ := s.pgOwner(pg, "kubeflow.org/v2beta1", kindMPIJob)
	if o == nil || o.readyWorkers == 0 {
		return 0, false, nil
	}
	workers := int(o.readyWorkers)
	if n := int(pg.Spec.MinMember); n != workers && n != workers+1 {
		return 0, false, nil
	}
	started := false
	for _, p := range g.members {
		if isMPILauncher(p.pod) {
			return workers + 1, true, nil
		}
		started = started || p.holds()
	}
	// With a PodGroup of Volcano's or scheduler-plugins' API, mpi-operator
	// gives the launcher the workers' scheduler (ours: they are members);
	// with one Phalanx derived, the launcher goes where its template says.
	_, derived := pg.Annotations[AnnotationDerivedFrom]
	if !started && o.launcher != nil && (!derived || s.ours[o.launcher.Spec.SchedulerName]) {
		coming = o.launcher
	}
	return workers, true, coming
}

// maxComing bounds the workers to come whose room is found and held with
// a LeaderWorkerSet group's leader; a larger group starts without it.
const maxComing = 1024

// toCome makes pods v's members to come, what and why saying which and
// when they come, unless a template asks what the scheduler cannot place
// (then the members say so themselves once they exist).
func (s *Store) toCome(v *gangView, pods []*corev1.Pod, what, why string) {
	coming := make([]*podInfo, 0, len(pods))
	for _, pod := range pods {
		req, problem := s.res.vector(podRequests(pod))
		if problem != "" || unsupportedOf(pod) != "" {
			return
		}
		coming = append(coming, &podInfo{pod: pod, gang: v.info.key, req: req, cons: s.constraints.of(pod, nil)})
	}
	v.coming, v.comingWhat, v.comingWhy = coming, what, why
}

// workersAfterLeader is the minimum of the gang of PodGroup pg when a
// LeaderWorkerSet owns pg and creates each group's workers only once its
// leader is Ready or bound (ownerObject.leaderFirst): the leader alone until
// a worker exists, then the group's size, as pg says. A gang that waited for
// all of them from the start could never run. Until the leader holds a
// node, coming are its workers, as the workerTemplate describes them (with
// exclusive placement, with the leader's labels and affinity, which keep
// them in its domain as LeaderWorkerSet's webhook does), if Phalanx is to
// place them: the leader starts only where they fit too, and their room is
// held for them (comingRoom) until they are bound. why says when they
// come. ok is false for any other PodGroup, while the LeaderWorkerSet is
// not read, and once a worker exists.
func (s *Store) workersAfterLeader(pg *v1alpha1.PodGroup, g *gangInfo) (min int, ok bool, coming []*corev1.Pod, why string) {
	o, set := s.pgOwner(pg, "leaderworkerset.x-k8s.io/v1", kindLWS)
	size := int(pg.Spec.MinMember)
	if o == nil || o.leaderFirst == "" || size < 2 {
		return 0, false, nil, ""
	}
	var leader *podInfo
	for _, p := range g.members {
		switch p.pod.Labels[labelLWSWorkerIndex] {
		case "0":
			leader = p
		case "":
		default:
			return 0, false, nil, "" // the workers came: the group is whole again
		}
	}
	if leader == nil {
		return 0, false, nil, ""
	}
	why = fmt.Sprintf("which LeaderWorkerSet %s creates %s", set.Name, o.leaderFirst)
	if leader.holds() || o.worker == nil || !s.ours[o.worker.Spec.SchedulerName] || size-1 > maxComing {
		return 1, true, nil, why
	}
	for i := 1; i < size; i++ {
		w := o.worker.DeepCopy()
		w.Name = fmt.Sprintf("%s-%d", leader.pod.Name, i)
		if o.exclusive != "" {
			w.Labels, w.Spec.Affinity = leader.pod.Labels, leader.pod.Spec.Affinity
		}
		coming = append(coming, w)
	}
	return 1, true, coming, why
}

// followersAfterLeaders are the members to come of the gang of PodGroup pg
// when a JobSet with exclusive placement owns pg: the gang is then its
// jobs' leaders (deriveJobSet), and JobSet's webhook admits a job's
// followers only once its leader is bound, pinned to the leader's domain.
// Until a leader holds a node, coming are the followers of each leader, as
// copies of the leader (the pods of a job share its template; the leader
// has the webhook's affinity, which keeps them in its domain), and of[i]
// is the leader coming[i] copies: the leaders start only where their
// followers fit too, and that room is held for them (comingRoom) until
// they are bound. why says when they come. None while the JobSet is not
// read, once a follower exists, or beyond maxComing followers.
func (s *Store) followersAfterLeaders(pg *v1alpha1.PodGroup, g *gangInfo) (coming []*corev1.Pod, of []*podInfo, why string) {
	o, set := s.pgOwner(pg, "jobset.x-k8s.io/v1alpha2", kindJobSet)
	if o == nil || len(o.followers) == 0 {
		return nil, nil, ""
	}
	leaders := make([]*podInfo, 0, len(g.members))
	total := 0
	for _, p := range g.members {
		a := p.pod.Annotations
		if p.holds() || a[annotationJobIndex] != "0" || a[annotationJobSetExclusive] == "" || a[annotationJobSetNodeSel] != "" {
			return nil, nil, "" // placed, or not the leaders of exclusive placement
		}
		total += o.followers[p.pod.Labels[labelJobSetReplicatedJob]]
		leaders = append(leaders, p)
	}
	if total == 0 || total > maxComing {
		return nil, nil, ""
	}
	sort.Slice(leaders, func(i, j int) bool { return leaders[i].pod.Name < leaders[j].pod.Name })
	for _, l := range leaders {
		job := l.pod.Labels[batchv1.JobNameLabel]
		if job == "" {
			job = l.pod.Name
		}
		for i := 1; i <= o.followers[l.pod.Labels[labelJobSetReplicatedJob]]; i++ {
			coming = append(coming, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", job, i), Namespace: l.pod.Namespace, Labels: l.pod.Labels},
				Spec:       l.pod.Spec, // shared, never changed
			})
			of = append(of, l)
		}
	}
	return coming, of, fmt.Sprintf("which JobSet %s admits once their job's leader is bound", set.Name)
}

// pgOwner returns the workload of kind, served at apiVersion, that owns
// pg, as the store read it, and pg's reference to it; nil if no such
// workload owns pg, or the store has not read it (or holds another object
// of its name).
func (s *Store) pgOwner(pg *v1alpha1.PodGroup, apiVersion, kind string) (*ownerObject, *metav1.OwnerReference) {
	for i, ref := range pg.OwnerReferences {
		if ref.Kind != kind || ref.APIVersion != apiVersion {
			continue
		}
		group, _, _ := strings.Cut(apiVersion, "/")
		o := s.owners.objects[objectKey{group, kind, pg.Namespace, ref.Name}]
		if o == nil || o.ref.uid != "" && ref.UID != "" && o.ref.uid != ref.UID {
			return nil, nil
		}
		return o, &pg.OwnerReferences[i]
	}
	return nil, nil
}

// isMPILauncher reports whether pod is the launcher of an mpi-operator
// MPIJob.
func isMPILauncher(pod *corev1.Pod) bool {
	return pod.Labels[labelKubeflowOperator] == "mpi-operator" && pod.Labels[labelKubeflowJobRole] == "launcher"
}

// comingName is the member name of a member to come in the core's gang:
// no pod can have it (pod names have no spaces), so no member of the gang
// shares it.
func comingName(pod *corev1.Pod) string { return pod.Name + " (to come)" }

// OwnerKinds are the workload APIs gangs are derived from that Phalanx reads
// where the cluster serves them.
var OwnerKinds = []ownerKind{
	{schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}, kindJobSet},
	{schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}, kindLWS},
	{schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "tfjobs"}, "TFJob"},
	{schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}, "PyTorchJob"},
	{schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "mpijobs"}, kindMPIJob},
	{schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "xgboostjobs"}, "XGBoostJob"},
	{schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "paddlejobs"}, "PaddleJob"},
	{schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "jaxjobs"}, "JAXJob"},
	{schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}, kindMPIJob},
	{schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}, kindRayCluster},
}

// kubeflowReplicaSpecs is, for each Kubeflow job kind, the spec field of
// its replica specs.
var kubeflowReplicaSpecs = map[string]string{
	"TFJob": "tfReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs", kindMPIJob: "mpiReplicaSpecs",
	"XGBoostJob": "xgbReplicaSpecs", "PaddleJob": "paddleReplicaSpecs", "JAXJob": "jaxReplicaSpecs",
}

// ownerRef identifies a workload; uid is empty while it is not known.
type ownerRef struct {
	apiVersion, kind, namespace, name string
	uid                               types.UID
}

func (r ownerRef) String() string { return fmt.Sprintf("%s %s/%s", r.kind, r.namespace, r.name) }

// objectKey keys workloads in the store: versions of one kind share it.
type objectKey struct{ group, kind, namespace, name string }

// ownerObject is what the store keeps of a workload object.
type ownerObject struct {
	ref ownerRef
	// min is the gang's minMember (whole workload); problem, when not
	// empty, says why it cannot be read.
	min     int32
	problem string
	// JobSet: stageOf, when the replicated jobs do not all start at once
	// (startupPolicyOrder InOrder, or dependsOn), maps each to the name of
	// its stage, the first replicated job of those that start with it: a
	// stage is a gang, of parts[stage] members. nil when they all start at
	// once, as one gang.
	stageOf map[string]string
	parts   map[string]int32
	// leaders counts the jobs with exclusive placement, by stage and in
	// all.
	leaders     int64
	leaderParts map[string]int32
	// followers are, by replicated job with exclusive placement, the
	// number of followers of each of its jobs.
	followers map[string]int
	// readyWorkers, for an mpi-operator MPIJob whose launcher the operator
	// creates once every worker is Ready, is the number of workers; 0
	// otherwise. launcher is then its launcher, as a pod made from the
	// replica spec's template (nil if the template cannot be read), whose
	// room the gang finds with the workers'.
	readyWorkers int32
	launcher     *corev1.Pod
	// leaderFirst, for a LeaderWorkerSet whose controller creates a
	// group's workers only once its leader is Ready (startupPolicy
	// LeaderReady) or bound (exclusive placement), says when; "" otherwise.
	// worker is then a worker, as a pod made from the workerTemplate (nil if
	// it cannot be read), and exclusive the topology key of exclusive
	// placement, if any.
	leaderFirst string
	worker      *corev1.Pod
	exclusive   string
}

// jobInfo is what the store keeps of a batch Job.
type jobInfo struct {
	uid     types.UID
	indexed bool
	// controller is the Job's own controller (a JobSet, an MPIJob), if any.
	controller *metav1.OwnerReference
	min        int32
	problem    string
}

// pdbInfo is what the store keeps of a PodDisruptionBudget that makes a
// gang: an integer minAvailable of at least 2 and a valid selector.
type pdbInfo struct {
	name     string
	uid      types.UID
	selector labels.Selector
	min      int32
}

// ownerState is the store's part for derived gangs. Only the loop goroutine
// uses it.
type ownerState struct {
	objects map[objectKey]*ownerObject
	jobs    map[string]*jobInfo   // namespace/name
	pdbs    map[string][]*pdbInfo // namespace -> sorted by name
	// candidates are our pods that name no gang, by namespace: those whose
	// gang may change when a workload comes or goes.
	candidates map[string]map[types.UID]bool
	// requested: when the creation of a gang's PodGroup was last handed
	// the writer; failed: why it last failed. By gang key.
	requested map[string]time.Time
	failed    map[string]string
}

func newOwnerState() *ownerState {
	return &ownerState{
		objects:    map[objectKey]*ownerObject{},
		jobs:       map[string]*jobInfo{},
		pdbs:       map[string][]*pdbInfo{},
		candidates: map[string]map[types.UID]bool{},
		requested:  map[string]time.Time{},
		failed:     map[string]string{},
	}
}

// forget drops a deleted pod from the candidates.
func (o *ownerState) forget(pod *corev1.Pod) {
	if c := o.candidates[pod.Namespace]; c != nil {
		delete(c, pod.UID)
		if len(c) == 0 {
			delete(o.candidates, pod.Namespace)
		}
	}
}

// ownerMembership is the membership of one of our pods, m being what its
// own labels and annotations say (MembershipOf): the gang of its workload
// when it names none.
func (s *Store) ownerMembership(pod *corev1.Pod, m Membership) Membership {
	if m.Kind != Single {
		s.owners.forget(pod)
		return m
	}
	c := s.owners.candidates[pod.Namespace]
	if c == nil {
		c = map[types.UID]bool{}
		s.owners.candidates[pod.Namespace] = c
	}
	c[pod.UID] = true
	if d := s.derive(pod); d != nil {
		return Membership{Kind: ByPodGroup, Name: d.pgName}
	}
	return m
}

// rekey moves the candidates of namespace into the gangs their workloads
// make now: a workload or PodDisruptionBudget came, went or changed.
//
// It counts as a change to every gang's view (Store.epoch): the workloads it
// read may give gangs their minMember or a reason to wait.
func (s *Store) rekey(namespace string) {
	s.epoch++
	for uid := range s.owners.candidates[namespace] {
		p := s.pods[uid]
		if p == nil || p.gang == "" {
			delete(s.owners.candidates[namespace], uid)
			continue
		}
		m := s.ownerMembership(p.pod, Membership{Kind: Single, Name: p.pod.Name})
		key := m.GangKey(namespace)
		if key == p.gang {
			continue
		}
		s.leaveGang(p, uid)
		p.gang = key
		g := s.gangs[key]
		if g == nil {
			g = &gangInfo{key: key, namespace: namespace, name: m.Name, membership: m, members: map[types.UID]*podInfo{}}
			s.gangs[key] = g
		}
		g.members[uid] = p
	}
	if len(s.owners.candidates[namespace]) == 0 {
		delete(s.owners.candidates, namespace)
	}
}

// derivation is a pod's gang as its workload makes it.
type derivation struct {
	owner  ownerRef
	pgName string
	// min is the gang's minMember, 0 while unknown.
	min int32
	// wait says what the scheduler has not read yet; problem what is wrong
	// with the workload. Either keeps the PodGroup from being created.
	wait, problem string
}

// derive finds the workload gang of pod, or nil. It reads only the store.
func (s *Store) derive(pod *corev1.Pod) *derivation {
	ns := pod.Namespace
	if js := pod.Labels[labelJobSetName]; js != "" {
		return s.deriveJobSet(pod, js)
	}
	if lws := pod.Labels[labelLWSName]; lws != "" {
		d := &derivation{owner: ownerRef{apiVersion: "leaderworkerset.x-k8s.io/v1", kind: kindLWS, namespace: ns, name: lws}}
		idx := pod.Labels[labelLWSGroupIndex]
		if !isDigits(idx) {
			d.pgName = derivedName("lws", lws)
			d.problem = fmt.Sprintf("pod %s: label %s=%q is not a group index", pod.Name, labelLWSGroupIndex, idx)
			return d
		}
		d.pgName = derivedName("lws", lws+"-"+idx)
		raw, ok := pod.Annotations[annotationLWSSize]
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		switch {
		case !ok:
			d.problem = fmt.Sprintf("pod %s has no annotation %s", pod.Name, annotationLWSSize)
		case err != nil:
			d.problem = fmt.Sprintf("pod %s: annotation %s=%q is not an integer", pod.Name, annotationLWSSize, raw)
		default:
			d.min, d.problem = checkMin(fmt.Sprintf("pod %s: annotation %s", pod.Name, annotationLWSSize), n)
		}
		s.ownerObject(d, "leaderworkerset.x-k8s.io", false)
		return d
	}
	if job := pod.Labels[labelKubeflowJobName]; job != "" {
		if d := s.deriveKubeflow(pod, job); d != nil {
			return d
		}
	}
	if rc := pod.Labels[labelRayCluster]; rc != "" {
		d := &derivation{owner: ownerRef{apiVersion: "ray.io/v1", kind: kindRayCluster, namespace: ns, name: rc},
			pgName: derivedName("raycluster", rc)}
		s.ownerObject(d, "ray.io", true)
		return d
	}
	ctrl := metav1.GetControllerOf(pod)
	if _, indexed := pod.Annotations[annotationJobIndex]; indexed && ctrl != nil && ctrl.APIVersion == "batch/v1" && ctrl.Kind == kindJob {
		j := s.owners.jobs[ns+"/"+ctrl.Name]
		switch {
		case j == nil || j.uid != ctrl.UID:
			return &derivation{owner: ownerRef{apiVersion: "batch/v1", kind: kindJob, namespace: ns, name: ctrl.Name, uid: ctrl.UID},
				pgName: derivedName("job", ctrl.Name),
				wait:   fmt.Sprintf("Job %s/%s is not in the scheduler's cache yet", ns, ctrl.Name)}
		case j.indexed && (j.controller == nil || j.controller.Kind != kindJobSet):
			return &derivation{owner: ownerRef{apiVersion: "batch/v1", kind: kindJob, namespace: ns, name: ctrl.Name, uid: j.uid},
				pgName: derivedName("job", ctrl.Name), min: j.min, problem: j.problem}
		}
	}
	if ctrl != nil {
		switch ctrl.Kind {
		case "ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController":
			return nil
		}
	}
	set := labels.Set(pod.Labels)
	for _, b := range s.owners.pdbs[ns] {
		if b.selector.Matches(set) {
			return &derivation{owner: ownerRef{apiVersion: "policy/v1", kind: kindPDB, namespace: ns, name: b.name, uid: b.uid},
				pgName: derivedName("pdb", b.name), min: b.min}
		}
	}
	return nil
}

func (s *Store) deriveJobSet(pod *corev1.Pod, js string) *derivation {
	d := &derivation{owner: ownerRef{apiVersion: "jobset.x-k8s.io/v1alpha2", kind: kindJobSet, namespace: pod.Namespace, name: js},
		pgName: derivedName("jobset", js)}
	o := s.ownerObject(d, "jobset.x-k8s.io", true)
	if o == nil || o.problem != "" {
		return d
	}
	leadersFirst := pod.Annotations[annotationJobSetExclusive] != "" && pod.Annotations[annotationJobSetNodeSel] == ""
	if o.stageOf == nil {
		if leadersFirst {
			d.min, d.problem = checkMin("its exclusive placement (one leader a job)", o.leaders)
		}
		return d
	}
	rj := pod.Labels[labelJobSetReplicatedJob]
	stage, ok := o.stageOf[rj]
	if !ok {
		d.pgName = derivedName("jobset", js, rj)
		d.min, d.problem = 0, fmt.Sprintf("pod %s: JobSet %s/%s has no replicated job %q", pod.Name, pod.Namespace, js, rj)
		return d
	}
	d.pgName = derivedName("jobset", js, stage)
	n := o.parts[stage]
	if leadersFirst {
		n = o.leaderParts[stage]
	}
	what := fmt.Sprintf("replicated job %q", stage)
	if stage != rj {
		what = fmt.Sprintf("replicated jobs %q and %q, which start together", stage, rj)
	}
	d.min, d.problem = checkMin(what, int64(n))
	return d
}

// deriveKubeflow finds the Kubeflow job of pod: its controller, or for
// mpi-operator's launcher (whose controller is a batch Job) the MPIJob the
// label names.
func (s *Store) deriveKubeflow(pod *corev1.Pod, job string) *derivation {
	ref := ownerRef{namespace: pod.Namespace}
	if ctrl := metav1.GetControllerOf(pod); ctrl != nil && strings.HasPrefix(ctrl.APIVersion, "kubeflow.org/") && kubeflowReplicaSpecs[ctrl.Kind] != "" {
		ref.apiVersion, ref.kind, ref.name, ref.uid = ctrl.APIVersion, ctrl.Kind, ctrl.Name, ctrl.UID
	} else if pod.Labels[labelKubeflowOperator] == "mpi-operator" {
		ref.apiVersion, ref.kind, ref.name = "kubeflow.org/v2beta1", kindMPIJob, job
	} else {
		return nil
	}
	d := &derivation{owner: ref, pgName: derivedName(strings.ToLower(ref.kind), ref.name)}
	s.ownerObject(d, "kubeflow.org", true)
	return d
}

// ownerObject completes d from the cached object of its owner: its UID
// and, when withMin, the gang's minMember or problem; or says that d waits
// for it. It returns the object, nil if not cached.
func (s *Store) ownerObject(d *derivation, group string, withMin bool) *ownerObject {
	o := s.owners.objects[objectKey{group, d.owner.kind, d.owner.namespace, d.owner.name}]
	if o == nil || (d.owner.uid != "" && o.ref.uid != d.owner.uid) {
		d.wait = fmt.Sprintf("%s is not in the scheduler's cache yet (is its API %s served and readable?)", d.owner, group)
		return nil
	}
	d.owner.apiVersion, d.owner.uid = o.ref.apiVersion, o.ref.uid
	if withMin {
		d.min, d.problem = o.min, o.problem
	}
	return o
}

// derivedGang returns the derivation of gang g if its PodGroup is one
// derived from its members' workload, nil otherwise. It asks the member
// first by name.
func (s *Store) derivedGang(g *gangInfo) (*derivation, *podInfo) {
	if g.membership.Kind != ByPodGroup {
		return nil, nil
	}
	var first *podInfo
	for _, p := range g.members {
		if first == nil || p.pod.Name < first.pod.Name {
			first = p
		}
	}
	if first == nil || MembershipOf(first.pod).Kind != Single {
		return nil, nil
	}
	d := s.derive(first.pod)
	if d == nil || d.pgName != g.name {
		return nil, nil
	}
	return d, first
}

// explainDerived says, for a gang whose PodGroup does not exist, that it
// is derived from a workload and why it is not created yet. It runs from
// Store.view; v already says the PodGroup is missing.
func (s *Store) explainDerived(g *gangInfo, v *gangView) {
	if s.unreadable[g.key] != "" {
		return
	}
	d, _ := s.derivedGang(g)
	if d == nil {
		return
	}
	switch {
	case d.problem != "":
		v.invalid = fmt.Sprintf("PodGroup %s/%s cannot be created from %s: %s", g.namespace, g.name, d.owner, d.problem)
	case d.wait != "":
		v.invalid = fmt.Sprintf("PodGroup %s/%s is to be created from %s, which the scheduler waits for: %s", g.namespace, g.name, d.owner, d.wait)
	default:
		v.invalid = fmt.Sprintf("PodGroup %s/%s (minMember %d) is being created from %s; its pods wait until it exists",
			g.namespace, g.name, d.min, d.owner)
		if why := s.owners.failed[g.key]; why != "" {
			v.invalid += "; the latest attempt failed: " + why
		}
	}
}

// derivedPodGroup is the PodGroup Phalanx creates for gang g of
// derivation d, whose first member is first.
func derivedPodGroup(g *gangInfo, d *derivation, first *podInfo) *v1alpha1.PodGroup {
	f := false
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.pgName, Namespace: g.namespace,
			Labels: map[string]string{LabelDerivedFromKind: d.owner.kind},
			Annotations: map[string]string{
				AnnotationDerivedFrom:   d.owner.kind + "/" + d.owner.name,
				AnnotationSchedulerName: first.pod.Spec.SchedulerName,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: d.owner.apiVersion, Kind: d.owner.kind, Name: d.owner.name,
				UID: d.owner.uid, Controller: &f, BlockOwnerDeletion: &f}},
		},
		Spec: v1alpha1.PodGroupSpec{MinMember: d.min},
	}
	if q, _ := memberAnnotation(g, AnnotationQueue); q != "" {
		pg.Spec.Queue = q
	}
	// The priority class of the member of highest priority (then first by
	// name): admission resolved the members' classes into priorities.
	var best *corev1.Pod
	for _, p := range g.members {
		if p.pod.Spec.PriorityClassName == "" {
			continue
		}
		if best == nil || podPriority(p.pod) > podPriority(best) || podPriority(p.pod) == podPriority(best) && p.pod.Name < best.Name {
			best = p.pod
		}
	}
	if best != nil {
		pg.Spec.PriorityClassName = best.Spec.PriorityClassName
	}
	return pg
}

func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// kindDerivedPodGroup is the writer's kind (and metric label) of the
// creation of a derived PodGroup.
const kindDerivedPodGroup = "DerivedPodGroup"

// createDerivedPodGroups hands the writer the creation of the PodGroup of
// every derived gang that has none and whose workload is read, unless it
// was handed recently. It runs on the loop after each snapshot; the call
// itself runs on a writer worker. Only our pods make gangs, so only the
// instance that serves them creates their PodGroup.
func (s *Scheduler) createDerivedPodGroups(ctx context.Context, views map[string]*gangView) {
	o := s.store.owners
	now := s.opts.Now()
	for key := range o.requested {
		if v := views[key]; v == nil || !v.missingPG {
			delete(o.requested, key)
			delete(o.failed, key)
			s.store.touch(key)
		}
	}
	for key, v := range views {
		if !v.missingPG || s.store.unreadable[key] != "" {
			continue
		}
		if at, ok := o.requested[key]; ok && now.Sub(at) < recreateAfter {
			continue
		}
		d, first := s.store.derivedGang(v.info)
		if d == nil || d.wait != "" || d.problem != "" || d.owner.uid == "" || d.min < 1 {
			continue
		}
		pg := derivedPodGroup(v.info, d, first)
		o.requested[key] = now
		s.writer.put(writeKey{kindDerivedPodGroup, key}, writeJob{do: func(ctx context.Context) error {
			_, err := s.client.SchedulingV1alpha1().PodGroups(pg.Namespace).Create(ctx, pg, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
			why := ""
			if err != nil {
				why = err.Error()
			} else {
				klog.FromContext(ctx).V(2).Info("Created a PodGroup derived from a workload", "podGroup", klog.KObj(pg),
					"derivedFrom", pg.Annotations[AnnotationDerivedFrom], "minMember", pg.Spec.MinMember)
			}
			s.send(ctx, func() {
				if why == "" {
					delete(o.failed, key)
				} else if _, ok := o.requested[key]; ok {
					o.failed[key] = why
				}
				s.store.touch(key)
			})
			return err
		}})
	}
}

// checkMin checks a minMember read from what: at least 1, at most the
// PodGroup's bound.
func checkMin(what string, n int64) (int32, string) {
	switch {
	case n < 1:
		return 0, fmt.Sprintf("%s makes a gang of %d pods; at least 1 is needed", what, n)
	case n > maxDerivedMin:
		return 0, fmt.Sprintf("%s makes a gang of %d pods, more than the %d a PodGroup may have", what, n, maxDerivedMin)
	}
	return int32(n), ""
}

func isDigits(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// derivedName is the name of a derived PodGroup: prefix-part-part..., a
// DNS-1123 label. A name that would be longer than 63 characters, that
// had to be changed to be one, or that joins several parts (which could
// otherwise collide: JobSet a-b and replicated job c of JobSet a-b-c... or
// a, b-c) keeps a readable head and ends with 8 hex digits of a hash of
// the parts.
func derivedName(prefix string, parts ...string) string {
	raw := prefix + "-" + strings.Join(parts, "-")
	var b strings.Builder
	for _, c := range strings.ToLower(raw) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	clean := strings.TrimRight(b.String(), "-")
	if clean == raw && len(parts) == 1 && len(raw) <= validation.DNS1123LabelMaxLength {
		return raw
	}
	sum := sha256.Sum256([]byte(prefix + "\x00" + strings.Join(parts, "\x00")))
	const hashLen = 8
	head := clean[:min(len(clean), validation.DNS1123LabelMaxLength-hashLen-1)]
	return strings.TrimRight(head, "-") + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// Reading workload objects.

// replicaSpec is a Kubeflow replica spec, as far as Phalanx reads it.
type replicaSpec struct {
	Replicas *int32 `json:"replicas,omitempty"`
}

// launcherTemplate reads the pod template of the Launcher replica spec of
// mpi-operator's MPIJob spec, as the pod it makes; nil if there is none or
// it cannot be read. The name is the launcher's, as mpi-operator names it.
func launcherTemplate(spec map[string]any, ns, job string) *corev1.Pod {
	raw, found, err := unstructured.NestedMap(spec, "mpiReplicaSpecs", "Launcher", "template")
	if err != nil || !found {
		return nil
	}
	var t corev1.PodTemplateSpec
	if fromUnstructured(raw, "spec.mpiReplicaSpecs[Launcher].template", &t) != nil {
		return nil
	}
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	pod.Name, pod.Namespace = job+"-launcher", ns
	return pod
}

// kubeflowSpec is the spec of a Kubeflow job of any kind.
type kubeflowSpec struct {
	// LauncherCreationPolicy is mpi-operator's (v2beta1): WaitForWorkersReady
	// creates the launcher only once every worker is Ready.
	LauncherCreationPolicy string `json:"launcherCreationPolicy,omitempty"`
	RunPolicy              struct {
		SchedulingPolicy *struct {
			MinAvailable *int32 `json:"minAvailable,omitempty"`
		} `json:"schedulingPolicy,omitempty"`
	} `json:"runPolicy"`
	ElasticPolicy *struct {
		MinReplicas *int32 `json:"minReplicas,omitempty"`
	} `json:"elasticPolicy,omitempty"`
	TF      map[string]*replicaSpec `json:"tfReplicaSpecs,omitempty"`
	PyTorch map[string]*replicaSpec `json:"pytorchReplicaSpecs,omitempty"`
	MPI     map[string]*replicaSpec `json:"mpiReplicaSpecs,omitempty"`
	XGB     map[string]*replicaSpec `json:"xgbReplicaSpecs,omitempty"`
	Paddle  map[string]*replicaSpec `json:"paddleReplicaSpecs,omitempty"`
	JAX     map[string]*replicaSpec `json:"jaxReplicaSpecs,omitempty"`
}

// replicaCount is the replicas of replica type t, nil if unset.
func replicaCount(replicas map[string]*replicaSpec, t string) *int32 {
	if rs := replicas[t]; rs != nil {
		return rs.Replicas
	}
	return nil
}

func (k *kubeflowSpec) replicas(kind string) map[string]*replicaSpec {
	switch kind {
	case "TFJob":
		return k.TF
	case "PyTorchJob":
		return k.PyTorch
	case kindMPIJob:
		return k.MPI
	case "XGBoostJob":
		return k.XGB
	case "PaddleJob":
		return k.Paddle
	case "JAXJob":
		return k.JAX
	}
	return nil
}

// jobSetSpec is the spec of a JobSet, as far as Phalanx reads it.
type jobSetSpec struct {
	ReplicatedJobs []jobSetReplicatedJob `json:"replicatedJobs"`
	StartupPolicy  *struct {
		StartupPolicyOrder string `json:"startupPolicyOrder,omitempty"`
	} `json:"startupPolicy,omitempty"`
}

// jobSetReplicatedJob is a replicated job of a JobSet, as far as Phalanx
// reads it.
type jobSetReplicatedJob struct {
	Name     string `json:"name"`
	Replicas *int32 `json:"replicas,omitempty"`
	Template struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
		Spec struct {
			Parallelism *int32 `json:"parallelism,omitempty"`
			Completions *int32 `json:"completions,omitempty"`
		} `json:"spec"`
	} `json:"template"`
	// DependsOn: the replicated job's jobs are created once the one it
	// names reaches Status (Ready or Complete); at most one.
	DependsOn []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"dependsOn,omitempty"`
}

// lwsSpec is the spec of a LeaderWorkerSet, as far as Phalanx reads it.
type lwsSpec struct {
	StartupPolicy        string `json:"startupPolicy,omitempty"`
	LeaderWorkerTemplate struct {
		WorkerTemplate corev1.PodTemplateSpec `json:"workerTemplate"`
	} `json:"leaderWorkerTemplate"`
}

// readLWS reads whether the LeaderWorkerSet's controller creates a group's
// workers only after its leader: with startupPolicy LeaderReady, once the
// leader is Ready; with exclusive placement (the annotation
// leaderworkerset.sigs.k8s.io/exclusive-topology), once it is bound, in its
// domain. A spec it cannot read leaves the group's gang as its pods say.
func readLWS(o *ownerObject, u *unstructured.Unstructured) {
	o.exclusive = u.GetAnnotations()[annotationLWSExclusive]
	spec, found, err := unstructured.NestedMap(u.Object, "spec")
	var ls lwsSpec
	if err != nil || !found || fromUnstructured(spec, "spec", &ls) != nil {
		return
	}
	switch {
	case ls.StartupPolicy == "LeaderReady":
		o.leaderFirst = "once its leader is Ready"
	case o.exclusive != "":
		o.leaderFirst = "once its leader is bound"
	default:
		return
	}
	t := ls.LeaderWorkerTemplate.WorkerTemplate
	o.worker = &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	o.worker.Namespace = u.GetNamespace()
}

// rayClusterSpec is the spec of a RayCluster, as far as Phalanx reads it.
type rayClusterSpec struct {
	WorkerGroupSpecs []struct {
		GroupName   string `json:"groupName"`
		Suspend     *bool  `json:"suspend,omitempty"`
		MinReplicas *int32 `json:"minReplicas,omitempty"`
		NumOfHosts  *int32 `json:"numOfHosts,omitempty"`
	} `json:"workerGroupSpecs,omitempty"`
}

// counter sums pod counts read from an object's fields, in int64 so that
// no sum of int32 fields overflows; the first negative field is the
// problem.
type counter struct {
	sum     int64
	problem string
}

// add adds n x times (x >= 0 once checked) of field.
func (c *counter) add(field string, n *int32, def int32, times int64) {
	v := def
	if n != nil {
		v = *n
	}
	if v < 0 && c.problem == "" {
		c.problem = fmt.Sprintf("%s is %d, below 0", field, v)
	}
	if v > 0 && times > 0 {
		c.sum = min(c.sum+int64(v)*times, 1<<40) // each term is below 2^62: no overflow
	}
}

// readOwner reads the gang a workload object of kind, read through gvr,
// makes. It never fails: what it cannot read is the object's problem.
func readOwner(gvr schema.GroupVersionResource, kind string, u *unstructured.Unstructured) *ownerObject {
	o := &ownerObject{ref: ownerRef{apiVersion: gvr.GroupVersion().String(), kind: kind,
		namespace: u.GetNamespace(), name: u.GetName(), uid: u.GetUID()}}
	if kind == kindLWS {
		readLWS(o, u) // its pods say the size of their group
		return o
	}
	spec, found, err := unstructured.NestedMap(u.Object, "spec")
	switch {
	case err != nil:
		o.problem = "spec: " + err.Error()
		return o
	case !found:
		o.problem = "it has no spec"
		return o
	}
	var n int64
	var c counter
	field := func(f string) string { return "spec." + f }
	switch kind {
	case kindJobSet:
		var js jobSetSpec
		if err := fromUnstructured(spec, "spec", &js); err != nil {
			o.problem = err.Error()
			return o
		}
		if len(js.ReplicatedJobs) == 0 {
			o.problem = "spec.replicatedJobs is empty"
			return o
		}
		inOrder := js.StartupPolicy != nil && js.StartupPolicy.StartupPolicyOrder == "InOrder"
		if inOrder || slices.ContainsFunc(js.ReplicatedJobs, func(rj jobSetReplicatedJob) bool { return len(rj.DependsOn) > 0 }) {
			o.stageOf = map[string]string{}
		}
		stageBy := map[string]string{} // dependsOn -> its stage
		o.parts, o.leaderParts = map[string]int32{}, map[string]int32{}
		exclusive := u.GetAnnotations()[annotationJobSetExclusive] != ""
		for i, rj := range js.ReplicatedJobs {
			path := fmt.Sprintf("spec.replicatedJobs[%d]", i)
			replicas, pods := int64(1), int64(1)
			if rj.Replicas != nil {
				replicas = int64(*rj.Replicas)
			}
			if p := rj.Template.Spec.Parallelism; p != nil {
				pods = int64(*p)
			}
			for _, f := range []struct {
				name string
				v    *int32
			}{{".replicas", rj.Replicas}, {".template.spec.parallelism", rj.Template.Spec.Parallelism},
				{".template.spec.completions", rj.Template.Spec.Completions}} {
				if f.v != nil && *f.v < 0 {
					o.problem = fmt.Sprintf("%s%s is %d, below 0", path, f.name, *f.v)
					return o
				}
			}
			if cmpl := rj.Template.Spec.Completions; cmpl != nil {
				pods = min(pods, int64(*cmpl)) // a Job runs at most completions pods at once
			}
			// With dependsOn, the JobSet controller creates a replicated
			// job's jobs once the one it names reaches the status it
			// names: those naming the same start together.
			stage := rj.Name
			if o.stageOf != nil && !inOrder {
				var after string
				if len(rj.DependsOn) > 0 {
					after = rj.DependsOn[0].Name + "\x00" + rj.DependsOn[0].Status
				}
				if first, ok := stageBy[after]; ok {
					stage = first
				} else {
					stageBy[after] = rj.Name
				}
			}
			if o.stageOf != nil {
				o.stageOf[rj.Name] = stage
			}
			part := replicas * pods // both within int32: no overflow
			o.parts[stage] = int32(min(int64(o.parts[stage])+part, math.MaxInt32))
			if exclusive || rj.Template.Metadata.Annotations[annotationJobSetExclusive] != "" {
				o.leaderParts[stage] = int32(min(int64(o.leaderParts[stage])+replicas, math.MaxInt32))
				o.leaders += replicas
				if pods > 1 {
					if o.followers == nil {
						o.followers = map[string]int{}
					}
					o.followers[rj.Name] = int(min(pods-1, maxComing+1))
				}
			}
			c.sum = min(c.sum+part, 1<<40)
		}
		n = c.sum
	case kindRayCluster:
		var rc rayClusterSpec
		if err := fromUnstructured(spec, "spec", &rc); err != nil {
			o.problem = err.Error()
			return o
		}
		c.sum = 1 // the head
		for i, wg := range rc.WorkerGroupSpecs {
			if wg.Suspend != nil && *wg.Suspend {
				continue
			}
			path := fmt.Sprintf("spec.workerGroupSpecs[%d]", i)
			hosts := int64(1)
			if wg.NumOfHosts != nil {
				hosts = int64(*wg.NumOfHosts)
				if hosts < 1 && c.problem == "" {
					c.problem = fmt.Sprintf("%s.numOfHosts is %d, below 1", path, hosts)
				}
			}
			c.add(path+".minReplicas", wg.MinReplicas, 0, hosts)
		}
		n = c.sum
	default:
		key := kubeflowReplicaSpecs[kind]
		if key == "" {
			o.problem = "Phalanx does not read the kind " + kind
			return o
		}
		var kf kubeflowSpec
		if err := fromUnstructured(spec, "spec", &kf); err != nil {
			o.problem = err.Error()
			return o
		}
		replicas := kf.replicas(kind)
		if len(replicas) == 0 {
			o.problem = field(key) + " is empty"
			return o
		}
		names := make([]string, 0, len(replicas))
		for t := range replicas {
			names = append(names, t)
		}
		sort.Strings(names)
		count := func(t string, def int32) {
			c.add(fmt.Sprintf("spec.%s[%s].replicas", key, t), replicaCount(replicas, t), def, 1)
		}
		// mpi-operator's launcher may come only once the workers are Ready:
		// the gang must then start without it (launcherAfterWorkers counts
		// it once it exists).
		waitForWorkers := kind == kindMPIJob && gvr.Version == "v2beta1" && kf.LauncherCreationPolicy == mpiWaitForWorkersReady
		var workers counter
		if waitForWorkers {
			workers.add(fmt.Sprintf("spec.%s[Worker].replicas", key), replicaCount(replicas, "Worker"), 0, 1)
			if workers.problem == "" && workers.sum <= maxDerivedMin {
				o.readyWorkers = int32(workers.sum)
				o.launcher = launcherTemplate(spec, u.GetNamespace(), u.GetName())
			}
		}
		switch {
		case kf.RunPolicy.SchedulingPolicy != nil && kf.RunPolicy.SchedulingPolicy.MinAvailable != nil:
			c.add("spec.runPolicy.schedulingPolicy.minAvailable", kf.RunPolicy.SchedulingPolicy.MinAvailable, 0, 1)
			if waitForWorkers && workers.problem == "" && c.sum > max(workers.sum, 1) {
				o.problem = fmt.Sprintf("spec.runPolicy.schedulingPolicy.minAvailable is %d, but with launcherCreationPolicy %s "+
					"mpi-operator creates the launcher only once the %d workers are Ready: the gang could never be whole; "+
					"set minAvailable to at most %d", c.sum, mpiWaitForWorkersReady, workers.sum, max(workers.sum, 1))
				return o
			}
		case waitForWorkers:
			c = workers
			c.sum = max(c.sum, 1) // no worker: the launcher comes at once, and is the gang
		case kind == kindMPIJob && gvr.Version == "v2beta1":
			c.sum = 1 // the launcher
			count("Worker", 0)
		case (kind == "PyTorchJob" || kind == "PaddleJob") && kf.ElasticPolicy != nil && kf.ElasticPolicy.MinReplicas != nil:
			c.add("spec.elasticPolicy.minReplicas", kf.ElasticPolicy.MinReplicas, 0, 1)
			if _, ok := replicas["Master"]; ok {
				count("Master", 1)
			}
		default:
			for _, t := range names {
				count(t, 1)
			}
		}
		n = c.sum
	}
	if c.problem != "" {
		o.problem = c.problem
		return o
	}
	o.min, o.problem = checkMin("its spec", n)
	return o
}

// SetOwner adds or replaces a workload object of kind read through gvr,
// and moves the pods whose gang it changes.
func (s *Store) SetOwner(gvr schema.GroupVersionResource, kind string, u *unstructured.Unstructured) {
	o := readOwner(gvr, kind, u)
	key := objectKey{gvr.Group, kind, u.GetNamespace(), u.GetName()}
	old := s.owners.objects[key]
	s.owners.objects[key] = o
	if old == nil || !reflect.DeepEqual(*old, *o) {
		s.epoch++ // a status update changes no gang
	}
	// Only a JobSet's stages decide which gang a pod is in.
	if kind == kindJobSet && !reflect.DeepEqual(stagesOf(old), o.stageOf) {
		s.rekey(u.GetNamespace())
	}
}

// DeleteOwner forgets a workload object.
func (s *Store) DeleteOwner(gvr schema.GroupVersionResource, kind string, u *unstructured.Unstructured) {
	key := objectKey{gvr.Group, kind, u.GetNamespace(), u.GetName()}
	old := s.owners.objects[key]
	if old == nil || old.ref.uid != u.GetUID() && u.GetUID() != "" {
		return
	}
	delete(s.owners.objects, key)
	s.epoch++
	if old.stageOf != nil {
		s.rekey(u.GetNamespace())
	}
}

// stagesOf is o's stages, nil for no object.
func stagesOf(o *ownerObject) map[string]string {
	if o == nil {
		return nil
	}
	return o.stageOf
}

// readJob reads what a batch Job says of its gang.
func readJob(j *batchv1.Job) *jobInfo {
	info := &jobInfo{uid: j.UID, controller: metav1.GetControllerOf(j),
		indexed: j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion}
	n := int64(1)
	what := "spec.parallelism"
	if p := j.Spec.Parallelism; p != nil {
		n = int64(*p)
	}
	if c := j.Spec.Completions; c != nil && int64(*c) < n {
		n, what = int64(*c), "spec.completions"
	}
	info.min, info.problem = checkMin(what, n)
	return info
}

// SetJob adds or replaces a batch Job, and moves the pods whose gang it
// changes.
func (s *Store) SetJob(j *batchv1.Job) {
	key := j.Namespace + "/" + j.Name
	info := readJob(j)
	old := s.owners.jobs[key]
	s.owners.jobs[key] = info
	if old != nil && (old.min != info.min || old.problem != info.problem) {
		s.epoch++ // a gang's minMember changed (rekey counts the rest); a status update changes nothing
	}
	if old == nil || old.uid != info.uid || old.indexed != info.indexed || controlledBy(old.controller) != controlledBy(info.controller) {
		s.rekey(j.Namespace)
	}
}

func controlledBy(r *metav1.OwnerReference) string {
	if r == nil {
		return ""
	}
	return r.APIVersion + "/" + r.Kind
}

// DeleteJob forgets a batch Job.
func (s *Store) DeleteJob(namespace, name string) {
	if _, ok := s.owners.jobs[namespace+"/"+name]; ok {
		delete(s.owners.jobs, namespace+"/"+name)
		s.rekey(namespace)
	}
}

// readPDB reads the gang a PodDisruptionBudget makes, nil if none.
func readPDB(b *policyv1.PodDisruptionBudget) *pdbInfo {
	ma := b.Spec.MinAvailable
	if ma == nil || ma.Type != intstr.Int || ma.IntVal < 2 || ma.IntVal > maxDerivedMin || b.Spec.Selector == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	if err != nil {
		return nil
	}
	return &pdbInfo{name: b.Name, uid: b.UID, selector: sel, min: ma.IntVal}
}

// SetPDB adds or replaces a PodDisruptionBudget, and moves the pods whose
// gang it changes.
func (s *Store) SetPDB(b *policyv1.PodDisruptionBudget) {
	info := readPDB(b)
	list := s.owners.pdbs[b.Namespace]
	i := sort.Search(len(list), func(i int) bool { return list[i].name >= b.Name })
	exists := i < len(list) && list[i].name == b.Name
	switch {
	case exists && info == nil:
		list = append(list[:i], list[i+1:]...)
	case exists:
		old := list[i]
		list[i] = info
		if old.uid == info.uid && old.selector.String() == info.selector.String() {
			s.owners.pdbs[b.Namespace] = list
			if old.min != info.min {
				s.epoch++ // the same pods, the same gang, another minMember
			}
			return // a status update changes nothing
		}
	case info != nil:
		list = append(list, nil)
		copy(list[i+1:], list[i:])
		list[i] = info
	default:
		return
	}
	if len(list) == 0 {
		delete(s.owners.pdbs, b.Namespace)
	} else {
		s.owners.pdbs[b.Namespace] = list
	}
	s.rekey(b.Namespace)
}

// DeletePDB forgets a PodDisruptionBudget.
func (s *Store) DeletePDB(namespace, name string) {
	s.SetPDB(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
}

// Wiring.

// ownerAPIs are the workload APIs read where the cluster serves them, with
// what their objects do to the store (apis.go starts their informers).
func (s *Scheduler) ownerAPIs() []optionalAPI {
	apis := make([]optionalAPI, 0, len(OwnerKinds))
	for _, k := range OwnerKinds {
		apis = append(apis, optionalAPI{gvr: k.gvr,
			set: func(obj any) {
				if u, ok := obj.(*unstructured.Unstructured); ok {
					s.store.SetOwner(k.gvr, k.kind, u)
				}
			},
			del: func(obj any) {
				if u, ok := obj.(*unstructured.Unstructured); ok {
					s.store.DeleteOwner(k.gvr, k.kind, u)
				}
			}})
	}
	return apis
}

// ownerHandlers read batch Jobs and PodDisruptionBudgets. The Jobs'
// informer keeps no pod template: their pods are read on their own.
func (s *Scheduler) ownerHandlers(kf informers.SharedInformerFactory) []handler {
	jobs := kf.Batch().V1().Jobs().Informer()
	_ = jobs.SetTransform(func(obj any) (any, error) {
		if j, ok := obj.(*batchv1.Job); ok {
			j = j.DeepCopy()
			j.ManagedFields, j.Spec.Template, j.Status = nil, corev1.PodTemplateSpec{}, batchv1.JobStatus{}
			return j, nil
		}
		return obj, nil
	})
	return []handler{
		{jobs,
			func(o any) {
				if j, ok := o.(*batchv1.Job); ok {
					s.store.SetJob(j)
				}
			},
			func(o any) {
				if j, ok := o.(*batchv1.Job); ok {
					s.store.DeleteJob(j.Namespace, j.Name)
				}
			}},
		{kf.Policy().V1().PodDisruptionBudgets().Informer(),
			func(o any) {
				if b, ok := o.(*policyv1.PodDisruptionBudget); ok {
					s.store.SetPDB(b)
				}
			},
			func(o any) {
				if b, ok := o.(*policyv1.PodDisruptionBudget); ok {
					s.store.DeletePDB(b.Namespace, b.Name)
				}
			}},
	}
}
