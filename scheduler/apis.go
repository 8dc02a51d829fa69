package scheduler

import (
	"context"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Some APIs Phalanx reads only where the cluster serves them: the PodGroups
// and Queues of other schedulers (foreign.go), and the workloads that gangs
// are derived from (owners.go). Such an API may be installed, or removed,
// while Phalanx runs. Phalanx watches CustomResourceDefinitions and starts
// an informer for an API when its CRD is established and serves the version
// read, and stops it when the CRD goes; the objects it had delivered leave
// the store. APIs served at start are read before the first cycle, like
// every other informer's.

// optionalAPI is an API Phalanx reads where the cluster serves it.
type optionalAPI struct {
	gvr      schema.GroupVersionResource
	set, del func(obj any) // run on the loop goroutine with *unstructured.Unstructured
	// statusSubresource, if set, is told whether the API serves a status
	// subresource, each time the API is started.
	statusSubresource func(bool)
}

// crdsResource is the API of CustomResourceDefinitions.
var crdsResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// apiWatcher runs the informers of optional APIs. Only the loop goroutine
// uses it, after startInformers.
type apiWatcher struct {
	s       *Scheduler
	ctx     context.Context
	apis    []optionalAPI
	running map[schema.GroupVersionResource]*runningAPI
}

type runningAPI struct {
	inf  cache.SharedIndexInformer
	stop context.CancelFunc
	// delivered holds, by namespace/name, the objects the loop was given
	// and not yet told are gone: what stopAPI removes from the store. The
	// informer's own cache may have dropped an object whose deletion still
	// waits in the inbox, and that event is dropped once it stops.
	delivered map[string]any
}

// start runs an informer for api, unless one runs; it returns the
// informer's HasSynced, or nil.
func (w *apiWatcher) start(api optionalAPI, statusSub bool) cache.InformerSynced {
	if w.running[api.gvr] != nil {
		return nil
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(w.s.opts.Dynamic, api.gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	r := &runningAPI{inf: inf, delivered: map[string]any{}}
	// Events still queued when the informer is stopped are dropped: its
	// objects have left the store.
	current := func(f func(any), deleted bool) func(any) {
		return func(obj any) {
			if w.running[api.gvr] != r {
				return
			}
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				if deleted {
					delete(r.delivered, key)
				} else {
					r.delivered[key] = obj
				}
			}
			f(obj)
		}
	}
	reg, err := inf.AddEventHandler(w.s.handlerFuncs(w.ctx, current(api.set, false), current(api.del, true)))
	if err != nil {
		return nil
	}
	if api.statusSubresource != nil {
		api.statusSubresource(statusSub)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	r.stop = cancel
	w.running[api.gvr] = r
	go inf.Run(ctx.Done())
	klog.FromContext(w.ctx).Info("Reading an optional API", "apiVersion", api.gvr.GroupVersion().String(), "resource", api.gvr.Resource)
	return reg.HasSynced
}

// stopAPI stops the informer of gvr and removes what it delivered from the
// store.
func (w *apiWatcher) stopAPI(api optionalAPI) {
	r := w.running[api.gvr]
	if r == nil {
		return
	}
	r.stop()
	delete(w.running, api.gvr)
	for _, key := range slices.Sorted(maps.Keys(r.delivered)) {
		api.del(r.delivered[key])
	}
	klog.FromContext(w.ctx).Info("Stopped reading an API whose CustomResourceDefinition is gone",
		"apiVersion", api.gvr.GroupVersion().String(), "resource", api.gvr.Resource)
}

// crdChanged starts or stops the informers of the optional APIs that crd
// defines, as it serves them or not.
func (w *apiWatcher) crdChanged(u *unstructured.Unstructured, deleted bool) {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
	for _, api := range w.apis {
		if api.gvr.Group != group || api.gvr.Resource != plural {
			continue
		}
		served, statusSub := crdServes(u, api.gvr.Version)
		switch {
		case deleted || !served:
			w.stopAPI(api)
		default:
			w.start(api, statusSub)
		}
	}
}

// crdServes reports whether crd is established and serves version, and
// whether that version has a status subresource.
func crdServes(u *unstructured.Unstructured, version string) (served, statusSub bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	established := slices.ContainsFunc(conds, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == "Established" && m["status"] == "True"
	})
	if !established {
		return false, false
	}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if m == nil || m["name"] != version {
			continue
		}
		if ok, _ := m["served"].(bool); !ok {
			return false, false
		}
		subresources, _ := m["subresources"].(map[string]any)
		_, statusSub = subresources["status"]
		return true, statusSub
	}
	return false, false
}

// servedAtStart reports whether the API server serves gvr now, whether it
// has a status subresource, and whether we may list it: an informer that
// may not list never syncs, so a missing permission costs only this API.
// discovered holds the group-versions already asked of discovery (nil for
// one it does not serve): several optional APIs share one, such as the six
// Kubeflow job kinds.
func (s *Scheduler) servedAtStart(ctx context.Context, gvr schema.GroupVersionResource, discovered map[string]*metav1.APIResourceList) (served, statusSub bool) {
	gv := gvr.GroupVersion().String()
	list, asked := discovered[gv]
	if !asked {
		l, err := s.kube.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			l = nil
		}
		list, discovered[gv] = l, l
	}
	if list == nil {
		return false, false
	}
	for _, r := range list.APIResources {
		switch r.Name {
		case gvr.Resource:
			served = true
		case gvr.Resource + "/status":
			statusSub = true
		}
	}
	if !served {
		return false, false
	}
	if _, err := s.opts.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot read an optional API; what depends on it waits",
			"apiVersion", gvr.GroupVersion().String(), "resource", gvr.Resource)
		return false, false
	}
	return true, statusSub
}

// handlerFuncs sends an informer's events to the loop as calls of set and
// del.
func (s *Scheduler) handlerFuncs(ctx context.Context, set, del func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.send(ctx, func() { set(obj) }) },
		UpdateFunc: func(_, obj any) { s.send(ctx, func() { set(obj) }) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			s.send(ctx, func() { del(obj) })
		},
	}
}
