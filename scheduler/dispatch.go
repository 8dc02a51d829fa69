package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// This file carries out a cycle's outcome: binds, status writes, pod
// conditions and Events. Every API call runs off the loop goroutine: binds
// and evictions on the call workers, in the order they were decided,
// statuses on the status writer (writer.go); what the loop must learn from
// them comes back through the inbox.

// bind posts the binding of pod to node. The pod is already assumed there.
func (s *Scheduler) bind(ctx context.Context, pod *corev1.Pod, node string) {
	s.dispatch(func() {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}
		err := s.kube.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
		if err != nil && ctx.Err() != nil {
			return // shutting down; the next leader sees the pod unbound
		}
		if err != nil {
			s.metrics.BindErrors.Inc()
			klog.FromContext(ctx).Error(err, "Bind failed; the gang will be completed in a later cycle", "pod", klog.KObj(pod), "node", node)
			s.send(ctx, func() { s.store.Forget(pod.UID) })
			if s.recorder != nil {
				s.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedBinding", "Binding to %s failed: %v", node, err)
			}
			return
		}
		s.metrics.PodsBound.Inc()
		s.podEvent(pod, corev1.EventTypeNormal, "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node))
	})
}

// callQueue holds the binds and evictions of cycles until a call worker
// takes them, first in, first out: a cycle's binds start in the order the
// core planned them, so the gangs it placed first (a partial gang before
// any other) are bound first, whatever the Go runtime's order of goroutines.
type callQueue struct {
	mu    sync.Mutex
	calls []func()
	wake  chan struct{}
}

func newCallQueue() *callQueue { return &callQueue{wake: make(chan struct{}, 1)} }

// push queues call and wakes a worker.
func (q *callQueue) push(call func()) {
	q.mu.Lock()
	q.calls = append(q.calls, call)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop takes the oldest call, and wakes another worker if more wait.
func (q *callQueue) pop() (func(), bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.calls) == 0 {
		return nil, false
	}
	call := q.calls[0]
	q.calls[0] = nil
	q.calls = q.calls[1:]
	if len(q.calls) > 0 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return call, true
}

// dispatch queues call, an API call, for the call workers.
func (s *Scheduler) dispatch(call func()) { s.calls.push(call) }

// runCallers starts BindWorkers call workers; they stop when ctx ends,
// leaving what is still queued (a new leader sees those pods unbound).
func (s *Scheduler) runCallers(ctx context.Context) {
	for range s.opts.BindWorkers {
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			for {
				if call, ok := s.calls.pop(); ok {
					call()
					continue
				}
				select {
				case <-s.calls.wake:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
}

// writeCache remembers, per object, the last status the loop handed the
// writer, so that a cycle running before the informer has delivered the
// write does not hand it again. The writer reports a write it gave up on
// (dropped), so that a later cycle hands it again.
type writeCache struct {
	podGroups map[string]v1alpha1.PodGroupStatus
	foreign   map[string]map[string]any // other schedulers' PodGroups, in their schema
	queues    map[string]v1alpha1.QueueStatus
	pods      map[types.UID]string
}

func newWriteCache() *writeCache {
	return &writeCache{podGroups: map[string]v1alpha1.PodGroupStatus{}, foreign: map[string]map[string]any{},
		queues: map[string]v1alpha1.QueueStatus{}, pods: map[types.UID]string{}}
}

func (c *writeCache) dropped(k writeKey) {
	switch k.kind {
	case kindPodGroup:
		delete(c.podGroups, k.key)
	case kindForeignPodGroup:
		delete(c.foreign, k.key)
	case kindQueue:
		delete(c.queues, k.key)
	case kindPod:
		delete(c.pods, types.UID(k.key))
	}
}

// The kinds of object the writer writes, as the metrics name them.
const (
	kindPodGroup = "PodGroup"
	// kindForeignPodGroup: a PodGroup of another scheduler's API.
	kindForeignPodGroup = "ForeignPodGroup"
	// kindForeignPhase: the first phase of such a PodGroup (markPending).
	kindForeignPhase = "ForeignPodGroupPhase"
	kindQueue        = "Queue"
	kindPod          = "Pod"
)

// statusPatch replaces the status of the object of uid, and fails if the
// object is another one of the same name by now.
func statusPatch(uid types.UID, status any) ([]byte, error) {
	return json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": uid},
		{"op": "add", "path": "/status", "value": status},
	})
}

// publish hands the writer what changed: the statuses of the PodGroups whose
// gangs this scheduler serves and of the Queues it owns, and the
// PodScheduled condition of waiting members.
func (s *Scheduler) publish(ctx context.Context, snap *core.Snapshot, views map[string]*gangView, now metav1.Time) {
	queues := map[string]*core.Queue{}
	for i := range snap.Queues {
		queues[snap.Queues[i].Name] = &snap.Queues[i]
	}
	type queueCount struct{ pending, running int32 }
	counts := map[string]*queueCount{}
	var cluster core.Vector // what every node has together
	for i := range snap.Nodes {
		cluster = cluster.Add(snap.Nodes[i].Allocatable)
	}
	// A gang whose view, verdict and admission are those it was published
	// with has nothing new to write: only the others are visited, in key
	// order (views.go keeps an unchanged gang's view the same object).
	type work struct {
		key      string
		v        *gangView
		last     *verdict
		admitted bool
		why      string
		forecast forecastEntry
	}
	var todo []work
	for key, v := range views {
		finished := v.nPending == 0 && v.nRunning == 0
		c := counts[v.queue]
		if c == nil {
			c = &queueCount{}
			counts[v.queue] = c
		}
		switch {
		case finished:
		case v.bound >= v.minMember:
			c.running++
		default:
			c.pending++
		}
		// last points to a copy on the stack: most gangs have a verdict
		// and most are unchanged, so only those that go to todo get one
		// of their own on the heap.
		var last *verdict
		verd, ok := s.verdicts[key]
		if ok {
			last = &verd
		}
		var admitted bool
		var why string
		if v.podGroup != nil {
			admitted, why = s.admitted(v, queues[v.queue], cluster, last)
		}
		shown := published{view: v, admitted: admitted, why: why, forecast: s.forecastOf(key, last, now.Unix())}
		if last != nil {
			shown.verdict, shown.hasVerdict = *last, true
		}
		if prev, ok := s.published[key]; ok && prev == shown && !shown.verdict.reserved {
			continue
		}
		s.published[key] = shown
		var kept *verdict
		if ok {
			kept = new(verdict)
			*kept = verd
		}
		todo = append(todo, work{key, v, kept, admitted, why, shown.forecast})
	}
	slices.SortFunc(todo, func(a, b work) int { return strings.Compare(a.key, b.key) })
	for _, w := range todo {
		key, v, last, admitted, why := w.key, w.v, w.last, w.admitted, w.why
		if last != nil {
			s.markPods(v, *last, now)
		} else if v.bound >= v.minMember && len(v.pending) > 0 {
			s.markPods(v, elasticVerdict(v), now)
		}
		if v.podGroup == nil {
			continue
		}
		if !admitted && last == nil && why != "" && v.bound < v.minMember {
			// No pod waits in the core yet (an operator waits for
			// Inqueue before it creates them): say why it is not admitted.
			last = &verdict{reason: ReasonNotAdmitted, message: why}
		}
		if isForeign(v.podGroup) {
			s.publishForeign(key, v, last, admitted, now)
			continue
		}
		desired := podGroupStatus(v.podGroup.Status, v, last, admitted, now)
		withForecast(&desired, w.forecast, v.bound < v.minMember)
		if prev, ok := s.written.podGroups[key]; (ok && !statusChanged(prev, desired)) || (!ok && !statusChanged(v.podGroup.Status, desired)) {
			continue
		}
		s.written.podGroups[key] = desired
		patch, err := statusPatch(v.podGroup.UID, desired)
		if err != nil {
			continue
		}
		ns, name := v.podGroup.Namespace, v.podGroup.Name
		s.writer.put(writeKey{kindPodGroup, key}, writeJob{do: func(ctx context.Context) error {
			_, err := s.client.SchedulingV1alpha1().PodGroups(ns).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}, "status")
			return err
		}})
	}
	gone := func(key string) bool { v := views[key]; return v == nil || v.podGroup == nil }
	for key := range s.published {
		if views[key] == nil {
			delete(s.published, key)
		}
	}
	for key := range s.written.podGroups {
		if gone(key) {
			delete(s.written.podGroups, key)
			s.writer.cancel(writeKey{kindPodGroup, key})
		}
	}
	for key := range s.inqueueSince {
		if gone(key) {
			delete(s.inqueueSince, key)
		}
	}
	for key := range s.written.foreign {
		if gone(key) {
			delete(s.written.foreign, key)
			s.writer.cancel(writeKey{kindForeignPodGroup, key})
		}
	}
	deserved := core.Deserved(snap)
	for name, q := range queues {
		obj := s.store.queues[name]
		if obj == nil || !s.store.claims(obj.Annotations) {
			continue
		}
		c := counts[name]
		if c == nil {
			c = &queueCount{}
		}
		desired := queueStatus(obj.Status, s.store.res.resourceList(q.Allocated), s.store.res.resourceList(deserved[name]), c.pending, c.running)
		if prev, ok := s.written.queues[name]; (ok && !statusChanged(prev, desired)) || (!ok && !statusChanged(obj.Status, desired)) {
			continue
		}
		s.written.queues[name] = desired
		patch, err := statusPatch(obj.UID, desired)
		if err != nil {
			continue
		}
		s.writer.put(writeKey{kindQueue, name}, writeJob{do: func(ctx context.Context) error {
			_, err := s.client.SchedulingV1alpha1().Queues().Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}, "status")
			return err
		}})
	}
	for name := range s.written.queues {
		if queues[name] == nil {
			delete(s.written.queues, name)
			s.writer.cancel(writeKey{kindQueue, name})
		}
	}
	s.markPending(views)
	s.queueMetrics(queues, deserved, func(name string) (pending, running int32) {
		if c := counts[name]; c != nil {
			return c.pending, c.running
		}
		return 0, 0
	})
	s.metrics.StatusBacklog.Set(float64(s.writer.pending()))
}

// queueMetrics sets the per-queue gauges from the cycle's queues, and
// deletes the series of queues and resources that are gone.
func (s *Scheduler) queueMetrics(queues map[string]*core.Queue, deserved map[string]core.Vector, gangs func(queue string) (pending, running int32)) {
	series := map[string]queueSeries{}
	for name, q := range queues {
		pending, running := gangs(name)
		s.metrics.QueuePendingGangs.WithLabelValues(name).Set(float64(pending))
		s.metrics.QueueRunningGangs.WithLabelValues(name).Set(float64(running))
		if s.store.correcting {
			s.metrics.QueueEstimateFactor.WithLabelValues(name).Set(s.store.history[name].factor())
			s.metrics.QueueWorkFactor.WithLabelValues(name).Set(s.store.history[name].workFactor())
			s.metrics.QueueOverrunFactor.WithLabelValues(name).Set(s.store.history[name].overrunFactor())
		}
		set := queueSeries{allocated: map[corev1.ResourceName]bool{}, deserved: map[corev1.ResourceName]bool{}}
		for res, amount := range s.store.res.resourceList(q.Allocated) {
			s.metrics.QueueAllocated.WithLabelValues(name, string(res)).Set(amount.AsApproximateFloat64())
			set.allocated[res] = true
		}
		for res, amount := range s.store.res.resourceList(deserved[name]) {
			s.metrics.QueueDeserved.WithLabelValues(name, string(res)).Set(amount.AsApproximateFloat64())
			set.deserved[res] = true
		}
		series[name] = set
	}
	for name, old := range s.queueSeries {
		cur, ok := series[name]
		if !ok {
			s.metrics.QueuePendingGangs.DeleteLabelValues(name)
			s.metrics.QueueRunningGangs.DeleteLabelValues(name)
			s.metrics.QueueEstimateFactor.DeleteLabelValues(name)
			s.metrics.QueueWorkFactor.DeleteLabelValues(name)
			s.metrics.QueueOverrunFactor.DeleteLabelValues(name)
			// The histograms and counters go too: a cluster whose teams
			// come and go must not keep their series for ever.
			gone := prometheus.Labels{"queue": name}
			s.metrics.QueueAdmissionWait.DeletePartialMatch(gone)
			s.metrics.QueueStartForecastError.DeletePartialMatch(gone)
			s.metrics.QueueEvictedPods.DeletePartialMatch(gone)
			s.metrics.QueueGPUSecondsLost.DeletePartialMatch(gone)
		}
		for res := range old.allocated {
			if !cur.allocated[res] {
				s.metrics.QueueAllocated.DeleteLabelValues(name, string(res))
			}
		}
		for res := range old.deserved {
			if !cur.deserved[res] {
				s.metrics.QueueDeserved.DeleteLabelValues(name, string(res))
			}
		}
	}
	s.queueSeries = series
}

// queueSeries are the resources of a queue whose allocated and deserved
// amounts are exported.
type queueSeries struct{ allocated, deserved map[corev1.ResourceName]bool }

// publishForeign hands the writer the status of another scheduler's
// PodGroup, in that API's schema (foreign.go), when it changed. Without a
// status subresource the patch goes to the object itself.
func (s *Scheduler) publishForeign(key string, v *gangView, last *verdict, admitted bool, now metav1.Time) {
	pg := v.podGroup
	group := foreignGroup(pg)
	gvr, ok := foreignResource(group)
	if !ok || s.opts.Dynamic == nil {
		return
	}
	current := s.store.foreignStatus[group][key]
	desired := foreignStatus(group, podGroupStatus(v1alpha1.PodGroupStatus{}, v, last, admitted, now), v, current, now)
	s.awaitingPods(key, v, desired, now)
	if prev, ok := s.written.foreign[key]; (ok && !statusChanged(prev, desired)) || (!ok && !statusChanged(current, desired)) {
		return
	}
	s.written.foreign[key] = desired
	patch, err := statusPatch(pg.UID, desired)
	if err != nil {
		return
	}
	s.writer.put(writeKey{kindForeignPodGroup, key}, s.foreignWrite(group, gvr, pg, types.JSONPatchType, patch))
}

// foreignWrite patches pg, a PodGroup of another scheduler's API group, of
// resource gvr: its status subresource, or the object itself where the API
// has none.
func (s *Scheduler) foreignWrite(group string, gvr schema.GroupVersionResource, pg *v1alpha1.PodGroup, pt types.PatchType, patch []byte) writeJob {
	var sub []string
	if s.foreignStatusSub[group] {
		sub = []string{"status"}
	}
	ns, name := pg.Namespace, pg.Name
	return writeJob{do: func(ctx context.Context) error {
		_, err := s.opts.Dynamic.Resource(gvr).Namespace(ns).Patch(ctx, name, pt, patch, metav1.PatchOptions{}, sub...)
		return err
	}}
}

// markPending gives a PodGroup of scheduler-plugins' schema whose status
// has no phase the phase that API's own controller gives every new
// PodGroup: Pending. training-operator in that mode needs the event: it
// creates the PodGroup, reads it back from its cache before the cache has
// it, gives up that reconcile, and waits for an event of the job or of the
// PodGroup; its status update of the job changes nothing within the same
// second, and then it creates no pod, ever. We saw a PyTorchJob wait so.
// This is done for PodGroups no instance of ours claims as well: no pod
// names them yet, so no scheduler has written them, and the patch is
// guarded by the resourceVersion read, so it never overwrites a status
// another writer gave meanwhile. The PodGroups this scheduler serves get
// their whole status from publishForeign; those named by pods of another
// scheduler are that scheduler's.
//
// It waits until the PodGroup is pendingDelay old: the operator's second
// reconcile, moments after the creation, updates the PodGroup from its
// cache, and a write of ours in between made that update conflict, after
// which it waited for an event that had already come (a TFJob of our CI
// got no pod so). The write then comes after that reconcile, as the event
// it needs.
func (s *Scheduler) markPending(views map[string]*gangView) {
	now := s.opts.Now()
	for fk, pg := range s.store.unphased {
		if views[fk.key] != nil || s.store.others[fk.key] > 0 || s.phaseTried[fk] == pg.ResourceVersion {
			continue
		}
		if created := pg.CreationTimestamp; !created.IsZero() && now.Sub(created.Time) < pendingDelay {
			continue // a later cycle: they run every --cycle-period
		}
		gvr, ok := foreignResource(fk.group)
		if !ok || s.opts.Dynamic == nil {
			continue
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": pg.UID, "resourceVersion": pg.ResourceVersion},
			"status":   map[string]any{"phase": "Pending"},
		})
		if err != nil {
			continue
		}
		s.phaseTried[fk] = pg.ResourceVersion
		s.writer.put(writeKey{kindForeignPhase, fk.group + "/" + fk.key}, s.foreignWrite(fk.group, gvr, pg, types.MergePatchType, patch))
	}
	for fk := range s.phaseTried {
		if s.store.unphased[fk] == nil {
			delete(s.phaseTried, fk)
			s.writer.cancel(writeKey{kindForeignPhase, fk.group + "/" + fk.key})
		}
	}
}

// pendingDelay is how old a PodGroup is before markPending writes its
// phase: 3 s of creationTimestamp, in whole seconds, is at least 2 s.
const pendingDelay = 3 * time.Second

// awaitingPods words the Scheduled condition of an admitted (Inqueue)
// PodGroup of Volcano's schema that has no pod yet: after 10 s, and then
// once a minute, it says how long the PodGroup has waited for its operator
// to create the pods. Besides telling the user, each such write is an
// update event for the operator: training-operator reads its PodGroups
// from a cache, and a reconcile that read one just before its phase became
// Inqueue (its own update of the PodGroup then conflicts with ours) creates
// no pod and waits for the PodGroup's next event; we saw it wait forever
// without one.
func (s *Scheduler) awaitingPods(key string, v *gangView, desired map[string]any, now metav1.Time) {
	members := v.nPending + v.nRunning + v.nSucceeded + v.nFailed
	if desired["phase"] != string(v1alpha1.PodGroupInqueue) || members > 0 {
		delete(s.inqueueSince, key)
		return
	}
	since, ok := s.inqueueSince[key]
	if !ok {
		s.inqueueSince[key] = now.Unix()
		return
	}
	waited := time.Duration(now.Unix()-since) * time.Second
	switch {
	case waited < 10*time.Second:
		return
	case waited < time.Minute:
		waited = 10 * time.Second
	default:
		waited = waited.Truncate(time.Minute)
	}
	conds, _ := desired["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); m != nil && m["type"] == v1alpha1.PodGroupScheduled {
			m["message"] = fmt.Sprintf("admitted (Inqueue) at %s; no pod of the gang exists after %s: waiting for its operator to create them",
				time.Unix(since, 0).UTC().Format(time.TimeOnly), waited)
		}
	}
}

// foreignResource is the PodGroup resource of another scheduler's group.
func foreignResource(group string) (schema.GroupVersionResource, bool) {
	for _, gvr := range ForeignPodGroups {
		if gvr.Group == group {
			return gvr, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// admitted reports whether the gang's queue can hold its minResources, the
// test for phase Inqueue.
// A gang that can never fit the cluster (its minResources, or the core's
// verdict, say it asks more than every node has together) is not admitted
// either: an operator that waits for Inqueue (Volcano mode) would create
// pods that can never run.
// When it is not, why says so.
func (s *Scheduler) admitted(v *gangView, q *core.Queue, cluster core.Vector, last *verdict) (ok bool, why string) {
	switch {
	case last != nil && last.reason == string(core.ReasonExceedsCluster):
		return false, ""
	case v.invalid != "":
		return false, v.invalid
	case v.unsupported != "":
		return false, v.unsupported
	case q == nil:
		return false, fmt.Sprintf("queue %q does not exist", v.queue)
	case q.Closed:
		return false, fmt.Sprintf("queue %q is closed", v.queue)
	case v.podGroup == nil || len(v.podGroup.Spec.MinResources) == 0:
		return true, ""
	}
	need, problem := s.store.res.vector(v.podGroup.Spec.MinResources)
	names := s.store.res.names
	switch {
	case problem != "":
		return false, "minResources: " + problem
	case !need.Fits(cluster):
		var have, over core.Vector // where the PodGroup asks more than the cluster has
		for d := range need {
			if need[d] > cluster[d] {
				have[d], over[d] = cluster[d], need[d]
			}
		}
		return false, fmt.Sprintf("can never fit: the cluster has %s, the PodGroup's minResources ask %s",
			names.Format(have), names.Format(over))
	case !q.Allocated.Add(need).Fits(q.Capability):
		return false, fmt.Sprintf("queue %q cannot hold the PodGroup's minResources (%s) beside what it runs (%s)",
			v.queue, names.Format(need), names.Format(q.Allocated))
	}
	return true, ""
}

// ReasonNotAdmitted: a PodGroup whose pods do not wait in the scheduler yet
// is not admitted (phase Pending), and its condition says why.
const ReasonNotAdmitted = "NotAdmitted"

// published is what publish last handed on for a gang: while the next
// cycle has the same, the gang has nothing new to write.
type published struct {
	view       *gangView
	verdict    verdict
	hasVerdict bool
	admitted   bool
	why        string
	forecast   forecastEntry
}

// markPods sets PodScheduled=False with the gang's verdict on its waiting
// members, when it changed. The patch carries the resourceVersion of the pod
// it was computed from: if the pod changed since (it may have been bound
// meanwhile), the write is redone from the pod as the API server has it, and
// dropped if that pod is bound, so a bound pod never gets PodScheduled=False.
func (s *Scheduler) markPods(v *gangView, verd verdict, now metav1.Time) {
	for _, p := range v.pending {
		if p.node != "" {
			continue // bound by this cycle
		}
		cond, changed := podScheduledCondition(p.pod, verd, now)
		if !changed || s.written.pods[p.pod.UID] == cond.Message {
			continue
		}
		s.written.pods[p.pod.UID] = cond.Message
		pod := p.pod
		if verd.reason == ReasonElasticWaiting {
			// Gangs' other reasons have their Events (unschedulableEvent);
			// this one is per member, once.
			s.podEvent(pod, corev1.EventTypeNormal, ReasonElasticWaiting, verd.message)
		}
		s.writer.put(writeKey{kindPod, string(pod.UID)}, writeJob{do: func(ctx context.Context) error {
			return s.patchCondition(ctx, pod, verd, now)
		}})
	}
}

// ReasonElasticWaiting: a member beyond its gang's minMember waits for
// room while the gang runs.
const ReasonElasticWaiting = "ElasticWaiting"

// elasticVerdict is what the waiting members of a gang that runs (its
// minimum is bound) say: they are placed one by one when room frees, and
// never preempt a gang of equal priority.
func elasticVerdict(v *gangView) verdict {
	return verdict{reason: ReasonElasticWaiting, message: fmt.Sprintf(
		"gang %s runs with its minMember %d bound; this member beyond the minimum is placed when a node has room for it (it never preempts a gang of equal priority)",
		v.info.name, v.minMember)}
}

// patchCondition writes the PodScheduled=False condition of verd on pod,
// under pod's resourceVersion; after a conflict it reads the pod again, and
// gives up if it is bound, terminating, another pod, or already says so.
func (s *Scheduler) patchCondition(ctx context.Context, pod *corev1.Pod, verd verdict, now metav1.Time) error {
	pods := s.opts.StatusKube.CoreV1().Pods(pod.Namespace)
	for attempt := 0; ; attempt++ {
		cond, changed := podScheduledCondition(pod, verd, now)
		if !changed {
			return nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
			"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
		})
		if err != nil {
			return err
		}
		_, err = pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if !apierrors.IsConflict(err) || attempt == 2 {
			return err
		}
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID || cur.Spec.NodeName != "" || cur.DeletionTimestamp != nil {
			return nil
		}
		pod = cur
	}
}

// unschedulableEvent reports a new reason for waiting, once per change. now
// is the cycle's time, in Unix seconds: the Event, written once, may say how
// long until a reserved gang is expected to start.
func (s *Scheduler) unschedulableEvent(v *gangView, verd verdict, now int64) {
	if s.recorder == nil {
		return
	}
	msg := fmt.Sprintf("gang %s waits: %s", v.info.name, verd.message)
	if verd.reserved && verd.resv.start > now {
		msg += fmt.Sprintf(" (in %s)", time.Duration(verd.resv.start-now)*time.Second)
	}
	if v.podGroup != nil && !isForeign(v.podGroup) {
		s.recorder.Event(v.podGroup, corev1.EventTypeWarning, verd.reason, msg)
	}
	for _, p := range v.pending {
		s.podEvent(p.pod, corev1.EventTypeWarning, "FailedScheduling", msg)
	}
}

// podEvent records an Event about pod unless it would exceed
// Options.PodEventQPS, in which case it is counted as skipped. It runs on
// the loop and on the call workers.
func (s *Scheduler) podEvent(pod *corev1.Pod, eventType, reason, message string) {
	if s.recorder == nil {
		return
	}
	if s.podEvents != nil && !s.podEvents.TryAccept() {
		s.metrics.PodEventsSkipped.Inc()
		return
	}
	s.recorder.Event(pod, eventType, reason, message)
}

func (s *Scheduler) scheduledEvent(v *gangView) {
	if s.recorder == nil || v.podGroup == nil || isForeign(v.podGroup) {
		return
	}
	s.recorder.Eventf(v.podGroup, corev1.EventTypeNormal, ReasonScheduled, "gang %s reached minMember %d", v.info.name, v.minMember)
}
