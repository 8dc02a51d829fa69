package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/phalanx-sched/phalanx/hack/internal/benchkit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// result is one measurement. Durations are from the scheduler's start;
// negative ones were not reached or are not known.
type result struct {
	sched                string
	qps, pods, bound     int
	synced, first, all   time.Duration
	rss, apiRSS, etcdRSS int64 // KiB; 0: not known
	cycles               *histogram
	load                 string // the machine's load averages when the last pod was bound
	note                 string
}

func (b *bench) measure(ctx context.Context, sched string, qps int) (result, error) {
	pending := b.plan.pending
	r := result{sched: sched, qps: qps, pods: len(pending), synced: -1, first: -1, all: -1}
	logf("%s at QPS %d: resetting the pending half", sched, qps)
	if err := b.deletePods(ctx, nsPending, pending); err != nil {
		return r, err
	}
	if err := b.createPods(ctx, nsPending, pending, sched != "kube-scheduler", false); err != nil {
		return r, err
	}
	w, err := watchBinds(b.clients[0], len(pending))
	if err != nil {
		return r, err
	}
	defer w.stop()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		cmd             *exec.Cmd
		readyURL, mURL  string
		exited          = make(chan error, 1)
		rawDone         chan struct{} // raw only: closed when the binder returns
		rawErrs         atomic.Int64
		readyAt         atomic.Int64 // UnixNano of the first 200 from readyURL
		start           time.Time
		logFile         *os.File
		stopReadyPoller = make(chan struct{})
	)
	defer close(stopReadyPoller)
	if sched == "raw" {
		kube, err := kubernetes.NewForConfig(clientConfig(b.cfg, float32(qps)))
		if err != nil {
			return r, err
		}
		rawDone = make(chan struct{})
		start = time.Now()
		go func() {
			defer close(rawDone)
			b.rawBind(ctx, kube, &rawErrs)
		}()
	} else {
		port, err := freePort()
		if err != nil {
			return r, err
		}
		q, burst := strconv.Itoa(qps), strconv.Itoa(2*qps)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if sched == "phalanx" {
			args := []string{"scheduler", "--kubeconfig", b.c.kubeconfig, "--leader-elect=false",
				"--address", addr, "--kube-api-qps", q, "--kube-api-burst", burst}
			cmd = exec.Command(b.c.phalanx, append(args, b.c.phalanxArgs...)...)
			cmd.Env = append(os.Environ(), b.c.phalanxEnv...)
			readyURL, mURL = "http://"+addr+"/readyz", "http://"+addr+"/metrics"
		} else {
			// Its secure port serves /readyz, which waits for its informers,
			// to anyone (--authorization-always-allow-paths default).
			cmd = exec.Command(b.c.kubeScheduler, "--kubeconfig", b.c.kubeconfig, "--leader-elect=false",
				"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
				"--cert-dir="+filepath.Join(b.c.logDir, "kube-scheduler-certs"),
				"--kube-api-qps", q, "--kube-api-burst", burst)
			readyURL = "https://" + addr + "/readyz"
		}
		logFile, err = os.Create(filepath.Join(b.c.logDir, fmt.Sprintf("scale-%s-qps%d.log", sched, qps)))
		if err != nil {
			return r, err
		}
		defer logFile.Close()
		cmd.Stdout, cmd.Stderr = logFile, logFile
		start = time.Now()
		if err := cmd.Start(); err != nil {
			return r, err
		}
		go func() { exited <- cmd.Wait() }()
		go pollReady(readyURL, &readyAt, stopReadyPoller)
		logf("%s at QPS %d: started pid %d, log %s", sched, qps, cmd.Process.Pid, logFile.Name())
	}

	sample := func() {
		if cmd != nil {
			r.rss = max(r.rss, benchkit.RSSKiB(cmd.Process.Pid, true))
		}
		r.apiRSS = max(r.apiRSS, benchkit.RSSKiB(b.c.apiserverPID, false))
		r.etcdRSS = max(r.etcdRSS, benchkit.RSSKiB(b.c.etcdPID, false))
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	deadline := time.NewTimer(b.c.timeout)
	defer deadline.Stop()
	processAlive := cmd != nil
wait:
	for {
		select {
		case <-w.done:
			break wait
		case err := <-exited:
			processAlive = false
			r.note = fmt.Sprintf("exited before binding every pod: %v", err)
			break wait
		case <-rawDone:
			rawDone = nil // the watch may still be catching up; no more waiting for it below
			if n := rawErrs.Load(); n > 0 {
				r.note = fmt.Sprintf("%d binds failed", n)
			}
		case <-deadline.C:
			r.note = fmt.Sprintf("timed out after %s", b.c.timeout)
			break wait
		case <-tick.C:
			sample()
		case <-report.C:
			bound, _, _ := w.state()
			logf("%s at QPS %d: %d/%d bound after %s, scheduler RSS %d MiB, apiserver %d MiB, etcd %d MiB, available %d MiB, load %s",
				sched, qps, bound, len(pending), time.Since(start).Round(time.Second), r.rss/1024, r.apiRSS/1024, r.etcdRSS/1024,
				memAvailableMiB(), loadavg())
		}
	}
	sample()
	r.load = loadavg()
	bound, first, last := w.state()
	r.bound = bound
	if !first.IsZero() {
		r.first = first.Sub(start)
	}
	if bound == len(pending) {
		r.all = last.Sub(start)
	}
	if t := readyAt.Load(); t != 0 {
		r.synced = time.Unix(0, t).Sub(start)
	}
	if sched == "phalanx" && processAlive {
		body, err := httpGet(mURL)
		if err != nil {
			logf("phalanx /metrics: %v", err)
		} else {
			r.cycles = parseHistogram(body, "phalanx_cycle_duration_seconds")
			logf("phalanx at QPS %d: phalanx_pods_bound_total %s, phalanx_bind_errors_total %s, cycles %s (sum %s s)", qps,
				metricValue(body, "phalanx_pods_bound_total"), metricValue(body, "phalanx_bind_errors_total"),
				metricValue(body, "phalanx_cycle_duration_seconds_count"), metricValue(body, "phalanx_cycle_duration_seconds_sum"))
		}
	}
	if processAlive {
		_ = cmd.Process.Kill()
		<-exited
	}
	if rawDone != nil {
		cancel()
		<-rawDone
	}
	return r, nil
}

// rawBind binds every pending pod to its node computed in advance, as fast
// as kube's rate limit and the workers allow.
func (b *bench) rawBind(ctx context.Context, kube kubernetes.Interface, errs *atomic.Int64) {
	pending := b.plan.pending
	_ = benchkit.Parallel(len(pending), b.c.rawWorkers, func(i int) error {
		m := pending[i]
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: nsPending},
			Target: corev1.ObjectReference{Kind: "Node", Name: m.node}}
		err := retry(func() error { return kube.CoreV1().Pods(nsPending).Bind(ctx, binding, metav1.CreateOptions{}) })
		if err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
			if errs.Add(1) <= 5 {
				logf("raw bind of %s to %s: %v", m.name, m.node, err)
			}
		}
		return ctx.Err()
	})
}

// watcher counts the pods of the pending namespace that have a node.
type watcher struct {
	mu          sync.Mutex
	want        int
	seen        map[types.UID]bool
	first, last time.Time
	done        chan struct{}
	quit        chan struct{}
}

// watchBinds starts an informer on the pending namespace and returns once
// it has listed want pods, none of them bound.
func watchBinds(kube kubernetes.Interface, want int) (*watcher, error) {
	w := &watcher{want: want, seen: map[types.UID]bool{}, done: make(chan struct{}), quit: make(chan struct{})}
	inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "pods", nsPending, fields.Everything()),
		&corev1.Pod{}, 0, cache.Indexers{})
	// Keep only what is counted.
	if err := inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID,
				ResourceVersion: p.ResourceVersion}, Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}}, nil
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	count := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.seen[p.UID] {
			return
		}
		w.seen[p.UID] = true
		if len(w.seen) == 1 {
			w.first = now
		}
		if len(w.seen) == w.want {
			w.last = now
			close(w.done)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: count, UpdateFunc: func(_, o any) { count(o) }}); err != nil {
		return nil, err
	}
	go inf.Run(w.quit)
	if !cache.WaitForCacheSync(w.quit, inf.HasSynced) {
		return nil, fmt.Errorf("pod watch did not sync")
	}
	// The first list comes from the API server's watch cache, which may
	// not have caught up with the last creations yet.
	n := len(inf.GetStore().ListKeys())
	for i := 0; i < 600 && n < want; i++ {
		time.Sleep(100 * time.Millisecond)
		n = len(inf.GetStore().ListKeys())
	}
	bound, _, _ := w.state()
	if n != want || bound != 0 {
		w.stop()
		return nil, fmt.Errorf("%s has %d pods, %d bound, before the scheduler starts; want %d, none bound", nsPending, n, bound, want)
	}
	return w, nil
}

func (w *watcher) state() (bound int, first, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen), w.first, w.last
}

func (w *watcher) stop() { close(w.quit) }

// loadavg is the machine's 1, 5 and 15 minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var httpClient = &http.Client{Timeout: 5 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // a self-signed local cert

func httpGet(url string) (string, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(body), nil
}

// pollReady asks url every 50 ms until it answers 200 and records when.
func pollReady(url string, at *atomic.Int64, quit <-chan struct{}) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := httpGet(url); err == nil {
			at.Store(time.Now().UnixNano())
			return
		}
		select {
		case <-quit:
			return
		case <-t.C:
		}
	}
}

// histogram is a Prometheus histogram scraped from a text exposition.
type histogram struct {
	bounds     []float64 // upper bounds, ascending, +Inf last
	cumulative []float64
	count, sum float64
}

func parseHistogram(body, name string) *histogram {
	h := &histogram{}
	type bucket struct{ le, n float64 }
	var buckets []bucket
	for _, line := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(line, name+"_bucket{"):
			i := strings.Index(line, `le="`)
			j := strings.LastIndex(line, " ")
			if i < 0 || j < 0 {
				continue
			}
			rest := line[i+4:]
			le, err1 := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
			n, err2 := strconv.ParseFloat(line[j+1:], 64)
			if err1 == nil && err2 == nil {
				buckets = append(buckets, bucket{le, n})
			}
		case strings.HasPrefix(line, name+"_count "):
			h.count, _ = strconv.ParseFloat(strings.Fields(line)[1], 64)
		case strings.HasPrefix(line, name+"_sum "):
			h.sum, _ = strconv.ParseFloat(strings.Fields(line)[1], 64)
		}
	}
	if len(buckets) == 0 {
		return nil
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	for _, b := range buckets {
		h.bounds = append(h.bounds, b.le)
		h.cumulative = append(h.cumulative, b.n)
	}
	return h
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile does:
// linearly within the bucket that holds it (the highest finite bound if that
// is the +Inf bucket).
func (h *histogram) quantile(q float64) float64 {
	if h == nil || h.count == 0 {
		return math.NaN()
	}
	rank := q * h.count
	for i, c := range h.cumulative {
		if c < rank {
			continue
		}
		if math.IsInf(h.bounds[i], 1) {
			if i == 0 {
				return math.NaN()
			}
			return h.bounds[i-1]
		}
		lo, loCount := 0.0, 0.0
		if i > 0 {
			lo, loCount = h.bounds[i-1], h.cumulative[i-1]
		}
		if c == loCount {
			return h.bounds[i]
		}
		return lo + (h.bounds[i]-lo)*(rank-loCount)/(c-loCount)
	}
	return math.NaN()
}

// metricValue is the value of an unlabelled sample, or "?".
func metricValue(body, name string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+" ") {
			return strings.Fields(line)[1]
		}
	}
	return "?"
}

func secs(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}

func mib(kib int64) string {
	if kib <= 0 {
		return "—"
	}
	return strconv.FormatInt(kib/1024, 10)
}

func (r result) rates() (afterFirst, fromStart string) {
	if r.all < 0 {
		return "—", "—"
	}
	afterFirst, fromStart = "—", fmt.Sprintf("%.0f", float64(r.pods)/r.all.Seconds())
	if d := r.all - r.first; d > 0 {
		afterFirst = fmt.Sprintf("%.0f", float64(r.pods)/d.Seconds())
	}
	return afterFirst, fromStart
}

func (r result) cycleText() string {
	if r.cycles == nil {
		return "—"
	}
	ms := func(q float64) string { return fmt.Sprintf("%.1f", 1000*r.cycles.quantile(q)) }
	return fmt.Sprintf("%s / %s / %s (%.0f cycles)", ms(0.5), ms(0.9), ms(0.99), r.cycles.count)
}

func (r result) line() string {
	a, s := r.rates()
	text := fmt.Sprintf("%s at QPS %d: %d/%d pending pods bound; synced %s s, first bind %s s, all bound %s s; pods/s %s after the first bind, %s from start; peak RSS %s MiB, apiserver %s MiB, etcd %s MiB; cycle p50/p90/p99 %s ms; load average %s",
		r.sched, r.qps, r.bound, r.pods, secs(r.synced), secs(r.first), secs(r.all), a, s, mib(r.rss), mib(r.apiRSS), mib(r.etcdRSS), r.cycleText(), r.load)
	if r.note != "" {
		text += " (" + r.note + ")"
	}
	return text
}

func printTable(results []result) {
	fmt.Println()
	fmt.Println("| scheduler | client QPS | pending pods | informers synced (s) | first bind (s) | all bound (s) | pods/s after first bind | pods/s from start | scheduler peak RSS (MiB) | apiserver RSS (MiB) | etcd RSS (MiB) | cycle p50 / p90 / p99 (ms, bucket estimates) | load average at the end |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, r := range results {
		a, s := r.rates()
		pods := strconv.Itoa(r.pods)
		switch {
		case r.sched == "informers":
			pods = "— (" + r.note + ")"
		case r.bound != r.pods:
			pods = fmt.Sprintf("%d (%d bound: %s)", r.pods, r.bound, r.note)
		}
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.sched, r.qps, pods,
			secs(r.synced), secs(r.first), secs(r.all), a, s, mib(r.rss), mib(r.apiRSS), mib(r.etcdRSS), r.cycleText(), r.load)
	}
	fmt.Println()
	fmt.Println("Times are from the scheduler's process start (raw: from its first bind request; informers: bare informers on pods and nodes, which bind nothing). RSS: the scheduler's VmHWM; the API server's and etcd's highest VmRSS sampled during the run.")
	fmt.Println("Cycle percentiles are estimated from phalanx_cycle_duration_seconds buckets (powers of 2 from 0.5 ms), scraped when the last pod was bound.")
}
