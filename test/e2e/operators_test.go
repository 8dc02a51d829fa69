//go:build e2e

package e2e

// Real job operators against the local control plane. hack/operators/build.sh builds them from
// the Go module proxy and gathers their CRDs (never hand-written copies); hack/test-e2e.sh
// exports the output directory as PHALANX_OPERATORS_DIR. Each operator runs as a subprocess
// with the test cluster's KUBECONFIG, logs to a file under the cluster's logs dir, prints its log
// tail when its test fails, and is killed when its test ends.
//
// What each needs to run outside a cluster (the tests do all of it):
//
//   - training-operator v1.9: its webhook server cannot be turned off. Its cert rotator
//     (open-policy-agent/cert-controller) needs the Secret training-operator-webhook-cert in the
//     namespace named by MY_POD_NAMESPACE (an empty one will do: the rotator fills it), and the
//     webhook server a serving certificate in the fixed directory
//     /tmp/k8s-webhook-server/serving-certs (tls.crt, tls.key). No webhook configuration is
//     registered: the rotator logs "Webhook not found" and goes on. Flags: --gang-scheduler-name,
//     --enable-scheme=pytorchjob, --namespace (watch only the test's), free ports for
//     --metrics-bind-address, --health-probe-bind-address, --webhook-server-port. Leader
//     election is off by default. /readyz answers once the certificates are in place and the
//     webhook server listens. The gang scheduler's PodGroup CRD must be installed before it
//     starts (it exits otherwise).
//   - JobSet v0.8.2: --config with leaderElection off, metrics off ("0"), internal cert
//     management off, a webhook port and certDir of the test's. Its webhooks cannot be turned
//     off and its defaulting lives in them (successPolicy, completionMode, DNS hostnames), so
//     the tests register them with the API server as URL webhooks (https://127.0.0.1:<port>,
//     the test's CA), restricted to the test's namespace, and delete them before stopping it.
//     It creates batch/v1 Jobs: the Job controller of kube-controller-manager makes their pods.
//   - LeaderWorkerSet v0.6.2: the same kind of --config (config.lws.x-k8s.io) and
//     --leader-elect=false. ENABLE_WEBHOOKS=false would turn its webhooks off, but its pod
//     webhook sets labels its pod controller relies on (worker-index on every pod, group-index
//     on leaders, from which it makes the worker StatefulSets), so they are registered as for
//     JobSet. Its StatefulSets need the StatefulSet controller of kube-controller-manager.
//   - KubeRay v1.4.2: --enable-leader-election=false, --metrics-addr=0, --watch-namespace,
//     --health-probe-bind-address; its webhooks are off unless ENABLE_WEBHOOKS=true. It creates
//     pods and Services itself. Its manager also runs the RayJob and RayService controllers:
//     the three CRDs are installed.
//   - kube-controller-manager (k8s.io/kubernetes, the control plane's version), for Jobs and
//     StatefulSets only: --controllers=job-controller,statefulset-controller --leader-elect=false
//     --secure-port=0 --kubeconfig. The local control plane has no garbage collector: the tests
//     delete what the operators created themselves.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// envOperatorsDir names the output directory of hack/operators/build.sh (bin/, crds/, webhooks/).
const envOperatorsDir = "PHALANX_OPERATORS_DIR"

var (
	gvrPyTorchJob  = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	gvrTFJob       = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "tfjobs"}
	gvrMPIJobV1    = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "mpijobs"}
	gvrMPIJobV2    = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	gvrJobSet      = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	gvrLWS         = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	gvrRayCluster  = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	gvrSPPodGroup  = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	gvrVCPodGroup  = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	gvrMutatingWH  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	gvrValidatingW = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// operatorsDir returns PHALANX_OPERATORS_DIR, or fails the test: an operator test that skipped
// would read as passing.
func operatorsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envOperatorsDir)
	if dir == "" {
		t.Fatalf("%s is not set: run the suite with hack/test-e2e.sh, or export %s=$(hack/operators/build.sh | tail -n1)",
			envOperatorsDir, envOperatorsDir)
	}
	if _, err := os.Stat(filepath.Join(dir, "bin")); err != nil {
		t.Fatalf("%s=%s: %v", envOperatorsDir, dir, err)
	}
	return dir
}

// newOperatorEnv is newEnv for a test that runs operators: its cleanup, which runs after the
// operators the test starts are stopped and before newEnv's, deletes what they created (there
// is no garbage collector) and strips finalizers that nothing is left to remove; on failure it
// first logs the operators' objects.
func newOperatorEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	t.Cleanup(func() {
		if t.Failed() {
			e.dumpOperatorObjects()
		}
		e.deleteOperatorObjects()
	})
	return e
}

// The namespaced kinds the operators create or the tests create for them.
var operatorKinds = []schema.GroupVersionResource{
	gvrPyTorchJob, gvrMPIJobV2, gvrJobSet, gvrLWS, gvrRayCluster,
	{Group: "ray.io", Version: "v1", Resource: "rayjobs"},
	gvrSPPodGroup, gvrVCPodGroup,
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "controllerrevisions"},
	{Group: "", Version: "v1", Resource: "services"},
	{Group: "", Version: "v1", Resource: "secrets"},
}

func (e *env) deleteOperatorObjects() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	background := metav1.DeletePropagationBackground
	for _, gvr := range operatorKinds {
		c := dyn.Resource(gvr).Namespace(e.ns)
		l, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // an API that is not installed
		}
		for _, o := range l.Items {
			if len(o.GetFinalizers()) > 0 {
				_, _ = c.Patch(ctx, o.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
			err := c.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
			if err != nil && !apierrors.IsNotFound(err) {
				e.t.Logf("cleanup: delete %s %s: %v", gvr.Resource, o.GetName(), err)
			}
		}
	}
	// The Job controller's batch.kubernetes.io/job-tracking finalizer would keep deleted pods.
	pods, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Logf("cleanup: list pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		if len(p.Finalizers) > 0 {
			_, err := kube.CoreV1().Pods(e.ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				e.t.Logf("cleanup: remove finalizers of pod %s: %v", p.Name, err)
			}
		}
	}
}

// dumpOperatorObjects logs the status of the operators' objects: what the Phalanx dump does not
// show (foreign PodGroups, the jobs themselves).
func (e *env) dumpOperatorObjects() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "---- operator objects in %s ----\n", e.ns)
	for _, gvr := range operatorKinds {
		if gvr.Resource == "controllerrevisions" || gvr.Resource == "services" || gvr.Resource == "secrets" {
			continue
		}
		l, err := dyn.Resource(gvr).Namespace(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, o := range l.Items {
			spec, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "minMember")
			st, _, _ := unstructured.NestedFieldNoCopy(o.Object, "status")
			raw, _ := json.Marshal(st)
			if len(raw) > 600 {
				raw = append(raw[:600], "..."...)
			}
			minMember := ""
			if spec != nil {
				minMember = fmt.Sprintf(" minMember=%v", spec)
			}
			fmt.Fprintf(&b, "  %s.%s %s%s status=%s\n", gvr.Resource, gvr.Group, o.GetName(), minMember, raw)
		}
	}
	e.t.Log(b.String())
}

// installOperatorCRDs installs the CRDs that hack/operators/build.sh gathered for name (a
// directory under crds/), only those whose file name contains one of only if given, and waits
// until each is Established and its API serves. CRDs are cluster-wide and outlive the test: an
// existing one is replaced by this one (applyCRD), so installing again is harmless.
func installOperatorCRDs(t *testing.T, e *env, name string, only ...string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(operatorsDir(t), "crds", name, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crds []*unstructured.Unstructured
	for _, f := range files {
		if len(only) > 0 && !containsAny(filepath.Base(f), only) {
			continue
		}
		objs, err := readManifests(f)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, objs...)
	}
	if len(crds) == 0 {
		t.Fatalf("no CRD of %s (%v) in %s", name, only, filepath.Join(operatorsDir(t), "crds", name))
	}
	for _, crd := range crds {
		if err := applyCRD(e.ctx, crd); err != nil {
			t.Fatalf("install CRD %s: %v", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		gvr, namespaced := servedGVR(crd)
		err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			cur, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil || !crdEstablished(cur) {
				return false, nil
			}
			c := dyn.Resource(gvr)
			if namespaced {
				_, err = c.Namespace(e.ns).List(ctx, metav1.ListOptions{Limit: 1})
			} else {
				_, err = c.List(ctx, metav1.ListOptions{Limit: 1})
			}
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established and served: %v", crd.GetName(), err)
		}
	}
	t.Logf("CRDs of %s installed: %d", name, len(crds))
}

// servedGVR is the API of crd's storage version.
func servedGVR(crd *unstructured.Unstructured) (schema.GroupVersionResource, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && (m["storage"] == true || version == "") {
			version, _ = m["name"].(string)
		}
	}
	return schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, scope != "Cluster"
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// freePort returns a TCP port of 127.0.0.1 that nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The test's serving certificate for the operators' webhook servers: self-signed, its own CA,
// for 127.0.0.1 and localhost (the API server calls the registered webhooks at 127.0.0.1).
var (
	certOnce        sync.Once
	certPEM, keyPEM []byte
	certErr         error
)

func servingCert(t *testing.T) (crt, key []byte) {
	t.Helper()
	certOnce.Do(func() {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			certErr = err
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(time.Now().UnixNano()),
			Subject:               pkix.Name{CommonName: "phalanx-e2e-operators", Organization: []string{"phalanx-e2e"}},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
			DNSNames:              []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			certErr = err
			return
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			certErr = err
			return
		}
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	})
	if certErr != nil {
		t.Fatalf("serving certificate: %v", certErr)
	}
	return certPEM, keyPEM
}

// writeServingCert writes the test's certificate into dir as tls.crt and tls.key (the names
// controller-runtime's webhook server reads), each file replaced at once.
func writeServingCert(t *testing.T, dir string) {
	t.Helper()
	crt, key := servingCert(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// operatorProc is how to run one operator binary.
type operatorProc struct {
	name  string   // the binary, under bin/ of PHALANX_OPERATORS_DIR
	args  []string // its flags
	env   []string // added to the test's environment (which has KUBECONFIG)
	ready string   // a URL polled until it answers 200 before the start returns; "" = none
}

// startOperator runs bin/<name> of PHALANX_OPERATORS_DIR with args and the test cluster's
// KUBECONFIG, and returns at once. See runOperator.
func startOperator(t *testing.T, name string, args ...string) (stop func()) {
	t.Helper()
	return runOperator(t, operatorProc{name: name, args: args})
}

// runOperator starts p as a subprocess logging to a file (under the cluster's logs dir when
// PHALANX_CLUSTER_DIR is set, else the test's temp dir), waits for p.ready if given, and
// returns stop, which sends SIGTERM, then SIGKILL after 10 s, and is idempotent; it also runs
// at the end of the test. If the test failed, or the operator exited before it was stopped, the
// tail of its log is printed.
func runOperator(t *testing.T, p operatorProc) (stop func()) {
	t.Helper()
	stop, err := tryOperator(t, p)
	if err != nil {
		t.Fatal(err)
	}
	return stop
}

// runOperatorOnFreePorts runs the operator that build describes with ports it picks by
// freePort. freePort can only say that a port was free a moment ago: if the operator exits
// before it is ready because one of its ports was taken meanwhile, build is called again for
// other ports, up to three times in all.
func runOperatorOnFreePorts(t *testing.T, build func() operatorProc) (stop func()) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		stop, err := tryOperator(t, build())
		if err == nil {
			return stop
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("attempt %d: a port was taken meanwhile; starting it again on others: %v", attempt, err)
	}
}

// tryOperator is runOperator, returning the error of an operator that does not become ready;
// it is then stopped, and its early exit is not a failure of the test by itself.
func tryOperator(t *testing.T, p operatorProc) (stop func(), err error) {
	t.Helper()
	bin := filepath.Join(operatorsDir(t), "bin", p.name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("operator %s: %v", p.name, err)
	}
	logDir := t.TempDir()
	if d := os.Getenv("PHALANX_CLUSTER_DIR"); d != "" {
		logDir = filepath.Join(d, "logs", "operators")
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(logDir, strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")+"-"+p.name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: a terminal's ^C is ours to handle
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", p.name, err)
	}
	t.Logf("%s started (pid %d), log %s", p.name, cmd.Process.Pid, logPath)
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	var once sync.Once
	quiet := false // set when tryOperator returns the early exit as its error
	stop = func() {
		once.Do(func() {
			early := false
			select {
			case <-exited:
				early = true
			default:
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					t.Logf("%s did not stop in 10s after SIGTERM; killing it", p.name)
					_ = cmd.Process.Kill()
					<-exited
				}
			}
			logFile.Close()
			if early && !quiet {
				t.Errorf("%s exited before the test stopped it: %v", p.name, waitErr)
			}
			if (early && !quiet) || t.Failed() {
				t.Logf("---- last lines of %s ----\n%s", logPath, logTail(logPath, 40))
			}
		})
	}
	t.Cleanup(stop)
	if p.ready != "" {
		client := &http.Client{Timeout: 2 * time.Second}
		var last string
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			select {
			case <-exited:
				return false, fmt.Errorf("exited: %v", waitErr)
			default:
			}
			resp, err := client.Get(p.ready)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			last = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
			return resp.StatusCode == http.StatusOK, nil
		})
		if err != nil {
			quiet = true
			stop()
			return nil, fmt.Errorf("%s not ready at %s: %v (last answer: %s); log: %s\n%s", p.name, p.ready, err, last, logPath, logTail(logPath, 40))
		}
		t.Logf("%s is ready", p.name)
	}
	return stop, nil
}

// logTail returns the last n lines of the file.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// startTrainingOperator runs training-operator v1.9 for PyTorchJobs of the test's namespace
// with --gang-scheduler-name=gang, as described at the top of this file.
func startTrainingOperator(t *testing.T, e *env, gang string, schemes ...string) (stop func()) {
	t.Helper()
	// The directory is fixed in training-operator (pkg/cert): tests of one process share it.
	writeServingCert(t, "/tmp/k8s-webhook-server/serving-certs")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "training-operator-webhook-cert", Namespace: e.ns}}
	if _, err := kube.CoreV1().Secrets(e.ns).Create(e.ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create the webhook Secret: %v", err)
	}
	if len(schemes) == 0 {
		schemes = []string{"pytorchjob"}
	}
	var enable []string
	for _, sch := range schemes {
		enable = append(enable, "--enable-scheme="+sch)
	}
	return runOperatorOnFreePorts(t, func() operatorProc {
		probe := freePort(t)
		return operatorProc{
			name: "training-operator",
			args: append(slices.Clone(enable),
				"--gang-scheduler-name="+gang,
				"--namespace="+e.ns,
				"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(freePort(t)),
				"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe),
				"--webhook-server-port="+strconv.Itoa(freePort(t)),
				"--leader-elect=false",
			),
			env:   []string{"MY_POD_NAMESPACE=" + e.ns},
			ready: fmt.Sprintf("http://127.0.0.1:%d/readyz", probe),
		}
	})
}

// controllerConfig writes the --config file that JobSet and LWS read (the same Configuration
// shape, apiVersion config.<api>/v1alpha1) and the serving certificate beside it, and returns
// the file, the webhook port and the probe port.
func controllerConfig(t *testing.T, apiVersion string) (file string, webhookPort, probePort int) {
	t.Helper()
	dir := t.TempDir()
	certDir := filepath.Join(dir, "certs")
	writeServingCert(t, certDir)
	webhookPort, probePort = freePort(t), freePort(t)
	cfg := fmt.Sprintf(`apiVersion: %s
kind: Configuration
leaderElection:
  leaderElect: false
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
webhook:
  port: %d
  host: 127.0.0.1
  certDir: %s
internalCertManagement:
  enable: false
`, apiVersion, probePort, webhookPort, certDir)
	file = filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, webhookPort, probePort
}

// startJobSet runs the JobSet controller with its webhooks registered for the test's namespace.
func startJobSet(t *testing.T, e *env) {
	t.Helper()
	var webhook int
	runOperatorOnFreePorts(t, func() operatorProc {
		cfg, hook, probe := controllerConfig(t, "config.jobset.x-k8s.io/v1alpha1")
		webhook = hook
		return operatorProc{name: "jobset", args: []string{"--config=" + cfg},
			ready: fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)}
	})
	registerWebhooks(t, e, "jobset", webhook)
	// Registered webhooks take effect when the API server's informer sees them: wait until a
	// dry-run JobSet comes back defaulted by the mutating one.
	e.waitWebhookActive(gvrJobSet, jobSetObject("webhook-probe", 1, ""), "spec", "network", "enableDNSHostnames")
}

// startLWS runs the LeaderWorkerSet controller with its webhooks registered for the test's
// namespace.
func startLWS(t *testing.T, e *env) {
	t.Helper()
	var webhook int
	runOperatorOnFreePorts(t, func() operatorProc {
		cfg, hook, probe := controllerConfig(t, "config.lws.x-k8s.io/v1alpha1")
		webhook = hook
		return operatorProc{name: "lws", args: []string{"--config=" + cfg, "--leader-elect=false"},
			ready: fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)}
	})
	registerWebhooks(t, e, "lws", webhook)
	e.waitWebhookActive(gvrLWS, lwsObject("webhook-probe", 2), "spec", "networkConfig", "subdomainPolicy")
}

// startKubeRay runs the KubeRay operator for the test's namespace.
func startKubeRay(t *testing.T, e *env, extra ...string) {
	t.Helper()
	runOperatorOnFreePorts(t, func() operatorProc {
		probe := freePort(t)
		return operatorProc{name: "kuberay",
			args: append([]string{
				"--enable-leader-election=false",
				"--metrics-addr=0",
				"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probe),
				"--watch-namespace=" + e.ns,
				"--log-stdout-encoder=console",
			}, extra...),
			ready: fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)}
	})
}

// startMPIOperator runs mpi-operator (without --gang-scheduling) for the test's namespace, its
// leader-election Lease there. Its health server listens on :8080, a port it does not let one
// change: the test fails if another process holds it.
func startMPIOperator(t *testing.T, e *env, extra ...string) {
	t.Helper()
	runOperator(t, operatorProc{name: "mpi-operator",
		args: append([]string{
			"--kubeConfig=" + os.Getenv("KUBECONFIG"),
			"--namespace=" + e.ns,
			"--lock-namespace=" + e.ns,
		}, extra...),
		ready: "http://127.0.0.1:8080/healthz"})
}

// startControllerManager runs kube-controller-manager with only the given controllers (Jobs and
// StatefulSets make no pods without them).
func startControllerManager(t *testing.T, controllers ...string) {
	t.Helper()
	runOperator(t, operatorProc{name: "kube-controller-manager", args: []string{
		"--kubeconfig=" + os.Getenv("KUBECONFIG"),
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--v=1",
	}})
}

// registerWebhooks creates the webhook configurations of webhooks/<name>/manifests.yaml (as the
// operator's kustomize base has them), renamed for the test, pointed at the operator's webhook
// server on 127.0.0.1:port with the test's CA, and restricted to the test's namespace; they are
// deleted when the test ends, before the operator stops (a webhook that fails closed and does
// not answer would block every pod update of the namespace).
func registerWebhooks(t *testing.T, e *env, name string, port int) {
	t.Helper()
	file := filepath.Join(operatorsDir(t), "webhooks", name, "manifests.yaml")
	objs, err := readObjects(file)
	if err != nil {
		t.Fatal(err)
	}
	crt, _ := servingCert(t)
	for _, o := range objs {
		var gvr schema.GroupVersionResource
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			gvr = gvrMutatingWH
		case "ValidatingWebhookConfiguration":
			gvr = gvrValidatingW
		default:
			continue
		}
		o.SetName(fmt.Sprintf("%s-%s-%s", name, o.GetName(), e.ns))
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for i, h := range hooks {
			m := h.(map[string]any)
			path, _, _ := unstructured.NestedString(m, "clientConfig", "service", "path")
			m["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, path),
				"caBundle": base64.StdEncoding.EncodeToString(crt),
			}
			m["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": e.ns}}
			m["timeoutSeconds"] = int64(10)
			hooks[i] = m
		}
		if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(gvr).Create(e.ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("register %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		objName := o.GetName()
		t.Cleanup(func() {
			err := dyn.Resource(gvr).Delete(context.Background(), objName, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: delete %s: %v", objName, err)
			}
		})
		t.Logf("registered %s %s (%d webhooks)", o.GetKind(), objName, len(hooks))
	}
}

// readObjects decodes every non-empty YAML document of file.
func readObjects(file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// waitWebhookActive dry-runs the creation of obj until the answer has the field at path, which
// only the operator's mutating webhook sets.
func (e *env) waitWebhookActive(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, path ...string) {
	e.t.Helper()
	e.eventually(30*time.Second, "the "+gvr.Resource+" webhook is called", func(ctx context.Context) error {
		out, err := dyn.Resource(gvr).Namespace(e.ns).Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if _, ok, _ := unstructured.NestedFieldNoCopy(out.Object, path...); !ok {
			return fmt.Errorf("a dry-run %s has no %s yet", gvr.Resource, strings.Join(path, "."))
		}
		return nil
	})
}

// ---- the operators' jobs ----

// opWorkload is one operator's kind of job, as the seed shape uses it: a job of n pods of one
// GPU each.
type opWorkload struct {
	kind   string
	gvr    schema.GroupVersionResource
	object func(name string, pods int, runFor string) *unstructured.Unstructured
	// selector is the label selector of a job's pods.
	selector func(name string) string
	// runs: its pods end by phalanx.dev/run-for and the job completes; otherwise (serving-style
	// workloads whose controllers replace ended pods) the test ends a job by deleting it and its
	// pods.
	runs bool
	// podGroup: the operator writes a PodGroup of this API named after the job.
	podGroup *schema.GroupVersionResource
	// gated: the operator creates no pod until its PodGroup leaves phase Pending (Volcano mode).
	gated bool
}

// opJob is one job of a workload in the test's namespace.
type opJob struct {
	w    *opWorkload
	name string
	size int
}

// pyTorchJobs: training-operator's PyTorchJob, 1 Master + n-1 Workers; the pods' schedulerName
// is left to --gang-scheduler-name.
func pyTorchJobs(podGroup schema.GroupVersionResource, gated bool) *opWorkload {
	return kubeflowJobs("PyTorchJob", gvrPyTorchJob, "pytorchjob.yaml", "pytorchReplicaSpecs", 1, podGroup, gated)
}

// tfJobs: training-operator's TFJob of n Workers.
func tfJobs(podGroup schema.GroupVersionResource, gated bool) *opWorkload {
	return kubeflowJobs("TFJob", gvrTFJob, "tfjob.yaml", "tfReplicaSpecs", 0, podGroup, gated)
}

// mpiJobs: training-operator's MPIJob (kubeflow.org/v1), 1 Launcher + n-1 Workers.
func mpiJobs(podGroup schema.GroupVersionResource, gated bool) *opWorkload {
	return kubeflowJobs("MPIJob", gvrMPIJobV1, "mpijob.yaml", "mpiReplicaSpecs", 1, podGroup, gated)
}

// kubeflowJobs are training-operator jobs of the example file, whose Worker replicas are the
// job's pods but for the others of the example (others).
func kubeflowJobs(kind string, gvr schema.GroupVersionResource, file, specs string, others int, podGroup schema.GroupVersionResource, gated bool) *opWorkload {
	return &opWorkload{
		kind: kind, gvr: gvr, runs: true, podGroup: &podGroup, gated: gated,
		selector: func(name string) string { return "training.kubeflow.org/job-name=" + name },
		object: func(name string, pods int, runFor string) *unstructured.Unstructured {
			u := example(file, name, runFor)
			must(unstructured.SetNestedField(u.Object, int64(pods-others), "spec", specs, "Worker", "replicas"))
			return u
		},
	}
}

// mpiV2Jobs: mpi-operator's MPIJob (kubeflow.org/v2beta1) of the example, launched at startup
// (launcherCreationPolicy removed), its launcher given 1 GPU, every pod ending by itself and none
// deleted when the job ends: 1 launcher + n-1 workers of 1 GPU, one gang of them all.
var mpiV2Jobs = &opWorkload{
	kind: "MPIJob", gvr: gvrMPIJobV2, runs: true,
	selector: func(name string) string { return "training.kubeflow.org/job-name=" + name },
	object: func(name string, pods int, runFor string) *unstructured.Unstructured {
		u := example("mpijob-v2.yaml", name, runFor)
		unstructured.RemoveNestedField(u.Object, "spec", "launcherCreationPolicy")
		must(unstructured.SetNestedField(u.Object, "None", "spec", "runPolicy", "cleanPodPolicy"))
		must(unstructured.SetNestedField(u.Object, int64(pods-1), "spec", "mpiReplicaSpecs", "Worker", "replicas"))
		path := []string{"spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers"}
		containers, _, _ := unstructured.NestedSlice(u.Object, path...)
		must(unstructured.SetNestedField(containers[0].(map[string]any), "1", "resources", "limits", "nvidia.com/gpu"))
		must(unstructured.SetNestedSlice(u.Object, containers, path...))
		return u
	},
}

// mpiV2Workers: the example's MPIJob as written (launcherCreationPolicy WaitForWorkersReady, a
// launcher of 1 CPU that ends, workers of 1 GPU that serve until the operator deletes them), of
// n workers; its pods here are the workers.
var mpiV2Workers = &opWorkload{
	kind: "MPIJob", gvr: gvrMPIJobV2,
	selector: func(name string) string {
		return "training.kubeflow.org/job-name=" + name + ",training.kubeflow.org/job-role=worker"
	},
	object: func(name string, pods int, _ string) *unstructured.Unstructured {
		u := exampleAsWritten("mpijob-v2.yaml", name)
		must(unstructured.SetNestedField(u.Object, int64(pods), "spec", "mpiReplicaSpecs", "Worker", "replicas"))
		return u
	},
}

// jobSetObject is a JobSet of one replicated Job of n pods (parallelism = completions = n).
func jobSetObject(name string, pods int, runFor string) *unstructured.Unstructured {
	u := example("jobset.yaml", name, runFor)
	jobs, _, _ := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
	job := jobs[0].(map[string]any)
	must(unstructured.SetNestedField(job, int64(pods), "template", "spec", "parallelism"))
	must(unstructured.SetNestedField(job, int64(pods), "template", "spec", "completions"))
	must(unstructured.SetNestedSlice(u.Object, jobs, "spec", "replicatedJobs"))
	return u
}

var jobSets = &opWorkload{
	kind: "JobSet", gvr: gvrJobSet, runs: true, object: jobSetObject,
	selector: func(name string) string { return "jobset.sigs.k8s.io/jobset-name=" + name },
}

// lwsObject is a LeaderWorkerSet of one group of n pods (a leader and n-1 workers, one
// template). Its StatefulSets replace pods that end, so its pods do not carry run-for.
func lwsObject(name string, pods int) *unstructured.Unstructured {
	u := example("leaderworkerset.yaml", name, "")
	must(unstructured.SetNestedField(u.Object, int64(pods), "spec", "leaderWorkerTemplate", "size"))
	return u
}

var leaderWorkerSets = &opWorkload{
	kind: "LeaderWorkerSet", gvr: gvrLWS,
	object:   func(name string, pods int, _ string) *unstructured.Unstructured { return lwsObject(name, pods) },
	selector: func(name string) string { return "leaderworkerset.sigs.k8s.io/name=" + name },
}

// rayClusterObject is a RayCluster of a head and n-1 workers. KubeRay replaces pods that end,
// so its pods do not carry run-for.
func rayClusterObject(name string, pods int, labels map[string]any) *unstructured.Unstructured {
	u := example("raycluster.yaml", name, "")
	if labels != nil {
		must(unstructured.SetNestedMap(u.Object, labels, "metadata", "labels"))
	}
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "workerGroupSpecs")
	g := groups[0].(map[string]any)
	for _, f := range []string{"replicas", "minReplicas", "maxReplicas"} {
		g[f] = int64(pods - 1)
	}
	must(unstructured.SetNestedSlice(u.Object, groups, "spec", "workerGroupSpecs"))
	return u
}

// example reads docs/examples/file, the example docs/operators.md gives users, names it name,
// and sets the KWOK annotation phalanx.dev/run-for of every pod template to runFor (removes it
// when runFor is ""). Everything else is applied as the example has it.
func example(file, name, runFor string) *unstructured.Unstructured {
	u := exampleAsWritten(file, name)
	setRunFor(u.Object, runFor)
	return u
}

// exampleAsWritten is the object of docs/examples/<file>, named name.
func exampleAsWritten(file, name string) *unstructured.Unstructured {
	objs, err := readObjects(filepath.Join("..", "..", "docs", "examples", file))
	if err != nil || len(objs) != 1 {
		panic(fmt.Sprintf("docs/examples/%s: %d objects, %v", file, len(objs), err))
	}
	u := objs[0]
	u.SetName(name)
	return u
}

// setRunFor sets (or, for "", removes) the annotation phalanx.dev/run-for of every pod template
// (a "template" whose "spec" has "containers") under obj.
func setRunFor(obj any, runFor string) {
	switch v := obj.(type) {
	case map[string]any:
		if t, ok := v["template"].(map[string]any); ok {
			if spec, ok := t["spec"].(map[string]any); ok && spec["containers"] != nil {
				meta, _ := t["metadata"].(map[string]any)
				if meta == nil {
					meta = map[string]any{}
					t["metadata"] = meta
				}
				ann, _ := meta["annotations"].(map[string]any)
				if ann == nil {
					ann = map[string]any{}
				}
				if runFor == "" {
					delete(ann, annRunFor)
				} else {
					ann[annRunFor] = runFor
				}
				if len(ann) == 0 {
					delete(meta, "annotations")
				} else {
					meta["annotations"] = ann
				}
			}
		}
		for _, c := range v {
			setRunFor(c, runFor)
		}
	case []any:
		for _, c := range v {
			setRunFor(c, runFor)
		}
	}
}

// must fails on the error of setting a field of an example that lacks the expected shape.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

var rayClusters = &opWorkload{
	kind: "RayCluster", gvr: gvrRayCluster,
	object: func(name string, pods int, _ string) *unstructured.Unstructured {
		return rayClusterObject(name, pods, nil)
	},
	selector: func(name string) string { return "ray.io/cluster=" + name },
}

// rayClustersGang: RayClusters labelled ray.io/gang-scheduling-enabled, for KubeRay with
// --batch-scheduler=scheduler-plugins, which then writes a scheduling.x-k8s.io PodGroup per
// cluster (minMember = head + workers) and labels the pods scheduling.x-k8s.io/pod-group (it
// leaves schedulerName to the template).
var rayClustersGang = &opWorkload{
	kind: "RayCluster", gvr: gvrRayCluster, podGroup: &gvrSPPodGroup,
	object: func(name string, pods int, _ string) *unstructured.Unstructured {
		return rayClusterObject(name, pods, map[string]any{"ray.io/gang-scheduling-enabled": "true"})
	},
	selector: func(name string) string { return "ray.io/cluster=" + name },
}

// createOpJob creates a job of w with n pods of one GPU.
func (e *env) createOpJob(w *opWorkload, name string, pods int, runFor string) *opJob {
	e.t.Helper()
	if !w.runs {
		runFor = ""
	}
	if _, err := dyn.Resource(w.gvr).Namespace(e.ns).Create(e.ctx, w.object(name, pods, runFor), metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create %s %s: %v", w.kind, name, err)
	}
	e.t.Logf("created %s %s: %d pods of 1 GPU", w.kind, name, pods)
	return &opJob{w: w, name: name, size: pods}
}

// deleteOpJob ends a job that does not end by itself: deletes it, and its pods (no garbage
// collector), and waits until they are gone.
func (e *env) deleteOpJob(j *opJob) {
	e.t.Helper()
	background := metav1.DeletePropagationBackground
	if err := dyn.Resource(j.w.gvr).Namespace(e.ns).Delete(e.ctx, j.name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		e.t.Fatalf("delete %s %s: %v", j.w.kind, j.name, err)
	}
	// Its StatefulSets (LWS) would recreate the pods: delete them first.
	sets, err := kube.AppsV1().StatefulSets(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: j.w.selector(j.name)})
	if err == nil {
		for _, s := range sets.Items {
			_ = kube.AppsV1().StatefulSets(e.ns).Delete(e.ctx, s.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		}
	}
	zero := int64(0)
	e.eventually(time.Minute, j.name+"'s pods are gone", func(ctx context.Context) error {
		l, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: j.w.selector(j.name)})
		if err != nil {
			return err
		}
		for _, p := range l.Items {
			_ = kube.CoreV1().Pods(e.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
		if len(l.Items) > 0 {
			return fmt.Errorf("%d pods of %s left", len(l.Items), j.name)
		}
		return nil
	})
	e.t.Logf("deleted %s %s and its pods", j.w.kind, j.name)
}

// opPods lists the job's pods, by name. The op* checks make their calls under the test's context,
// not the poll's: a call cut short by the poll's deadline would hide the check's last word.
func (e *env) opPods(j *opJob) ([]corev1.Pod, error) {
	l, err := kube.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: j.w.selector(j.name)})
	if err != nil {
		return nil, err
	}
	sort.Slice(l.Items, func(a, b int) bool { return l.Items[a].Name < l.Items[b].Name })
	return l.Items, nil
}

// opPodGroup describes the job's PodGroup of the operator's gang API, for messages.
func (e *env) opPodGroup(j *opJob) (phase string, desc string) {
	if j.w.podGroup == nil {
		return "", ""
	}
	pg, err := dyn.Resource(*j.w.podGroup).Namespace(e.ns).Get(e.ctx, j.name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Sprintf("; its %s PodGroup: %v", j.w.podGroup.Group, err)
	}
	phase, _, _ = unstructured.NestedString(pg.Object, "status", "phase")
	conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "conditions")
	raw, _ := json.Marshal(conds)
	return phase, fmt.Sprintf("; its %s PodGroup: phase %q, conditions %s", j.w.podGroup.Group, phase, raw)
}

// opCreated: the operator created all the job's pods.
func (e *env) opCreated(j *opJob) check {
	return func(ctx context.Context) error {
		pods, err := e.opPods(j)
		if err != nil {
			return err
		}
		if len(pods) != j.size {
			_, pg := e.opPodGroup(j)
			return fmt.Errorf("%s %s has %d pods, want %d%s", j.w.kind, j.name, len(pods), j.size, pg)
		}
		return nil
	}
}

// opEvery: the job has all its pods and every one satisfies ok.
func (e *env) opEvery(j *opJob, what string, ok func(*corev1.Pod) bool) check {
	return func(ctx context.Context) error {
		if err := e.opCreated(j)(ctx); err != nil {
			return err
		}
		pods, err := e.opPods(j)
		if err != nil {
			return err
		}
		return allPods(pods, j.w.kind+" "+j.name, what, ok)
	}
}

func (e *env) opRunning(j *opJob) check { return e.opEvery(j, "Running on a node", podRunningOnNode) }

func (e *env) opStarted(j *opJob) check {
	return e.opEvery(j, "bound and Running or Succeeded", podStarted)
}

func (e *env) opSucceeded(j *opJob) check {
	return e.opEvery(j, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
}

// opNoneBound: no pod of the job has a node (however many the operator created so far).
func (e *env) opNoneBound(j *opJob) check {
	return func(ctx context.Context) error {
		pods, err := e.opPods(j)
		if err != nil {
			return err
		}
		var bound []string
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound = append(bound, p.Name+" on "+p.Spec.NodeName)
			}
		}
		if len(bound) > 0 {
			return fmt.Errorf("%d of %d pods of %s %s were bound: %s", len(bound), len(pods), j.w.kind, j.name, strings.Join(bound, ", "))
		}
		return nil
	}
}

// opWaiting: the job waits whole and says why: all its pods exist, none is bound, and each
// carries PodScheduled=False with a message; or, for an operator that creates no pod before its
// PodGroup is admitted (Volcano mode), there is no pod yet and the PodGroup is still Pending.
func (e *env) opWaiting(j *opJob) check {
	return func(ctx context.Context) error {
		pods, err := e.opPods(j)
		if err != nil {
			return err
		}
		if len(pods) == 0 && j.w.gated {
			// Waiting whole, saying why, before the operator creates any pod: the PodGroup is
			// not admitted (phase Pending) and a condition says why.
			phase, desc := e.opPodGroup(j)
			if phase != "Pending" || !strings.Contains(desc, `"message":"`) {
				return fmt.Errorf("%s %s has no pods, and its PodGroup does not say why it waits%s", j.w.kind, j.name, desc)
			}
			return nil
		}
		if err := e.opNoneBound(j)(ctx); err != nil {
			return err
		}
		if len(pods) != j.size {
			_, desc := e.opPodGroup(j)
			return fmt.Errorf("%s %s has %d pods, want %d%s", j.w.kind, j.name, len(pods), j.size, desc)
		}
		for _, p := range pods {
			if msg := podScheduledFalse(&p); msg == "" {
				return fmt.Errorf("pod %s has no PodScheduled=False condition with a message yet", p.Name)
			}
		}
		return nil
	}
}

func podScheduledFalse(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// logWaiting logs what the job's pods (or its PodGroup) say about why they wait.
func (e *env) logWaiting(j *opJob) {
	e.t.Helper()
	pods, err := e.opPods(j)
	if err != nil {
		e.t.Logf("%s: %v", j.name, err)
		return
	}
	msgs := map[string]int{}
	for _, p := range pods {
		msgs[podScheduledFalse(&p)]++
	}
	_, pg := e.opPodGroup(j)
	e.t.Logf("%s %s waits: %d pods, PodScheduled=False messages (message: pods) %v%s", j.w.kind, j.name, len(pods), msgs, pg)
}

// seedShape runs the seed experiment with w's jobs on 4 KWOK nodes of 1 GPU each, once the
// operator and the scheduler run: job1 (4 GPUs) runs whole; job2 (3 GPUs), created meanwhile,
// waits whole saying why, and runs once job1 is over; job3 (5 GPUs, more than the cluster)
// waits whole.
func seedShape(t *testing.T, e *env, w *opWorkload) {
	t.Helper()
	job1 := e.createOpJob(w, "job1", 4, "40s")
	e.eventually(time.Minute, "the operator creates job1's 4 pods", e.opCreated(job1))
	e.eventually(time.Minute, "job1's 4 pods run", e.opRunning(job1))
	if w.podGroup != nil {
		// The operator's PodGroup says so, in its own API's schema.
		e.eventually(30*time.Second, "job1's PodGroup says Running", func(ctx context.Context) error {
			if phase, desc := e.opPodGroup(job1); phase != "Running" {
				return fmt.Errorf("job1's PodGroup is not Running%s", desc)
			}
			return nil
		})
	}

	job2 := e.createOpJob(w, "job2", 3, "5s")
	e.eventually(30*time.Second, "job2 waits whole, saying why", e.opWaiting(job2))
	e.logWaiting(job2)
	e.consistently(holdStill, "job2 to stay whole-pending while job1 runs", all(e.opWaiting(job2), e.opRunning(job1)))

	if w.runs {
		e.eventually(90*time.Second, "job1's pods succeed", e.opSucceeded(job1))
	} else {
		e.deleteOpJob(job1)
	}
	e.eventually(time.Minute, "job2's 3 pods get nodes and run", e.opStarted(job2))
	if w.runs {
		e.eventually(time.Minute, "job2's pods succeed", e.opSucceeded(job2))
	} else {
		e.deleteOpJob(job2)
	}

	job3 := e.createOpJob(w, "job3", 5, "5s")
	if !w.gated {
		e.eventually(time.Minute, "the operator creates job3's 5 pods", e.opCreated(job3))
	}
	e.consistently(holdStill, "job3 (5 GPUs, the cluster has 4) to stay whole-pending", all(e.opNoneBound(job3), gpusWithinCapacity))
	e.eventually(30*time.Second, "job3 waits whole, saying why", e.opWaiting(job3))
	e.logWaiting(job3)
	e.consistently(holdStill, "job3 to stay whole-pending", e.opWaiting(job3))
}

// ---- the tests ----

// TestOperatorTrainingSchedulerPlugins: training-operator with --gang-scheduler-name=phalanx
// (its scheduler-plugins mode) writes a scheduling.x-k8s.io PodGroup per PyTorchJob (minMember =
// all replicas) and labels the pods scheduling.x-k8s.io/pod-group; Phalanx reads that PodGroup.
func TestOperatorTrainingSchedulerPlugins(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "scheduler-plugins")
	installOperatorCRDs(t, e, "training-operator", "pytorchjobs")
	e.addNodes(kwokNodes("op-tsp", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startTrainingOperator(t, e, defaultSchedulerNm)
	seedShape(t, e, pyTorchJobs(gvrSPPodGroup, false))
}

// TestOperatorTrainingVolcano: training-operator with --gang-scheduler-name=volcano writes a
// scheduling.volcano.sh PodGroup per job and creates no pod until that PodGroup's status.phase
// leaves Pending; the pods get schedulerName volcano, which Phalanx serves here. The Volcano CRDs
// are generated from volcano.sh/apis (hack/operators/build.sh); the PodGroup has no status
// subresource, as in Volcano's installer. This passes only once Phalanx admits (Inqueue) the
// Volcano PodGroups it can place.
func TestOperatorTrainingVolcano(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "volcano")
	installOperatorCRDs(t, e, "training-operator", "pytorchjobs")
	e.addNodes(kwokNodes("op-tvc", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t, "volcano")
	startTrainingOperator(t, e, "volcano")
	seedShape(t, e, pyTorchJobs(gvrVCPodGroup, true))
}

// TestOperatorTrainingTFJob: a TFJob of n Workers, training-operator in scheduler-plugins mode.
func TestOperatorTrainingTFJob(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "scheduler-plugins")
	installOperatorCRDs(t, e, "training-operator", "tfjobs")
	e.addNodes(kwokNodes("op-ttf", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startTrainingOperator(t, e, defaultSchedulerNm, "tfjob")
	seedShape(t, e, tfJobs(gvrSPPodGroup, false))
}

// TestOperatorTrainingMPIJob: training-operator's MPIJob (a Launcher and Workers, the launcher
// created beside the workers), in Volcano mode.
func TestOperatorTrainingMPIJob(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "volcano")
	installOperatorCRDs(t, e, "training-operator", "mpijobs")
	e.addNodes(kwokNodes("op-tmpi", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t, "volcano")
	startTrainingOperator(t, e, "volcano", "mpijob")
	seedShape(t, e, mpiJobs(gvrVCPodGroup, true))
}

// TestOperatorTrainingElastic: an elastic PyTorchJob (3 workers, minAvailable 2) on 2 GPUs, in
// scheduler-plugins mode, with preemption on: 2 workers run, the third waits saying it is an
// elastic member, and runs once a third GPU comes; a PyTorchJob of equal priority that needs a
// GPU then waits, and evicts none of the elastic job's workers.
func TestOperatorTrainingElastic(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "scheduler-plugins")
	installOperatorCRDs(t, e, "training-operator", "pytorchjobs")
	e.addNodes(kwokNodes("op-tel", 2).CPU("4").Memory("16Gi").GPUs(1))
	startSchedulerOpts(t, scheduler.Options{Preemption: true})
	startTrainingOperator(t, e, defaultSchedulerNm)

	w := pyTorchJobs(gvrSPPodGroup, false)
	u := example("pytorchjob-elastic.yaml", "elastic", "")
	if _, err := dyn.Resource(gvrPyTorchJob).Namespace(e.ns).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	elastic := &opJob{w: w, name: "elastic", size: 3}
	e.eventually(time.Minute, "the operator creates the 3 workers", e.opCreated(elastic))
	bound := func(n int) check {
		return func(ctx context.Context) error {
			pods, err := e.opPods(elastic)
			if err != nil {
				return err
			}
			got := 0
			for _, p := range pods {
				if p.Spec.NodeName != "" {
					got++
				}
			}
			if got != n {
				return fmt.Errorf("%d workers of elastic are bound, want %d", got, n)
			}
			return nil
		}
	}
	e.eventually(time.Minute, "2 workers run", bound(2))
	e.eventually(30*time.Second, "the third says it waits as an elastic member", func(ctx context.Context) error {
		pods, err := e.opPods(elastic)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				if msg := podScheduledFalse(&p); !strings.Contains(msg, scheduler.ReasonElasticWaiting) {
					return fmt.Errorf("waiting worker %s says %q", p.Name, msg)
				}
				return nil
			}
		}
		return fmt.Errorf("no worker waits")
	})
	// A third GPU: the elastic member runs too.
	e.addNodes(kwokNodes("op-tel-more", 1).CPU("4").Memory("16Gi").GPUs(1))
	e.eventually(time.Minute, "the third worker runs", bound(3))
	// other is a PyTorchJob of one pod (the example without its workers): evicting the elastic
	// job's third worker would make room for it, but equal priority never preempts.
	one := example("pytorchjob.yaml", "other", "")
	unstructured.RemoveNestedField(one.Object, "spec", "pytorchReplicaSpecs", "Worker")
	if _, err := dyn.Resource(gvrPyTorchJob).Namespace(e.ns).Create(e.ctx, one, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := &opJob{w: w, name: "other", size: 1}
	e.eventually(time.Minute, "the operator creates other's pod", e.opCreated(other))
	e.eventually(30*time.Second, "other waits", e.opWaiting(other))
	e.consistently(holdStill, "the elastic job to keep its 3 workers, other to wait", all(bound(3), e.opNoneBound(other)))
}

// TestOperatorJobSet: a JobSet of one replicated Job of n pods, schedulerName phalanx in the pod
// template. Its pods carry no gang label or PodGroup: gang scheduling depends on Phalanx deriving
// the gang from the owning workload.
func TestOperatorJobSet(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "jobset")
	e.addNodes(kwokNodes("op-js", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startControllerManager(t, "job-controller")
	startJobSet(t, e)
	seedShape(t, e, jobSets)
}

// TestOperatorJobSetDependsOn: docs/examples/jobset-depends-on.yaml as written. JobSet creates
// the trainer Job only once the initializer Job has completed (dependsOn): a gang of the whole
// JobSet would wait for ever. The initializer runs alone, as a gang of its own, then the 2
// trainers, together, and the JobSet completes.
func TestOperatorJobSetDependsOn(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "jobset")
	e.addNodes(kwokNodes("op-jsd", 2).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startControllerManager(t, "job-controller")
	startJobSet(t, e)

	if _, err := dyn.Resource(gvrJobSet).Namespace(e.ns).Create(e.ctx, exampleAsWritten("jobset-depends-on.yaml", "dep"),
		metav1.CreateOptions{}); err != nil {
		t.Fatalf("create JobSet: %v", err)
	}
	of := func(rj string, n int, what string, ok func(*corev1.Pod) bool) check {
		return func(ctx context.Context) error {
			pods, err := e.opPods(&opJob{w: jobSets, name: "dep"})
			if err != nil {
				return err
			}
			var mine []corev1.Pod
			for _, p := range pods {
				if p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] == rj {
					mine = append(mine, p)
				}
			}
			if len(mine) != n {
				return fmt.Errorf("replicated job %s has %d pods, want %d (the JobSet has %d)", rj, len(mine), n, len(pods))
			}
			return allPods(mine, "replicated job "+rj, what, ok)
		}
	}
	succeeded := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }
	e.eventually(time.Minute, "the initializer runs, alone", of("initializer", 1, "bound and Running or Succeeded", podStarted))
	e.eventually(time.Minute, "the initializer succeeds", of("initializer", 1, "Succeeded", succeeded))
	e.eventually(time.Minute, "the 2 trainers run", of("trainer", 2, "Running on a node", podRunningOnNode))
	e.eventually(10*time.Second, "a PodGroup for each stage, of minMember 1 and 2", func(ctx context.Context) error {
		l, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var got []string
		for _, pg := range l.Items {
			if pg.Annotations[annDerivedFrom] == "JobSet/dep" {
				got = append(got, fmt.Sprintf("%s:%d", strings.Join(strings.Split(pg.Name, "-")[:3], "-"), pg.Spec.MinMember))
			}
		}
		sort.Strings(got)
		if want := []string{"jobset-dep-initializer:1", "jobset-dep-trainer:2"}; !slices.Equal(got, want) {
			return fmt.Errorf("PodGroups derived from JobSet dep (name's first 3 parts:minMember) %v, want %v", got, want)
		}
		return nil
	})
	e.eventually(2*time.Minute, "the JobSet completes", func(ctx context.Context) error {
		js, err := dyn.Resource(gvrJobSet).Namespace(e.ns).Get(ctx, "dep", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(js.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Completed" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("JobSet dep has conditions %v, not Completed", conds)
	})
}

// TestOperatorLWS: a LeaderWorkerSet of one group of n pods (leader StatefulSet, worker
// StatefulSet), schedulerName phalanx. No gang label either; LWS pods do not end, so a job ends
// when the test deletes it.
func TestOperatorLWS(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "lws")
	e.addNodes(kwokNodes("op-lws", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startControllerManager(t, "statefulset-controller")
	startLWS(t, e)
	seedShape(t, e, leaderWorkerSets)
}

// lwsAfterLeader is a LeaderWorkerSet of one group of n pods of 1 GPU whose controller creates the
// workers only after the leader: with startupPolicy LeaderReady (exclusive "") or exclusive
// placement in the domains of the node label exclusive.
func lwsAfterLeader(exclusive string) *opWorkload {
	return &opWorkload{kind: "LeaderWorkerSet", gvr: gvrLWS, selector: leaderWorkerSets.selector,
		object: func(name string, pods int, _ string) *unstructured.Unstructured {
			u := lwsObject(name, pods)
			if exclusive == "" {
				must(unstructured.SetNestedField(u.Object, "LeaderReady", "spec", "startupPolicy"))
			} else {
				u.SetAnnotations(map[string]string{"leaderworkerset.sigs.k8s.io/exclusive-topology": exclusive})
			}
			return u
		}}
}

// lwsLeaderWaits: the group job's leader exists and waits, saying that its workers need room
// too, and no worker exists yet.
func (e *env) lwsLeaderWaits(job string, workers int) check {
	return func(ctx context.Context) error {
		pods, err := e.opPods(&opJob{w: leaderWorkerSets, name: job})
		if err != nil {
			return err
		}
		if len(pods) != 1 {
			return fmt.Errorf("%s: %d pods, want the leader alone", job, len(pods))
		}
		if n := pods[0].Spec.NodeName; n != "" {
			return fmt.Errorf("%s: the leader is bound to %s", job, n)
		}
		what := fmt.Sprintf("its %d workers", workers)
		if workers == 1 {
			what = "its worker"
		}
		want := fmt.Sprintf("room for %s too, which LeaderWorkerSet %s creates", what, job)
		if msg := podScheduledFalse(&pods[0]); !strings.Contains(msg, want) {
			return fmt.Errorf("leader %s says %q, not %q", pods[0].Name, msg, want)
		}
		return nil
	}
}

// TestOperatorLWSLeaderReady: LeaderWorkerSet's controller creates a group's workers only once
// the leader is Ready (startupPolicy LeaderReady): a gang of the group's size would wait for ever
// for them. On 4 nodes of 1 GPU, one taken by another pod, group job1 (4 pods) waits: its leader
// alone, saying that its 3 workers need room too. Once the other pod is gone the leader starts
// where they fit, their room held for them, and the group runs whole.
func TestOperatorLWSLeaderReady(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "lws")
	e.addNodes(kwokNodes("op-lwsr", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startControllerManager(t, "statefulset-controller")
	startLWS(t, e)

	other := e.create(gang("other").Members(1).GPUs(1))
	e.eventually(time.Minute, "the other pod runs", e.bound(other))
	job1 := e.createOpJob(lwsAfterLeader(""), "job1", 4, "")
	e.eventually(30*time.Second, "job1's leader waits, saying its workers need room too", e.lwsLeaderWaits("job1", 3))
	e.consistently(holdStill, "job1's leader to wait", e.lwsLeaderWaits("job1", 3))
	e.deletePods(other)
	e.eventually(time.Minute, "job1's 4 pods run", e.opRunning(job1))
}

// TestOperatorLWSExclusive: with exclusive placement (the LeaderWorkerSet's annotation
// leaderworkerset.sigs.k8s.io/exclusive-topology: rack) LeaderWorkerSet's controller creates a
// group's workers only once the leader is bound, pinned to its rack. On 2 racks of 2 nodes of 1
// GPU, with one node of rack r0 taken by another pod, group job1 (2 pods) starts in rack r1, its
// worker's room held there; group job2, created then, waits, its leader alone, until the other
// pod is gone, and then runs in rack r0.
func TestOperatorLWSExclusive(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "lws")
	e.addNodes(kwokNodes("op-lwsx-a", 2).CPU("4").Memory("16Gi").GPUs(1).Label("rack", "r0"))
	e.addNodes(kwokNodes("op-lwsx-b", 2).CPU("4").Memory("16Gi").GPUs(1).Label("rack", "r1"))
	startScheduler(t)
	startControllerManager(t, "statefulset-controller")
	startLWS(t, e)

	other := e.create(gang("other").Members(1).GPUs(1).NodeSelector("rack", "r0"))
	e.eventually(time.Minute, "the other pod runs", e.bound(other))
	inRack := func(j *opJob, rack string) check {
		return func(ctx context.Context) error {
			pods, err := e.opPods(j)
			if err != nil {
				return err
			}
			for _, p := range pods {
				if !strings.HasPrefix(p.Spec.NodeName, "op-lwsx-"+map[string]string{"r0": "a", "r1": "b"}[rack]) {
					return fmt.Errorf("pod %s is on %q, not in rack %s", p.Name, p.Spec.NodeName, rack)
				}
			}
			return nil
		}
	}
	job1 := e.createOpJob(lwsAfterLeader("rack"), "job1", 2, "")
	e.eventually(time.Minute, "job1's 2 pods run, in rack r1", all(e.opRunning(job1), inRack(job1, "r1")))
	job2 := e.createOpJob(lwsAfterLeader("rack"), "job2", 2, "")
	e.eventually(30*time.Second, "job2's leader waits, saying its worker needs room too", e.lwsLeaderWaits("job2", 1))
	e.consistently(holdStill, "job2's leader to wait, and job1 to run", all(e.lwsLeaderWaits("job2", 1), e.opRunning(job1)))
	e.deletePods(other)
	e.eventually(time.Minute, "job2's 2 pods run, in rack r0", all(e.opRunning(job2), inRack(job2, "r0")))
}

// TestOperatorKubeRay: a RayCluster of a head and n-1 workers, schedulerName phalanx, KubeRay
// without a batch scheduler: no gang label; ended by deleting it.
func TestOperatorKubeRay(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "kuberay")
	e.addNodes(kwokNodes("op-ray", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startKubeRay(t, e)
	seedShape(t, e, rayClusters)
}

// TestOperatorKubeRaySchedulerPlugins: KubeRay with --batch-scheduler=scheduler-plugins and
// RayClusters labelled ray.io/gang-scheduling-enabled: a scheduling.x-k8s.io PodGroup per
// cluster, which Phalanx reads as for training-operator.
func TestOperatorKubeRaySchedulerPlugins(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "scheduler-plugins")
	installOperatorCRDs(t, e, "kuberay")
	e.addNodes(kwokNodes("op-raysp", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startKubeRay(t, e, "--batch-scheduler=scheduler-plugins")
	seedShape(t, e, rayClustersGang)
}

// TestOperatorMPIJob: mpi-operator's MPIJob (kubeflow.org/v2beta1), its launcher (a pod of a batch
// Job) created at startup beside the workers; schedulerName phalanx in the templates, no gang
// label: Phalanx derives the gang of the launcher and the workers from the MPIJob.
func TestOperatorMPIJob(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "mpi-operator")
	e.addNodes(kwokNodes("op-mpi", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startControllerManager(t, "job-controller")
	startMPIOperator(t, e)
	seedShape(t, e, mpiV2Jobs)
}

// TestOperatorMPIJobWaitForWorkers: mpi-operator's MPIJob with launcherCreationPolicy
// WaitForWorkersReady (the example as written). The operator creates the launcher only once every
// worker is Ready, so a gang of the launcher and the workers could never be whole: Phalanx's gang
// is the workers (PodGroup mpijob-job1, minMember 3). See mpiWaitForWorkers.
func TestOperatorMPIJobWaitForWorkers(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "mpi-operator")
	e.addNodes(kwokNodes("op-mpiw", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startControllerManager(t, "job-controller")
	startMPIOperator(t, e)
	mpiWaitForWorkers(t, e, func(job string) error {
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(e.ctx, "mpijob-"+job, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("phalanx's PodGroup of %s: %v", job, err)
		}
		if pg.Spec.MinMember != 3 {
			return fmt.Errorf("PodGroup mpijob-%s has minMember %d, want the 3 workers", job, pg.Spec.MinMember)
		}
		return nil
	})
	// Its launcher succeeded, and the operator deleted its workers: the PodGroup says Succeeded.
	e.eventually(30*time.Second, "job1's PodGroup says Succeeded", func(ctx context.Context) error {
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, "mpijob-job1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pg.Status.Phase != v1alpha1.PodGroupSucceeded {
			return fmt.Errorf("PodGroup mpijob-job1: phase %q, succeeded %d, running %d, failed %d", pg.Status.Phase, pg.Status.Succeeded, pg.Status.Running, pg.Status.Failed)
		}
		return nil
	})
}

// TestOperatorMPIJobVolcanoWaitForWorkers: the same MPIJob, mpi-operator with
// --gang-scheduling=volcano, Phalanx serving "volcano". The operator writes a Volcano PodGroup of
// minMember 4 (the workers and the launcher it creates only once they are Ready): a deadlock under
// a gang scheduler that reads it as written (kubeflow/mpi-operator issue 608). Phalanx's gang is
// the workers, and the PodGroup says Running.
func TestOperatorMPIJobVolcanoWaitForWorkers(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "volcano")
	installOperatorCRDs(t, e, "mpi-operator")
	e.addNodes(kwokNodes("op-mpivc", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t, "volcano")
	startControllerManager(t, "job-controller")
	startMPIOperator(t, e, "--gang-scheduling=volcano")
	mpiWaitForWorkers(t, e, func(job string) error {
		pg, err := dyn.Resource(gvrVCPodGroup).Namespace(e.ns).Get(e.ctx, job, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the operator's PodGroup of %s: %v", job, err)
		}
		minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
		phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
		if minMember != 4 || phase != "Running" {
			return fmt.Errorf("Volcano PodGroup %s: minMember %d, phase %q; want 4 (as mpi-operator writes it) and Running", job, minMember, phase)
		}
		return nil
	})
}

// TestOperatorMPIJobSchedulerPluginsWaitForWorkers: the same, mpi-operator with
// --gang-scheduling=phalanx (its scheduler-plugins mode: a scheduling.x-k8s.io PodGroup of
// minMember 4, pods labelled scheduling.x-k8s.io/pod-group, schedulerName phalanx).
func TestOperatorMPIJobSchedulerPluginsWaitForWorkers(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "scheduler-plugins")
	installOperatorCRDs(t, e, "mpi-operator")
	e.addNodes(kwokNodes("op-mpisp", 4).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	startControllerManager(t, "job-controller")
	startMPIOperator(t, e, "--gang-scheduling="+defaultSchedulerNm)
	mpiWaitForWorkers(t, e, func(job string) error {
		pg, err := dyn.Resource(gvrSPPodGroup).Namespace(e.ns).Get(e.ctx, job, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the operator's PodGroup of %s: %v", job, err)
		}
		minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
		phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
		if minMember != 4 || phase != "Running" {
			return fmt.Errorf("scheduler-plugins PodGroup %s: minMember %d, phase %q; want 4 (as mpi-operator writes it) and Running", job, minMember, phase)
		}
		return nil
	})
}

// mpiWaitForWorkers runs the example's MPIJob (launcherCreationPolicy WaitForWorkersReady) on 4
// nodes of 1 GPU: job1's 3 workers start together, its launcher (1 CPU) joins them, ends, and the
// operator deletes the workers; gang(job1) checks the PodGroup meanwhile. job2, of 2 workers,
// created while job1 holds 3 of the 4 GPUs, waits whole (no worker bound, no launcher) and starts
// once job1 is done.
func mpiWaitForWorkers(t *testing.T, e *env, gang func(job string) error) {
	t.Helper()
	noLauncher := func(name string) check {
		return func(ctx context.Context) error {
			pods, err := e.opPods(mpiLauncher(name))
			if err != nil {
				return err
			}
			if len(pods) > 0 {
				return fmt.Errorf("%s has a launcher pod %s while its workers wait", name, pods[0].Name)
			}
			return nil
		}
	}

	job1 := e.createOpJob(mpiV2Workers, "job1", 3, "")
	e.eventually(time.Minute, "job1's 3 workers run", e.opRunning(job1))
	e.eventually(time.Minute, "job1's launcher is created and runs", e.opStarted(mpiLauncher("job1")))
	e.eventually(30*time.Second, "job1's PodGroup", func(context.Context) error { return gang("job1") })

	job2 := e.createOpJob(mpiV2Workers, "job2", 2, "")
	e.eventually(30*time.Second, "job2's 2 workers wait whole, saying why", all(e.opWaiting(job2), noLauncher("job2")))
	e.logWaiting(job2)
	e.consistently(holdStill, "job2 to stay whole-pending, without a launcher, while job1 runs",
		all(e.opWaiting(job2), noLauncher("job2"), e.opRunning(job1)))

	e.eventually(90*time.Second, "job1 succeeds", e.mpiSucceeded("job1"))
	e.eventually(time.Minute, "job2's workers run", e.opRunning(job2))
	e.eventually(time.Minute, "job2's launcher is created and runs", e.opStarted(mpiLauncher("job2")))
	e.eventually(90*time.Second, "job2 succeeds", e.mpiSucceeded("job2"))
}

// mpiLauncher is the launcher of the MPIJob of mpi-operator called name, as an opJob of one pod.
func mpiLauncher(name string) *opJob {
	return &opJob{w: &opWorkload{kind: "MPIJob launcher", gvr: gvrMPIJobV2, selector: func(name string) string {
		return "training.kubeflow.org/job-name=" + name + ",training.kubeflow.org/job-role=launcher"
	}}, name: name, size: 1}
}

// mpiSucceeded: the MPIJob called name has the condition Succeeded.
func (e *env) mpiSucceeded(name string) check {
	return func(ctx context.Context) error {
		u, err := dyn.Resource(gvrMPIJobV2).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Succeeded" && m["status"] == "True" {
				return nil
			}
		}
		raw, _ := json.Marshal(conds)
		return fmt.Errorf("MPIJob %s has not succeeded: conditions %s", name, raw)
	}
}

// TestOperatorMPIJobLauncherRoom: the launcher of an MPIJob that waits for Ready workers needs
// room that the workers must leave it. On 3 nodes of 1 GPU and 1 CPU and a node of 1 CPU and no
// GPU (pool=cpu), with another pod on that CPU, job1 (3 workers of 1 GPU and 1 CPU, a launcher of
// 1 CPU) waits whole, saying that its launcher needs room too, rather than start workers whose
// launcher would find none (they would hold their GPUs until --partial-gang-timeout released
// them). A pod of 1 CPU, late, created meanwhile, waits for the same CPU (its node selector
// pool=cpu). Once the other pod is gone job1 goes first, by arrival, and the CPU its launcher
// needs, found with the workers' room and held while they start, is not late's: the launcher runs
// beside the first workers, none of them released, job1 succeeds, and late runs after it.
func TestOperatorMPIJobLauncherRoom(t *testing.T) {
	e := newOperatorEnv(t)
	installOperatorCRDs(t, e, "mpi-operator")
	e.addNodes(kwokNodes("op-mpil", 3).CPU("1").Memory("16Gi").GPUs(1))
	e.addNodes(kwokNodes("op-mpil-cpu", 1).CPU("1").Memory("16Gi").Label("pool", "cpu"))
	startScheduler(t)
	startControllerManager(t, "job-controller")
	startMPIOperator(t, e)

	other := e.create(gang("other").Members(1).GPUs(0).WorkerCPU("1").NodeSelector("pool", "cpu"))
	e.eventually(time.Minute, "the other pod runs", e.bound(other))
	job1 := e.createOpJob(mpiV2Workers, "job1", 3, "")
	saysLauncher := func(ctx context.Context) error {
		pods, err := e.opPods(job1)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if msg := podScheduledFalse(&p); !strings.Contains(msg, "room for its launcher (job1-launcher) too") {
				return fmt.Errorf("pod %s does not say its launcher needs room: %q", p.Name, msg)
			}
		}
		return nil
	}
	e.eventually(30*time.Second, "job1 waits whole, saying its launcher needs room too", all(e.opWaiting(job1), saysLauncher))
	e.logWaiting(job1)
	// Gangs that arrive in the same second go by name, and late's comes before mpijob-job1:
	// a second later, late arrives after job1.
	time.Sleep(1100 * time.Millisecond)
	late := e.create(gang("late").Members(1).GPUs(0).WorkerCPU("1").NodeSelector("pool", "cpu"))
	e.consistently(holdStill, "job1 to wait whole, and late to wait", all(e.opWaiting(job1), e.noneBound(late)))
	pods, err := e.opPods(job1)
	if err != nil {
		t.Fatal(err)
	}
	first := map[types.UID]bool{}
	for _, p := range pods {
		first[p.UID] = true
	}

	e.deletePods(other)
	e.eventually(time.Minute, "job1's workers run", e.opRunning(job1))
	e.eventually(time.Minute, "job1's launcher runs", e.opStarted(mpiLauncher("job1")))
	pods, err = e.opPods(job1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if !first[p.UID] {
			t.Errorf("worker %s (%s) is not one of the first: the first were released", p.Name, p.UID)
		}
	}
	e.eventually(90*time.Second, "job1 succeeds", e.mpiSucceeded("job1"))
	e.eventually(time.Minute, "late runs", e.bound(late))
}
