package scheduler

import (
	"context"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// startInformers starts the informers whose events feed the store and
// returns whether each cache synced. Event handlers never touch the store:
// they send closures to the loop.
func (s *Scheduler) startInformers(ctx context.Context) (map[string]bool, error) {
	kf := informers.NewSharedInformerFactory(s.kube, 0)
	pf := externalversions.NewSharedInformerFactory(s.client, 0)

	on := func(inf cache.SharedIndexInformer, set func(obj any), del func(obj any)) error {
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.send(ctx, func() { set(obj) }) },
			UpdateFunc: func(_, obj any) { s.send(ctx, func() { set(obj) }) },
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				s.send(ctx, func() { del(obj) })
			},
		})
		return err
	}
	handlers := []struct {
		inf      cache.SharedIndexInformer
		set, del func(obj any)
	}{
		{kf.Core().V1().Pods().Informer(),
			func(o any) {
				if p, ok := o.(*corev1.Pod); ok {
					s.store.SetPod(p)
				}
			},
			func(o any) {
				if p, ok := o.(*corev1.Pod); ok {
					s.store.DeletePod(p.UID)
					delete(s.written.pods, p.UID)
				}
			}},
		{kf.Core().V1().Nodes().Informer(),
			func(o any) {
				if n, ok := o.(*corev1.Node); ok {
					s.store.SetNode(n)
				}
			},
			func(o any) {
				if n, ok := o.(*corev1.Node); ok {
					s.store.DeleteNode(n.Name)
				}
			}},
		{kf.Scheduling().V1().PriorityClasses().Informer(),
			func(o any) {
				if pc, ok := o.(*schedulingv1.PriorityClass); ok {
					s.store.SetPriorityClass(pc)
				}
			},
			func(o any) {
				if pc, ok := o.(*schedulingv1.PriorityClass); ok {
					s.store.DeletePriorityClass(pc.Name)
				}
			}},
		{pf.Scheduling().V1alpha1().PodGroups().Informer(),
			func(o any) {
				if pg, ok := o.(*v1alpha1.PodGroup); ok {
					s.store.SetPodGroup(pg)
				}
			},
			func(o any) {
				if pg, ok := o.(*v1alpha1.PodGroup); ok {
					s.store.DeletePodGroup(pg.Namespace, pg.Name)
				}
			}},
		{pf.Scheduling().V1alpha1().Queues().Informer(),
			func(o any) {
				if q, ok := o.(*v1alpha1.Queue); ok {
					s.store.SetQueue(q)
				}
			},
			func(o any) {
				if q, ok := o.(*v1alpha1.Queue); ok {
					s.store.DeleteQueue(q.Name)
				}
			}},
	}
	for _, h := range handlers {
		if err := on(h.inf, h.set, h.del); err != nil {
			return nil, err
		}
	}
	kf.Start(ctx.Done())
	pf.Start(ctx.Done())
	synced := map[string]bool{}
	// Handlers queue closures while caches fill; drain them as they come so
	// the inbox never blocks the informers.
	done := make(chan struct{})
	go func() {
		for t, ok := range kf.WaitForCacheSync(ctx.Done()) {
			synced[t.String()] = ok
		}
		for t, ok := range pf.WaitForCacheSync(ctx.Done()) {
			synced[t.String()] = ok
		}
		close(done)
	}()
	for {
		select {
		case f := <-s.inbox:
			f()
		case <-done:
			s.drain()
			return synced, nil
		case <-time.After(time.Minute):
			// keep waiting; WaitForCacheSync returns when ctx ends
		}
	}
}
