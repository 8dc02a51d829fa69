//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/scheduler"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

const rbacManifest = "../../deploy/rbac.yaml"

// TestLeastPrivilege runs the scheduler with nothing but the ServiceAccount
// and roles of deploy/rbac.yaml (no cluster-admin), under leader election,
// and checks that everything it must do works: take the Lease, create the
// default Queue if missing, read namespaces, bind a gang, write PodGroup
// status and the PodScheduled condition of a waiting pod, evict a
// lower-priority gang, record its state in a ConfigMap. The Lease is
// deploy/'s (phalanx-scheduler): the Role names it.
func TestLeastPrivilege(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("rbac", 2).GPUs(2))
	ctx := e.ctx
	applyRBAC(t, ctx)

	// The default queue is created by the scheduler itself.
	err := phalanx.SchedulingV1alpha1().Queues().Delete(ctx, v1alpha1.DefaultQueue, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	tok, err := kube.CoreV1().ServiceAccounts("phalanx-system").CreateToken(ctx, "phalanx-scheduler",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the phalanx-scheduler ServiceAccount: %v", err)
	}
	cfg := rest.AnonymousClientConfig(restConfig)
	cfg.BearerToken = tok.Status.Token
	launchScheduler(t, cfg, &scheduler.LeaderElection{Namespace: "phalanx-system", Name: "phalanx-scheduler",
		Identity: "e2e", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}, true,
		scheduler.Options{Preemption: true, StateNamespace: "phalanx-system"})

	fits := e.create(gang("fits").Members(2).GPUs(2))
	waits := e.create(gang("waits").Members(1).GPUs(4))
	e.eventually(time.Minute, "the gang that fits is bound", e.bound(fits))
	e.eventually(time.Minute, "its PodGroup says Scheduled",
		e.podGroupCondition("fits", v1alpha1.PodGroupScheduled, metav1.ConditionTrue))
	e.eventually(time.Minute, "the waiting pod says why",
		e.podsCondition(waits, corev1.PodScheduled, corev1.ConditionFalse, "nvidia.com/gpu"))
	if _, err := phalanx.SchedulingV1alpha1().Queues().Get(ctx, v1alpha1.DefaultQueue, metav1.GetOptions{}); err != nil {
		t.Errorf("the scheduler did not create the default queue: %v", err)
	}
	// Evict: a gang of higher priority preempts fits.
	urgent := e.create(gang("urgent").Members(2).GPUs(2).PriorityClass(e.priorityClass("urgent", 1000)))
	e.eventually(time.Minute, "fits is evicted for urgent", e.gone(fits))
	e.eventually(time.Minute, "urgent is bound", e.bound(urgent))
	e.eventually(30*time.Second, "the scheduler records its state", func(ctx context.Context) error {
		_, err := kube.CoreV1().ConfigMaps("phalanx-system").Get(ctx, "phalanx-state-phalanx", metav1.GetOptions{})
		return err
	})
	lease, err := kube.CoordinationV1().Leases("phalanx-system").Get(ctx, "phalanx-scheduler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "e2e" {
		t.Errorf("lease %+v (%v), want it held by e2e", lease, err)
	}
}

func ptr[T any](v T) *T { return &v }

// applyRBAC creates the namespace and every object of deploy/rbac.yaml, or
// leaves those that exist.
func applyRBAC(t *testing.T, ctx context.Context) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "phalanx-system"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	f, err := os.Open(rbacManifest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reader := utilyaml.NewYAMLReader(newBufReader(f))
	decode := clientgoscheme.Codecs.UniversalDeserializer().Decode
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		obj, _, err := decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", rbacManifest, err)
		}
		if err := createRBACObject(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", rbacManifest, err)
		}
	}
}

func createRBACObject(ctx context.Context, obj runtime.Object) error {
	var err error
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		_, err = kube.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRole:
		_, err = kube.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRoleBinding:
		_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.Role:
		_, err = kube.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.RoleBinding:
		_, err = kube.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		err = fmt.Errorf("unexpected object %T in %s", obj, rbacManifest)
	}
	return err
}

func newBufReader(f *os.File) *bufio.Reader { return bufio.NewReader(f) }
