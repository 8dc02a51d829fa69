package scheduler

import (
	"context"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// PodGroupsResource and QueuesResource are our APIs as the dynamic client
// reads them.
var (
	PodGroupsResource = v1alpha1.SchemeGroupVersion.WithResource("podgroups")
	QueuesResource    = v1alpha1.SchemeGroupVersion.WithResource("queues")
)

// trimForCache returns the informers' transform: it drops from an object,
// before the informer caches it, what the scheduler never reads (managed
// fields, often a third of a pod; a node's list of images; all of a pod but
// what leanPod keeps), and gives pods the parts they have alike with others
// from sh. At 150,000 pods that is hundreds of MiB.
func trimForCache(sh *sharer) cache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.Pod:
			return sh.share(leanPod(o)), nil
		case *corev1.Node:
			o.ManagedFields, o.Status.Images = nil, nil
		case metav1.Object:
			o.SetManagedFields(nil)
		}
		return obj, nil
	}
}

// startInformers starts the informers whose events feed the store and
// returns whether each cache synced. Event handlers never touch the store:
// they send closures to the loop.
//
// With Options.Dynamic (as phalanx scheduler runs), our PodGroups and Queues
// are read through it, one object at a time (decode.go), so that one object
// that cannot be read is skipped and reported instead of failing every list.
// Without it (unit tests on fake clientsets), they come from typed
// informers, which never sync while such an object exists.
func (s *Scheduler) startInformers(ctx context.Context) (map[string]bool, error) {
	kf := informers.NewSharedInformerFactoryWithOptions(s.kube, 0, informers.WithTransform(trimForCache(newSharer())))
	var pf externalversions.SharedInformerFactory
	var df dynamicinformer.DynamicSharedInformerFactory
	if s.opts.Dynamic != nil {
		df = dynamicinformer.NewDynamicSharedInformerFactory(s.opts.Dynamic, 0)
	} else {
		pf = externalversions.NewSharedInformerFactory(s.client, 0)
	}
	// Only the loop goroutine runs the handlers' closures, and so uses it.
	unread := unreadable{}

	// The handlers' registrations: a cache that has synced may still hold
	// events its handler has not been given; the first cycle waits until
	// every handler has seen the initial list.
	var registered []cache.InformerSynced
	on := func(inf cache.SharedIndexInformer, set func(obj any), del func(obj any)) error {
		reg, err := inf.AddEventHandler(s.handlerFuncs(ctx, set, del))
		if err == nil {
			registered = append(registered, reg.HasSynced)
		}
		return err
	}
	handlers := []handler{
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
		// Claims, volumes and StorageClasses: the node affinity of pods'
		// volumes (volumes.go).
		{kf.Core().V1().PersistentVolumeClaims().Informer(),
			func(o any) {
				if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
					s.store.SetClaim(pvc)
				}
			},
			func(o any) {
				if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
					s.store.DeleteClaim(pvc.Namespace, pvc.Name)
				}
			}},
		{kf.Core().V1().PersistentVolumes().Informer(),
			func(o any) {
				if pv, ok := o.(*corev1.PersistentVolume); ok {
					s.store.SetVolume(pv)
				}
			},
			func(o any) {
				if pv, ok := o.(*corev1.PersistentVolume); ok {
					s.store.DeleteVolume(pv)
				}
			}},
		{kf.Storage().V1().StorageClasses().Informer(),
			func(o any) {
				if sc, ok := o.(*storagev1.StorageClass); ok {
					s.store.SetStorageClass(sc)
				}
			},
			func(o any) {
				if sc, ok := o.(*storagev1.StorageClass); ok {
					s.store.DeleteStorageClass(sc.Name)
				}
			}},
		{kf.Core().V1().Namespaces().Informer(), // their labels, which queues admit by (tenancy.go)
			func(o any) {
				if ns, ok := o.(*corev1.Namespace); ok {
					s.store.SetNamespace(ns)
				}
			},
			func(o any) {
				if ns, ok := o.(*corev1.Namespace); ok {
					s.store.DeleteNamespace(ns.Name)
				}
			}},
	}
	if df != nil {
		handlers = append(handlers,
			handler{df.ForResource(PodGroupsResource).Informer(), s.setPodGroup(ctx, unread), s.deletePodGroup(unread)},
			handler{df.ForResource(QueuesResource).Informer(), s.setQueue(ctx), s.deleteQueue})
		s.apis = &apiWatcher{s: s, ctx: ctx, apis: s.optionalAPIs(ctx, unread), running: map[schema.GroupVersionResource]*runningAPI{}}
		discovered := map[string]*metav1.APIResourceList{}
		for _, api := range s.apis.apis {
			if served, statusSub := s.servedAtStart(ctx, api.gvr, discovered); served {
				if synced := s.apis.start(api, statusSub); synced != nil {
					registered = append(registered, synced)
				}
			}
		}
		if _, err := s.opts.Dynamic.Resource(crdsResource).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot watch CustomResourceDefinitions; APIs installed from now on are read after a restart")
		} else {
			handlers = append(handlers, handler{df.ForResource(crdsResource).Informer(),
				func(o any) {
					if u, ok := o.(*unstructured.Unstructured); ok {
						s.apis.crdChanged(u, false)
					}
				},
				func(o any) {
					if u, ok := o.(*unstructured.Unstructured); ok {
						s.apis.crdChanged(u, true)
					}
				}})
		}
	} else {
		handlers = append(handlers, s.typedHandlers(pf)...)
	}
	handlers = append(handlers, s.ownerHandlers(kf)...) // Jobs and PodDisruptionBudgets (owners.go)
	for _, h := range handlers {
		if err := on(h.inf, h.set, h.del); err != nil {
			return nil, err
		}
	}
	kf.Start(ctx.Done())
	if pf != nil {
		pf.Start(ctx.Done())
	}
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
		if pf != nil {
			for t, ok := range pf.WaitForCacheSync(ctx.Done()) {
				synced[t.String()] = ok
			}
		}
		if df != nil {
			for gvr, ok := range df.WaitForCacheSync(ctx.Done()) {
				synced[gvr.String()] = ok
			}
		}
		// Every handler has queued the closures of the initial list; the
		// drain below applies them before the first cycle.
		synced["event handlers"] = cache.WaitForCacheSync(ctx.Done(), registered...)
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

// optionalAPIs are the APIs read where the cluster serves them (apis.go):
// other schedulers' PodGroups and Queues, and the workloads gangs are
// derived from.
func (s *Scheduler) optionalAPIs(ctx context.Context, unread unreadable) []optionalAPI {
	var apis []optionalAPI
	for _, gvr := range ForeignPodGroups {
		group := gvr.Group
		apis = append(apis, optionalAPI{gvr: gvr, set: s.setForeign(ctx, group, unread), del: s.deleteForeign(group, unread),
			statusSubresource: func(ok bool) { s.foreignStatusSub[group] = ok }})
	}
	apis = append(apis, optionalAPI{gvr: VolcanoQueues, set: s.setVolcanoQueue(ctx), del: s.deleteVolcanoQueue})
	apis = append(apis, s.ownerAPIs()...) // the workloads gangs are derived from (owners.go)
	return apis
}

// handler is an informer with what its events do to the store, on the
// loop goroutine.
type handler struct {
	inf      cache.SharedIndexInformer
	set, del func(obj any)
}

// typedHandlers read our PodGroups and Queues through typed informers, for
// schedulers without a dynamic client.
func (s *Scheduler) typedHandlers(pf externalversions.SharedInformerFactory) []handler {
	return []handler{
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
}

// setPodGroup converts one of our PodGroups, read through the dynamic
// client, into the store. One that cannot be converted leaves the store
// (a copy read earlier would be stale) and its gang says why it waits.
func (s *Scheduler) setPodGroup(ctx context.Context, unread unreadable) func(obj any) {
	return func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		key := u.GetNamespace() + "/" + u.GetName()
		pg, err := podGroupFromUnstructured(u)
		if err != nil {
			s.store.DeletePodGroup(u.GetNamespace(), u.GetName())
			if unread.set(s.store, key, ownAPI, err.Error()) {
				s.reportUnreadable(ctx, "PodGroup", u, err)
			}
			return
		}
		unread.set(s.store, key, ownAPI, "")
		s.store.SetPodGroup(pg)
	}
}

func (s *Scheduler) deletePodGroup(unread unreadable) func(obj any) {
	return func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s.store.DeletePodGroup(u.GetNamespace(), u.GetName())
			unread.set(s.store, u.GetNamespace()+"/"+u.GetName(), ownAPI, "")
		}
	}
}

// setQueue converts a Queue, read through the dynamic client, into the
// store. One that cannot be converted leaves the store, and its gangs say
// why they wait.
func (s *Scheduler) setQueue(ctx context.Context) func(obj any) {
	return func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		q, err := queueFromUnstructured(u)
		if err != nil {
			s.store.DeleteQueue(u.GetName())
			if s.store.SetUnreadableQueue(u.GetName(), err.Error()) {
				s.reportUnreadable(ctx, "Queue", u, err)
			}
			return
		}
		s.store.SetUnreadableQueue(u.GetName(), "")
		s.store.SetQueue(q)
	}
}

func (s *Scheduler) deleteQueue(obj any) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		s.store.DeleteQueue(u.GetName())
		s.store.SetUnreadableQueue(u.GetName(), "")
	}
}

// setForeign converts a PodGroup of another scheduler's API group into the
// store, like setPodGroup.
func (s *Scheduler) setForeign(ctx context.Context, group string, unread unreadable) func(obj any) {
	return func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		key := u.GetNamespace() + "/" + u.GetName()
		pg, err := fromForeign(u)
		if err != nil {
			s.store.DeleteForeignPodGroup(group, u.GetNamespace(), u.GetName())
			if unread.set(s.store, key, group, err.Error()) {
				s.reportUnreadable(ctx, u.GroupVersionKind().GroupKind().String(), u, err)
			}
			return
		}
		status, _, _ := unstructured.NestedMap(u.Object, "status")
		s.store.SetForeignPodGroup(group, pg, status)
		unread.set(s.store, key, group, "")
	}
}

func (s *Scheduler) deleteForeign(group string, unread unreadable) func(obj any) {
	return func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s.store.DeleteForeignPodGroup(group, u.GetNamespace(), u.GetName())
			unread.set(s.store, u.GetNamespace()+"/"+u.GetName(), group, "")
		}
	}
}
