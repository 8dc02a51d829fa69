//go:build chart

// Package chart tests the Helm chart charts/phalanx through `helm template`: with its default
// values it renders what deploy/ installs, and other values land where they should. The helm
// binary is PHALANX_HELM (`make chart-test` builds it with hack/helm.sh).
package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/config"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	chartDir  = "../../charts/phalanx"
	deployDir = "../../deploy"
)

// objects are the documents of a manifest, by "Kind/namespace/name".
type objects map[string]*unstructured.Unstructured

func key(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func decodeAll(t *testing.T, what string, data []byte) objects {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	out := objects{}
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", what, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		k := key(u.GetKind(), u.GetNamespace(), u.GetName())
		if _, dup := out[k]; dup {
			t.Fatalf("%s: %s twice", what, k)
		}
		out[k] = u
	}
}

// template runs helm template over the chart and returns its objects, or helm's error output.
func template(t *testing.T, release, namespace string, args ...string) (objects, error) {
	t.Helper()
	helm := os.Getenv("PHALANX_HELM")
	if helm == "" {
		t.Fatal("PHALANX_HELM is not set: run `make chart-test`, which builds helm (hack/helm.sh)")
	}
	cmd := exec.Command(helm, append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New(stderr.String())
	}
	return decodeAll(t, "helm template "+strings.Join(args, " "), stdout.Bytes()), nil
}

func mustTemplate(t *testing.T, release, namespace string, args ...string) objects {
	t.Helper()
	objs, err := template(t, release, namespace, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	return objs
}

func readDeploy(t *testing.T, files ...string) objects {
	t.Helper()
	all := objects{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(deployDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range decodeAll(t, f, data) {
			all[k] = v
		}
	}
	return all
}

// get returns the object, converted into out when out is not nil.
func (o objects) get(t *testing.T, kind, namespace, name string, out any) *unstructured.Unstructured {
	t.Helper()
	u, ok := o[key(kind, namespace, name)]
	if !ok {
		t.Fatalf("no %s %s/%s; have %v", kind, namespace, name, o.keys())
	}
	if out != nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
			t.Fatalf("%s %s/%s: %v", kind, namespace, name, err)
		}
	}
	return u
}

func (o objects) keys() []string {
	var ks []string
	for k := range o {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// configOf parses the PhalanxConfiguration of a ConfigMap as the scheduler does.
func configOf(t *testing.T, cm *corev1.ConfigMap) *config.Configuration {
	t.Helper()
	text, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no config.yaml: %v", cm.Name, cm.Data)
	}
	cfg, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatalf("ConfigMap %s's config.yaml: %v\n%s", cm.Name, err, text)
	}
	return cfg
}

func container(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment %s: %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	return &d.Spec.Template.Spec.Containers[0]
}

// TestDefaults: with its default values, released as phalanx into phalanx-system, the chart
// renders every object of deploy/ under the same kind, namespace and name, with the same RBAC
// rules, configuration, container and Service, plus the CRDs of deploy/crds.
func TestDefaults(t *testing.T) {
	const ns = "phalanx-system"
	chart := mustTemplate(t, "phalanx", ns)
	deploy := readDeploy(t, "rbac.yaml", "config.yaml", "deployment.yaml", "metrics-service.yaml")
	for k := range deploy {
		if _, ok := chart[k]; !ok {
			t.Errorf("deploy/ has %s, the chart does not", k)
		}
	}
	want := []string{
		key("CustomResourceDefinition", "", "podgroups.scheduling.phalanx.dev"),
		key("CustomResourceDefinition", "", "queues.scheduling.phalanx.dev"),
	}
	for k := range deploy {
		want = append(want, k)
	}
	slices.Sort(want)
	if got := chart.keys(); !slices.Equal(got, want) {
		t.Errorf("objects:\n got %v\nwant %v", got, want)
	}

	// RBAC: the same rules and subjects.
	for _, kind := range []string{"ClusterRole", "Role"} {
		for k, u := range deploy {
			if u.GetKind() != kind {
				continue
			}
			var d, c rbacv1.ClusterRole
			deploy.get(t, kind, u.GetNamespace(), u.GetName(), &d)
			chart.get(t, kind, u.GetNamespace(), u.GetName(), &c)
			if !reflect.DeepEqual(d.Rules, c.Rules) {
				t.Errorf("%s: the chart's rules differ from deploy/rbac.yaml's:\n chart %+v\ndeploy %+v", k, c.Rules, d.Rules)
			}
		}
	}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for k, u := range deploy {
			if u.GetKind() != kind {
				continue
			}
			var d, c rbacv1.RoleBinding
			deploy.get(t, kind, u.GetNamespace(), u.GetName(), &d)
			chart.get(t, kind, u.GetNamespace(), u.GetName(), &c)
			if !reflect.DeepEqual(d.Subjects, c.Subjects) || !reflect.DeepEqual(d.RoleRef, c.RoleRef) {
				t.Errorf("%s: subjects %+v roleRef %+v, deploy/ has %+v %+v", k, c.Subjects, c.RoleRef, d.Subjects, d.RoleRef)
			}
		}
	}

	// The configuration: parses, and is deploy/config.yaml's.
	var dcm, ccm corev1.ConfigMap
	deploy.get(t, "ConfigMap", ns, "phalanx-config", &dcm)
	chart.get(t, "ConfigMap", ns, "phalanx-config", &ccm)
	if d, c := configOf(t, &dcm), configOf(t, &ccm); !reflect.DeepEqual(d, c) {
		t.Errorf("the chart's configuration differs from deploy/config.yaml's:\n%s\n---\n%s", ccm.Data["config.yaml"], dcm.Data["config.yaml"])
	}

	// The Deployment: the same container but for the flags the chart adds.
	var dd, cd appsv1.Deployment
	deploy.get(t, "Deployment", ns, "phalanx-scheduler", &dd)
	chart.get(t, "Deployment", ns, "phalanx-scheduler", &cd)
	if *cd.Spec.Replicas != *dd.Spec.Replicas {
		t.Errorf("replicas %d, deploy/ has %d", *cd.Spec.Replicas, *dd.Spec.Replicas)
	}
	dp, cp := dd.Spec.Template.Spec, cd.Spec.Template.Spec
	if cp.ServiceAccountName != dp.ServiceAccountName || cp.PriorityClassName != dp.PriorityClassName ||
		!reflect.DeepEqual(cp.Volumes, dp.Volumes) {
		t.Errorf("pod spec: serviceAccount %q priorityClass %q volumes %+v; deploy/ has %q %q %+v",
			cp.ServiceAccountName, cp.PriorityClassName, cp.Volumes, dp.ServiceAccountName, dp.PriorityClassName, dp.Volumes)
	}
	dc, cc := container(t, &dd), container(t, &cd)
	for _, arg := range dc.Args {
		if !slices.Contains(cc.Args, arg) {
			t.Errorf("args %q lack deploy/'s %q", cc.Args, arg)
		}
	}
	for _, arg := range []string{"--leader-elect=true", "--leader-elect-name=phalanx-scheduler",
		"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"} {
		if !slices.Contains(cc.Args, arg) {
			t.Errorf("args %q lack %q", cc.Args, arg)
		}
	}
	cc.Args, dc.Args = nil, nil
	cc.ImagePullPolicy = "" // deploy/ leaves it to the API server's default for a tag
	if !reflect.DeepEqual(cc, dc) {
		t.Errorf("container differs from deploy/'s:\n chart %+v\ndeploy %+v", cc, dc)
	}
	if !selects(cd.Spec.Selector.MatchLabels, cd.Spec.Template.Labels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", cd.Spec.Selector.MatchLabels, cd.Spec.Template.Labels)
	}

	// The metrics Service: same port and scrape annotations, selecting the scheduler's pods.
	var ds, cs corev1.Service
	deploy.get(t, "Service", ns, "phalanx-scheduler-metrics", &ds)
	chart.get(t, "Service", ns, "phalanx-scheduler-metrics", &cs)
	if !reflect.DeepEqual(cs.Spec.Ports, ds.Spec.Ports) || !reflect.DeepEqual(cs.Annotations, ds.Annotations) {
		t.Errorf("Service ports %+v annotations %v; deploy/ has %+v %v", cs.Spec.Ports, cs.Annotations, ds.Spec.Ports, ds.Annotations)
	}
	if !selects(cs.Spec.Selector, cd.Spec.Template.Labels) {
		t.Errorf("the Service's selector %v does not select the scheduler's pods %v", cs.Spec.Selector, cd.Spec.Template.Labels)
	}

	// The CRDs: deploy/crds's, with the chart's labels and helm.sh/resource-policy: keep.
	crds := readDeploy(t, "crds/scheduling.phalanx.dev_podgroups.yaml", "crds/scheduling.phalanx.dev_queues.yaml")
	for k, want := range crds {
		got := chart[k]
		if got == nil {
			t.Errorf("no %s", k)
			continue
		}
		if got.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s: annotations %v, want helm.sh/resource-policy: keep", k, got.GetAnnotations())
		}
		if got.GetLabels()["app.kubernetes.io/part-of"] != "phalanx" {
			t.Errorf("%s: labels %v", k, got.GetLabels())
		}
		if !equalCRDs(got, want) {
			t.Errorf("%s: the chart's CRD differs from deploy/crds's beyond labels and annotations", k)
		}
	}
}

// equalCRDs compares two CRDs without their labels and the chart's resource policy.
func equalCRDs(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u = u.DeepCopy()
		u.SetLabels(nil)
		ann := u.GetAnnotations()
		delete(ann, "helm.sh/resource-policy")
		u.SetAnnotations(ann)
		return u
	}
	return reflect.DeepEqual(strip(a).Object, strip(b).Object)
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestGeneratedCopies: the chart's copies of the CRDs and of the Grafana dashboard are byte for
// byte those of deploy/ (make generate makes them).
func TestGeneratedCopies(t *testing.T) {
	want, _ := filepath.Glob(filepath.Join(deployDir, "crds", "*.yaml"))
	got, _ := filepath.Glob(filepath.Join(chartDir, "files", "crds", "*.yaml"))
	base := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if len(want) == 0 || !slices.Equal(base(got), base(want)) {
		t.Fatalf("charts/phalanx/files/crds holds %v, deploy/crds %v: run make generate", base(got), base(want))
	}
	pairs := [][2]string{{filepath.Join(deployDir, "grafana", "phalanx-dashboard.json"), filepath.Join(chartDir, "files", "phalanx-dashboard.json")}}
	for i := range want {
		pairs = append(pairs, [2]string{want[i], got[i]})
	}
	for _, p := range pairs {
		a, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p[1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: run make generate", p[1], p[0])
		}
	}
}

// TestValues: values other than the defaults land where they should.
func TestValues(t *testing.T) {
	const ns = "batch"
	values := filepath.Join(t.TempDir(), "values.yaml")
	err := os.WriteFile(values, []byte(`
image: {repository: registry.example/phalanx, tag: v1.2.3, pullPolicy: Always}
imagePullSecrets: [{name: pull}]
replicas: 3
namespace: batch
createNamespace: true
config:
  scheduling:
    reserveAfter: 30m
    preemption: false
    reclaimAfter: 10m
  scheduler:
    schedulerNames: [gpu-sched]
    topology: [topology.kubernetes.io/zone, phalanx.dev/rack]
    kubeAPIQPS: 200
    gpuModelLabel: null
leaderElection: {leaseName: gpu-lease, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 4s}
resources:
  requests: {cpu: "1", memory: 2Gi}
  limits: {memory: 4Gi}
metrics:
  port: 9090
  service: {annotations: {team: ml}}
grafanaDashboard: {enabled: true, namespace: monitoring}
crds: {keep: false}
serviceAccount: {name: gpu-sa, annotations: {iam: role}}
priorityClassName: ""
extraArgs: [--profiling]
nodeSelector: {node-role: control}
tolerations: [{key: dedicated, operator: Exists}]
podAnnotations: {team: ml}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	objs := mustTemplate(t, "gpu", "default", "-f", values)
	objs.get(t, "Namespace", "", ns, nil)
	for _, u := range objs {
		switch u.GetKind() {
		case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
			if u.GetNamespace() != "" {
				t.Errorf("%s %s in namespace %q", u.GetKind(), u.GetName(), u.GetNamespace())
			}
		default:
			if want := map[bool]string{true: "monitoring", false: ns}[strings.HasSuffix(u.GetName(), "-dashboard")]; u.GetNamespace() != want {
				t.Errorf("%s %s in namespace %q, want %q", u.GetKind(), u.GetName(), u.GetNamespace(), want)
			}
		}
	}

	var cm corev1.ConfigMap
	objs.get(t, "ConfigMap", ns, "gpu-config", &cm)
	cfg := configOf(t, &cm)
	s, r := cfg.Scheduling, cfg.Scheduler
	if s.ReserveAfter == nil || s.ReserveAfter.String() != "30m0s" || s.Preemption == nil || *s.Preemption ||
		s.ReclaimAfter == nil || s.ReclaimAfter.String() != "10m0s" || s.Reservations == nil || *s.Reservations != 4 {
		t.Errorf("scheduling section %s", cm.Data["config.yaml"])
	}
	if !slices.Equal(r.SchedulerNames, []string{"gpu-sched"}) || !slices.Equal(r.Topology, []string{"topology.kubernetes.io/zone", "phalanx.dev/rack"}) ||
		r.KubeAPIQPS == nil || *r.KubeAPIQPS != 200 || r.GPUModelLabel != nil {
		t.Errorf("scheduler section %s", cm.Data["config.yaml"])
	}

	var d appsv1.Deployment
	objs.get(t, "Deployment", ns, "gpu-scheduler", &d)
	c, pod := container(t, &d), d.Spec.Template.Spec
	if *d.Spec.Replicas != 3 || c.Image != "registry.example/phalanx:v1.2.3" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("replicas %d image %s pull %s", *d.Spec.Replicas, c.Image, c.ImagePullPolicy)
	}
	for _, arg := range []string{"--config=/etc/phalanx/config.yaml", "--leader-elect=true", "--leader-elect-name=gpu-lease",
		"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=4s",
		"--leader-elect-namespace=batch", "--address=:9090", "--profiling"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %q lack %q", c.Args, arg)
		}
	}
	if c.Ports[0].ContainerPort != 9090 || c.Resources.Limits.Memory().String() != "4Gi" || c.Resources.Requests.Cpu().String() != "1" {
		t.Errorf("ports %+v resources %+v", c.Ports, c.Resources)
	}
	if pod.ServiceAccountName != "gpu-sa" || pod.PriorityClassName != "" || pod.NodeSelector["node-role"] != "control" ||
		len(pod.Tolerations) != 1 || len(pod.ImagePullSecrets) != 1 || d.Spec.Template.Annotations["team"] != "ml" {
		t.Errorf("pod spec %+v annotations %v", pod, d.Spec.Template.Annotations)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "gpu-config" {
		t.Errorf("volumes %+v, want the ConfigMap gpu-config", pod.Volumes)
	}

	var sa corev1.ServiceAccount
	objs.get(t, "ServiceAccount", ns, "gpu-sa", &sa)
	if sa.Annotations["iam"] != "role" {
		t.Errorf("ServiceAccount annotations %v", sa.Annotations)
	}
	var crb, rb rbacv1.RoleBinding
	objs.get(t, "ClusterRoleBinding", "", "gpu-scheduler", &crb)
	objs.get(t, "RoleBinding", ns, "gpu-scheduler-leader-election", &rb)
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gpu-sa", Namespace: ns}}
	if !reflect.DeepEqual(crb.Subjects, want) || !reflect.DeepEqual(rb.Subjects, want) {
		t.Errorf("subjects %+v and %+v, want %+v", crb.Subjects, rb.Subjects, want)
	}

	// The Role reads and writes the Lease and the state ConfigMap of these values by name.
	var role rbacv1.Role
	objs.get(t, "Role", ns, "gpu-scheduler-leader-election", &role)
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"gpu-lease"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"phalanx-state-gpu-sched"}, Verbs: []string{"get", "update"}},
	}
	if !reflect.DeepEqual(role.Rules, wantRules) {
		t.Errorf("Role rules:\n got %+v\nwant %+v", role.Rules, wantRules)
	}
	// Without leader election, no Lease.
	noLease := mustTemplate(t, "gpu", "default", "-f", values, "--set", "leaderElection.enabled=false,replicas=1")
	noLease.get(t, "Role", ns, "gpu-scheduler-leader-election", &role)
	if !reflect.DeepEqual(role.Rules, wantRules[2:]) {
		t.Errorf("Role rules without leader election:\n got %+v\nwant %+v", role.Rules, wantRules[2:])
	}

	var svc corev1.Service
	objs.get(t, "Service", ns, "gpu-scheduler-metrics", &svc)
	if svc.Spec.Ports[0].Port != 9090 || svc.Annotations["prometheus.io/port"] != "9090" || svc.Annotations["team"] != "ml" {
		t.Errorf("Service ports %+v annotations %v", svc.Spec.Ports, svc.Annotations)
	}

	var dash corev1.ConfigMap
	objs.get(t, "ConfigMap", "monitoring", "gpu-scheduler-dashboard", &dash)
	if dash.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard labels %v", dash.Labels)
	}
	wantJSON, err := os.ReadFile(filepath.Join(deployDir, "grafana", "phalanx-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal([]byte(dash.Data["phalanx-dashboard.json"]), &a); err != nil {
		t.Fatalf("the dashboard ConfigMap's JSON: %v", err)
	}
	if err := json.Unmarshal(wantJSON, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("the dashboard ConfigMap's JSON is not deploy/grafana/phalanx-dashboard.json")
	}

	for _, name := range []string{"podgroups.scheduling.phalanx.dev", "queues.scheduling.phalanx.dev"} {
		crd := objs.get(t, "CustomResourceDefinition", "", name, nil)
		if _, ok := crd.GetAnnotations()["helm.sh/resource-policy"]; ok {
			t.Errorf("%s keeps helm.sh/resource-policy with crds.keep=false", name)
		}
	}
}

// TestOptionalObjects: CRDs, RBAC, the ServiceAccount and the Service can each be left out, and
// leader election turned off for one replica.
func TestOptionalObjects(t *testing.T) {
	objs := mustTemplate(t, "phalanx", "phalanx-system", "--set",
		"crds.install=false,rbac.create=false,serviceAccount.create=false,serviceAccount.name=existing,"+
			"metrics.service.enabled=false,leaderElection.enabled=false,replicas=1")
	want := []string{key("ConfigMap", "phalanx-system", "phalanx-config"), key("Deployment", "phalanx-system", "phalanx-scheduler")}
	if got := objs.keys(); !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	var d appsv1.Deployment
	objs.get(t, "Deployment", "phalanx-system", "phalanx-scheduler", &d)
	c := container(t, &d)
	if !slices.Contains(c.Args, "--leader-elect=false") || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--leader-elect-name=") }) {
		t.Errorf("args %q: want --leader-elect=false and no lease flags", c.Args)
	}
	if d.Spec.Template.Spec.ServiceAccountName != "existing" {
		t.Errorf("serviceAccountName %q", d.Spec.Template.Spec.ServiceAccountName)
	}
}

// TestConfigRollsPods: another configuration changes the pod template (its checksum annotation),
// so that helm upgrade restarts the scheduler, which reads the file at start.
func TestConfigRollsPods(t *testing.T) {
	annotation := func(args ...string) string {
		var d appsv1.Deployment
		mustTemplate(t, "phalanx", "phalanx-system", args...).get(t, "Deployment", "phalanx-system", "phalanx-scheduler", &d)
		return d.Spec.Template.Annotations["checksum/config"]
	}
	a, b := annotation(), annotation("--set", "config.scheduling.reservations=3")
	if a == "" || a == b {
		t.Errorf("checksum/config %q and %q: want two different values", a, b)
	}
}

// TestRefused: values the scheduler could not run with fail at template time, saying why
// (values.schema.json, or the templates).
func TestRefused(t *testing.T) {
	for _, tt := range []struct {
		set, want string
	}{
		{"leaderElection.enabled=false", "replicas > 1 needs leaderElection.enabled"},
		{"leaderElection.renewDeadline=20s", "leaderElection needs retryPeriod (2s) < renewDeadline (20s) < leaseDuration (15s)"},
		{"leaderElection.retryPeriod=1m", "leaderElection needs retryPeriod (1m) < renewDeadline (10s)"},
		{"config.schedulng.reservations=3", "'schedulng' not allowed"},
		{"config.scheduling.reserveAftr=1h", "'reserveAftr' not allowed"},
		{"config.scheduling.reserveAfter=soon", "/config/scheduling/reserveAfter"},
		{"config.scheduler.bindWorkers=0", "/config/scheduler/bindWorkers"},
		{"replicas=0", "/replicas"},
		{"replica=3", "'replica' not allowed"},
	} {
		_, err := template(t, "phalanx", "phalanx-system", "--set", tt.set)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--set %s: error %v, want one saying %q", tt.set, err, tt.want)
		}
	}
}

// TestSchemaCoversConfig: values.schema.json allows exactly the fields of the configuration's
// sections, so that a field added to config.Scheduling or config.Scheduler can be set through
// the chart, and a misspelt one is refused by helm rather than by the scheduler at start.
func TestSchemaCoversConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	props := func(raw []byte, path ...string) []string {
		for _, p := range path {
			var n node
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatal(err)
			}
			raw = n.Properties[p]
			if raw == nil {
				t.Fatalf("values.schema.json has no property %s", strings.Join(path, "."))
			}
		}
		var n node
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range n.Properties {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	fields := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			out = append(out, name)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		section string
		typ     any
	}{{"scheduling", config.Scheduling{}}, {"scheduler", config.Scheduler{}}} {
		if got, want := props(data, "config", c.section), fields(c.typ); !slices.Equal(got, want) {
			t.Errorf("charts/phalanx/values.schema.json's config.%s has %v, the config package's %s section %v: "+
				"give a new field its type in the schema", c.section, got, c.section, want)
		}
	}
	if got := props(data, "config"); !slices.Equal(got, []string{"scheduler", "scheduling"}) {
		t.Errorf("values.schema.json's config has %v, want the sections scheduler and scheduling", got)
	}
}
