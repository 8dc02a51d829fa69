//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// TestChaos SIGKILLs the scheduler process again and again while it binds
// gangs, and starts it again at once each time, as a crash-looping pod is
// restarted. The scheduler runs as the phalanx binary with a low client QPS,
// so that binding a gang of 64 takes seconds and the kills land mid-bind.
// Afterwards, with one scheduler left running, no node holds more GPUs than
// it has, no pod was ever bound to two nodes, no gang stays partly bound,
// and every gang that fits is bound.
//
// The load is more than fits. 200 nodes x 8 GPUs = 1,600 GPUs. A big gang
// (64 members x 8 GPUs) takes 64 whole nodes; a small gang (16 x 1 GPU)
// takes 16 GPUs, two nodes' worth when packed. Up front: 2 big gangs and 10
// small ones; during the kills: 20 more small gangs and, last, a third big
// gang. All 30 small gangs (480 GPUs = 60 nodes) and 2 big gangs (128
// nodes) fit: 188 of 200 nodes. The third big gang would need 64 whole
// nodes of the 12 left, so it waits, whole, for ever. It is created more
// than a second after the last small gang (arrival has second precision),
// so that it comes after all of them in the queue and cannot take the room
// they need.
func TestChaos(t *testing.T) {
	const (
		nodes, gpusPerNode     = 200, 8
		bigMembers, bigGPUs    = 64, 8
		smallMembers           = 16
		smallUpFront, smallAll = 10, 30
		smallPerBatch          = 3 // small gangs created after each kill until all exist
		bigFit                 = 2 // big gangs that fit beside all small ones
		wantMidBind            = 10
		maxKills               = 40
		killPhase              = 120 * time.Second
	)
	bin := buildPhalanx(t)
	e := newEnv(t)
	binds := e.watchBinds()

	start := time.Now()
	e.addNodes(kwokNodes("chaos", nodes).GPUs(gpusPerNode))
	t.Logf("%d nodes Ready %v after the first create", nodes, time.Since(start).Round(time.Millisecond))

	var (
		jobs     []*job
		big      []*job
		small    []*job
		lastMade time.Time // when the latest small gang was created
	)
	sizes := map[string]int{} // gang -> members, read by observe
	add := func(b *jobBuilder, isBig bool) {
		j := e.create(b)
		jobs = append(jobs, j)
		sizes[j.name] = j.size
		if isBig {
			big = append(big, j)
		} else {
			small = append(small, j)
			lastMade = time.Now()
		}
	}
	addSmall := func() { add(gang(fmt.Sprintf("small-%02d", len(small))).Members(smallMembers).GPUs(1), false) }
	addBig := func() { add(gang(fmt.Sprintf("big-%d", len(big))).Members(bigMembers).GPUs(bigGPUs), true) }
	for range bigFit {
		addBig()
	}
	for range smallUpFront {
		addSmall()
	}

	sched := newSchedulerProcess(t, bin, "--leader-elect=false", "--address=127.0.0.1:0",
		"--kube-api-qps", "20", "--kube-api-burst", "20", "--partial-gang-timeout", "20s")

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("kill loop seed %d", seed)

	// The kill loop: start a run; kill it as soon as the watch shows more
	// pods bound than at its previous look while some gang is partly bound,
	// or after a random 1-4 s; list the pods; start the next run. The list,
	// read from the API server after the kill, is what the killed run left:
	// the kill landed mid-bind when that run bound pods and left a gang
	// partly bound. (The watch alone would not do: under this load it lags
	// the API server by up to a second.)
	var kills, midBind, timerKills, outOfOrder int
	left := boundView{} // what the previous runs left
	loopEnd := time.Now().Add(killPhase)
	for {
		sched.start()
		// Create the late gangs while the new run starts up.
		switch {
		case len(small) < smallAll:
			for i := 0; i < smallPerBatch && len(small) < smallAll; i++ {
				addSmall()
			}
		case len(big) == bigFit && time.Since(lastMade) > 1500*time.Millisecond:
			addBig()
		}
		allMade := len(small) == smallAll && len(big) > bigFit
		if allMade && midBind >= wantMidBind || kills >= maxKills || time.Now().After(loopEnd) {
			break
		}

		delay := time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))
		deadline := time.Now().Add(delay)
		last := -1
		trigger := "bind progress"
		for {
			time.Sleep(20 * time.Millisecond)
			sched.mustBeAlive()
			seen := binds.observe(sizes)
			if last >= 0 && seen.total() > last && len(seen.partial(sizes)) > 0 {
				break
			}
			if last >= 0 || sched.ready() {
				last = seen.total()
			}
			if time.Now().After(deadline) {
				timerKills++
				trigger = "after " + delay.Round(time.Millisecond).String()
				break
			}
		}
		sched.kill()
		kills++
		prev := left
		var err error
		if left, err = e.boundPerGang(e.ctx); err != nil {
			t.Fatal(err)
		}
		partial := left.partial(sizes)
		mid := left.total() > prev.total() && len(partial) > 0
		if mid {
			midBind++
		}
		t.Logf("kill %d (%s, run %d): the run bound %s; it left %d pods bound, partly bound: %s; mid-bind=%v",
			kills, trigger, sched.runs, left.since(prev), left.total(), strings.Join(partial, ", "), mid)
		if early := left.startedBefore(prev, sizes); early != "" {
			outOfOrder++
			t.Logf("  run %d started %s", sched.runs, early)
		}

		// Nothing left to bind: no later kill can land mid-bind.
		if allMade && len(partial) == 0 && left.total() == prev.total() {
			t.Logf("the scheduler has nothing left to bind; the kill loop stops")
			sched.start()
			break
		}
	}
	t.Logf("%d kills in %v: %d mid-bind, %d after the random delay; %d runs; %d runs bound a new gang "+
		"before completing the partly bound ones they started with", kills, time.Since(start).Round(time.Second),
		midBind, timerKills, sched.runs, outOfOrder)
	if midBind < wantMidBind {
		t.Errorf("%d kills landed mid-bind, want at least %d", midBind, wantMidBind)
	}

	wholeOrNone := e.wholeOrNone(jobs)
	e.eventually(2*time.Minute, "no node is over its GPUs, no pod was bound twice, no gang is partly bound, and every gang that fits is bound",
		all(gpusWithinCapacity, binds.noDoubleBind, wholeOrNone, e.fitsBound(small, len(small), big, bigFit)))
	e.consistently(holdStill, "the state to stay so",
		all(gpusWithinCapacity, binds.noDoubleBind, wholeOrNone, e.fitsBound(small, len(small), big, bigFit)))
	t.Logf("settled %v after the first create; pods seen bound: %d; the last run's counters:\n%s",
		time.Since(start).Round(time.Second), binds.seenBound(), sched.metrics("phalanx_pods_bound_total",
			"phalanx_bind_errors_total", "phalanx_status_writes_total", "phalanx_evictions_total", "phalanx_status_backlog"))
	t.Logf("error lines in the runs' logs: %s", sched.errorLines(8))
}

// buildPhalanx builds this checkout's phalanx binary into the test's temp
// dir, without the race detector, which would only slow down the process
// the test kills.
func buildPhalanx(t *testing.T) string {
	t.Helper()
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	bin := filepath.Join(t.TempDir(), "phalanx")
	start := time.Now()
	cmd := exec.Command(goCmd, "build", "-o", bin, "./cmd/phalanx")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/phalanx: %v\n%s", err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// schedulerProcess runs `phalanx scheduler` as a child process against the
// test cluster, one run at a time, each run logging to a file of its own in
// the test's temp dir. The tail of the latest run's log, and of any run that
// exited by itself, is logged when the test fails. At the end of the test
// the running run is stopped with SIGTERM.
type schedulerProcess struct {
	t    *testing.T
	bin  string
	args []string
	dir  string
	runs int
	cur  *schedulerRun
}

type schedulerRun struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error  // from Wait, once exited is closed
	killed bool   // by the test
	addr   string // of /readyz and /metrics, once logged
	ready  bool
}

func newSchedulerProcess(t *testing.T, bin string, flags ...string) *schedulerProcess {
	p := &schedulerProcess{t: t, bin: bin, dir: t.TempDir(),
		args: append([]string{"scheduler", "--kubeconfig", os.Getenv("KUBECONFIG")}, flags...)}
	t.Cleanup(func() {
		if p.cur == nil {
			return
		}
		if t.Failed() {
			t.Logf("tail of %s:\n%s", p.cur.log, tail(p.cur.log, 40))
		}
		p.stop()
	})
	return p
}

// start starts a run; the previous one must have ended.
func (p *schedulerProcess) start() {
	p.t.Helper()
	p.runs++
	r := &schedulerRun{log: filepath.Join(p.dir, fmt.Sprintf("scheduler-%02d.log", p.runs)), exited: make(chan struct{})}
	f, err := os.Create(r.log)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close() // the child has its own descriptor
	r.cmd = exec.Command(p.bin, p.args...)
	r.cmd.Stdout, r.cmd.Stderr = f, f
	if err := r.cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.bin, err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.exited)
	}()
	p.cur = r
}

// mustBeAlive fails the test if the current run exited without being
// killed.
func (p *schedulerProcess) mustBeAlive() {
	p.t.Helper()
	select {
	case <-p.cur.exited:
		p.t.Fatalf("scheduler run %d exited by itself (%v); tail of %s:\n%s", p.runs, p.cur.err, p.cur.log, tail(p.cur.log, 40))
	default:
	}
}

// kill SIGKILLs the current run and waits until it is gone.
func (p *schedulerProcess) kill() {
	p.t.Helper()
	p.mustBeAlive()
	p.cur.killed = true
	if err := syscall.Kill(p.cur.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		p.t.Fatalf("kill scheduler: %v", err)
	}
	select {
	case <-p.cur.exited:
	case <-time.After(10 * time.Second):
		p.t.Fatalf("scheduler run %d outlived SIGKILL by 10s", p.runs)
	}
}

// stop ends the current run with SIGTERM, as a pod is stopped, and with
// SIGKILL if it takes longer than 15 s.
func (p *schedulerProcess) stop() {
	r := p.cur
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		p.t.Errorf("scheduler run %d did not stop within 15s of SIGTERM; killing it", p.runs)
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

var metricsAddr = regexp.MustCompile(`"Serving health and metrics" address="([^"]+)"`)

var probe = &http.Client{Timeout: time.Second}

// ready reports whether the current run answers /readyz with 200. It finds
// the run's address (--address 127.0.0.1:0) in its log.
func (p *schedulerProcess) ready() bool {
	r := p.cur
	if r.ready {
		return true
	}
	if r.addr == "" {
		b, err := os.ReadFile(r.log)
		if err != nil {
			return false
		}
		m := metricsAddr.FindSubmatch(b)
		if m == nil {
			return false
		}
		r.addr = string(m[1])
	}
	resp, err := probe.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	r.ready = resp.StatusCode == http.StatusOK
	return r.ready
}

// metrics returns the current run's samples of the named metrics, for the
// log; a failure to scrape is returned as the text.
func (p *schedulerProcess) metrics(names ...string) string {
	if !p.ready() {
		return "(the scheduler is not ready)"
	}
	resp, err := probe.Get("http://" + p.cur.addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		for _, n := range names {
			if strings.HasPrefix(line, n+" ") || strings.HasPrefix(line, n+"{") {
				out = append(out, "  "+line)
			}
		}
	}
	return strings.Join(out, "\n")
}

// errorLines counts the klog error lines (E...) of every run's log and
// quotes up to n of them, one per distinct message, for the test's log.
func (p *schedulerProcess) errorLines(n int) string {
	logs, _ := filepath.Glob(filepath.Join(p.dir, "scheduler-*.log"))
	count := 0
	seen := map[string]bool{}
	var quoted []string
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "E") {
				continue
			}
			count++
			msg := line
			if i := strings.Index(line, "] "); i >= 0 {
				msg = line[i+2:]
			}
			if key, _, _ := strings.Cut(msg, "err="); !seen[key] && len(quoted) < n {
				seen[key] = true
				quoted = append(quoted, "  "+filepath.Base(f)+": "+line)
			}
		}
	}
	if count == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, of which:\n%s", count, strings.Join(quoted, "\n"))
}

// tail returns the last n lines of the file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// bindLog follows the namespace's pods through a watch (an informer)
// started before any load. It records every node each pod, by UID, was seen
// bound to, and its store is the kill loop's view of which pods are bound.
type bindLog struct {
	store cache.Store

	mu    sync.Mutex
	nodes map[types.UID][]string // distinct spec.nodeName values, in the order seen
	names map[types.UID]string
}

func (e *env) watchBinds() *bindLog {
	e.t.Helper()
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(e.ns))
	inf := f.Core().V1().Pods().Informer()
	l := &bindLog{store: inf.GetStore(), nodes: map[types.UID][]string{}, names: map[types.UID]string{}}
	note := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		seen := l.nodes[p.UID]
		for _, n := range seen {
			if n == p.Spec.NodeName {
				return
			}
		}
		l.nodes[p.UID] = append(seen, p.Spec.NodeName)
		l.names[p.UID] = p.Name
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, obj any) { note(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			note(obj)
		},
	}); err != nil {
		e.t.Fatalf("pod informer: %v", err)
	}
	f.Start(e.ctx.Done())
	for typ, ok := range f.WaitForCacheSync(e.ctx.Done()) {
		if !ok {
			e.t.Fatalf("informer %v did not sync", typ)
		}
	}
	return l
}

// boundView is how many pods of each gang are bound.
type boundView map[string]int

// observe counts the bound pods of the given gangs, as the watch has them.
func (l *bindLog) observe(sizes map[string]int) boundView {
	v := boundView{}
	for _, obj := range l.store.List() {
		p := obj.(*corev1.Pod)
		if _, ok := sizes[p.Labels[labelJob]]; ok && p.Spec.NodeName != "" {
			v[p.Labels[labelJob]]++
		}
	}
	return v
}

func (v boundView) total() int {
	n := 0
	for _, c := range v {
		n += c
	}
	return n
}

// partial lists the gangs partly bound, as "name bound/size".
func (v boundView) partial(sizes map[string]int) []string {
	var out []string
	for g, n := range v {
		if n < sizes[g] {
			out = append(out, fmt.Sprintf("%s %d/%d", g, n, sizes[g]))
		}
	}
	sort.Strings(out)
	return out
}

// since lists the gangs that have more pods bound than in old, as
// "name +n".
func (v boundView) since(old boundView) string {
	var out []string
	for g, n := range v {
		if d := n - old[g]; d > 0 {
			out = append(out, fmt.Sprintf("%s +%d", g, d))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// startedBefore names the gangs that had no pod bound in old and have some
// in v, if some gang partly bound in old still is in v: binds of new gangs
// that went out before the partly bound gangs were completed. It returns ""
// otherwise.
func (v boundView) startedBefore(old boundView, sizes map[string]int) string {
	var started, waiting []string
	for g, n := range v {
		if old[g] == 0 && n > 0 {
			started = append(started, fmt.Sprintf("%s (%d/%d)", g, n, sizes[g]))
		}
		if o := old[g]; o > 0 && o < sizes[g] && n < sizes[g] {
			waiting = append(waiting, fmt.Sprintf("%s (%d/%d)", g, n, sizes[g]))
		}
	}
	if len(started) == 0 || len(waiting) == 0 {
		return ""
	}
	sort.Strings(started)
	sort.Strings(waiting)
	return strings.Join(started, ", ") + " while " + strings.Join(waiting, ", ") + ", partly bound when it started, were still incomplete"
}

// noDoubleBind: no pod was ever seen bound to two nodes.
func (l *bindLog) noDoubleBind(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for uid, nodes := range l.nodes {
		if len(nodes) > 1 {
			errs = append(errs, fmt.Errorf("pod %s (uid %s) was seen bound to %v", l.names[uid], uid, nodes))
		}
	}
	return errors.Join(errs...)
}

func (l *bindLog) seenBound() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.nodes)
}

// boundPerGang counts the bound pods of each gang of the namespace, as the
// API server has them.
func (e *env) boundPerGang(ctx context.Context) (boundView, error) {
	l, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	per := boundView{}
	for _, p := range l.Items {
		if p.Spec.NodeName != "" {
			per[p.Labels[labelJob]]++
		}
	}
	return per, nil
}

// wholeOrNone: every one of jobs has none or all of its members bound.
func (e *env) wholeOrNone(jobs []*job) check {
	return func(ctx context.Context) error {
		per, err := e.boundPerGang(ctx)
		if err != nil {
			return err
		}
		var errs []error
		for _, j := range jobs {
			if n := per[j.name]; n != 0 && n != j.size {
				errs = append(errs, fmt.Errorf("gang %s is partly bound: %d/%d", j.name, n, j.size))
			}
		}
		return errors.Join(errs...)
	}
}

// fitsBound: at least wantSmall of the small gangs and wantBig of the big
// ones have all their members bound.
func (e *env) fitsBound(small []*job, wantSmall int, big []*job, wantBig int) check {
	return func(ctx context.Context) error {
		per, err := e.boundPerGang(ctx)
		if err != nil {
			return err
		}
		whole := func(jobs []*job) (n int, not []string) {
			for _, j := range jobs {
				if per[j.name] == j.size {
					n++
				} else {
					not = append(not, fmt.Sprintf("%s %d/%d", j.name, per[j.name], j.size))
				}
			}
			return n, not
		}
		s, notS := whole(small)
		b, notB := whole(big)
		if s < wantSmall || b < wantBig {
			return fmt.Errorf("%d small gangs bound whole (want %d), %d big ones (want %d); not whole: %s",
				s, wantSmall, b, wantBig, strings.Join(append(notS, notB...), ", "))
		}
		return nil
	}
}
