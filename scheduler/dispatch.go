package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// This file carries out a cycle's outcome: binds, status writes, pod
// conditions and Events. Every API call runs off the loop goroutine, bounded
// by a semaphore; what the loop must learn from it comes back through the
// inbox.

// bind posts the binding of pod to node. The pod is already assumed there.
func (s *Scheduler) bind(ctx context.Context, pod *corev1.Pod, node string) {
	s.spawn(ctx, s.bindSem, func(release func()) {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}
		err := s.kube.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
		release()
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
		if s.recorder != nil {
			s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
		}
	})
}

// spawn runs f off the loop goroutine once sem has room, unless ctx ends
// first; f calls release when it no longer needs its slot.
func (s *Scheduler) spawn(ctx context.Context, sem chan struct{}, f func(release func())) {
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		f(func() { <-sem })
	}()
}

// async runs write off the loop, bounded by the status semaphore. When the
// write fails, forget runs on the loop, so that the next cycle writes again
// (a conflict on a stale resourceVersion is the common case).
func (s *Scheduler) async(ctx context.Context, kind string, write func() error, forget func()) {
	s.spawn(ctx, s.statusSem, func(release func()) {
		err := write()
		release()
		result := "ok"
		switch {
		case err == nil:
		case ctx.Err() != nil:
			result = "canceled" // shutting down
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			result = "stale" // the next cycle writes again from fresh state
		default:
			result = "error"
			klog.FromContext(ctx).Error(err, "Status write failed", "kind", kind)
		}
		if err != nil {
			s.send(ctx, forget)
		}
		s.metrics.StatusWrites.WithLabelValues(kind, result).Inc()
	})
}

// writeCache remembers the last status written per object, so that a cycle
// running before the informer has delivered the write does not repeat it.
type writeCache struct {
	podGroups map[string]v1alpha1.PodGroupStatus
	queues    map[string]v1alpha1.QueueStatus
	pods      map[types.UID]string
}

func newWriteCache() *writeCache {
	return &writeCache{podGroups: map[string]v1alpha1.PodGroupStatus{}, queues: map[string]v1alpha1.QueueStatus{}, pods: map[types.UID]string{}}
}

// publish writes what changed: PodGroup and Queue statuses, and the
// PodScheduled condition of waiting members.
func (s *Scheduler) publish(ctx context.Context, snap *core.Snapshot, views map[string]*gangView, now metav1.Time) {
	queues := map[string]*core.Queue{}
	for i := range snap.Queues {
		queues[snap.Queues[i].Name] = &snap.Queues[i]
	}
	type queueCount struct{ pending, running int32 }
	counts := map[string]*queueCount{}
	keys := make([]string, 0, len(views))
	for key := range views {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	seen := map[string]bool{}
	for _, key := range keys {
		v := views[key]
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
		var last *verdict
		if verd, ok := s.verdicts[key]; ok {
			last = &verd
			s.markPods(ctx, v, verd, now)
		}
		if v.podGroup == nil || isForeign(v.podGroup) {
			continue // another scheduler's PodGroup: its status is not ours to write
		}
		seen[key] = true
		desired := podGroupStatus(v.podGroup.Status, v, last, s.admitted(v, queues[v.queue]), now)
		if prev, ok := s.written.podGroups[key]; (ok && !statusChanged(prev, desired)) || (!ok && !statusChanged(v.podGroup.Status, desired)) {
			continue
		}
		s.written.podGroups[key] = desired
		pg := v.podGroup.DeepCopy()
		pg.Status = desired
		s.async(ctx, "PodGroup", func() error {
			_, err := s.client.SchedulingV1alpha1().PodGroups(pg.Namespace).UpdateStatus(ctx, pg, metav1.UpdateOptions{})
			return err
		}, func() { delete(s.written.podGroups, key) })
	}
	for key := range s.written.podGroups {
		if !seen[key] {
			delete(s.written.podGroups, key)
		}
	}
	for name, q := range queues {
		obj := s.store.queues[name]
		if obj == nil {
			continue
		}
		c := counts[name]
		if c == nil {
			c = &queueCount{}
		}
		desired := queueStatus(obj.Status, s.store.res.resourceList(q.Allocated), c.pending, c.running)
		if prev, ok := s.written.queues[name]; (ok && !statusChanged(prev, desired)) || (!ok && !statusChanged(obj.Status, desired)) {
			continue
		}
		s.written.queues[name] = desired
		qc := obj.DeepCopy()
		qc.Status = desired
		s.async(ctx, "Queue", func() error {
			_, err := s.client.SchedulingV1alpha1().Queues().UpdateStatus(ctx, qc, metav1.UpdateOptions{})
			return err
		}, func() { delete(s.written.queues, name) })
	}
}

// admitted reports whether the gang's queue can hold its minResources, the
// test for phase Inqueue.
func (s *Scheduler) admitted(v *gangView, q *core.Queue) bool {
	if q == nil || q.Closed {
		return false
	}
	if v.podGroup == nil || len(v.podGroup.Spec.MinResources) == 0 {
		return true
	}
	need, problem := s.store.res.vector(v.podGroup.Spec.MinResources)
	if problem != "" {
		return false
	}
	return q.Allocated.Add(need).Fits(q.Capability)
}

// markPods sets PodScheduled=False with the gang's verdict on its waiting
// members, when it changed.
func (s *Scheduler) markPods(ctx context.Context, v *gangView, verd verdict, now metav1.Time) {
	for _, p := range v.pending {
		cond, changed := podScheduledCondition(p.pod, verd, now)
		if !changed || s.written.pods[p.pod.UID] == cond.Message {
			continue
		}
		s.written.pods[p.pod.UID] = cond.Message
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
		if err != nil {
			continue
		}
		ns, name, uid := p.pod.Namespace, p.pod.Name, p.pod.UID
		s.async(ctx, "Pod", func() error {
			_, err := s.kube.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			return err
		}, func() { delete(s.written.pods, uid) })
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
		s.recorder.Event(p.pod, corev1.EventTypeWarning, "FailedScheduling", msg)
	}
}

func (s *Scheduler) scheduledEvent(v *gangView) {
	if s.recorder == nil || v.podGroup == nil || isForeign(v.podGroup) {
		return
	}
	s.recorder.Eventf(v.podGroup, corev1.EventTypeNormal, ReasonScheduled, "gang %s reached minMember %d", v.info.name, v.minMember)
}
