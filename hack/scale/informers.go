package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// informersOnly is the argument that makes this program the "informers"
// measurement's child process (syncInformers).
const informersOnly = "informers-only"

// syncInformers is the floor of a scheduler's restart on this machine: a
// process that does nothing but start client-go's shared informers on pods
// and nodes, as protobuf, at the given client QPS, with streaming lists if
// the environment turns them on (KUBE_FEATURE_WatchListClient), as
// Phalanx's and kube-scheduler's do, but with no handler and no transform.
// It prints how long after its start they synced and its peak RSS (KiB),
// then exits.
func syncInformers(kubeconfig string, qps float64) error {
	start := time.Now()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(clientConfig(cfg, float32(qps)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := informers.NewSharedInformerFactory(kube, 0)
	pods, nodes := f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, nodes.HasSynced) {
		return fmt.Errorf("informers did not sync")
	}
	synced := time.Since(start)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var hwm int64
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	fmt.Printf("synced %d hwm %d pods %d nodes %d\n", synced.Nanoseconds(), hwm, len(pods.GetStore().ListKeys()), len(nodes.GetStore().ListKeys()))
	return nil
}

// measureInformers runs syncInformers in a child process, once the pending
// half is reset as for the schedulers, and reads its figures.
func (b *bench) measureInformers(ctx context.Context, qps int) (result, error) {
	r := result{sched: "informers", qps: qps, pods: len(b.plan.pending), synced: -1, first: -1, all: -1}
	logf("informers at QPS %d: resetting the pending half", qps)
	if err := b.deletePods(ctx, nsPending, b.plan.pending); err != nil {
		return r, err
	}
	if err := b.createPods(ctx, nsPending, b.plan.pending, true, false); err != nil {
		return r, err
	}
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	logf("informers at QPS %d: syncing bare informers on pods and nodes", qps)
	cmd := exec.Command(self, informersOnly, b.c.kubeconfig, strconv.Itoa(qps))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return r, fmt.Errorf("informers: %w", err)
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var ns, hwm int64
		var pods, nodes int
		if _, err := fmt.Sscanf(sc.Text(), "synced %d hwm %d pods %d nodes %d", &ns, &hwm, &pods, &nodes); err == nil {
			r.synced, r.rss = time.Duration(ns), hwm
			r.note = fmt.Sprintf("listed %d pods, %d nodes", pods, nodes)
			r.load = loadavg()
			return r, nil
		}
	}
	return r, fmt.Errorf("informers: no figures in %q", out.String())
}
