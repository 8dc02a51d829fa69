// Command throughput measures how fast a scheduler binds pods on a real API
// server: Phalanx with gangs against the upstream kube-scheduler with the
// same pods as plain pods, at the same client QPS. It is a benchmark that
// prints figures; hack/bench-throughput.sh runs it on the local control
// plane.
//
// For each scheduler in turn it creates the pods while no scheduler runs,
// starts the scheduler as a process, and times from the process start until
// every pod has a node. It reports pods bound per second and the
// scheduler's peak resident memory (VmHWM), then deletes the pods.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/phalanx-sched/phalanx/hack/internal/benchkit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	kubeconfig, phalanx, kubeScheduler string
	nodes, gpusPerNode, pods, gang     int
	qps                                int
	which, crds                        string
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&c.phalanx, "phalanx", "bin/phalanx", "phalanx binary")
	flag.StringVar(&c.kubeScheduler, "kube-scheduler", "", "kube-scheduler binary (empty: skip it)")
	flag.IntVar(&c.nodes, "nodes", 1000, "KWOK nodes to create")
	flag.IntVar(&c.gpusPerNode, "gpus-per-node", 16, "GPUs per node")
	flag.IntVar(&c.pods, "pods", 10000, "pods to schedule")
	flag.IntVar(&c.gang, "gang", 8, "pods per gang (Phalanx)")
	flag.IntVar(&c.qps, "qps", 100, "client QPS of both schedulers (burst is twice that)")
	flag.StringVar(&c.crds, "crds", "deploy/crds", "folder of the CRD manifests to install")
	flag.StringVar(&c.which, "schedulers", "phalanx,kube-scheduler", "which schedulers to measure, in order")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "throughput:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := benchkit.InstallCRDs(ctx, cfg, c.crds); err != nil {
		return err
	}
	start := time.Now()
	if err := createNodes(ctx, kube, c); err != nil {
		return err
	}
	fmt.Printf("created %d nodes x %d GPUs in %s\n", c.nodes, c.gpusPerNode, time.Since(start).Round(time.Millisecond))
	fmt.Printf("%-15s %8s %10s %12s %14s\n", "scheduler", "pods", "seconds", "pods/s", "peak RSS MiB")
	for _, name := range strings.Split(c.which, ",") {
		if name == "kube-scheduler" && c.kubeScheduler == "" {
			continue
		}
		ns := "throughput-" + name
		if err := createPods(ctx, kube, c, ns, name); err != nil {
			return err
		}
		secs, rss, err := measure(ctx, kube, c, ns, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%-15s %8d %10.1f %12.1f %14.0f\n", name, c.pods, secs, float64(c.pods)/secs, float64(rss)/1024)
		if err := deletePods(ctx, kube, ns); err != nil {
			return err
		}
	}
	return nil
}

func createNodes(ctx context.Context, kube kubernetes.Interface, c config) error {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("256"),
		corev1.ResourceMemory: resource.MustParse("2Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
		"nvidia.com/gpu":      *resource.NewQuantity(int64(c.gpusPerNode), resource.DecimalSI),
	}
	return benchkit.Parallel(c.nodes, 16, func(i int) error {
		name := fmt.Sprintf("tp-node-%04d", i)
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: res, Capacity: res},
		}
		_, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

func createPods(ctx context.Context, kube kubernetes.Interface, c config, ns, scheduler string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	start := time.Now()
	err = benchkit.Parallel(c.pods, 32, func(i int) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: ns},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "none",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
			},
		}
		if scheduler == "phalanx" {
			pod.Spec.SchedulerName = "phalanx"
			gang := strconv.Itoa(i / c.gang)
			pod.Labels = map[string]string{
				"pod-group.scheduling.sigs.k8s.io/name":          "g" + gang,
				"pod-group.scheduling.sigs.k8s.io/min-available": strconv.Itoa(c.gang),
			}
		}
		_, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	fmt.Fprintf(os.Stderr, "created %d pods in %s in %s\n", c.pods, ns, time.Since(start).Round(time.Millisecond))
	return err
}

// measure starts the scheduler and returns the seconds until every pod of
// ns has a node, and the scheduler's peak RSS in KiB.
func measure(ctx context.Context, kube kubernetes.Interface, c config, ns, name string) (float64, int64, error) {
	var bound atomic.Int64
	seen := sync.Map{}
	done := make(chan struct{})
	var closeOnce sync.Once
	inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "pods", ns, fields.Everything()),
		&corev1.Pod{}, 0, cache.Indexers{})
	count := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		if _, dup := seen.LoadOrStore(p.UID, true); !dup && bound.Add(1) == int64(c.pods) {
			closeOnce.Do(func() { close(done) })
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: count, UpdateFunc: func(_, o any) { count(o) }}); err != nil {
		return 0, 0, err
	}
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	cache.WaitForCacheSync(stop, inf.HasSynced)

	qps, burst := strconv.Itoa(c.qps), strconv.Itoa(2*c.qps)
	var cmd *exec.Cmd
	switch name {
	case "phalanx":
		cmd = exec.Command(c.phalanx, "scheduler", "--kubeconfig", c.kubeconfig, "--leader-elect=false",
			"--address=", "--kube-api-qps", qps, "--kube-api-burst", burst)
	default:
		cmd = exec.Command(c.kubeScheduler, "--kubeconfig", c.kubeconfig, "--leader-elect=false",
			"--secure-port=0", "--kube-api-qps", qps, "--kube-api-burst", burst)
	}
	log, err := os.Create(fmt.Sprintf("/tmp/throughput-%s.log", name))
	if err != nil {
		return 0, 0, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	var peak int64
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	timeout := time.After(20 * time.Minute)
	for {
		select {
		case <-done:
			secs := time.Since(start).Seconds()
			peak = max(peak, benchkit.RSSKiB(cmd.Process.Pid, true))
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return secs, peak, nil
		case <-ticker.C:
			peak = max(peak, benchkit.RSSKiB(cmd.Process.Pid, true))
		case <-timeout:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return 0, 0, fmt.Errorf("only %d of %d pods bound after 20 minutes", bound.Load(), c.pods)
		}
	}
}

// deletePods deletes every pod of ns, one request per pod in parallel (a
// DeleteCollection of 10,000 pods can outlast etcd's request timeout), and
// waits until they are gone.
func deletePods(ctx context.Context, kube kubernetes.Interface, ns string) error {
	zero := int64(0)
	for i := 0; i < 600; i++ {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		err = benchkit.Parallel(len(list.Items), 32, func(k int) error {
			err := kube.CoreV1().Pods(ns).Delete(ctx, list.Items[k].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "deleting pods of %s: %v; retrying\n", ns, err)
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("pods of %s not deleted after 10 minutes", ns)
}
