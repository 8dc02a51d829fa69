package scheduler

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// The status writer carries PodGroup and Queue statuses and the pods'
// PodScheduled conditions to the API server, off the loop goroutine.
//
// Each object has at most one write in flight, and writes coalesce: the loop
// hands the writer the newest desired write of an object (put), keyed by the
// object; a write not yet taken by a worker is replaced, not queued behind.
// A fixed number of workers take keys from a rate-limited work queue, which
// never hands one key to two workers at once. So under any churn the writer
// holds at most one pending write per object and runs StatusWorkers
// goroutines, however many cycles ask.
//
// A write that fails for a passing reason is retried with exponential
// back-off, unless a newer one replaced it meanwhile; after maxWriteTries,
// or at once when the object is gone or the write is refused as invalid or
// forbidden, the writer gives up and tells the loop (dropped), which writes
// again only once its desired state changes or the object comes back.
// Writes never carry a stale copy of the object: PodGroups and Queues are
// patched (status only, guarded by the object's UID), and pod conditions are
// patched under the resourceVersion of the pod they were computed from; a
// conflict there is redone from the pod as the API server has it now
// (markPods, in dispatch.go).

// writeKey names the object a write is for.
type writeKey struct {
	kind string // kindPodGroup, kindQueue, kindPod, ... (dispatch.go): the metric's label
	key  string // namespace/name, or the pod's UID
}

// writeJob is one desired write.
type writeJob struct {
	do func(ctx context.Context) error
}

// maxWriteTries bounds the attempts of one desired write.
const maxWriteTries = 8

type statusWriter struct {
	queue workqueue.TypedRateLimitingInterface[writeKey]

	mu   sync.Mutex
	jobs map[writeKey]writeJob // the newest desired write of each key not yet taken
}

func newStatusWriter() *statusWriter {
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[writeKey](100*time.Millisecond, 30*time.Second)
	return &statusWriter{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[writeKey]{Name: "phalanx-status"}),
		jobs:  map[writeKey]writeJob{},
	}
}

// put makes job the desired write of key, replacing any not yet taken.
func (w *statusWriter) put(key writeKey, job writeJob) {
	w.mu.Lock()
	w.jobs[key] = job
	w.mu.Unlock()
	w.queue.Forget(key) // a new desired state starts its back-off afresh
	w.queue.Add(key)
}

// cancel drops the write of key not yet taken, if any: its object is gone.
func (w *statusWriter) cancel(key writeKey) {
	w.mu.Lock()
	delete(w.jobs, key)
	w.mu.Unlock()
}

// pending counts the writes waiting for a worker.
func (w *statusWriter) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.jobs)
}

// take removes and returns the desired write of key.
func (w *statusWriter) take(key writeKey) (writeJob, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	job, ok := w.jobs[key]
	delete(w.jobs, key)
	return job, ok
}

// restore puts job back for a retry, unless a newer write replaced it
// meanwhile (and is queued already).
func (w *statusWriter) restore(key writeKey, job writeJob) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, newer := w.jobs[key]; newer {
		return false
	}
	w.jobs[key] = job
	return true
}

// runWriters starts the writer's workers; they stop when ctx ends.
func (s *Scheduler) runWriters(ctx context.Context) {
	w := s.writer
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for range s.opts.StatusWorkers {
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			for s.writeOne(ctx) {
			}
		}()
	}
}

// writeOne carries out one write; false when the writer is shut down.
func (s *Scheduler) writeOne(ctx context.Context) bool {
	w := s.writer
	key, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(key)
	job, ok := w.take(key)
	if !ok {
		return true // written already by an earlier pass, or cancelled
	}
	err := job.do(ctx)
	result := "ok"
	retry := false
	switch {
	case err == nil:
		w.queue.Forget(key)
	case ctx.Err() != nil:
		result = "canceled"
	case apierrors.IsNotFound(err):
		result = "gone"
	case apierrors.IsConflict(err):
		result, retry = "conflict", true
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err):
		result = "error"
	default:
		result, retry = "error", true
	}
	s.metrics.StatusWrites.WithLabelValues(key.kind, result).Inc()
	if err == nil || ctx.Err() != nil {
		return true
	}
	if retry && w.queue.NumRequeues(key) < maxWriteTries {
		if w.restore(key, job) {
			w.queue.AddRateLimited(key)
		}
		return true // retried later, or replaced by a newer write already queued
	}
	if !retry && result == "error" {
		// Refused as it is: writing the same again would be refused again.
		// The loop keeps it as written, and writes when the status changes.
		klog.FromContext(ctx).Error(err, "Status write refused", "kind", key.kind, "object", key.key)
		w.queue.Forget(key) // its count of tries, from earlier failures, goes with it
		return true
	}
	w.queue.Forget(key)
	if result == "error" {
		klog.FromContext(ctx).Error(err, "Status write failed after retries; written again in a later cycle", "kind", key.kind, "object", key.key)
	}
	s.send(ctx, func() { s.dropped(key) })
	return true
}

// dropped makes the loop hand the writer the write of key again in a later
// cycle: the writer gave up on it.
func (s *Scheduler) dropped(key writeKey) {
	if key.kind == kindState {
		s.lastState = nil
		return
	}
	s.written.dropped(key)
	// The gang's statuses are computed again in the next cycle, even if
	// nothing of it changed.
	switch key.kind {
	case kindPod:
		if p := s.store.pods[types.UID(key.key)]; p != nil {
			delete(s.published, p.gang)
		}
	case kindPodGroup, kindForeignPodGroup:
		delete(s.published, key.key)
	}
}
