//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/client/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// crdDir holds the generated CRD manifests, relative to this package.
const crdDir = "../../deploy/crds"

// Clients shared by the tests (not by the schedulers they start, which
// build their own). Set once by TestMain, read-only afterwards.
var (
	restConfig *rest.Config
	kube       kubernetes.Interface
	phalanx    versioned.Interface
	dyn        dynamic.Interface
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: e2e setup: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// setup connects to the cluster named by KUBECONFIG, checks that it is
// empty of nodes, and installs the CRDs.
func setup() error {
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		return errors.New("KUBECONFIG is not set: the e2e suite needs a running cluster " +
			"(run `make e2e`, or: export KUBECONFIG=$(hack/local-cluster.sh up | tail -n1))")
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("KUBECONFIG=%s: %w", path, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "phalanx-e2e"
	restConfig = cfg
	if kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if phalanx, err = versioned.NewForConfig(cfg); err != nil {
		return err
	}
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("cluster of KUBECONFIG=%s does not answer: %w", path, err)
	}
	fmt.Printf("e2e: kube-apiserver %s at %s\n", v.GitVersion, cfg.Host)
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	if n := len(nodes.Items); n > 0 {
		return fmt.Errorf("the cluster already has %d nodes (first: %s); the tests count capacity and need a cluster "+
			"without nodes: run them with `make e2e`, which starts a dedicated one", n, nodes.Items[0].Name)
	}
	return installCRDs(ctx)
}

// installCRDs creates or updates every CRD of deploy/crds and waits until
// each is Established.
func installCRDs(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD manifests in %s", crdDir)
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		crds, err := readManifests(f)
		if err != nil {
			return err
		}
		for _, crd := range crds {
			if err := applyCRD(ctx, crd); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			names = append(names, crd.GetName())
		}
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return crdEstablished(crd), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established: %w", name, err)
		}
	}
	fmt.Printf("e2e: CRDs established: %v\n", names)
	return nil
}

// readManifests decodes the CustomResourceDefinitions of file, and fails on any other kind.
func readManifests(file string) ([]*unstructured.Unstructured, error) {
	objs, err := readObjects(file)
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: unexpected kind %q", file, u.GetKind())
		}
	}
	return objs, nil
}

// applyCRD creates crd, or replaces the spec of an existing one so that the
// cluster serves the schema of this checkout. An existing CRD of the same name
// that serves other versions (mpijobs.kubeflow.org is training-operator's v1
// and mpi-operator's v2beta1) is deleted first, with every object of it: the
// API server refuses to drop a version objects were stored in.
func applyCRD(ctx context.Context, crd *unstructured.Unstructured) error {
	client := dyn.Resource(crdGVR)
	_, err := client.Create(ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := client.Get(ctx, crd.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !slices.Equal(crdVersions(cur), crdVersions(crd)) {
		if err := client.Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete CRD %s of versions %v: %w", crd.GetName(), crdVersions(cur), err)
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.Get(ctx, crd.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s of versions %v not gone: %w", crd.GetName(), crdVersions(cur), err)
		}
		_, err = client.Create(ctx, crd, metav1.CreateOptions{})
		return err
	}
	crd = crd.DeepCopy()
	crd.SetResourceVersion(cur.GetResourceVersion())
	_, err = client.Update(ctx, crd, metav1.UpdateOptions{})
	return err
}

// crdVersions are the names of the versions crd declares, sorted.
func crdVersions(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var names []string
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok {
			name, _ := m["name"].(string)
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
