//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A check returns nil when what it checks holds, or an error saying what
// does not, in words that explain a failure in a CI log.
type check func(ctx context.Context) error

const pollInterval = 250 * time.Millisecond

// eventually polls c until it holds. On timeout it logs the namespace's
// pods, PodGroups and recent Events, and fails the test with c's last word.
func (e *env) eventually(timeout time.Duration, what string, c check) {
	e.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(e.ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		last = c(ctx)
		return last == nil, nil
	})
	if err != nil {
		e.dump()
		e.t.Fatalf("timed out after %v waiting until %s: %v", timeout, what, last)
	}
}

// consistently checks c every pollInterval for d and fails the test, with
// the same dump, the first time it does not hold. The checks run under the
// test's context, not a deadline of d, so that a request near the end of
// the window is not refused by the client's rate limiter.
func (e *env) consistently(d time.Duration, what string, c check) {
	e.t.Helper()
	end := time.Now().Add(d)
	for {
		if err := c(e.ctx); err != nil {
			e.dump()
			e.t.Fatalf("expected %s for %v, but: %v", what, d, err)
		}
		if time.Now().After(end) {
			return
		}
		select {
		case <-time.After(pollInterval):
		case <-e.ctx.Done():
			e.t.Fatalf("test context ended while checking %s", what)
		}
	}
}

// all combines checks; the first that fails speaks.
func all(cs ...check) check {
	return func(ctx context.Context) error {
		for _, c := range cs {
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

// running: every pod of j is bound and Running.
func (e *env) running(j *job) check { return e.everyPod(j, "Running on a node", podRunningOnNode) }

// started: every pod of j is bound and Running or already Succeeded.
func (e *env) started(j *job) check {
	return e.everyPod(j, "bound and Running or Succeeded", podStarted)
}

func podRunningOnNode(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning
}

func podStarted(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded)
}

// bound: every pod of j has a node.
func (e *env) bound(j *job) check {
	return e.everyPod(j, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
}

// inPhase: every pod of j is in phase.
func (e *env) inPhase(j *job, phase corev1.PodPhase) check {
	return e.everyPod(j, string(phase), func(p *corev1.Pod) bool { return p.Status.Phase == phase })
}

// noneBound: no pod of j has a node: the gang has not started, not even
// in part.
func (e *env) noneBound(j *job) check {
	return func(ctx context.Context) error {
		pods, err := e.pods(ctx, j)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				return fmt.Errorf("pod %s of gang %s was bound to %s", p.Name, j.name, p.Spec.NodeName)
			}
		}
		return nil
	}
}

func (e *env) everyPod(j *job, what string, ok func(*corev1.Pod) bool) check {
	return func(ctx context.Context) error {
		pods, err := e.pods(ctx, j)
		if err != nil {
			return err
		}
		return allPods(pods, j.name, what, ok)
	}
}

// allPods fails, naming them, if some of the pods of job name are not what
// ok says.
func allPods(pods []corev1.Pod, name, what string, ok func(*corev1.Pod) bool) error {
	var not []string
	for i := range pods {
		if p := &pods[i]; !ok(p) {
			not = append(not, fmt.Sprintf("%s (%s on %q)", p.Name, p.Status.Phase, p.Spec.NodeName))
		}
	}
	if len(not) > 0 {
		return fmt.Errorf("%d/%d pods of %s not %s: %s", len(not), len(pods), name, what, strings.Join(not, ", "))
	}
	return nil
}

// podsCondition: every pod of j carries condition typ with status, and its
// message contains every one of words.
func (e *env) podsCondition(j *job, typ corev1.PodConditionType, status corev1.ConditionStatus, words ...string) check {
	return func(ctx context.Context) error {
		for _, name := range j.pods {
			if err := e.podCondition(name, typ, status, words...)(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

func (e *env) podCondition(pod string, typ corev1.PodConditionType, status corev1.ConditionStatus, words ...string) check {
	return e.podConditionIn(e.ns, pod, typ, status, words...)
}

// podConditionIn is podCondition for a pod of namespace ns.
func (e *env) podConditionIn(ns, pod string, typ corev1.PodConditionType, status corev1.ConditionStatus, words ...string) check {
	return func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type != typ {
				continue
			}
			if c.Status != status {
				return fmt.Errorf("pod %s: %s=%s (%s: %s), want %s", pod, typ, c.Status, c.Reason, c.Message, status)
			}
			return contains(fmt.Sprintf("pod %s condition %s", pod, typ), c.Message, words)
		}
		return fmt.Errorf("pod %s has no %s condition", pod, typ)
	}
}

// unbound: the named pod has no node.
func (e *env) unbound(pod string) check {
	return func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != "" {
			return fmt.Errorf("pod %s was bound to %s", pod, p.Spec.NodeName)
		}
		return nil
	}
}

// podRunning: the named pod is bound and Running.
func (e *env) podRunning(pod string) check {
	return func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s is %s on %q", pod, p.Status.Phase, p.Spec.NodeName)
		}
		return nil
	}
}

// podGroupPhase: the PodGroup's status.phase is phase.
func (e *env) podGroupPhase(name string, phase v1alpha1.PodGroupPhase) check {
	return func(ctx context.Context) error {
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pg.Status.Phase != phase {
			return fmt.Errorf("PodGroup %s is in phase %q, want %q", name, pg.Status.Phase, phase)
		}
		return nil
	}
}

// expectedStart: the PodGroup's status.expectedStartTime is want, an
// RFC 3339 time in UTC.
func (e *env) expectedStart(name, want string) check {
	return func(ctx context.Context) error {
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if at := pg.Status.ExpectedStartTime; at == nil || at.UTC().Format(time.RFC3339) != want {
			return fmt.Errorf("PodGroup %s: expectedStartTime %v, want %s", name, at, want)
		}
		return nil
	}
}

// podGroupCondition: the PodGroup has condition typ with status, and its
// message contains every one of words.
func (e *env) podGroupCondition(name, typ string, status metav1.ConditionStatus, words ...string) check {
	return func(ctx context.Context) error {
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, typ)
		if c == nil {
			return fmt.Errorf("PodGroup %s has no %s condition (phase %q)", name, typ, pg.Status.Phase)
		}
		if c.Status != status {
			return fmt.Errorf("PodGroup %s: %s=%s (%s: %s), want %s", name, typ, c.Status, c.Reason, c.Message, status)
		}
		return contains(fmt.Sprintf("PodGroup %s condition %s", name, typ), c.Message, words)
	}
}

// eventOn: an Event of the given reason about the named pod has a message
// containing every one of words.
func (e *env) eventOn(pod, reason string, words ...string) check {
	return eventOf(e.ns, pod, "", reason, words)
}

// eventOf: an Event of type typ ("" for any) and reason about the object
// namespace/name has a message containing every one of words.
func eventOf(namespace, name, typ, reason string, words []string) check {
	return func(ctx context.Context) error {
		l, err := kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		var msgs []string
		for _, ev := range l.Items {
			if ev.Reason != reason {
				continue
			}
			if (typ == "" || ev.Type == typ) && contains("", ev.Message, words) == nil {
				return nil
			}
			msgs = append(msgs, ev.Type+": "+ev.Message)
		}
		return fmt.Errorf("no %s %s Event on %s/%s mentions %q; its %s Events: %q", typ, reason, namespace, name, words, reason, msgs)
	}
}

func contains(what, msg string, words []string) error {
	for _, w := range words {
		if !strings.Contains(msg, w) {
			return fmt.Errorf("%s: message %q does not mention %q", what, msg, w)
		}
	}
	return nil
}

// gpusWithinCapacity: on no node do the pods bound there and not finished
// request more nvidia.com/gpu than the node has.
func gpusWithinCapacity(ctx context.Context) error {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	have := map[string]int64{}
	for _, n := range nodes.Items {
		q := n.Status.Allocatable[resourceGPU]
		have[n.Name] = q.Value()
	}
	used, err := gpusBound(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for node, u := range used {
		if u > have[node] {
			errs = append(errs, fmt.Errorf("node %s holds pods requesting %d nvidia.com/gpu but has %d", node, u, have[node]))
		}
	}
	return errors.Join(errs...)
}

// gpusBound sums the GPU requests of unfinished pods by node.
func gpusBound(ctx context.Context) (map[string]int64, error) {
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if err != nil {
		return nil, err
	}
	used := map[string]int64{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			q, ok := c.Resources.Requests[resourceGPU]
			if !ok {
				q = c.Resources.Limits[resourceGPU]
			}
			used[p.Spec.NodeName] += q.Value()
		}
	}
	return used, nil
}

// dump logs what a reader of a failed CI run needs: the namespace's pods,
// PodGroups with their conditions, the nodes with their GPU use, and the
// latest Events.
func (e *env) dump() {
	t := e.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "---- state of namespace %s ----\n", e.ns)
	if pods, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	} else {
		fmt.Fprintf(&b, "pods (%d):\n", len(pods.Items))
		sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
		for _, p := range pods.Items {
			sched := ""
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					sched = fmt.Sprintf(" PodScheduled=%s %s: %s", c.Status, c.Reason, c.Message)
				}
			}
			fmt.Fprintf(&b, "  %-28s %-9s node=%-14q%s\n", p.Name, p.Status.Phase, p.Spec.NodeName, sched)
		}
	}
	if pgs, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "PodGroups: %v\n", err)
	} else {
		fmt.Fprintf(&b, "PodGroups (%d):\n", len(pgs.Items))
		for _, pg := range pgs.Items {
			st := pg.Status
			fmt.Fprintf(&b, "  %s minMember=%d phase=%q pending=%d running=%d succeeded=%d failed=%d seen=%v\n",
				pg.Name, pg.Spec.MinMember, st.Phase, st.Pending, st.Running, st.Succeeded, st.Failed, e.phaseHistory(pg.Name))
			for _, c := range st.Conditions {
				fmt.Fprintf(&b, "    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	if nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "nodes: %v\n", err)
	} else {
		used, _ := gpusBound(ctx)
		fmt.Fprintf(&b, "nodes (%d):\n", len(nodes.Items))
		for _, n := range nodes.Items {
			q := n.Status.Allocatable[resourceGPU]
			fmt.Fprintf(&b, "  %-14s ready=%-5v gpu %d/%d\n", n.Name, nodeReady(&n), used[n.Name], q.Value())
		}
	}
	if evs, err := kube.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "events: %v\n", err)
	} else {
		items := evs.Items
		sort.SliceStable(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
		const keep = 40
		if len(items) > keep {
			items = items[len(items)-keep:]
		}
		fmt.Fprintf(&b, "latest events (%d of %d):\n", len(items), len(evs.Items))
		for _, ev := range items {
			fmt.Fprintf(&b, "  %s %-7s %s/%s %s (x%d): %s\n", eventTime(ev).Format("15:04:05.000"), ev.Type,
				ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, max(ev.Count, 1), ev.Message)
		}
	}
	t.Log(b.String())
}

func eventTime(ev corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
