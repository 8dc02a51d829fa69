//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The keys of gangs derived from workloads (scheduler/owners.go), spelled
// out here.
const (
	annDerivedFrom   = "scheduling.phalanx.dev/derived-from"
	annJobIndex      = "batch.kubernetes.io/job-completion-index"
	labelJobNameK8s  = "batch.kubernetes.io/job-name"
	labelJobUIDK8s   = "batch.kubernetes.io/controller-uid"
	labelJobIndexK8s = "batch.kubernetes.io/job-completion-index"
)

// TestOwnerIndexedJob: an Indexed batch Job of parallelism 3, one GPU per
// pod, whose pods name no gang, on two nodes of one GPU. Phalanx makes the
// Job a gang: it creates a PodGroup owned by the Job with minMember 3, and
// binds no pod while only two fit; with a third node all three run. (There
// is no Job controller in the test cluster: the test creates the pods as
// it would, with the Job as controller and a completion index.)
func TestOwnerIndexedJob(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("owner-job", 2).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)

	indexed := batchv1.IndexedCompletion
	three := int32(3)
	tmpl := makePod("template").GPUs(1).Obj()
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	bj, err := kube.BatchV1().Jobs(e.ns).Create(e.ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train"},
		Spec: batchv1.JobSpec{CompletionMode: &indexed, Parallelism: &three, Completions: &three,
			Template: corev1.PodTemplateSpec{Spec: tmpl.Spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Job: %v", err)
	}
	t.Cleanup(func() {
		deleteQuietly(t, "Job", kube.BatchV1().Jobs(e.ns).Delete(context.Background(), "train", metav1.DeleteOptions{}))
	})

	j := &job{name: "train", size: 3}
	yes := true
	for i := range 3 {
		idx := strconv.Itoa(i)
		p := makePod(fmt.Sprintf("train-%d-x%d", i, i)).GPUs(1).
			RunFor("10m").            // KWOK completes a Job's pods at once otherwise
			Label(labelJob, "train"). // the test helpers' job label
			Label(labelJobNameK8s, "train").Label("job-name", "train").
			Label(labelJobUIDK8s, string(bj.UID)).Label("controller-uid", string(bj.UID)).
			Label(labelJobIndexK8s, idx).Annotation(annJobIndex, idx).Obj()
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: bj.UID,
			Controller: &yes, BlockOwnerDeletion: &yes}}
		j.pods = append(j.pods, e.createPod(p).Name)
	}

	e.eventually(30*time.Second, "Phalanx creates the Job's PodGroup",
		e.derivedPodGroup("job-train", 3, "batch/v1", "Job", "train", bj.UID))
	e.eventually(30*time.Second, "the pods say the gang lacks GPUs",
		e.podsCondition(j, corev1.PodScheduled, corev1.ConditionFalse, "nvidia.com/gpu"))
	e.consistently(holdStill, "the Job's pods to stay whole-pending", e.noneBound(j))

	e.addNodes(kwokNodes("owner-job-more", 1).CPU("4").Memory("16Gi").GPUs(1))
	e.eventually(time.Minute, "the Job's 3 pods run", e.running(j))
	e.eventually(30*time.Second, "the derived PodGroup is Running", e.podGroupPhase("job-train", v1alpha1.PodGroupRunning))
	e.eventually(10*time.Second, "no node over its GPUs", gpusWithinCapacity)
}

// TestOwnerPDBGang: Kubeflow 0.3's tf-operator declared a gang with a
// PodDisruptionBudget over the job's plain pods, minAvailable = every
// replica. Three such pods of one GPU on two one-GPU nodes wait whole in a
// PodGroup Phalanx creates, owned by the PDB; with a third node they run.
func TestOwnerPDBGang(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("owner-pdb", 2).CPU("4").Memory("16Gi").GPUs(1))

	minAvailable := intstr.FromInt32(3)
	pdb, err := kube.PolicyV1().PodDisruptionBudgets(e.ns).Create(e.ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "tfjob"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{labelJob: "tfjob"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PodDisruptionBudget: %v", err)
	}
	t.Cleanup(func() {
		deleteQuietly(t, "PodDisruptionBudget", kube.PolicyV1().PodDisruptionBudgets(e.ns).Delete(context.Background(), "tfjob", metav1.DeleteOptions{}))
	})
	j := &job{name: "tfjob", size: 3}
	for i := range 3 {
		p := makePod(fmt.Sprintf("tfjob-worker-%d", i)).GPUs(1).Label(labelJob, "tfjob").Obj()
		j.pods = append(j.pods, e.createPod(p).Name)
	}
	// The scheduler starts after the PDB and the pods exist: it reads both
	// before its first cycle, so no pod is bound alone before it sees the
	// PDB.
	startScheduler(t)

	e.eventually(30*time.Second, "Phalanx creates the PDB's PodGroup",
		e.derivedPodGroup("pdb-tfjob", 3, "policy/v1", "PodDisruptionBudget", "tfjob", pdb.UID))
	e.eventually(30*time.Second, "the pods say the gang lacks GPUs",
		e.podsCondition(j, corev1.PodScheduled, corev1.ConditionFalse, "nvidia.com/gpu"))
	e.consistently(holdStill, "the PDB's pods to stay whole-pending", e.noneBound(j))

	e.addNodes(kwokNodes("owner-pdb-more", 1).CPU("4").Memory("16Gi").GPUs(1))
	e.eventually(time.Minute, "the 3 pods run", e.running(j))
	e.eventually(10*time.Second, "no node over its GPUs", gpusWithinCapacity)
}

// derivedPodGroup: the PodGroup name exists with minMember minMember, owned (not
// as controller) by the named object, and says what it was derived from.
func (e *env) derivedPodGroup(name string, minMember int32, apiVersion, kind, owner string, uid types.UID) check {
	return func(ctx context.Context) error {
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pg.Spec.MinMember != minMember {
			return fmt.Errorf("PodGroup %s has minMember %d, want %d", name, pg.Spec.MinMember, minMember)
		}
		if got, want := pg.Annotations[annDerivedFrom], kind+"/"+owner; got != want {
			return fmt.Errorf("PodGroup %s: annotation %s=%q, want %q", name, annDerivedFrom, got, want)
		}
		if len(pg.OwnerReferences) != 1 {
			return fmt.Errorf("PodGroup %s has owner references %+v, want one to %s %s", name, pg.OwnerReferences, kind, owner)
		}
		r := pg.OwnerReferences[0]
		if r.APIVersion != apiVersion || r.Kind != kind || r.Name != owner || r.UID != uid ||
			r.Controller == nil || *r.Controller || r.BlockOwnerDeletion == nil || *r.BlockOwnerDeletion {
			return fmt.Errorf("PodGroup %s is owned by %+v, want %s %s %s %s, not as controller nor blocking deletion",
				name, r, apiVersion, kind, owner, uid)
		}
		return nil
	}
}

func deleteQuietly(t *testing.T, what string, err error) {
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: delete %s: %v", what, err)
	}
}
