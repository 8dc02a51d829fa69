//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/config"
	"github.com/phalanx-sched/phalanx/scheduler"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

const (
	helmChart     = "../../charts/phalanx"
	helmRelease   = "phalanx-e2e"
	helmNamespace = "phalanx-helm-e2e"
)

// helmCmd runs the helm binary of PHALANX_HELM (hack/test-e2e.sh builds it) against the
// cluster of KUBECONFIG, with its caches and settings in a directory of the test.
func helmCmd(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("PHALANX_HELM")
	if bin == "" {
		t.Fatal("PHALANX_HELM is not set: run the suite with hack/test-e2e.sh, which builds helm (hack/helm.sh)")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		t.Logf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), err
}

// TestHelm installs charts/phalanx with helm into the local API server and checks what can be
// checked without a kubelet: every object of the release exists, the CRDs are established and
// belong to the release, the Deployment runs the chart's configuration, and the chart's
// ServiceAccount may do what the scheduler does: the scheduler is run here with that account's
// token, the chart's configuration and its Lease, and binds a gang, writes statuses and evicts.
// Then helm upgrade changes the configuration, and helm uninstall removes all but the CRDs.
func TestHelm(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	home := t.TempDir()
	// What the release leaves goes; the namespace stays (nothing here would finish deleting it:
	// there is no namespace controller), so that another run installs into it again.
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = helmCmd(t, home, "uninstall", helmRelease, "--namespace", helmNamespace, "--ignore-not-found")
		_ = kube.CoordinationV1().Leases(helmNamespace).Delete(ctx, helmRelease+"-scheduler", metav1.DeleteOptions{})
		_ = kube.CoreV1().ConfigMaps(helmNamespace).Delete(ctx, "phalanx-state-phalanx", metav1.DeleteOptions{})
	})

	// The suite installed the CRDs from deploy/crds; the release adopts them, as a cluster moving
	// from deploy/ to the chart would (charts/phalanx/README.md).
	for _, name := range []string{"podgroups.scheduling.phalanx.dev", "queues.scheduling.phalanx.dev"} {
		patch := `{"metadata":{"labels":{"app.kubernetes.io/managed-by":"Helm"},"annotations":{"meta.helm.sh/release-name":"` +
			helmRelease + `","meta.helm.sh/release-namespace":"` + helmNamespace + `"}}}`
		if _, err := dyn.Resource(crdGVR).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("adopt CRD %s: %v", name, err)
		}
	}
	if _, err := helmCmd(t, home, "install", helmRelease, helmChart, "--namespace", helmNamespace, "--create-namespace",
		"--set", "image.tag=e2e", "--timeout", "2m"); err != nil {
		t.Fatalf("helm install: %v", err)
	}

	notes, err := helmCmd(t, home, "get", "notes", helmRelease, "--namespace", helmNamespace)
	if err != nil || !strings.Contains(notes, "kube-batch") || !strings.Contains(notes, "get deployment "+helmRelease+"-scheduler") {
		t.Errorf("the release's notes (%v):\n%s", err, notes)
	}

	// Every object of the release exists in the API server.
	manifest, err := helmCmd(t, home, "get", "manifest", helmRelease, "--namespace", helmNamespace)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifest(t, manifest)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		var got *unstructured.Unstructured
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			got, err = dyn.Resource(m.Resource).Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
		} else {
			got, err = dyn.Resource(m.Resource).Get(ctx, u.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			t.Errorf("%s %s/%s of the release: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			continue
		}
		if got.GetAnnotations()["meta.helm.sh/release-name"] != helmRelease {
			t.Errorf("%s %s: annotations %v, want it owned by release %s", u.GetKind(), u.GetName(), got.GetAnnotations(), helmRelease)
		}
	}
	for _, kind := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
		"RoleBinding", "ConfigMap", "Deployment", "Service"} {
		if kinds[kind] == 0 {
			t.Errorf("the release has no %s (it has %v)", kind, kinds)
		}
	}
	if kinds["CustomResourceDefinition"] != 2 {
		t.Errorf("the release has %d CRDs, want 2", kinds["CustomResourceDefinition"])
	}
	for _, name := range []string{"podgroups.scheduling.phalanx.dev", "queues.scheduling.phalanx.dev"} {
		e.eventually(time.Minute, "CRD "+name+" is established", func(ctx context.Context) error {
			crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !crdEstablished(crd) {
				return errNotYet("not Established")
			}
			return nil
		})
	}

	// The Deployment as the API server stored it, and the configuration it mounts.
	const name = helmRelease + "-scheduler"
	dep, err := kube.AppsV1().Deployments(helmNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != "phalanx:e2e" || dep.Spec.Template.Spec.ServiceAccountName != name {
		t.Errorf("Deployment image %s serviceAccount %s", c.Image, dep.Spec.Template.Spec.ServiceAccountName)
	}
	leaseName := ""
	for _, want := range []string{"--config=/etc/phalanx/config.yaml", "--leader-elect=true", "--leader-elect-namespace=" + helmNamespace} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("Deployment args %q lack %q", c.Args, want)
		}
	}
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--leader-elect-name="); ok {
			leaseName = v
		}
	}
	if leaseName != name {
		t.Errorf("lease name %q, want %q", leaseName, name)
	}
	cfg := chartConfig(t, ctx, helmRelease+"-config")
	if !slices.Equal(cfg.Scheduler.SchedulerNames, []string{"phalanx", "kube-batch"}) {
		t.Errorf("configuration's scheduler names %v", cfg.Scheduler.SchedulerNames)
	}

	// What the ServiceAccount may do: each rule of its roles, by SubjectAccessReview, and
	// nothing it should not.
	user := "system:serviceaccount:" + helmNamespace + ":" + name
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + helmNamespace, "system:authenticated"}
	cr, err := kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role, err := kube.RbacV1().Roles(helmNamespace).Get(ctx, name+"-leader-election", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mayAll := func(rules []rbacv1.PolicyRule, namespace string) {
		for _, r := range rules {
			for _, group := range r.APIGroups {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					names := r.ResourceNames
					if len(names) == 0 {
						names = []string{""} // any object
					}
					for _, verb := range r.Verbs {
						for _, name := range names {
							attrs := authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name}
							if !allowed(t, ctx, user, groups, attrs) {
								t.Errorf("%s may not %s %s/%s %q in %q", user, verb, group, res, name, namespace)
							}
						}
					}
				}
			}
		}
	}
	mayAll(cr.Rules, "")
	mayAll(role.Rules, helmNamespace)
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Verb: "get", Resource: "secrets"},
		{Verb: "delete", Resource: "pods", Namespace: e.ns},
		{Verb: "update", Resource: "leases", Group: "coordination.k8s.io", Namespace: "kube-system"},
		// In its own namespace, only its Lease and its state ConfigMap.
		{Verb: "update", Resource: "leases", Group: "coordination.k8s.io", Namespace: helmNamespace, Name: "another-lease"},
		{Verb: "get", Resource: "configmaps", Namespace: helmNamespace, Name: helmRelease + "-config"},
		{Verb: "update", Resource: "configmaps", Namespace: helmNamespace, Name: "another"},
		{Verb: "delete", Group: "scheduling.phalanx.dev", Resource: "queues"},
	} {
		if allowed(t, ctx, user, groups, attrs) {
			t.Errorf("%s may %s %s/%s in %q: more than the scheduler needs", user, attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace)
		}
	}

	// The scheduler with the chart's ServiceAccount, configuration and Lease.
	e.addNodes(kwokNodes("helm", 2).GPUs(2))
	if err := phalanx.SchedulingV1alpha1().Queues().Delete(ctx, v1alpha1.DefaultQueue, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	tok, err := kube.CoreV1().ServiceAccounts(helmNamespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the chart's ServiceAccount: %v", err)
	}
	rc := rest.AnonymousClientConfig(restConfig)
	rc.BearerToken = tok.Status.Token
	stop, _ := launchScheduler(t, rc, &scheduler.LeaderElection{Namespace: helmNamespace, Name: leaseName, Identity: "helm-e2e",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}, true,
		scheduler.Options{SchedulerNames: cfg.Scheduler.SchedulerNames, Preemption: true, StateNamespace: helmNamespace})
	fits := e.create(gang("fits").Members(2).GPUs(2))
	waits := e.create(gang("waits").Members(1).GPUs(4).SchedulerName("kube-batch"))
	e.eventually(time.Minute, "the gang that fits is bound", e.bound(fits))
	e.eventually(time.Minute, "its PodGroup says Scheduled", e.podGroupCondition("fits", v1alpha1.PodGroupScheduled, metav1.ConditionTrue))
	e.eventually(time.Minute, "the waiting pod (scheduler name kube-batch) says why",
		e.podsCondition(waits, corev1.PodScheduled, corev1.ConditionFalse, "nvidia.com/gpu"))
	urgent := e.create(gang("urgent").Members(2).GPUs(2).PriorityClass(e.priorityClass("urgent", 1000)))
	e.eventually(time.Minute, "fits is evicted for urgent", e.gone(fits))
	e.eventually(time.Minute, "urgent is bound", e.bound(urgent))
	e.eventually(30*time.Second, "the scheduler records its state", func(ctx context.Context) error {
		_, err := kube.CoreV1().ConfigMaps(helmNamespace).Get(ctx, "phalanx-state-phalanx", metav1.GetOptions{})
		return err
	})
	if _, err := phalanx.SchedulingV1alpha1().Queues().Get(ctx, v1alpha1.DefaultQueue, metav1.GetOptions{}); err != nil {
		t.Errorf("the scheduler did not create the default queue: %v", err)
	}
	lease, err := kube.CoordinationV1().Leases(helmNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "helm-e2e" {
		t.Errorf("lease %s: %+v (%v), want it held by helm-e2e", leaseName, lease, err)
	}
	stop()

	// helm upgrade: a new configuration reaches the ConfigMap and rolls the pod template.
	before := dep.Spec.Template.Annotations["checksum/config"]
	if _, err := helmCmd(t, home, "upgrade", helmRelease, helmChart, "--namespace", helmNamespace, "--reuse-values",
		"--set", "config.scheduling.reservations=3"); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	if cfg := chartConfig(t, ctx, helmRelease+"-config"); cfg.Scheduling.Reservations == nil || *cfg.Scheduling.Reservations != 3 {
		t.Errorf("after the upgrade, reservations %v, want 3", cfg.Scheduling.Reservations)
	}
	dep, err = kube.AppsV1().Deployments(helmNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after := dep.Spec.Template.Annotations["checksum/config"]; after == before || dep.Spec.Template.Spec.Containers[0].Image != "phalanx:e2e" {
		t.Errorf("after the upgrade: checksum/config %q (was %q), image %s", after, before, dep.Spec.Template.Spec.Containers[0].Image)
	}

	// helm uninstall: the release's objects go, the CRDs (and every PodGroup and Queue) stay.
	if _, err := helmCmd(t, home, "uninstall", helmRelease, "--namespace", helmNamespace, "--wait", "--timeout", "1m"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	if _, err := kube.AppsV1().Deployments(helmNamespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment after helm uninstall: %v, want NotFound", err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRole after helm uninstall: %v, want NotFound", err)
	}
	for _, crd := range []string{"podgroups.scheduling.phalanx.dev", "queues.scheduling.phalanx.dev"} {
		u, err := dyn.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
		if err != nil || !crdEstablished(u) || u.GetDeletionTimestamp() != nil {
			t.Errorf("CRD %s after helm uninstall: %v; want it kept and established", crd, err)
		}
	}
	if _, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, "urgent", metav1.GetOptions{}); err != nil {
		t.Errorf("PodGroup urgent after helm uninstall: %v", err)
	}
}

type errNotYet string

func (e errNotYet) Error() string { return string(e) }

func allowed(t *testing.T, ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview %+v: %v", attrs, err)
	}
	return sar.Status.Allowed
}

// chartConfig reads the release's configuration ConfigMap and parses it as the scheduler does.
func chartConfig(t *testing.T, ctx context.Context, name string) *config.Configuration {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(helmNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatalf("ConfigMap %s: %v", name, err)
	}
	return cfg
}

func decodeManifest(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("the release's manifest: %v", err)
			}
			break
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no objects in the release's manifest:\n%s", manifest)
	}
	return out
}
