// Command soak keeps a churn of gangs on a cluster for a while and prints,
// once a minute, what the scheduler's /metrics says about its health:
// goroutines, resident memory, status writes by result and the status
// backlog, with the gangs created and finished in that minute. It is a
// benchmark that prints figures and asserts nothing; hack/soak.sh runs it
// against a scheduler it starts on the local control plane.
//
// The churn: about --gangs PodGroups are alive at any time, each a gang of
// 3-8 pods of 1, 2, 4 or 8 GPUs (the same for every member of a gang; 8 twice
// as likely as the others) with
// the annotation phalanx.dev/run-for (30-120 s), which KWOK honours by
// completing the pod that long after it starts (hack/kwok-stages.yaml). A
// gang whose pods have all finished is deleted, pods and PodGroup, and a new
// one takes its place. The alive gangs ask for more GPUs than the cluster
// has (100 gangs x 5.5 pods x 4.6 GPUs on average, about 2,500 GPUs, against
// 1,600 on 200 nodes of 8), so some always wait, and their statuses change
// as others finish.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// The keys the scheduler and KWOK read.
const (
	annGroupName = "scheduling.k8s.io/group-name"
	annRunFor    = "phalanx.dev/run-for"
	labelGang    = "phalanx.dev/soak-gang"
	resourceGPU  = corev1.ResourceName("nvidia.com/gpu")
)

type config struct {
	kubeconfig, metricsURL, namespace, scheduler string
	minutes, gangs                               int
	seed                                         uint64
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&c.metricsURL, "metrics", "http://127.0.0.1:10280/metrics", "the scheduler's /metrics URL")
	flag.StringVar(&c.namespace, "namespace", "soak", "namespace of the gangs (created if missing)")
	flag.StringVar(&c.scheduler, "scheduler-name", "phalanx", "spec.schedulerName of the pods")
	flag.IntVar(&c.minutes, "minutes", 10, "how long to churn")
	flag.IntVar(&c.gangs, "gangs", 100, "PodGroups kept alive")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the gang shapes and run times")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// gang is a PodGroup the churn created and has not deleted yet.
type gang struct {
	name string
	size int
}

type churn struct {
	c      config
	kube   kubernetes.Interface
	pg     versioned.Interface
	pods   cache.Store
	rng    *rand.Rand
	next   int
	alive  map[string]gang
	counts struct{ created, finished int } // in the current minute
}

func run(c config) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "phalanx-soak"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pg, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(c.namespace))
	inf := f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	ch := &churn{c: c, kube: kube, pg: pg, pods: inf.GetStore(), rng: rand.New(rand.NewPCG(c.seed, 0)), alive: map[string]gang{}}

	first, err := scrape(c.metricsURL)
	if err != nil {
		return err
	}
	rows := []row{first.row(0, nil, 0, 0, 0)}
	fmt.Printf("soak: %d gangs alive, %d minutes, metrics %s\n", c.gangs, c.minutes, c.metricsURL)
	fmt.Println(header)
	fmt.Println(rows[0])

	start := time.Now()
	prev := first
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for minute := 1; minute <= c.minutes; {
		if err := ch.step(ctx); err != nil {
			return err
		}
		<-tick.C
		if time.Since(start) < time.Duration(minute)*time.Minute {
			continue
		}
		m, err := scrape(c.metricsURL)
		if err != nil {
			return fmt.Errorf("minute %d: %w", minute, err)
		}
		r := m.row(minute, prev, ch.counts.created, ch.counts.finished, ch.waiting())
		fmt.Println(r)
		rows = append(rows, r)
		prev, ch.counts.created, ch.counts.finished = m, 0, 0
		minute++
	}
	fmt.Println()
	fmt.Println("soak: summary")
	fmt.Println(header)
	for _, r := range rows {
		fmt.Println(r)
	}
	fmt.Println(flatness(rows))
	fmt.Printf("soak: the scheduler's counters at the end (%s):\n", c.metricsURL)
	for _, k := range prev.series("phalanx_status_writes_total", "phalanx_pods_bound_total", "phalanx_bind_errors_total") {
		fmt.Printf("  %s %.0f\n", k, prev[k])
	}
	return nil
}

// series lists the sample's series of the named metrics, sorted.
func (s sample) series(names ...string) []string {
	var out []string
	for k := range s {
		for _, n := range names {
			if k == n || strings.HasPrefix(k, n+"{") {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// step deletes the gangs whose pods have all finished and creates gangs
// until --gangs are alive.
func (ch *churn) step(ctx context.Context) error {
	done := map[string]int{}
	for _, obj := range ch.pods.List() {
		p := obj.(*corev1.Pod)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			done[p.Labels[labelGang]]++
		}
	}
	zero := int64(0)
	for name, g := range ch.alive {
		if done[name] < g.size {
			continue
		}
		err := ch.kube.CoreV1().Pods(ch.c.namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
			metav1.ListOptions{LabelSelector: labelGang + "=" + name})
		if err != nil {
			return fmt.Errorf("delete the pods of %s: %w", name, err)
		}
		if err := ch.pg.SchedulingV1alpha1().PodGroups(ch.c.namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete PodGroup %s: %w", name, err)
		}
		delete(ch.alive, name)
		ch.counts.finished++
	}
	for len(ch.alive) < ch.c.gangs {
		if err := ch.create(ctx); err != nil {
			return err
		}
	}
	return nil
}

// create creates one gang: its PodGroup, then its pods.
func (ch *churn) create(ctx context.Context) error {
	name := fmt.Sprintf("g%05d", ch.next)
	ch.next++
	size := 3 + ch.rng.IntN(6)
	gpus := []int64{1, 2, 4, 8, 8}[ch.rng.IntN(5)]
	runFor := time.Duration(30+ch.rng.IntN(91)) * time.Second
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.PodGroupSpec{MinMember: int32(size)}}
	if _, err := ch.pg.SchedulingV1alpha1().PodGroups(ch.c.namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PodGroup %s: %w", name, err)
	}
	for i := range size {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: map[string]string{labelGang: name},
				Annotations: map[string]string{annGroupName: name, annRunFor: runFor.String()}},
			Spec: corev1.PodSpec{SchedulerName: ch.c.scheduler, RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "worker", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{resourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
		}
		if _, err := ch.kube.CoreV1().Pods(ch.c.namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", p.Name, err)
		}
	}
	ch.alive[name] = gang{name: name, size: size}
	ch.counts.created++
	return nil
}

// waiting counts the alive gangs none of whose pods is bound.
func (ch *churn) waiting() int {
	bound := map[string]bool{}
	for _, obj := range ch.pods.List() {
		if p := obj.(*corev1.Pod); p.Spec.NodeName != "" {
			bound[p.Labels[labelGang]] = true
		}
	}
	n := 0
	for name := range ch.alive {
		if !bound[name] {
			n++
		}
	}
	return n
}

// sample is one scrape of the scheduler's metrics: every series, by its
// name and labels as printed.
type sample map[string]float64

func scrape(url string) (sample, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, fmt.Errorf("scrape the scheduler: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape the scheduler: %s", resp.Status)
	}
	s := sample{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		s[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if _, ok := s["go_goroutines"]; !ok {
		return nil, errors.New("scrape the scheduler: no go_goroutines in its metrics")
	}
	return s, nil
}

// writes sums phalanx_status_writes_total over kinds, by result.
func (s sample) writes() map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if !strings.HasPrefix(k, "phalanx_status_writes_total{") {
			continue
		}
		i := strings.Index(k, `result="`)
		if i < 0 {
			continue
		}
		res := k[i+len(`result="`):]
		out[res[:strings.IndexByte(res, '"')]] += v
	}
	return out
}

type row struct {
	minute, goroutines      int
	rssMiB                  float64
	ok, conflict, other     int
	backlog                 int
	created, finished, wait int
}

const header = "minute  goroutines  RSS MiB  writes ok  conflicts  other writes  backlog  gangs created  gangs finished  gangs waiting"

func (r row) String() string {
	return fmt.Sprintf("%6d  %10d  %7.1f  %9d  %9d  %12d  %7d  %13d  %14d  %13d",
		r.minute, r.goroutines, r.rssMiB, r.ok, r.conflict, r.other, r.backlog, r.created, r.finished, r.wait)
}

// row is the minute's line: levels from s, counters as deltas from prev
// (none at minute 0).
func (s sample) row(minute int, prev sample, created, finished, waiting int) row {
	r := row{minute: minute, goroutines: int(s["go_goroutines"]), rssMiB: s["process_resident_memory_bytes"] / (1 << 20),
		backlog: int(s["phalanx_status_backlog"]), created: created, finished: finished, wait: waiting}
	if prev == nil {
		return r
	}
	now, before := s.writes(), prev.writes()
	for res, v := range now {
		d := int(v - before[res])
		switch res {
		case "ok":
			r.ok += d
		case "conflict":
			r.conflict += d
		default:
			r.other += d
		}
	}
	return r
}

// flatness says how goroutines and RSS moved after the warm-up (the first
// two minutes), for the reader to judge.
func flatness(rows []row) string {
	const warmup = 2
	if len(rows) <= warmup+1 {
		return "soak: too short to tell whether goroutines and RSS stay flat after a warm-up of 2 minutes"
	}
	after := rows[warmup:]
	gMin, gMax := after[0].goroutines, after[0].goroutines
	rMin, rMax := after[0].rssMiB, after[0].rssMiB
	for _, r := range after {
		gMin, gMax = min(gMin, r.goroutines), max(gMax, r.goroutines)
		rMin, rMax = min(rMin, r.rssMiB), max(rMax, r.rssMiB)
	}
	last := after[len(after)-1]
	return fmt.Sprintf("soak: from minute %d to %d: goroutines %d-%d (minute %d: %d, last: %d); RSS %.1f-%.1f MiB (minute %d: %.1f, last: %.1f)",
		warmup, last.minute, gMin, gMax, warmup, after[0].goroutines, last.goroutines, rMin, rMax, warmup, after[0].rssMiB, last.rssMiB)
}
