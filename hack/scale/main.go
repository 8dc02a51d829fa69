// Command scale is the scale benchmark of issue 12: on a real API server it
// lays out thousands of nodes and a hundred thousand pods, half of them
// running and half pending, then measures, for each scheduler and client
// QPS, how long a freshly started scheduler takes to sync, to bind its first
// pod and to bind every pending pod, and how much memory it takes. It prints
// figures and asserts nothing; hack/bench-scale.sh runs it on a local
// control plane of its own.
//
// The schedulers:
//   - raw: a bare client in this program that binds every pending pod to a
//     node computed in advance, through pods/binding, as fast as its workers
//     and the client QPS allow: the API server's limit on this machine;
//   - informers: a child process of this program that only syncs
//     client-go's informers on pods and nodes, with no handler: the floor
//     of a scheduler's restart on this machine (informers.go);
//   - phalanx: bin/phalanx scheduler, the pods in gangs (ACK pod-group
//     labels);
//   - kube-scheduler: the upstream scheduler of the same Kubernetes version,
//     the same pods without gang labels.
//
// Nodes are Node objects created directly (no KWOK process runs: nothing
// needs to run, and node heartbeats and pod status updates would take the
// API server's time). The running half is created with spec.nodeName set;
// before each measurement the pending half is deleted and created again,
// unbound, while no scheduler runs; the clock starts with the scheduler's
// process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/phalanx-sched/phalanx/hack/internal/benchkit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	kubeconfig, phalanx, kubeScheduler, crds, logDir, commit string
	nodes, gpusPerNode, pods                                 int
	gangs, qps                                               []int
	schedulers                                               []string
	phalanxArgs, phalanxEnv                                  []string
	rawWorkers, createQPS, createWorkers, clients            int
	apiserverPID, etcdPID                                    int
	timeout                                                  time.Duration
	minFreeMiB                                               int
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == informersOnly {
		qps, err := strconv.ParseFloat(os.Args[3], 64)
		if err == nil {
			err = syncInformers(os.Args[2], qps)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "scale:", err)
			os.Exit(1)
		}
		return
	}
	var c config
	var gangs, qps, schedulers, phalanxArgs, phalanxEnv string
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&c.phalanx, "phalanx", "bin/phalanx", "phalanx binary")
	flag.StringVar(&phalanxArgs, "phalanx-args", "", "more flags of phalanx scheduler, separated by spaces (e.g. --profiling)")
	flag.StringVar(&phalanxEnv, "phalanx-env", "", "more environment of phalanx scheduler, NAME=VALUE separated by spaces "+
		"(e.g. GOMEMLIMIT=966367641, what it sets itself in a container limited to 1 GiB)")
	flag.StringVar(&c.kubeScheduler, "kube-scheduler", "", "kube-scheduler binary (empty: skip it)")
	flag.StringVar(&c.crds, "crds", "deploy/crds", "folder of the CRD manifests to install")
	flag.StringVar(&c.logDir, "log-dir", os.TempDir(), "folder of the schedulers' logs")
	flag.StringVar(&c.commit, "commit", "", "commit of the binary under test, printed with the figures")
	flag.IntVar(&c.nodes, "nodes", 5000, "nodes to create")
	flag.IntVar(&c.gpusPerNode, "gpus-per-node", 8, "GPUs per node")
	flag.IntVar(&c.pods, "pods", 150000, "pods: half running, half pending")
	flag.StringVar(&gangs, "gangs", "1,8,64", "gang sizes, each taking an equal share of the pods of each half")
	flag.StringVar(&qps, "qps", "1000,5000", "client QPS of the schedulers (burst twice that), one measurement each")
	flag.StringVar(&schedulers, "schedulers", "raw,informers,phalanx,kube-scheduler", "what to measure at each QPS, in order")
	flag.IntVar(&c.rawWorkers, "raw-workers", 32, "binds in flight at once in the raw binder (Phalanx's --bind-workers default)")
	flag.IntVar(&c.createQPS, "create-qps", 6000, "QPS of this program's own clients, which create and delete the pods")
	flag.IntVar(&c.createWorkers, "create-workers", 96, "requests in flight at once when creating and deleting")
	flag.IntVar(&c.clients, "clients", 8, "separate connections to the API server for creating and deleting")
	flag.IntVar(&c.apiserverPID, "apiserver-pid", 0, "pid of kube-apiserver, whose RSS is reported (0: none)")
	flag.IntVar(&c.etcdPID, "etcd-pid", 0, "pid of etcd, whose RSS is reported (0: none)")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "longest wait for one scheduler to bind the pending half")
	flag.IntVar(&c.minFreeMiB, "min-available-mib", 3072, "stop creating pods when the machine's MemAvailable falls below this")
	flag.Parse()
	c.phalanxArgs, c.phalanxEnv = strings.Fields(phalanxArgs), strings.Fields(phalanxEnv)
	var err error
	if c.gangs, err = intList(gangs); err == nil {
		c.qps, err = intList(qps)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(2)
	}
	for _, s := range strings.Split(schedulers, ",") {
		switch s = strings.TrimSpace(s); s {
		case "raw", "informers", "phalanx", "kube-scheduler":
			c.schedulers = append(c.schedulers, s)
		case "":
		default:
			fmt.Fprintf(os.Stderr, "scale: unknown scheduler %q (want raw, informers, phalanx, kube-scheduler)\n", s)
			os.Exit(2)
		}
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q: want a comma-separated list of positive integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s scale: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// bench is what the measurements share.
type bench struct {
	c       config
	cfg     *rest.Config
	plan    *plan
	clients []kubernetes.Interface // this program's, for creating and deleting
}

func run(c config) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	p, err := newPlan(c.nodes, c.gpusPerNode, c.pods, c.gangs)
	if err != nil {
		return err
	}
	b := &bench{c: c, cfg: cfg, plan: p}
	for range c.clients {
		kube, err := kubernetes.NewForConfig(clientConfig(cfg, float32(c.createQPS)/float32(c.clients)))
		if err != nil {
			return err
		}
		b.clients = append(b.clients, kube)
	}
	ctx := context.Background()
	if err := benchkit.InstallCRDs(ctx, cfg, c.crds); err != nil {
		return err
	}
	commit := c.commit
	if commit == "" {
		commit = "unknown"
	}
	fmt.Printf("scale benchmark: commit %s, %s\n", commit, time.Now().Format(time.RFC3339))
	fmt.Printf("cluster: %d nodes x %d GPUs (cpu 256, memory 2Ti, pods 110); %d pods: %d running (%d of 1 GPU, %d CPU-only), %d pending (%d of 1 GPU, %d CPU-only)\n",
		p.nodes, p.gpusPerNode, len(p.running)+len(p.pending), len(p.running), p.runningGPU, len(p.running)-p.runningGPU,
		len(p.pending), p.pendingGPU, len(p.pending)-p.pendingGPU)
	fmt.Printf("gangs: running %s; pending %s (Phalanx: labels %s and %s; kube-scheduler: the same pods without them)\n",
		describeGangs(p.running), describeGangs(p.pending), labelGangName, labelMinAvail)

	start := time.Now()
	if err := b.createNodes(ctx); err != nil {
		return err
	}
	fmt.Printf("created %d nodes in %s\n", p.nodes, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := b.createPods(ctx, nsRunning, p.running, true, true); err != nil {
		return err
	}
	d := time.Since(start)
	fmt.Printf("created the %d running pods in %s (%.0f pods/s)\n", len(p.running), d.Round(time.Millisecond), float64(len(p.running))/d.Seconds())

	var results []result
	for _, qps := range c.qps {
		for _, s := range c.schedulers {
			if s == "kube-scheduler" && c.kubeScheduler == "" {
				continue
			}
			measure := b.measure
			if s == "informers" {
				measure = func(ctx context.Context, _ string, qps int) (result, error) { return b.measureInformers(ctx, qps) }
			}
			r, err := measure(ctx, s, qps)
			if err != nil {
				return fmt.Errorf("%s at QPS %d: %w", s, qps, err)
			}
			results = append(results, r)
			fmt.Println(r.line())
		}
	}
	printTable(results)
	return nil
}

func describeGangs(list []member) string {
	counts := gangCounts(list)
	var sizes []int
	for s := range counts {
		sizes = append(sizes, s)
	}
	sort.Ints(sizes)
	var parts []string
	for _, s := range sizes {
		parts = append(parts, fmt.Sprintf("%d of %d", counts[s], s))
	}
	return strings.Join(parts, ", ")
}

// clientConfig is cfg with protobuf, the given QPS (burst twice that) and a
// connection of its own: a Dial function keeps client-go from sharing one
// cached transport (one HTTP/2 connection) between clients.
func clientConfig(cfg *rest.Config, qps float32) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = qps, int(2*qps)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return c
}

// retry calls f up to 6 times while it fails with an error worth retrying
// (throttling, timeouts, an overloaded server).
func retry(f func() error) error {
	var err error
	for attempt := range 6 {
		if err = f(); err == nil || !(apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
			apierrors.IsTimeout(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
			errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection")) {
			return err
		}
		time.Sleep(time.Duration(100<<attempt) * time.Millisecond)
	}
	return err
}

func (b *bench) createNodes(ctx context.Context) error {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("256"),
		corev1.ResourceMemory: resource.MustParse("2Ti"),
		corev1.ResourcePods:   *resource.NewQuantity(podsPerNode, resource.DecimalSI),
		resourceGPU:           *resource.NewQuantity(int64(b.plan.gpusPerNode), resource.DecimalSI),
	}
	now := metav1.Now()
	return benchkit.Parallel(b.plan.nodes, b.c.createWorkers, func(i int) error {
		name := nodeName(i)
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"type": "kwok", corev1.LabelHostname: name}},
			Status: corev1.NodeStatus{Allocatable: res, Capacity: res, Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "ScaleBenchmark",
				LastHeartbeatTime: now, LastTransitionTime: now}}},
		}
		return retry(func() error {
			_, err := b.clients[i%len(b.clients)].CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	})
}

// createPods creates list in ns, gang-labelled and for Phalanx if gangs,
// bound to their nodes if bound. It stops when the machine runs short of
// memory.
func (b *bench) createPods(ctx context.Context, ns string, list []member, gangs, bound bool) error {
	_, err := b.clients[0].CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	var done atomic.Int64
	stop := progress(fmt.Sprintf("creating %d pods in %s", len(list), ns), &done, len(list))
	defer stop()
	return benchkit.Parallel(len(list), b.c.createWorkers, func(i int) error {
		if i%2000 == 0 {
			if avail := memAvailableMiB(); avail > 0 && avail < b.c.minFreeMiB {
				return fmt.Errorf("the machine has only %d MiB available after %d pods of %s: run with fewer --pods", avail, i, ns)
			}
		}
		p := pod(list[i], ns, gangs, bound)
		err := retry(func() error {
			_, err := b.clients[i%len(b.clients)].CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		done.Add(1)
		return err
	})
}

// deletePods deletes the pods of list from ns, one request each (a
// DeleteCollection of this many pods outlasts etcd's request timeout), and
// waits until the namespace has no pod left.
func (b *bench) deletePods(ctx context.Context, ns string, list []member) error {
	if l, err := b.clients[0].CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1}); err == nil && len(l.Items) == 0 {
		return nil // the first time: nothing to delete
	}
	zero := int64(0)
	var done atomic.Int64
	stop := progress(fmt.Sprintf("deleting %d pods of %s", len(list), ns), &done, len(list))
	err := benchkit.Parallel(len(list), b.c.createWorkers, func(i int) error {
		err := retry(func() error {
			err := b.clients[i%len(b.clients)].CoreV1().Pods(ns).Delete(ctx, list[i].name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		done.Add(1)
		return err
	})
	stop()
	if err != nil {
		return err
	}
	for range 600 {
		l, err := b.clients[0].CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("pods of %s still there 10 minutes after their deletion", ns)
}

// progress logs done/total every 10 s until the returned function is
// called.
func progress(what string, done *atomic.Int64, total int) func() {
	start := time.Now()
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				logf("%s: %d/%d after %s", what, done.Load(), total, time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
		d := time.Since(start)
		logf("%s: done in %s (%.0f/s)", what, d.Round(time.Millisecond), float64(done.Load())/d.Seconds())
	}
}

// memAvailableMiB is /proc/meminfo's MemAvailable, or 0 if unknown.
func memAvailableMiB() int {
	return benchkit.ProcField("/proc/meminfo", "MemAvailable:") / 1024
}
