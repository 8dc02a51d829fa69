package scheduler

import (
	"context"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
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
	var df dynamicinformer.DynamicSharedInformerFactory
	if s.opts.Dynamic != nil {
		df = dynamicinformer.NewDynamicSharedInformerFactory(s.opts.Dynamic, 0)
		for _, gvr := range s.servedForeignPodGroups(ctx) {
			if err := on(df.ForResource(gvr).Informer(), s.setForeign(gvr.Group), s.deleteForeign(gvr.Group)); err != nil {
				return nil, err
			}
		}
	}
	kf.Start(ctx.Done())
	pf.Start(ctx.Done())
	if df != nil {
		df.Start(ctx.Done())
	}
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
		if df != nil {
			for gvr, ok := range df.WaitForCacheSync(ctx.Done()) {
				synced[gvr.String()] = ok
			}
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
		}
	}
}

// servedForeignPodGroups returns the PodGroup APIs of other schedulers that
// the API server serves now. An API installed later is read after a restart.
func (s *Scheduler) servedForeignPodGroups(ctx context.Context) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, gvr := range ForeignPodGroups {
		list, err := s.kube.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if r.Name != gvr.Resource {
				continue
			}
			// An informer that may not list never syncs; check first, so
			// that a missing permission costs only this API.
			if _, err := s.opts.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				klog.FromContext(ctx).Error(err, "Cannot read PodGroups of another scheduler's API; gangs that use them wait",
					"apiVersion", gvr.GroupVersion().String())
				continue
			}
			klog.FromContext(ctx).Info("Reading PodGroups of another scheduler's API", "apiVersion", gvr.GroupVersion().String())
			out = append(out, gvr)
		}
	}
	return out
}

func (s *Scheduler) setForeign(group string) func(obj any) {
	return func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		key := u.GetNamespace() + "/" + u.GetName()
		pg, err := fromForeign(u)
		if err != nil {
			s.store.DeleteForeignPodGroup(group, u.GetNamespace(), u.GetName())
			s.store.SetUnreadablePodGroup(key, err.Error())
			return
		}
		s.store.SetUnreadablePodGroup(key, "")
		s.store.SetForeignPodGroup(group, pg)
	}
}

func (s *Scheduler) deleteForeign(group string) func(obj any) {
	return func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s.store.DeleteForeignPodGroup(group, u.GetNamespace(), u.GetName())
		}
	}
}
