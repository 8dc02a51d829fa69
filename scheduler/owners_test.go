package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	phalanxfake "github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	"github.com/phalanx-sched/phalanx/core"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
)

// ownerKindOf returns the entry of OwnerKinds for kind at version.
func ownerKindOf(t testing.TB, kind, version string) ownerKind {
	t.Helper()
	for _, k := range OwnerKinds {
		if k.kind == kind && k.gvr.Version == version {
			return k
		}
	}
	t.Fatalf("no owner kind %s %s", kind, version)
	return ownerKind{}
}

// ownerObj is a workload object as a dynamic informer delivers it; spec
// is JSON, nil for none.
func ownerObj(t testing.TB, k ownerKind, name, spec string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k.gvr.GroupVersion().String(), "kind": k.kind,
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + strings.ToLower(k.kind) + "-" + name},
	}}
	if spec != "" {
		var v any
		if err := utiljson.Unmarshal([]byte(spec), &v); err != nil {
			t.Fatalf("spec %s: %v", spec, err)
		}
		u.Object["spec"] = v
	}
	return u
}

// ownedPod is one of our pods with labels, annotations (pairs of
// key, value) and, when ctrl is not nil, that controller.
func ownedPod(name string, ctrl *metav1.OwnerReference, labels, annotations map[string]string) *corev1.Pod {
	p := testPod(name).GPUs(1).Obj()
	p.Labels, p.Annotations = labels, annotations
	if ctrl != nil {
		t := true
		c := *ctrl
		c.Controller = &t
		p.OwnerReferences = []metav1.OwnerReference{c}
	}
	return p
}

func gangOf(s *Store, pod string) string {
	if p := s.pods[types.UID("uid-"+pod)]; p != nil {
		return p.gang
	}
	return "<no pod>"
}

func viewOf(t *testing.T, s *Store, key string) *gangView {
	t.Helper()
	_, views := s.Snapshot()
	v := views[key]
	if v == nil {
		t.Fatalf("no gang %s; gangs: %v", key, keysOf(views))
	}
	return v
}

func keysOf(views map[string]*gangView) []string {
	var out []string
	for k := range views {
		out = append(out, k)
	}
	return out
}

func TestOwnerDerivedName(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct {
		prefix string
		parts  []string
		want   string // "" : only checked to be a valid, hashed name
	}{
		{"job", []string{"train"}, "job-train"},
		{"lws", []string{"serve-0"}, "lws-serve-0"},
		{"pytorchjob", []string{"bert-large"}, "pytorchjob-bert-large"},
		{"job", []string{long}, ""},
		{"pdb", []string{"tf.job.v1"}, ""},
		{"jobset", []string{"a", "b-c"}, ""},
		{"jobset", []string{"a-b", "c"}, ""},
		{"job", []string{"UPPER"}, ""},
		{"job", []string{"trailing-"}, ""},
	} {
		got := derivedName(tc.prefix, tc.parts...)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("derivedName(%q, %q) = %q, not a DNS label: %v", tc.prefix, tc.parts, got, errs)
		}
		if got != derivedName(tc.prefix, tc.parts...) {
			t.Errorf("derivedName(%q, %q) is not deterministic", tc.prefix, tc.parts)
		}
		if !strings.HasPrefix(got, tc.prefix+"-") {
			t.Errorf("derivedName(%q, %q) = %q, which does not start with the kind", tc.prefix, tc.parts, got)
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("derivedName(%q, %q) = %q, want %q", tc.prefix, tc.parts, got, tc.want)
		}
	}
	// Parts that join to the same string make different names, and so do
	// long names that share their first 63 characters.
	for _, pair := range [][2]string{
		{derivedName("jobset", "a", "b-c"), derivedName("jobset", "a-b", "c")},
		{derivedName("job", long+"x"), derivedName("job", long+"y")},
		{derivedName("pdb", "a.b"), derivedName("pdb", "a-b")},
	} {
		if pair[0] == pair[1] {
			t.Errorf("two workloads share the PodGroup name %q", pair[0])
		}
	}
}

// TestOwnerReadMin: the minMember each kind of workload makes, and a clear
// problem for every malformed object.
func TestOwnerReadMin(t *testing.T) {
	for _, tc := range []struct {
		kind, version, spec string
		want                int32
		problem             string // a substring of the problem; "" : none
	}{
		// JobSet: sum of replicas x parallelism (default 1), capped by completions.
		{"JobSet", "v1alpha2", `{"replicatedJobs":[{"name":"w","replicas":2,"template":{"spec":{"parallelism":4}}},{"name":"d","template":{"spec":{}}}]}`, 9, ""},
		{"JobSet", "v1alpha2", `{"replicatedJobs":[{"name":"w","replicas":3,"template":{"spec":{"parallelism":4,"completions":2}}}]}`, 6, ""},
		{"JobSet", "v1alpha2", `{"replicatedJobs":[{"name":"w","replicas":-1,"template":{"spec":{}}}]}`, 0, "spec.replicatedJobs[0].replicas is -1"},
		{"JobSet", "v1alpha2", `{"replicatedJobs":[{"name":"w","replicas":1,"template":{"spec":{"parallelism":-3}}}]}`, 0, "parallelism is -3"},
		{"JobSet", "v1alpha2", `{"replicatedJobs":[{"name":"w","replicas":2147483648,"template":{"spec":{}}}]}`, 0, "spec.replicatedJobs[0].replicas: 2147483648 does not fit"},
		{"JobSet", "v1alpha2", `{"replicatedJobs":[{"name":"w","replicas":"3","template":{"spec":{}}}]}`, 0, "replicas"},
		{"JobSet", "v1alpha2", `{"replicatedJobs":[{"name":"w","replicas":50000,"template":{"spec":{"parallelism":50000}}}]}`, 0, "more than the 100000"},
		{"JobSet", "v1alpha2", `{"replicatedJobs":[{"name":"w","replicas":0,"template":{"spec":{}}}]}`, 0, "at least 1"},
		{"JobSet", "v1alpha2", `{"replicatedJobs":[]}`, 0, "replicatedJobs is empty"},
		{"JobSet", "v1alpha2", ``, 0, "no spec"},
		{"JobSet", "v1alpha2", `"spec"`, 0, "spec"},
		// Kubeflow v1: minAvailable, else elastic, else every replica.
		{"TFJob", "v1", `{"tfReplicaSpecs":{"PS":{"replicas":1},"Worker":{"replicas":3}}}`, 4, ""},
		{"TFJob", "v1", `{"tfReplicaSpecs":{"PS":{},"Worker":{"replicas":3}}}`, 4, ""},
		{"TFJob", "v1", `{"runPolicy":{"schedulingPolicy":{"minAvailable":2}},"tfReplicaSpecs":{"Worker":{"replicas":3}}}`, 2, ""},
		{"TFJob", "v1", `{"runPolicy":{"schedulingPolicy":{"minAvailable":0}},"tfReplicaSpecs":{"Worker":{"replicas":3}}}`, 0, "at least 1"},
		{"TFJob", "v1", `{"tfReplicaSpecs":{"Worker":{"replicas":-2}}}`, 0, "spec.tfReplicaSpecs[Worker].replicas is -2"},
		{"TFJob", "v1", `{"tfReplicaSpecs":{"Worker":{"replicas":1.5}}}`, 0, "not an integer"},
		{"TFJob", "v1", `{"pytorchReplicaSpecs":{"Worker":{"replicas":3}}}`, 0, "spec.tfReplicaSpecs is empty"},
		{"PyTorchJob", "v1", `{"pytorchReplicaSpecs":{"Master":{"replicas":1},"Worker":{"replicas":4}}}`, 5, ""},
		{"PyTorchJob", "v1", `{"elasticPolicy":{"minReplicas":2,"maxReplicas":8},"pytorchReplicaSpecs":{"Master":{"replicas":1},"Worker":{"replicas":4}}}`, 3, ""},
		{"PyTorchJob", "v1", `{"elasticPolicy":{"minReplicas":2},"pytorchReplicaSpecs":{"Worker":{"replicas":4}}}`, 2, ""},
		{"PyTorchJob", "v1", `{"elasticPolicy":{"minReplicas":-1},"pytorchReplicaSpecs":{"Worker":{"replicas":4}}}`, 0, "spec.elasticPolicy.minReplicas is -1"},
		{"MPIJob", "v1", `{"mpiReplicaSpecs":{"Launcher":{},"Worker":{"replicas":2}}}`, 3, ""},
		{"XGBoostJob", "v1", `{"xgbReplicaSpecs":{"Master":{"replicas":1},"Worker":{"replicas":2}}}`, 3, ""},
		{"PaddleJob", "v1", `{"paddleReplicaSpecs":{"Worker":{"replicas":6}}}`, 6, ""},
		{"JAXJob", "v1", `{"jaxReplicaSpecs":{"Worker":{"replicas":8}}}`, 8, ""},
		// mpi-operator v2beta1: the launcher plus the workers.
		{"MPIJob", "v2beta1", `{"mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":4}}}`, 5, ""},
		{"MPIJob", "v2beta1", `{"mpiReplicaSpecs":{"Launcher":{"replicas":1}}}`, 1, ""},
		{"MPIJob", "v2beta1", `{"runPolicy":{"schedulingPolicy":{"minAvailable":3}},"mpiReplicaSpecs":{"Launcher":{},"Worker":{"replicas":4}}}`, 3, ""},
		// The launcher created once the workers are Ready: the workers alone.
		{"MPIJob", "v2beta1", `{"launcherCreationPolicy":"WaitForWorkersReady","mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":4}}}`, 4, ""},
		{"MPIJob", "v2beta1", `{"launcherCreationPolicy":"AtStartup","mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":4}}}`, 5, ""},
		{"MPIJob", "v2beta1", `{"launcherCreationPolicy":"WaitForWorkersReady","mpiReplicaSpecs":{"Launcher":{"replicas":1}}}`, 1, ""},
		{"MPIJob", "v2beta1", `{"launcherCreationPolicy":"WaitForWorkersReady","runPolicy":{"schedulingPolicy":{"minAvailable":4}},"mpiReplicaSpecs":{"Launcher":{},"Worker":{"replicas":4}}}`, 4, ""},
		{"MPIJob", "v2beta1", `{"launcherCreationPolicy":"WaitForWorkersReady","runPolicy":{"schedulingPolicy":{"minAvailable":5}},"mpiReplicaSpecs":{"Launcher":{},"Worker":{"replicas":4}}}`, 0,
			"minAvailable is 5, but with launcherCreationPolicy WaitForWorkersReady mpi-operator creates the launcher only once the 4 workers are Ready"},
		// training-operator's MPIJob (v1) has no such policy.
		{"MPIJob", "v1", `{"launcherCreationPolicy":"WaitForWorkersReady","mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":4}}}`, 5, ""},
		// RayCluster: the head plus minReplicas x numOfHosts of every group not suspended.
		{"RayCluster", "v1", `{"workerGroupSpecs":[{"groupName":"a","minReplicas":2,"numOfHosts":2},{"groupName":"b","minReplicas":1},{"groupName":"c","minReplicas":5,"suspend":true}]}`, 6, ""},
		{"RayCluster", "v1", `{"headGroupSpec":{}}`, 1, ""},
		{"RayCluster", "v1", `{"workerGroupSpecs":[{"groupName":"a","minReplicas":-4}]}`, 0, "spec.workerGroupSpecs[0].minReplicas is -4"},
		{"RayCluster", "v1", `{"workerGroupSpecs":[{"groupName":"a","minReplicas":1,"numOfHosts":0}]}`, 0, "numOfHosts is 0"},
		{"RayCluster", "v1", `{"workerGroupSpecs":[{"groupName":"a","minReplicas":2147483647,"numOfHosts":2147483647}]}`, 0, "more than the 100000"},
		{"RayCluster", "v1", `{"workerGroupSpecs":"all"}`, 0, "spec: cannot restore slice from string"},
	} {
		k := ownerKindOf(t, tc.kind, tc.version)
		o := readOwner(k.gvr, k.kind, ownerObj(t, k, "w", tc.spec))
		switch {
		case tc.problem == "" && (o.problem != "" || o.min != tc.want):
			t.Errorf("%s %s %s: minMember %d (problem %q), want %d", tc.kind, tc.version, tc.spec, o.min, o.problem, tc.want)
		case tc.problem != "" && !strings.Contains(o.problem, tc.problem):
			t.Errorf("%s %s %s: problem %q (minMember %d), want one mentioning %q", tc.kind, tc.version, tc.spec, o.problem, o.min, tc.problem)
		}
	}
}

func TestOwnerReadJobAndPDB(t *testing.T) {
	indexed := batchv1.IndexedCompletion
	for _, tc := range []struct {
		par, compl *int32
		want       int32
		problem    string
	}{
		{nil, nil, 1, ""},
		{ptrTo[int32](3), nil, 3, ""},
		{ptrTo[int32](4), ptrTo[int32](2), 2, ""},
		{ptrTo[int32](0), nil, 0, "spec.parallelism makes a gang of 0"},
		{ptrTo[int32](-1), nil, 0, "at least 1"},
		{ptrTo[int32](200000), nil, 0, "more than the 100000"},
	} {
		j := readJob(&batchv1.Job{Spec: batchv1.JobSpec{CompletionMode: &indexed, Parallelism: tc.par, Completions: tc.compl}})
		if j.min != tc.want || !strings.Contains(j.problem, tc.problem) || (tc.problem == "") != (j.problem == "") {
			t.Errorf("Job parallelism %v completions %v: minMember %d problem %q, want %d %q", deref(tc.par), deref(tc.compl), j.min, j.problem, tc.want, tc.problem)
		}
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	for _, tc := range []struct {
		min  *intstr.IntOrString
		sel  *metav1.LabelSelector
		want int32 // 0: no gang
	}{
		{ptrTo(intstr.FromInt32(3)), sel, 3},
		{ptrTo(intstr.FromInt32(1)), sel, 0},
		{ptrTo(intstr.FromString("50%")), sel, 0},
		{nil, sel, 0},
		{ptrTo(intstr.FromInt32(3)), nil, 0},
		{ptrTo(intstr.FromInt32(3)), &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bad"}}}, 0},
	} {
		b := readPDB(&policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: tc.min, Selector: tc.sel}})
		got := int32(0)
		if b != nil {
			got = b.min
		}
		if got != tc.want {
			t.Errorf("PDB minAvailable %v selector %v: gang of %d, want %d", tc.min, tc.sel, got, tc.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func deref(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestOwnerMembership: the gang each kind of workload puts its pods in, in
// order of precedence, and the message of a gang whose PodGroup is not
// created yet.
func TestOwnerMembership(t *testing.T) {
	jobset := ownerKindOf(t, "JobSet", "v1alpha2")
	lws := ownerKindOf(t, "LeaderWorkerSet", "v1")
	pytorch := ownerKindOf(t, "PyTorchJob", "v1")
	mpi2 := ownerKindOf(t, "MPIJob", "v2beta1")
	ray := ownerKindOf(t, "RayCluster", "v1")
	ref := func(apiVersion, kind, name string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name,
			UID: types.UID("uid-" + strings.ToLower(kind) + "-" + name)}
	}
	l := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	indexed := batchv1.IndexedCompletion

	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue(v1alpha1.DefaultQueue))
	// JobSet, before its object is read.
	s.SetPod(ownedPod("js-w-0", ref("batch/v1", "Job", "js-w-0"), l(labelJobSetName, "js", labelJobSetReplicatedJob, "w"), l(annotationJobIndex, "0")))
	s.SetPod(ownedPod("js-d-0", ref("batch/v1", "Job", "js-d-0"), l(labelJobSetName, "js", labelJobSetReplicatedJob, "d"), l(annotationJobIndex, "0")))
	// LeaderWorkerSet: two groups, and a pod with a bad size.
	s.SetPod(ownedPod("lws-0", ref("apps/v1", "StatefulSet", "lws"), l(labelLWSName, "lws", labelLWSGroupIndex, "0"), l(annotationLWSSize, "2")))
	s.SetPod(ownedPod("lws-0-1", ref("apps/v1", "StatefulSet", "lws-0"), l(labelLWSName, "lws", labelLWSGroupIndex, "0"), l(annotationLWSSize, "2")))
	s.SetPod(ownedPod("lws-1", ref("apps/v1", "StatefulSet", "lws"), l(labelLWSName, "lws", labelLWSGroupIndex, "1"), l(annotationLWSSize, "2")))
	s.SetPod(ownedPod("bad-0", ref("apps/v1", "StatefulSet", "bad"), l(labelLWSName, "bad", labelLWSGroupIndex, "0"), l(annotationLWSSize, "two")))
	// Kubeflow: a PyTorchJob's pod; mpi-operator's launcher (a Job's pod)
	// and worker.
	s.SetPod(ownedPod("pt-worker-0", ref("kubeflow.org/v1", "PyTorchJob", "pt"), l(labelKubeflowJobName, "pt"), nil))
	s.SetPod(ownedPod("mpi-launcher", ref("batch/v1", "Job", "mpi-launcher"), l(labelKubeflowJobName, "mpi", labelKubeflowOperator, "mpi-operator"), nil))
	s.SetPod(ownedPod("mpi-worker-0", ref("kubeflow.org/v2beta1", "MPIJob", "mpi"), l(labelKubeflowJobName, "mpi", labelKubeflowOperator, "mpi-operator"), nil))
	// RayCluster.
	s.SetPod(ownedPod("rc-head", ref("ray.io/v1", "RayCluster", "rc"), l(labelRayCluster, "rc", "ray.io/node-type", "head"), nil))
	// Indexed Job, and a Job that turns out not to be Indexed.
	s.SetPod(ownedPod("ij-0", ref("batch/v1", "Job", "ij"), l("batch.kubernetes.io/job-name", "ij"), l(annotationJobIndex, "0")))
	s.SetPod(ownedPod("nj-0", ref("batch/v1", "Job", "nj"), l("batch.kubernetes.io/job-name", "nj"), l(annotationJobIndex, "0")))
	// A Job without a completion index: a gang of one.
	s.SetPod(ownedPod("plainjob-x", ref("batch/v1", "Job", "plainjob"), nil, nil))
	// An explicit gang wins over every workload.
	s.SetPod(ownedPod("explicit", ref("ray.io/v1", "RayCluster", "rc"), l(labelRayCluster, "rc"), l(AnnotationGroupName, "mine")))
	// Precedence: JobSet over Ray, Kubeflow over Indexed Job.
	s.SetPod(ownedPod("both", ref("batch/v1", "Job", "ij"), l(labelJobSetName, "js", labelRayCluster, "rc"), l(annotationJobIndex, "1")))
	s.SetPod(ownedPod("kf-ij", ref("kubeflow.org/v1", "PyTorchJob", "pt"), l(labelKubeflowJobName, "pt"), l(annotationJobIndex, "1")))
	// PDB gangs: plain pods, and a Deployment's pod that a PDB also selects.
	s.SetPod(ownedPod("tf-0", nil, l("tf-job", "tf"), nil))
	s.SetPod(ownedPod("tf-1", nil, l("tf-job", "tf"), nil))
	s.SetPod(ownedPod("web-abc", ref("apps/v1", "ReplicaSet", "web-1"), l("tf-job", "tf"), nil))
	// Another scheduler's pod is never ours to group.
	other := ownedPod("other", nil, l("tf-job", "tf"), nil)
	other.Spec.SchedulerName = "default-scheduler"
	s.SetPod(other)

	for pod, want := range map[string]string{
		"js-w-0": "ns/jobset-js", "js-d-0": "ns/jobset-js",
		"lws-0": "ns/lws-lws-0", "lws-0-1": "ns/lws-lws-0", "lws-1": "ns/lws-lws-1", "bad-0": "ns/lws-bad-0",
		"pt-worker-0": "ns/pytorchjob-pt", "mpi-launcher": "ns/mpijob-mpi", "mpi-worker-0": "ns/mpijob-mpi",
		"rc-head": "ns/raycluster-rc", "ij-0": "ns/job-ij", "nj-0": "ns/job-nj",
		"plainjob-x": "ns/plainjob-x#pod", "explicit": "ns/mine", "both": "ns/jobset-js", "kf-ij": "ns/pytorchjob-pt",
		"tf-0": "ns/tf-0#pod", "web-abc": "ns/web-abc#pod", "other": "",
	} {
		if got := gangOf(s, pod); got != want {
			t.Errorf("before the workloads are read, pod %s is in gang %q, want %q", pod, got, want)
		}
	}
	if v := viewOf(t, s, "ns/jobset-js"); !v.missingPG || !strings.Contains(v.invalid, "JobSet ns/js is not in the scheduler's cache yet") {
		t.Errorf("JobSet not read yet: the gang says %q, want that it waits for the JobSet", v.invalid)
	}
	if v := viewOf(t, s, "ns/lws-bad-0"); !strings.Contains(v.invalid, `annotation leaderworkerset.sigs.k8s.io/size="two" is not an integer`) {
		t.Errorf("bad LWS size: the gang says %q", v.invalid)
	}

	// The workloads are read.
	s.SetOwner(jobset.gvr, jobset.kind, ownerObj(t, jobset, "js",
		`{"replicatedJobs":[{"name":"w","replicas":2,"template":{"spec":{"parallelism":2}}},{"name":"d","template":{"spec":{}}}]}`))
	s.SetOwner(lws.gvr, lws.kind, ownerObj(t, lws, "lws", `{"replicas":2}`))
	s.SetOwner(pytorch.gvr, pytorch.kind, ownerObj(t, pytorch, "pt", `{"pytorchReplicaSpecs":{"Master":{"replicas":1},"Worker":{"replicas":2}}}`))
	s.SetOwner(mpi2.gvr, mpi2.kind, ownerObj(t, mpi2, "mpi", `{"mpiReplicaSpecs":{"Launcher":{},"Worker":{"replicas":2}}}`))
	s.SetOwner(ray.gvr, ray.kind, ownerObj(t, ray, "rc", `{"workerGroupSpecs":[{"groupName":"g","minReplicas":-1}]}`))
	s.SetJob(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "ij", Namespace: "ns", UID: "uid-job-ij"},
		Spec: batchv1.JobSpec{CompletionMode: &indexed, Parallelism: ptrTo[int32](3)}})
	s.SetJob(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nj", Namespace: "ns", UID: "uid-job-nj"}})
	s.SetPDB(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "tf", Namespace: "ns", UID: "uid-pdb"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tf-job": "tf"}}}})

	for pod, want := range map[string]string{
		"js-w-0": "ns/jobset-js", "nj-0": "ns/nj-0#pod", "ij-0": "ns/job-ij",
		"tf-0": "ns/pdb-tf", "tf-1": "ns/pdb-tf", "web-abc": "ns/web-abc#pod", "other": "", "plainjob-x": "ns/plainjob-x#pod",
	} {
		if got := gangOf(s, pod); got != want {
			t.Errorf("once the workloads are read, pod %s is in gang %q, want %q", pod, got, want)
		}
	}
	for key, want := range map[string]string{
		"ns/jobset-js":     "PodGroup ns/jobset-js (minMember 5) is being created from JobSet ns/js",
		"ns/lws-lws-0":     "(minMember 2) is being created from LeaderWorkerSet ns/lws",
		"ns/pytorchjob-pt": "(minMember 3) is being created from PyTorchJob ns/pt",
		"ns/mpijob-mpi":    "(minMember 3) is being created from MPIJob ns/mpi",
		"ns/raycluster-rc": "cannot be created from RayCluster ns/rc: spec.workerGroupSpecs[0].minReplicas is -1",
		"ns/job-ij":        "(minMember 3) is being created from Job ns/ij",
		"ns/pdb-tf":        "(minMember 2) is being created from PodDisruptionBudget ns/tf",
		"ns/mine":          "PodGroup ns/mine does not exist; its pods wait until it is created",
	} {
		_, views := s.Snapshot()
		v := views[key]
		if v == nil {
			t.Errorf("no gang %s", key)
			continue
		}
		if !v.missingPG || !strings.Contains(v.invalid, want) {
			t.Errorf("gang %s says %q (missing PodGroup %v), want %q", key, v.invalid, v.missingPG, want)
		}
	}

	// Once its PodGroup exists, a derived gang is a gang like any other.
	pg := testPodGroup("job-ij", 3)
	s.SetPodGroup(pg)
	if v := viewOf(t, s, "ns/job-ij"); v.missingPG || v.invalid != "" || v.minMember != 3 {
		t.Errorf("with its PodGroup, gang job-ij: missing %v invalid %q minMember %d", v.missingPG, v.invalid, v.minMember)
	}

	// A JobSet that starts its replicated jobs in order: one gang each.
	s.SetOwner(jobset.gvr, jobset.kind, ownerObj(t, jobset, "js",
		`{"startupPolicy":{"startupPolicyOrder":"InOrder"},"replicatedJobs":[{"name":"w","replicas":2,"template":{"spec":{"parallelism":2}}},{"name":"d","template":{"spec":{}}}]}`))
	w, d := "ns/"+derivedName("jobset", "js", "w"), "ns/"+derivedName("jobset", "js", "d")
	if gangOf(s, "js-w-0") != w || gangOf(s, "js-d-0") != d {
		t.Errorf("InOrder JobSet: pods in gangs %q and %q, want %q and %q", gangOf(s, "js-w-0"), gangOf(s, "js-d-0"), w, d)
	}
	if v := viewOf(t, s, w); !strings.Contains(v.invalid, "(minMember 4) is being created from JobSet ns/js") {
		t.Errorf("InOrder JobSet, replicated job w: %q", v.invalid)
	}
	// Back to all at once.
	s.SetOwner(jobset.gvr, jobset.kind, ownerObj(t, jobset, "js", `{"replicatedJobs":[{"name":"w","template":{"spec":{}}},{"name":"d","template":{"spec":{}}}]}`))
	if gangOf(s, "js-w-0") != "ns/jobset-js" || gangOf(s, "js-d-0") != "ns/jobset-js" {
		t.Errorf("JobSet no longer InOrder: pods in gangs %q and %q", gangOf(s, "js-w-0"), gangOf(s, "js-d-0"))
	}

	// The PDB goes: its pods are gangs of one again; the old gang is gone.
	s.DeletePDB("ns", "tf")
	if gangOf(s, "tf-0") != "ns/tf-0#pod" || gangOf(s, "tf-1") != "ns/tf-1#pod" {
		t.Errorf("PDB deleted: pods in gangs %q and %q", gangOf(s, "tf-0"), gangOf(s, "tf-1"))
	}
	if _, ok := s.gangs["ns/pdb-tf"]; ok {
		t.Errorf("gang pdb-tf outlived its PDB and its members")
	}
	// A deleted pod leaves the candidates.
	s.DeletePod("uid-tf-0")
	if s.owners.candidates["ns"]["uid-tf-0"] {
		t.Errorf("deleted pod tf-0 is still a candidate")
	}
}

// TestOwnerPDBAfterPods: pods created before their PDB move into its gang,
// and a gang of them waits whole; bound pods count toward its minimum.
func TestOwnerPDBAfterPods(t *testing.T) {
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue(v1alpha1.DefaultQueue))
	s.SetNode(testNode("n1", 2))
	for i := range 3 {
		s.SetPod(ownedPod(fmt.Sprintf("p-%d", i), nil, map[string]string{"app": "x"}, nil))
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "uid-pdb-x"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}
	s.SetPDB(pdb)
	s.SetPodGroup(testPodGroup("pdb-x", 3))
	snap, _ := s.Snapshot()
	g := gangByID(snap, "ns/pdb-x")
	if g == nil || g.MinMember != 3 || len(g.Pending) != 3 {
		t.Fatalf("the PDB's gang: %+v; want 3 pending members of minMember 3", g)
	}
	plan, _ := newCore(t).RunCycle(snap, 1000)
	if len(plan.Binds) != 0 {
		t.Errorf("a gang of 3 one-GPU pods on 2 GPUs bound %v", plan.Binds)
	}
	// Changing minAvailable keeps the gang.
	pdb = pdb.DeepCopy()
	pdb.Spec.MinAvailable = ptrTo(intstr.FromInt32(2))
	s.SetPDB(pdb)
	if gangOf(s, "p-0") != "ns/pdb-x" {
		t.Errorf("after minAvailable changed, p-0 is in %q", gangOf(s, "p-0"))
	}
}

// TestOwnerCreatesPodGroup: a cycle creates the PodGroup of a derived gang
// through the writer, owned by the workload, with the queue and priority
// class of its pods; an existing one is success.
func TestOwnerCreatesPodGroup(t *testing.T) {
	indexed := batchv1.IndexedCompletion
	kube := fake.NewClientset()
	client := phalanxfake.NewSimpleClientset(
		&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-old", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 2}})
	s, err := New(Options{StatusWorkers: 2}, kube, client, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.store.SetQueue(testQueue(v1alpha1.DefaultQueue))
	for _, name := range []string{"train", "old"} {
		s.store.SetJob(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-job-" + name)},
			Spec: batchv1.JobSpec{CompletionMode: &indexed, Parallelism: ptrTo[int32](2)}})
		for i := range 2 {
			p := ownedPod(fmt.Sprintf("%s-%d", name, i),
				&metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID("uid-job-" + name)},
				map[string]string{}, map[string]string{annotationJobIndex: fmt.Sprint(i), AnnotationQueue: "research"})
			p.Spec.PriorityClassName, p.Spec.Priority = fmt.Sprintf("pc-%d", i), ptrTo(int32(10*i))
			s.store.SetPod(p)
		}
	}
	// Another scheduler's Indexed Job: not ours to group.
	s.store.SetJob(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns", UID: "uid-job-theirs"},
		Spec: batchv1.JobSpec{CompletionMode: &indexed}})
	p := ownedPod("theirs-0", &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "theirs", UID: "uid-job-theirs"},
		nil, map[string]string{annotationJobIndex: "0"})
	p.Spec.SchedulerName = "default-scheduler"
	s.store.SetPod(p)

	ctx := context.Background()
	s.cycle(ctx)
	// What the cycle handed the writer, carried out here, one by one: the
	// creations of job-train and job-old (which exists: success), none for
	// the other scheduler's Job.
	for _, name := range []string{"job-train", "job-old"} {
		job, ok := s.writer.take(writeKey{kindDerivedPodGroup, "ns/" + name})
		if !ok {
			t.Fatalf("the cycle did not hand the writer the creation of %s", name)
		}
		if err := job.do(ctx); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	if _, ok := s.writer.take(writeKey{kindDerivedPodGroup, "ns/job-theirs"}); ok {
		t.Errorf("the cycle would create a PodGroup for another scheduler's pods")
	}
	s.drain() // the writes' reports
	if why := s.store.owners.failed["ns/job-old"]; why != "" {
		t.Errorf("creating an existing PodGroup failed: %s", why)
	}
	pg, err := client.SchedulingV1alpha1().PodGroups("ns").Get(ctx, "job-train", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PodGroup job-train not created: %v", err)
	}
	f := false
	wantOwner := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "uid-job-train", Controller: &f, BlockOwnerDeletion: &f}
	if len(pg.OwnerReferences) != 1 || !reflect.DeepEqual(pg.OwnerReferences[0], wantOwner) {
		t.Errorf("owner references %+v, want %+v", pg.OwnerReferences, wantOwner)
	}
	if pg.Spec.MinMember != 2 || pg.Spec.Queue != "research" || pg.Spec.PriorityClassName != "pc-1" {
		t.Errorf("spec %+v, want minMember 2, queue research, priorityClassName pc-1 (the member of highest priority)", pg.Spec)
	}
	if pg.Annotations[AnnotationDerivedFrom] != "Job/train" || pg.Labels[LabelDerivedFromKind] != "Job" ||
		pg.Annotations[AnnotationSchedulerName] != "phalanx" {
		t.Errorf("annotations %v labels %v", pg.Annotations, pg.Labels)
	}
	// A second cycle does not hand the creation again.
	s.cycle(ctx)
	for _, name := range []string{"job-train", "job-old", "job-theirs"} {
		if _, ok := s.writer.take(writeKey{kindDerivedPodGroup, "ns/" + name}); ok {
			t.Errorf("a second cycle hands the creation of %s again", name)
		}
	}
}

// FuzzOwnerSpec: a workload object of any kind with a fuzzed spec and
// name, and a pod of it. Reading it never panics; a minMember read without
// a problem is within 1..100000; the PodGroup name is a DNS label; a cycle
// over the store never binds a member of a gang whose PodGroup is missing.
func FuzzOwnerSpec(f *testing.F) {
	f.Add(uint8(0), "js", `{"replicatedJobs":[{"name":"w","replicas":2,"template":{"spec":{"parallelism":4}}}]}`, "2")
	f.Add(uint8(0), "js", `{"startupPolicy":{"startupPolicyOrder":"InOrder"},"replicatedJobs":[{"name":"w","replicas":-2}]}`, "")
	f.Add(uint8(0), "js", `{"replicatedJobs":[{"name":"a"},{"name":"w","replicas":2147483647,"dependsOn":[{"name":"a","status":"Ready"}],`+
		`"template":{"spec":{"parallelism":2147483647}}},{"name":"x","dependsOn":[{"name":"a","status":"Ready"}],"template":{"spec":{"parallelism":2147483647}}}]}`, "")
	f.Add(uint8(0), "js", `{"replicatedJobs":[{"name":"a","dependsOn":[{"name":7}]}]}`, "")
	f.Add(uint8(2), "tf.job", `{"tfReplicaSpecs":{"PS":{"replicas":1e300},"Worker":null}}`, "")
	f.Add(uint8(3), "pt", `{"elasticPolicy":{"minReplicas":"2"},"pytorchReplicaSpecs":{"Master":{}}}`, "")
	f.Add(uint8(8), "mpi", `{"mpiReplicaSpecs":{"Worker":{"replicas":4294967297}}}`, "")
	f.Add(uint8(8), "mpi", `{"launcherCreationPolicy":"WaitForWorkersReady","mpiReplicaSpecs":{"Worker":{"replicas":-3}}}`, "")
	f.Add(uint8(8), "mpi", `{"launcherCreationPolicy":"WaitForWorkersReady","runPolicy":{"schedulingPolicy":{"minAvailable":9}},"mpiReplicaSpecs":{"Worker":{"replicas":200000}}}`, "")
	f.Add(uint8(9), "rc", `{"workerGroupSpecs":[{"minReplicas":2147483647,"numOfHosts":-1}]}`, "")
	f.Add(uint8(8), "mpi", `{"launcherCreationPolicy":"WaitForWorkersReady","mpiReplicaSpecs":{"Worker":{"replicas":2},`+
		`"Launcher":{"template":{"spec":{"schedulerName":"phalanx","containers":[{"name":"l","resources":{"limits":{"cpu":"-1"}}}]}}}}}`, "")
	f.Add(uint8(8), "mpi", `{"launcherCreationPolicy":"WaitForWorkersReady","mpiReplicaSpecs":{"Worker":{"replicas":1},`+
		`"Launcher":{"template":{"spec":{"containers":"l"}}}}}`, "")
	f.Add(uint8(1), "lws", `{"startupPolicy":"LeaderReady","leaderWorkerTemplate":{"size":3,"workerTemplate":{"spec":{"schedulerName":"phalanx","containers":[{"name":"w"}]}}}}`, "3")
	f.Add(uint8(1), "lws", `{"startupPolicy":"LeaderReady","leaderWorkerTemplate":{"workerTemplate":{"spec":{"containers":[{"name":"w","ports":"x"}]}}}}`, "2")
	f.Add(uint8(1), strings.Repeat("x", 80), `{}`, "-1")
	f.Add(uint8(4), "j", `[]`, "99999999999")
	f.Fuzz(func(t *testing.T, which uint8, name, spec, size string) {
		k := OwnerKinds[int(which)%len(OwnerKinds)]
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": k.gvr.GroupVersion().String(), "kind": k.kind,
			"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "uid-owner"},
		}}
		var v any
		if err := utiljson.Unmarshal([]byte(spec), &v); err == nil {
			u.Object["spec"] = v
		}
		o := readOwner(k.gvr, k.kind, u)
		if o.problem == "" && k.kind != kindLWS && (o.min < 1 || o.min > maxDerivedMin) {
			t.Errorf("%s %s: minMember %d without a problem", k.kind, spec, o.min)
		}
		if o.readyWorkers < 0 || o.readyWorkers > maxDerivedMin {
			t.Errorf("%s %s: a launcher waiting for %d workers", k.kind, spec, o.readyWorkers)
		}
		if (o.leaderFirst != "") != (o.worker != nil) || k.kind != kindLWS && o.leaderFirst != "" {
			t.Errorf("%s %s: workers after the leader %q, worker %v", k.kind, spec, o.leaderFirst, o.worker)
		}
		if l := o.launcher; l != nil && (o.readyWorkers == 0 || l.Namespace != "ns" || l.Name != name+"-launcher") {
			t.Errorf("%s %s: a launcher to come %s/%s, for %d workers", k.kind, spec, l.Namespace, l.Name, o.readyWorkers)
		}
		for rj, n := range o.parts {
			if n < 0 {
				t.Errorf("%s %s: replicated job %q of %d pods", k.kind, spec, rj, n)
			}
		}
		if errs := validation.IsDNS1123Label(derivedName(strings.ToLower(k.kind), name)); len(errs) > 0 {
			t.Errorf("derivedName(%q) is not a DNS label: %v", name, errs)
		}
		if name == "" {
			return // no workload labels: gangs of one
		}

		s := NewStore([]string{"phalanx"})
		s.SetQueue(testQueue(v1alpha1.DefaultQueue))
		fuzzNodes(s)
		s.SetOwner(k.gvr, k.kind, u)
		labels := map[string]string{labelJobSetName: name, labelJobSetReplicatedJob: "w", labelLWSName: name,
			labelLWSGroupIndex: "0", labelRayCluster: name, labelKubeflowJobName: name}
		if k.kind != kindJobSet {
			delete(labels, labelJobSetName)
		}
		if k.kind != kindLWS {
			delete(labels, labelLWSName)
		}
		ctrl := &metav1.OwnerReference{APIVersion: k.gvr.GroupVersion().String(), Kind: k.kind, Name: name, UID: "uid-owner"}
		for i := range 2 {
			s.SetPod(ownedPod(fmt.Sprintf("p-%d", i), ctrl, labels, map[string]string{annotationLWSSize: size}))
		}
		_, plan, diag := fuzzCycle(t, s)
		for _, b := range plan.Binds {
			t.Errorf("%s %s: member %s of gang %s was bound without a PodGroup", k.kind, spec, b.Member, b.Gang)
		}
		for _, st := range diag.Pending {
			if st.Reason != core.ReasonInvalid {
				t.Errorf("%s %s: gang %s waits with reason %s, want %s", k.kind, spec, st.Gang, st.Reason, core.ReasonInvalid)
			}
		}
	})
}

// TestOwnerJobSetExclusive: with exclusive placement, JobSet's webhooks
// admit a job's followers only once its leader is bound, so the gang's
// minimum is the leaders, one a job; without it, every pod.
func TestOwnerJobSetExclusive(t *testing.T) {
	jobset := ownerKindOf(t, "JobSet", "v1alpha2")
	l := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	jobRef := func(name string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID("uid-job-" + name)}
	}
	spec := `{"replicatedJobs":[{"name":"w","replicas":3,"template":{"spec":{"parallelism":4,"completions":4}}},` +
		`{"name":"d","template":{"metadata":{"annotations":{"alpha.jobset.sigs.k8s.io/exclusive-topology":"rack"}},"spec":{"parallelism":2}}}]}`
	for _, tc := range []struct {
		name        string
		jobSetAnnot map[string]string
		podAnnot    map[string]string
		inOrder     bool
		gang        string
		want        string
	}{
		{"exclusive on the JobSet: a leader a job", l(annotationJobSetExclusive, "rack"), l(annotationJobSetExclusive, "rack"), false,
			"ns/jobset-js", "(minMember 4)"},
		{"without exclusive placement: every pod", nil, nil, false, "ns/jobset-js", "(minMember 14)"},
		{"the node-selector strategy admits every pod at once", l(annotationJobSetExclusive, "rack", annotationJobSetNodeSel, "true"),
			l(annotationJobSetExclusive, "rack", annotationJobSetNodeSel, "true"), false, "ns/jobset-js", "(minMember 14)"},
		{"in order, exclusive on one replicated job: its leaders", nil, l(annotationJobSetExclusive, "rack"), true,
			"ns/" + derivedName("jobset", "js", "d"), "(minMember 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore([]string{"phalanx"})
			s.SetQueue(testQueue(v1alpha1.DefaultQueue))
			sp := spec
			if tc.inOrder {
				sp = `{"startupPolicy":{"startupPolicyOrder":"InOrder"},` + spec[1:]
			}
			u := ownerObj(t, jobset, "js", sp)
			u.SetAnnotations(tc.jobSetAnnot)
			s.SetOwner(jobset.gvr, jobset.kind, u)
			annot := l(annotationJobIndex, "0")
			for k, v := range tc.podAnnot {
				annot[k] = v
			}
			s.SetPod(ownedPod("js-d-0-0", jobRef("js-d-0"), l(labelJobSetName, "js", labelJobSetReplicatedJob, "d"), annot))
			if got := gangOf(s, "js-d-0-0"); got != tc.gang {
				t.Fatalf("gang %q, want %q", got, tc.gang)
			}
			if v := viewOf(t, s, tc.gang); !strings.Contains(v.invalid, tc.want) {
				t.Errorf("gang says %q, want %q", v.invalid, tc.want)
			}
		})
	}
}

// TestOwnerJobSetDependsOn: the JobSet controller creates a replicated
// job's jobs only once the one its dependsOn names reaches the status it
// names, so a gang of the whole JobSet could never be whole: the
// replicated jobs that start together (naming the same dependency, or
// none) are a gang, named after the first of them.
func TestOwnerJobSetDependsOn(t *testing.T) {
	jobset := ownerKindOf(t, "JobSet", "v1alpha2")
	const spec = `{"replicatedJobs":[{"name":"init","template":{"spec":{}}},{"name":"dl","template":{"spec":{"parallelism":1}}},` +
		`{"name":"workers","replicas":2,"dependsOn":[{"name":"init","status":"Complete"}],"template":{"spec":{"parallelism":2}}},` +
		`{"name":"side","dependsOn":[{"name":"init","status":"Complete"}],"template":{"spec":{}}},` +
		`{"name":"launcher","dependsOn":[{"name":"workers","status":"Ready"}],"template":{"spec":{}}}]}`
	s := NewStore([]string{"phalanx"})
	s.SetQueue(testQueue(v1alpha1.DefaultQueue))
	s.SetOwner(jobset.gvr, jobset.kind, ownerObj(t, jobset, "js", spec))
	for _, tc := range []struct{ rj, stage, min string }{
		{"init", "init", "(minMember 2)"},
		{"dl", "init", "(minMember 2)"},
		{"workers", "workers", "(minMember 5)"},
		{"side", "workers", "(minMember 5)"},
		{"launcher", "launcher", "(minMember 1)"},
	} {
		pod := "js-" + tc.rj + "-0-0"
		s.SetPod(ownedPod(pod, &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "js-" + tc.rj + "-0", UID: types.UID("uid-job-" + tc.rj)},
			map[string]string{labelJobSetName: "js", labelJobSetReplicatedJob: tc.rj}, map[string]string{annotationJobIndex: "0"}))
		want := "ns/" + derivedName("jobset", "js", tc.stage)
		if got := gangOf(s, pod); got != want {
			t.Errorf("replicated job %s: gang %q, want %q", tc.rj, got, want)
			continue
		}
		if v := viewOf(t, s, want); !strings.Contains(v.invalid, tc.min) {
			t.Errorf("replicated job %s: gang says %q, want %q", tc.rj, v.invalid, tc.min)
		}
	}
	// Without dependsOn, the JobSet is one gang again.
	s.SetOwner(jobset.gvr, jobset.kind, ownerObj(t, jobset, "js", strings.ReplaceAll(strings.ReplaceAll(spec,
		`"dependsOn":[{"name":"init","status":"Complete"}],`, ""), `"dependsOn":[{"name":"workers","status":"Ready"}],`, "")))
	if got := gangOf(s, "js-launcher-0-0"); got != "ns/jobset-js" {
		t.Errorf("without dependsOn: gang %q, want ns/jobset-js", got)
	}
}

// workloadScheduler is a scheduler whose cycles tests run (its binds wait:
// no call workers run), at time 200, with the default queue, 4 nodes of 1
// GPU and 8 CPUs, and the workload object of kind k called name with spec.
func workloadScheduler(t *testing.T, k ownerKind, name, spec string) *Scheduler {
	t.Helper()
	s, err := New(Options{Now: func() time.Time { return time.Unix(200, 0) }}, fake.NewClientset(), phalanxfake.NewSimpleClientset(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.store.SetQueue(testQueue(v1alpha1.DefaultQueue))
	for i := range 4 {
		s.store.SetNode(testNode(fmt.Sprintf("n%d", i), 1))
	}
	s.store.SetOwner(k.gvr, k.kind, ownerObj(t, k, name, spec))
	return s
}

// TestMPIJobLauncherRoomHeld: an MPIJob whose launcher (8 CPUs, a whole
// node's) comes only once its 3 workers (1 GPU and 8 CPUs each) are Ready,
// on 4 nodes of 1 GPU and 8 CPUs. Its gang starts only where the launcher
// fits too, and the node found for the launcher is held for it: another
// gang, of one GPU, arriving later, does not take it while the workers
// start, and waits until the launcher is placed there; the hold then goes.
// With the fourth node taken before, the MPIJob waits whole, saying why,
// rather than starting workers whose launcher would find no room.
func TestMPIJobLauncherRoomHeld(t *testing.T) {
	mpi := ownerKindOf(t, kindMPIJob, "v2beta1")
	const spec = `{"launcherCreationPolicy":"WaitForWorkersReady","mpiReplicaSpecs":{
		"Launcher":{"replicas":1,"template":{"spec":{"schedulerName":"phalanx","containers":[{"name":"l","resources":{"requests":{"cpu":"8"}}}]}}},
		"Worker":{"replicas":3}}}`
	mpiPod := func(name, role string) *corev1.Pod {
		p := testPod(name).CPU("8").Group("job1").Obj()
		if role == "worker" {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(1, resource.DecimalSI)}
		}
		p.Labels = map[string]string{labelKubeflowOperator: "mpi-operator", labelKubeflowJobRole: role, labelKubeflowJobName: "job1"}
		return p
	}
	setup := func(t *testing.T, otherOn string) *Scheduler {
		t.Helper()
		s := workloadScheduler(t, mpi, "job1", spec)
		pg := testPodGroup("job1", 3)
		pg.Annotations = map[string]string{AnnotationDerivedFrom: "MPIJob/job1"}
		pg.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubeflow.org/v2beta1", Kind: kindMPIJob, Name: "job1", UID: "uid-mpijob-job1"}}
		s.store.SetPodGroup(pg)
		for i := range 3 {
			s.store.SetPod(mpiPod(fmt.Sprintf("job1-worker-%d", i), "worker"))
		}
		other := testPod("other").GPUs(1).CPU("1").Obj()
		other.CreationTimestamp = metav1.Unix(150, 0) // after the PodGroup (50): job1 goes first
		if otherOn != "" {
			other.Spec.NodeName, other.Status.Phase = otherOn, corev1.PodRunning
		}
		s.store.SetPod(other)
		return s
	}
	nodeOf := func(s *Scheduler, name string) string { return s.store.pods[types.UID("uid-"+name)].node }
	ctx := context.Background()

	t.Run("held while the workers start", func(t *testing.T) {
		s := setup(t, "")
		s.cycle(ctx)
		used := map[string]bool{}
		for i := range 3 {
			n := nodeOf(s, fmt.Sprintf("job1-worker-%d", i))
			if n == "" {
				t.Fatalf("worker %d not placed", i)
			}
			used[n] = true
		}
		if n := nodeOf(s, "other"); n != "" {
			t.Fatalf("other placed on %s, where the launcher must go", n)
		}
		hs := s.store.holds["ns/job1"]
		if len(hs) != 1 || hs[0].whole != 4 || used[hs[0].node] {
			t.Fatalf("holds %+v, want one for the launcher on the node the workers left", hs)
		}
		free := hs[0].node
		// A new leader restores it as it was.
		data, err := json.Marshal(s.store.savedState())
		if err != nil {
			t.Fatal(err)
		}
		var st savedState
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		saved := s.store.holds
		s.store.holds = map[string][]heldRoom{}
		s.store.restore(st)
		if !reflect.DeepEqual(s.store.holds, saved) {
			t.Errorf("restored holds %+v, want %+v", s.store.holds, saved)
		}
		s.cycle(ctx)
		if n := nodeOf(s, "other"); n != "" {
			t.Fatalf("while the workers start, other is placed on %s", n)
		}
		s.store.SetPod(mpiPod("job1-launcher-x", "launcher"))
		s.cycle(ctx)
		if n := nodeOf(s, "job1-launcher-x"); n != free {
			t.Fatalf("the launcher is on %q, want %s, the node held for it", n, free)
		}
		s.cycle(ctx)
		if hs := s.store.holds["ns/job1"]; len(hs) != 0 {
			t.Errorf("holds %+v once the launcher is placed, want none", hs)
		}
		if n := nodeOf(s, "other"); n != "" {
			t.Errorf("other is placed on %s, with no GPU free", n)
		}
	})

	t.Run("dropped when no worker holds a node", func(t *testing.T) {
		s := setup(t, "")
		s.cycle(ctx)
		if len(s.store.holds["ns/job1"]) != 1 {
			t.Fatalf("holds %+v, want one for the launcher", s.store.holds["ns/job1"])
		}
		// The workers are evicted; the operator makes them again, and they
		// wait: a node selector no node matches.
		for i := range 3 {
			s.store.DeletePod(types.UID(fmt.Sprintf("uid-job1-worker-%d", i)))
			p := mpiPod(fmt.Sprintf("job1-worker-%d", i), "worker")
			p.UID += "-again"
			p.Spec.NodeSelector = map[string]string{"pool": "none"}
			s.store.SetPod(p)
		}
		s.cycle(ctx)
		if hs := s.store.holds["ns/job1"]; len(hs) != 0 {
			t.Errorf("holds %+v with no worker left, want none", hs)
		}
		if n := nodeOf(s, "other"); n == "" {
			t.Errorf("other still waits with every node free")
		}
	})

	t.Run("waits whole when the launcher cannot fit", func(t *testing.T) {
		s := setup(t, "n3")
		s.cycle(ctx)
		for i := range 3 {
			if n := nodeOf(s, fmt.Sprintf("job1-worker-%d", i)); n != "" {
				t.Errorf("worker %d placed on %s: its launcher has no room", i, n)
			}
		}
		v := s.verdicts["ns/job1"]
		if v.reason != string(core.ReasonUnschedulable) || !strings.Contains(v.message, "room for its launcher (job1-launcher) too, which mpi-operator creates once the 3 workers are Ready") {
			t.Errorf("job1 waits with %s: %q", v.reason, v.message)
		}
		if len(s.store.holds) != 0 {
			t.Errorf("holds %+v, want none", s.store.holds)
		}
	})
}

// TestLWSWorkersAfterLeader: a LeaderWorkerSet group of 4 pods of 1 GPU on
// 4 nodes of 1 GPU, whose controller creates the workers only once the
// leader is Ready (startupPolicy LeaderReady). The leader starts alone (a
// gang of 4 would wait for ever for workers that come only once it runs),
// but only where its 3 workers fit too, and their room is held: a pod of 1
// GPU arriving later does not take it. The workers, once created, go
// there, and the holds go. With the default startupPolicy (LeaderCreated)
// the controller creates the workers at once, and the leader alone waits.
func TestLWSWorkersAfterLeader(t *testing.T) {
	lws := ownerKindOf(t, kindLWS, "v1")
	const ready = `{"startupPolicy":"LeaderReady","leaderWorkerTemplate":{"size":4,"workerTemplate":{"spec":{"schedulerName":"phalanx",` +
		`"containers":[{"name":"w","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}`
	ctrl := &metav1.OwnerReference{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: kindLWS, Name: "set", UID: "uid-leaderworkerset-set"}
	member := func(i int) *corev1.Pod {
		name := "set-0"
		if i > 0 {
			name = fmt.Sprintf("set-0-%d", i)
		}
		p := ownedPod(name, ctrl, map[string]string{labelLWSName: "set", labelLWSGroupIndex: "0", labelLWSWorkerIndex: fmt.Sprint(i)},
			map[string]string{annotationLWSSize: "4"})
		p.OwnerReferences = nil // a StatefulSet's, which Phalanx does not read
		return p
	}
	setup := func(t *testing.T, spec string) *Scheduler {
		t.Helper()
		s := workloadScheduler(t, lws, "set", spec)
		pg := testPodGroup("lws-set-0", 4)
		pg.Annotations = map[string]string{AnnotationDerivedFrom: "LeaderWorkerSet/set"}
		pg.OwnerReferences = []metav1.OwnerReference{*ctrl}
		s.store.SetPodGroup(pg)
		s.store.SetPod(member(0))
		other := testPod("other").GPUs(1).Obj()
		other.CreationTimestamp = metav1.Unix(150, 0) // after the PodGroup (50)
		s.store.SetPod(other)
		return s
	}
	nodeOf := func(s *Scheduler, name string) string { return s.store.pods[types.UID("uid-"+name)].node }
	ctx := context.Background()

	t.Run("LeaderReady", func(t *testing.T) {
		s := setup(t, ready)
		s.cycle(ctx)
		leader := nodeOf(s, "set-0")
		if leader == "" {
			t.Fatalf("the leader waits: %+v", s.verdicts["ns/lws-set-0"])
		}
		if n := nodeOf(s, "other"); n != "" {
			t.Fatalf("other placed on %s, where a worker must go", n)
		}
		held := map[string]bool{}
		for _, h := range s.store.holds["ns/lws-set-0"] {
			if h.whole != 4 || h.node == leader {
				t.Errorf("hold %+v, want one until 4 members hold nodes, not on the leader's node %s", h, leader)
			}
			held[h.node] = true
		}
		if len(held) != 3 {
			t.Fatalf("holds on %v, want 3 nodes", held)
		}
		s.cycle(ctx)
		if n := nodeOf(s, "other"); n != "" {
			t.Fatalf("while the leader starts, other is placed on %s", n)
		}
		for i := 1; i < 4; i++ {
			s.store.SetPod(member(i))
		}
		s.cycle(ctx)
		for i := 1; i < 4; i++ {
			if n := nodeOf(s, fmt.Sprintf("set-0-%d", i)); !held[n] {
				t.Errorf("worker %d on %q, want a node held for it (%v)", i, n, held)
			}
		}
		s.cycle(ctx)
		if hs := s.store.holds["ns/lws-set-0"]; len(hs) != 0 {
			t.Errorf("holds %+v once the workers are placed, want none", hs)
		}
	})

	// Exclusive placement in racks: rack r0 is node n0, rack r1 nodes n1
	// and n2, of 1 GPU each. A group of 2 (a leader and a worker, one GPU
	// each) fits only in r1, and the leader's affinity, as LeaderWorkerSet's
	// webhook writes it, keeps its worker to come there too, though n0,
	// first in node order, fits the leader alone as well.
	t.Run("exclusive", func(t *testing.T) {
		s, err := New(Options{}, fake.NewClientset(), phalanxfake.NewSimpleClientset(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.store.SetQueue(testQueue(v1alpha1.DefaultQueue))
		for i, rack := range []string{"r0", "r1", "r1"} {
			n := testNode(fmt.Sprintf("n%d", i), 1)
			n.Labels = map[string]string{"rack": rack}
			s.store.SetNode(n)
		}
		spec := strings.Replace(strings.Replace(ready, `"startupPolicy":"LeaderReady",`, "", 1), `"size":4`, `"size":2`, 1)
		u := ownerObj(t, lws, "set", spec)
		u.SetAnnotations(map[string]string{annotationLWSExclusive: "rack"})
		s.store.SetOwner(lws.gvr, lws.kind, u)
		pg := testPodGroup("lws-set-0", 2)
		pg.OwnerReferences = []metav1.OwnerReference{*ctrl}
		s.store.SetPodGroup(pg)
		leader := member(0)
		leader.Annotations[annotationLWSSize] = "2"
		leader.Labels["leaderworkerset.sigs.k8s.io/group-key"] = "k0"
		// As LeaderWorkerSet's webhook writes them: in the rack of the
		// group's pods, and in none of another group's.
		const key = "leaderworkerset.sigs.k8s.io/group-key"
		term := func(reqs ...metav1.LabelSelectorRequirement) []corev1.PodAffinityTerm {
			return []corev1.PodAffinityTerm{{TopologyKey: "rack", LabelSelector: &metav1.LabelSelector{MatchExpressions: reqs}}}
		}
		leader.Spec.Affinity = &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term(
				metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"k0"}})},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term(
				metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpExists},
				metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"k0"}})},
		}
		s.store.SetPod(leader)
		s.cycle(ctx)
		n := nodeOf(s, "set-0")
		hs := s.store.holds["ns/lws-set-0"]
		if n == "" || len(hs) != 1 {
			t.Fatalf("leader on %q, holds %+v: want it placed, and a hold for its worker", n, hs)
		}
		if n == "n0" || hs[0].node == "n0" {
			t.Errorf("leader on %s, its worker's room on %s: want both in rack r1", n, hs[0].node)
		}
	})

	t.Run("LeaderCreated", func(t *testing.T) {
		s := setup(t, strings.Replace(ready, `"startupPolicy":"LeaderReady",`, "", 1))
		s.cycle(ctx)
		if n := nodeOf(s, "set-0"); n != "" {
			t.Errorf("the leader is placed on %s, without its workers", n)
		}
		if v := s.verdicts["ns/lws-set-0"]; v.reason != string(core.ReasonNotEnoughMembers) {
			t.Errorf("the group waits with %s: %q, want %s", v.reason, v.message, core.ReasonNotEnoughMembers)
		}
	})
}

// TestJobSetFollowersRoomHeld: a JobSet with exclusive placement in racks,
// one job of 3 pods (a leader and 2 followers, 1 GPU each), on rack r0
// (node n0) and rack r1 (n1 to n3), of 1 GPU a node. JobSet's webhook
// admits the followers only once the leader is bound, pinned to its rack.
// The leader is placed only where its followers fit too, in r1, though n0,
// first in node order, fits the leader alone; the followers' nodes are
// held for them, each until a follower is bound there, and another pod
// does not get them meanwhile. With n3 taken, the job fits nowhere, and
// its leader waits, saying why.
func TestJobSetFollowersRoomHeld(t *testing.T) {
	jobset := ownerKindOf(t, kindJobSet, "v1alpha2")
	const spec = `{"replicatedJobs":[{"name":"w","replicas":1,"template":{"spec":{"parallelism":3,"completions":3}}}]}`
	const key = "jobset.sigs.k8s.io/job-key"
	jobRef := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "js-w-0", UID: "uid-job-js-w-0"}
	member := func(i int) *corev1.Pod {
		p := ownedPod(fmt.Sprintf("js-w-0-%d", i), jobRef,
			map[string]string{labelJobSetName: "js", labelJobSetReplicatedJob: "w", key: "k0", batchv1.JobNameLabel: "js-w-0"},
			map[string]string{annotationJobIndex: fmt.Sprint(i), annotationJobSetExclusive: "rack"})
		if i > 0 { // as JobSet's webhook pins a follower
			p.Spec.NodeSelector = map[string]string{"rack": "r1"}
			return p
		}
		// As JobSet's webhook writes a leader's affinity: in the rack of
		// its job's pods, and in none of another job's.
		term := func(reqs ...metav1.LabelSelectorRequirement) []corev1.PodAffinityTerm {
			return []corev1.PodAffinityTerm{{TopologyKey: "rack", LabelSelector: &metav1.LabelSelector{MatchExpressions: reqs}}}
		}
		p.Spec.Affinity = &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term(
				metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"k0"}})},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term(
				metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpExists},
				metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"k0"}})},
		}
		return p
	}
	setup := func(t *testing.T) *Scheduler {
		t.Helper()
		s, err := New(Options{Now: func() time.Time { return time.Unix(200, 0) }}, fake.NewClientset(), phalanxfake.NewSimpleClientset(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.store.SetQueue(testQueue(v1alpha1.DefaultQueue))
		for i, rack := range []string{"r0", "r1", "r1", "r1"} {
			n := testNode(fmt.Sprintf("n%d", i), 1)
			n.Labels = map[string]string{"rack": rack}
			s.store.SetNode(n)
		}
		u := ownerObj(t, jobset, "js", spec)
		u.SetAnnotations(map[string]string{annotationJobSetExclusive: "rack"})
		s.store.SetOwner(jobset.gvr, jobset.kind, u)
		pg := testPodGroup("jobset-js", 1)
		pg.Annotations = map[string]string{AnnotationDerivedFrom: "JobSet/js"}
		pg.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: kindJobSet, Name: "js", UID: "uid-jobset-js"}}
		s.store.SetPodGroup(pg)
		s.store.SetPod(member(0))
		return s
	}
	nodeOf := func(s *Scheduler, name string) string { return s.store.pods[types.UID("uid-"+name)].node }
	ctx := context.Background()

	t.Run("held", func(t *testing.T) {
		s := setup(t)
		s.cycle(ctx)
		leader := nodeOf(s, "js-w-0-0")
		hs := s.store.holds["ns/jobset-js"]
		if leader == "" || len(hs) != 2 {
			t.Fatalf("leader on %q, holds %+v: want it placed, and a hold for each follower (%+v)", leader, hs, s.verdicts["ns/jobset-js"])
		}
		held := map[string]bool{}
		for _, h := range hs {
			if leader == "n0" || h.node == "n0" || h.node == leader || h.whole != 3 {
				t.Fatalf("leader on %s, holds %+v: want all in rack r1, on other nodes, until 3 members hold nodes", leader, hs)
			}
			held[h.node] = true
		}
		other := testPod("other").GPUs(1).Obj()
		other.CreationTimestamp = metav1.Unix(150, 0) // after the PodGroup (50)
		other.Spec.NodeSelector = map[string]string{"rack": "r1"}
		s.store.SetPod(other)
		s.cycle(ctx)
		if n := nodeOf(s, "other"); n != "" {
			t.Fatalf("while the follower is not admitted yet, other is placed on %s", n)
		}
		// The followers come one by one (the Job controller retries
		// each): each spends the hold of its node, and the other stays.
		s.store.SetPod(member(1))
		s.cycle(ctx)
		first := nodeOf(s, "js-w-0-1")
		if hs := s.store.holds["ns/jobset-js"]; !held[first] || len(hs) != 1 || hs[0].node == first {
			t.Fatalf("follower 1 on %q, holds then %+v: want it on a node held for it (%v), and the other still held", first, hs, held)
		}
		s.store.SetPod(member(2))
		s.cycle(ctx)
		if n := nodeOf(s, "js-w-0-2"); !held[n] || n == first {
			t.Fatalf("follower 2 on %q, want the other node held (%v)", n, held)
		}
		if hs := s.store.holds["ns/jobset-js"]; len(hs) != 0 {
			t.Errorf("holds %+v once the followers are placed, want none", hs)
		}
	})

	t.Run("no room", func(t *testing.T) {
		s := setup(t)
		taken := testPod("taken").GPUs(1).Obj()
		taken.Spec.NodeName, taken.Status.Phase = "n3", corev1.PodRunning
		s.store.SetPod(taken)
		s.cycle(ctx)
		if n := nodeOf(s, "js-w-0-0"); n != "" {
			t.Fatalf("the leader is placed on %s, where its followers cannot follow", n)
		}
		const want = "the gang starts only with room for its 2 followers too, which JobSet js admits once their job's leader is bound"
		if v := s.verdicts["ns/jobset-js"]; !strings.Contains(v.message, want) {
			t.Errorf("the leader waits saying %q, want %q", v.message, want)
		}
	})
}
