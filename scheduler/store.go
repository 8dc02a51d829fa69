package scheduler

import (
	"sort"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Store is the scheduler's view of the cluster: nodes with what is bound to
// them, pods grouped into gangs, PodGroups, Queues and PriorityClasses.
//
// It has a single writer: the scheduler's loop goroutine applies informer
// events and bind results to it and builds snapshots from it, so it holds no
// locks. Node usage and queue allocation are kept up to date incrementally
// as pods come, go, bind and finish; a snapshot copies only node headers and
// the pending members, never the world.
type Store struct {
	res         *registry
	constraints *constraintsCache
	ours        map[string]bool // scheduler names this scheduler serves
	// others counts, by gang key, the pods of other schedulers that name
	// a PodGroup: such a PodGroup's status is theirs to write.
	others map[string]int

	nodes      map[string]*nodeInfo
	nodeOrder  []string // sorted names, rebuilt when nodes come or go
	nodesDirty bool
	// offNodes holds what pods bound to nodes the store does not know
	// hold: at start the pod informer may deliver pods before their nodes,
	// and a node may be deleted and come back while its pods stay bound.
	offNodes  map[string]core.Vector
	pods      map[types.UID]*podInfo
	gangs     map[string]*gangInfo
	podGroups map[string]*v1alpha1.PodGroup // namespace/name
	// foreign holds PodGroups read from other schedulers' APIs (see
	// foreign.go), keyed by API group then namespace/name; ours win.
	foreign map[string]map[string]*v1alpha1.PodGroup
	// foreignStatus holds their status as read, in their own schema,
	// keyed like foreign.
	foreignStatus map[string]map[string]map[string]any
	// unphased holds the PodGroups of scheduler-plugins' schema whose
	// status has no phase yet (markPending).
	unphased map[foreignKey]*v1alpha1.PodGroup
	// gone holds the last PodGroup seen of a gang whose PodGroup was
	// deleted (or became unreadable) while it had members: its bound
	// members keep its minMember, queue and priority until they end (an
	// operator deletes a finished job's PodGroup while its pods may stay).
	gone map[string]*v1alpha1.PodGroup
	// volcanoQueues holds the Queues of Volcano's API, as ours; a Queue
	// of ours of the same name wins.
	volcanoQueues map[string]*v1alpha1.Queue
	// unreadable says why a PodGroup could not be read, by
	// namespace/name, so that its gang reports it.
	unreadable map[string]string
	queues     map[string]*v1alpha1.Queue
	// namespaces holds the labels of namespaces, which queues admit by
	// (tenancy.go).
	namespaces map[string]labels.Set
	// admissions holds the parsed namespaceSelector of each Queue that
	// has one.
	admissions map[string]admission
	// unreadableQueues says why a Queue could not be read, by name, so
	// that its gangs report it.
	unreadableQueues map[string]string
	priorities       map[string]int32
	// history holds the run times of each queue's latest completed gangs.
	history map[string]*runTimes

	// gpuModelLabel is the node label a gang's GPU model is matched on.
	gpuModelLabel string
	// reserving: the scheduler reserves nodes for gangs that waited past
	// --reserve-after, so snapshots carry the releases of running members
	// (they also do when a Queue sets reserveAfterSeconds, and for the
	// forecast of the waiting gangs' starts).
	reserving bool
	// correcting: declared estimates are multiplied by their queue's
	// factor (history.go; Options.CorrectEstimates).
	correcting bool
	// preempting: snapshots carry the running members of our gangs, the
	// core's candidate victims (preemption.go).
	preempting bool
	// evicting marks pods we are evicting; holds keeps room for gangs, by
	// gang key; holdFailed is how long, in seconds, the room of a member
	// lost while its gang ran is kept for its replacement (0: not at all).
	evicting   map[types.UID]bool
	refused    map[types.UID]int64 // until when a refused victim is left alone
	refusals   map[string]string   // preemptor gang -> why its latest eviction was refused
	holds      map[string][]heldRoom
	holdFailed int64
	// owners: the workloads gangs are derived from (owners.go).
	owners *ownerState
	// avoiding counts the pods with required pod anti-affinity: while there
	// are some, every cycle needs the pods on nodes (podterms.go).
	avoiding int
	// volumes: claims, volumes and StorageClasses (volumes.go).
	volumes *volumeState
	// now is the clock of the times the store observes (a pod bound,
	// running, finished); time.Now unless a test sets it.
	now func() time.Time

	// Generations, which let a snapshot reuse what it computed for a gang
	// that did not change (views.go). epoch counts the changes that may
	// touch any gang's view (a Queue's spec, a PriorityClass, namespace
	// labels, workloads, volumes); a gang's own gen counts those of its
	// members and its PodGroup; orderGen the rebuilds of the node order;
	// historyGen, by queue, the run times learned; factorGen, by queue, the
	// changes of its estimate factor.
	epoch      uint64
	orderGen   uint64
	historyGen map[string]uint64
	factorGen  map[string]uint64
	// confirmations counts the pods seen bound where the store had assumed
	// them: news that changes no decision (Scheduler.loop).
	confirmations int
	// spare and spareViews hold the lists and views of the last snapshot
	// handed back (Recycle); sizes, the lengths of the lists of the last
	// snapshot built.
	spare      core.Snapshot
	spareViews map[string]*gangView
	sizes      struct{ Running, Releases, Gangs int }
}

type nodeInfo struct {
	node core.Node
	// alloc is the node's allocatable as the API reports it, converted
	// again when a resource gets a dimension (regrow).
	alloc corev1.ResourceList
}

type podInfo struct {
	pod  *corev1.Pod
	gang string // gang key, "" for pods of other schedulers
	// other is the key of the PodGroup a pod of another scheduler names.
	other string
	req   core.Vector
	// node is where the pod is bound, or assumed bound by a bind in flight.
	node     string
	assumed  bool
	terminal bool
	// problem says why the pod's own spec cannot be scheduled.
	problem string
	// volumeWait says why the pod's volumes keep it from being placed for
	// now (a claim not found or not bound yet, volumes.go); unsupported
	// names a field of the pod that Phalanx does not implement (podspec.go).
	volumeWait, unsupported string
	cons                    *core.Constraints
	// When the store first saw the pod bound (or assumed it), running and
	// finished, in Unix seconds; 0 if not yet. They stand in for the
	// pod's own times where those are missing.
	boundAt, runningAt, doneAt int64
}

// holds reports whether the pod counts against its node's resources.
func (p *podInfo) holds() bool { return p.node != "" && !p.terminal }

// slot is what the pod takes on its node: its request and a pod slot.
func (p *podInfo) slot() core.Vector {
	r := p.req
	r[core.Pods] = 1
	return r
}

// started is when the pod started running (its startTime), else when it
// was bound; 0 if neither is known.
func (p *podInfo) started() int64 {
	if t := p.pod.Status.StartTime; t != nil {
		return t.Unix()
	}
	return p.boundAt
}

// boundSince is when the pod was bound: its PodScheduled condition's
// transition to True, which the API server sets on binding, else when the
// store first saw it bound.
func (p *podInfo) boundSince() int64 {
	for _, c := range p.pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Unix()
		}
	}
	return p.boundAt
}

type gangInfo struct {
	key        string
	namespace  string
	name       string
	membership Membership
	members    map[types.UID]*podInfo
	// recorded: the gang's run time went into its queue's history.
	recorded bool
	// gen counts the changes of the gang's members and PodGroup; cache
	// holds what the latest snapshot computed from them (views.go).
	gen   uint64
	cache *gangCache
}

// NewStore returns an empty store serving the given scheduler names.
func NewStore(schedulerNames []string) *Store {
	s := &Store{
		res:              newRegistry(),
		constraints:      newConstraintsCache(),
		ours:             map[string]bool{},
		others:           map[string]int{},
		nodes:            map[string]*nodeInfo{},
		offNodes:         map[string]core.Vector{},
		pods:             map[types.UID]*podInfo{},
		gangs:            map[string]*gangInfo{},
		podGroups:        map[string]*v1alpha1.PodGroup{},
		foreign:          map[string]map[string]*v1alpha1.PodGroup{},
		foreignStatus:    map[string]map[string]map[string]any{},
		unphased:         map[foreignKey]*v1alpha1.PodGroup{},
		volcanoQueues:    map[string]*v1alpha1.Queue{},
		gone:             map[string]*v1alpha1.PodGroup{},
		unreadable:       map[string]string{},
		queues:           map[string]*v1alpha1.Queue{},
		namespaces:       map[string]labels.Set{},
		admissions:       map[string]admission{},
		unreadableQueues: map[string]string{},
		priorities:       map[string]int32{},
		history:          map[string]*runTimes{},
		evicting:         map[types.UID]bool{},
		refused:          map[types.UID]int64{},
		refusals:         map[string]string{},
		holds:            map[string][]heldRoom{},
		owners:           newOwnerState(),
		volumes:          newVolumeState(),
		historyGen:       map[string]uint64{},
		factorGen:        map[string]uint64{},

		gpuModelLabel: DefaultGPUModelLabel,
		now:           time.Now,
	}
	for _, n := range schedulerNames {
		s.ours[n] = true
	}
	s.res.grown = s.regrow
	return s
}

// regrow converts again what was converted before a resource got a
// dimension: nodes' allocatable, and what pods of other schedulers hold
// (ours registered every resource they request). It is rare: at most
// core.MaxDims-core.FirstExtended times in the life of a store.
func (s *Store) regrow() {
	s.epoch++
	for _, info := range s.nodes {
		info.node.Allocatable = s.res.known(info.alloc)
	}
	for _, p := range s.pods {
		if p.gang == "" {
			s.account(p, -1)
			p.req = s.res.known(podRequests(p.pod))
			s.account(p, +1)
		}
	}
}

// SetNode adds or replaces a node.
func (s *Store) SetNode(n *corev1.Node) {
	info, ok := s.nodes[n.Name]
	if !ok {
		info = &nodeInfo{node: core.Node{Used: s.offNodes[n.Name]}}
		delete(s.offNodes, n.Name)
		s.nodes[n.Name] = info
		s.nodesDirty = true
	}
	// Only the resources that have a dimension count (registry): pods
	// that request one beyond what a Vector can hold say so themselves
	// (podInfo.problem).
	info.alloc = n.Status.Allocatable
	alloc := s.res.known(n.Status.Allocatable)
	labels := make(map[string]string, len(n.Labels)+2)
	for k, v := range n.Labels {
		labels[k] = v
	}
	if _, ok := labels[corev1.LabelHostname]; !ok {
		labels[corev1.LabelHostname] = n.Name
	}
	labels[nodeNameKey] = n.Name
	var taints []core.Taint
	for _, t := range n.Spec.Taints {
		taints = append(taints, core.Taint{Key: t.Key, Value: t.Value, Effect: core.TaintEffect(t.Effect)})
	}
	used := info.node.Used
	info.node = core.Node{Name: n.Name, Allocatable: alloc, Used: used, Labels: labels, Taints: taints,
		Unschedulable: n.Spec.Unschedulable || !nodeReady(n)}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DeleteNode removes a node. Pods still bound to it keep their binding; they
// will be deleted by the node lifecycle controller.
func (s *Store) DeleteNode(name string) {
	if info, ok := s.nodes[name]; ok {
		if !info.node.Used.IsZero() {
			s.offNodes[name] = info.node.Used
		}
		delete(s.nodes, name)
		s.nodesDirty = true
	}
}

// SetPod adds or replaces a pod.
func (s *Store) SetPod(pod *corev1.Pod) {
	old, existed := s.pods[pod.UID]
	if existed {
		s.account(old, -1)
		s.touch(old.gang)
	}
	p := &podInfo{pod: pod, terminal: pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed}
	if s.ours[pod.Spec.SchedulerName] {
		p.req, p.problem = s.res.vector(podRequests(pod))
	} else {
		// What another scheduler's pod holds counts only on the
		// dimensions our pods need; regrow converts it again when they
		// need more.
		p.req = s.res.known(podRequests(pod))
	}
	switch {
	case pod.Spec.NodeName != "":
		p.node = pod.Spec.NodeName
	case existed && old.assumed:
		p.node, p.assumed = old.node, true // our bind is in flight
	}
	if existed {
		p.boundAt, p.runningAt, p.doneAt = old.boundAt, old.runningAt, old.doneAt
	}
	now := s.now().Unix()
	if p.node != "" && p.boundAt == 0 {
		p.boundAt = now
	}
	if pod.Status.Phase == corev1.PodRunning && p.runningAt == 0 {
		p.runningAt = now
	}
	if p.terminal && p.doneAt == 0 {
		p.doneAt = now
	}
	if s.ours[pod.Spec.SchedulerName] {
		m := MembershipOf(pod)
		m = s.ownerMembership(pod, m) // a gang derived from the pod's workload (owners.go)
		p.gang = m.GangKey(pod.Namespace)
		if existed {
			s.forgetClaims(old)
		}
		s.setConstraints(p) // volumes.go
		if existed && old.gang != p.gang {
			s.leaveGang(old, pod.UID)
		}
		g := s.gangs[p.gang]
		if g == nil {
			g = &gangInfo{key: p.gang, namespace: pod.Namespace, name: m.Name, membership: m, members: map[types.UID]*podInfo{}}
			s.gangs[p.gang] = g
		}
		g.members[pod.UID] = p
		g.gen++
	} else {
		if existed && old.gang != "" {
			s.leaveGang(old, pod.UID)
		}
		if m := MembershipOf(pod); m.Kind == ByPodGroup {
			p.other = m.GangKey(pod.Namespace)
			s.others[p.other]++
		}
		if p.node != "" && declaresPodTerms(pod) {
			p.cons = s.constraints.of(pod, nil) // its anti-affinity and host ports bind ours
		}
	}
	if existed && avoids(old.cons) {
		s.avoiding--
	}
	if avoids(p.cons) {
		s.avoiding++
	}
	if existed && old.other != "" {
		s.forgetOther(old.other)
	}
	s.pods[pod.UID] = p
	s.account(p, +1)
	if existed && old.holds() && pod.Status.Phase == corev1.PodFailed {
		s.lostMember(p, old.node)
	}
	if existed && old.assumed && !p.assumed && p.node == old.node && p.gang == old.gang && pod.Status.Phase == old.pod.Status.Phase {
		s.confirmations++
	}
}

// DeletePod removes a pod and frees what it held.
func (s *Store) DeletePod(uid types.UID) {
	p, ok := s.pods[uid]
	if !ok {
		return
	}
	s.account(p, -1)
	s.touch(p.gang)
	s.forgetClaims(p)
	if avoids(p.cons) {
		s.avoiding--
	}
	if p.gang != "" {
		s.leaveGang(p, uid)
	}
	if p.other != "" {
		s.forgetOther(p.other)
	}
	delete(s.pods, uid)
	if p.holds() {
		s.lostMember(p, p.node)
	}
	delete(s.evicting, uid)
	delete(s.refused, uid)
	s.owners.forget(p.pod) // owners.go
}

func (s *Store) leaveGang(p *podInfo, uid types.UID) {
	g := s.gangs[p.gang]
	if g == nil {
		return
	}
	delete(g.members, uid)
	if len(g.members) == 0 {
		delete(s.gangs, p.gang)
		delete(s.gone, p.gang)
	}
}

func (s *Store) forgetOther(key string) {
	if s.others[key]--; s.others[key] <= 0 {
		delete(s.others, key)
	}
}

// DefaultSchedulerName is the scheduler name served when none is given.
const DefaultSchedulerName = "phalanx"

// AnnotationSchedulerName, on a PodGroup or a Queue, names the scheduler
// (one of its --scheduler-name values) whose instance writes its status
// where no pod says which: a PodGroup whose pods do not exist yet, and a
// Queue. Unset, it is the instance that serves DefaultSchedulerName.
const AnnotationSchedulerName = "scheduling.phalanx.dev/scheduler-name"

// claims reports whether this scheduler writes the status of an object
// with these annotations that no pod of its own names.
func (s *Store) claims(annotations map[string]string) bool {
	return s.claimsAs(annotations, DefaultSchedulerName)
}

// claimsAs is claims with fallback as the name served by the instance that
// writes unannotated objects.
func (s *Store) claimsAs(annotations map[string]string, fallback string) bool {
	if name := annotations[AnnotationSchedulerName]; name != "" {
		return s.ours[name]
	}
	return s.ours[fallback]
}

// account adds (sign +1) or removes (-1) what p holds on its node.
func (s *Store) account(p *podInfo, sign int64) {
	if !p.holds() {
		return
	}
	r := p.slot()
	n := s.nodes[p.node]
	if n == nil {
		used := s.offNodes[p.node]
		for d := range r {
			used[d] += sign * r[d]
		}
		if used.IsZero() {
			delete(s.offNodes, p.node)
		} else {
			s.offNodes[p.node] = used
		}
		return
	}
	for d := range r {
		n.node.Used[d] += sign * r[d]
	}
}

// Assume records that a bind of the pod to node is in flight: the node's
// resources are held for it until the bind's outcome is known.
func (s *Store) Assume(uid types.UID, node string) bool {
	p, ok := s.pods[uid]
	if !ok || p.node != "" {
		return false
	}
	p.node, p.assumed = node, true
	p.boundAt = s.now().Unix()
	s.account(p, +1)
	s.touch(p.gang)
	return true
}

// Forget undoes Assume after a failed bind, freeing the node's resources.
func (s *Store) Forget(uid types.UID) {
	p, ok := s.pods[uid]
	if !ok || !p.assumed {
		return
	}
	s.account(p, -1)
	p.node, p.assumed, p.boundAt = "", false, 0
	s.touch(p.gang)
}

// SetPodGroup adds or replaces a PodGroup.
func (s *Store) SetPodGroup(pg *v1alpha1.PodGroup) {
	s.res.vector(pg.Spec.MinResources) // its resources get dimensions now, before a cycle compares them with the nodes'
	key := pg.Namespace + "/" + pg.Name
	s.podGroups[key] = pg
	delete(s.gone, key)
	s.touch(key)
}

// DeletePodGroup removes a PodGroup; its pods wait until it comes back, and
// its bound members keep its spec until they end (see Store.gone).
func (s *Store) DeletePodGroup(namespace, name string) {
	key := namespace + "/" + name
	s.remember(key, s.podGroups[key])
	delete(s.podGroups, key)
	s.touch(key)
}

// remember keeps pg, a PodGroup that is going, while its gang has members.
func (s *Store) remember(key string, pg *v1alpha1.PodGroup) {
	if pg != nil && s.gangs[key] != nil {
		s.gone[key] = pg
	}
}

// SetForeignPodGroup adds or replaces a PodGroup read from the API group of
// another scheduler.
// status is its status as read, in its own schema.
func (s *Store) SetForeignPodGroup(group string, pg *v1alpha1.PodGroup, status map[string]any) {
	s.res.vector(pg.Spec.MinResources) // as SetPodGroup
	if s.foreign[group] == nil {
		s.foreign[group] = map[string]*v1alpha1.PodGroup{}
		s.foreignStatus[group] = map[string]map[string]any{}
	}
	s.foreign[group][pg.Namespace+"/"+pg.Name] = pg
	s.foreignStatus[group][pg.Namespace+"/"+pg.Name] = status
	fk := foreignKey{group, pg.Namespace + "/" + pg.Name}
	if phase, _ := status["phase"].(string); phase == "" && foreignAPIs[group].schema == pluginsSchema {
		s.unphased[fk] = pg
	} else {
		delete(s.unphased, fk)
	}
	delete(s.gone, pg.Namespace+"/"+pg.Name)
	s.touch(pg.Namespace + "/" + pg.Name)
}

// SetUnreadablePodGroup records that the PodGroup namespace/name of another
// scheduler's API could not be read, and why; an empty why clears it.
func (s *Store) SetUnreadablePodGroup(key, why string) {
	s.touch(key)
	if why == "" {
		delete(s.unreadable, key)
		return
	}
	s.unreadable[key] = why
}

// DeleteForeignPodGroup removes a PodGroup of another scheduler's API.
func (s *Store) DeleteForeignPodGroup(group, namespace, name string) {
	s.remember(namespace+"/"+name, s.foreign[group][namespace+"/"+name])
	delete(s.foreign[group], namespace+"/"+name)
	delete(s.foreignStatus[group], namespace+"/"+name)
	delete(s.unphased, foreignKey{group, namespace + "/" + name})
	delete(s.unreadable, namespace+"/"+name)
	s.touch(namespace + "/" + name)
}

// podGroup returns the PodGroup namespace/name: ours if it exists, else one
// of another scheduler's, in the order of ForeignPodGroups.
func (s *Store) podGroup(key string) *v1alpha1.PodGroup {
	if pg := s.podGroups[key]; pg != nil {
		return pg
	}
	for _, gvr := range ForeignPodGroups {
		if pg := s.foreign[gvr.Group][key]; pg != nil {
			return pg
		}
	}
	return nil
}

// SetQueue adds or replaces a Queue.
func (s *Store) SetQueue(q *v1alpha1.Queue) {
	s.res.vector(q.Spec.Capability) // its resources get dimensions now, as SetPodGroup
	s.res.vector(q.Spec.Guarantee)
	if old := s.queues[q.Name]; old == nil || !sameQueueSpec(old, q) {
		s.epoch++ // a status written back changes no gang's view
	}
	s.queues[q.Name] = q
	s.setAdmission(q)
}

// DeleteQueue removes a Queue; its gangs wait, saying so.
func (s *Store) DeleteQueue(name string) {
	s.epoch++
	delete(s.queues, name)
	delete(s.admissions, name)
	s.forgetQueue(name)
}

// hasQueue reports whether a Queue of name exists, Phalanx's or Volcano's.
func (s *Store) hasQueue(name string) bool {
	return s.queues[name] != nil || s.volcanoQueues[name] != nil
}

// forgetQueue drops what is kept about a queue of name once none exists:
// its run times (which the state ConfigMap would otherwise carry for ever)
// and their generations. The epoch moves, so no view keeps a generation
// of the history dropped (views.go).
func (s *Store) forgetQueue(name string) {
	if s.hasQueue(name) {
		return
	}
	s.epoch++
	delete(s.history, name)
	delete(s.historyGen, name)
	delete(s.factorGen, name)
}

// SetUnreadableQueue records that the Queue name could not be read, and
// why; an empty why clears it. It reports whether the reason changed.
func (s *Store) SetUnreadableQueue(name, why string) bool {
	old := s.unreadableQueues[name]
	if old != why {
		s.epoch++
	}
	if why == "" {
		delete(s.unreadableQueues, name)
	} else {
		s.unreadableQueues[name] = why
	}
	return old != why
}

// SetPriorityClass records a PriorityClass's value.
func (s *Store) SetPriorityClass(pc *schedulingv1.PriorityClass) {
	if v, ok := s.priorities[pc.Name]; !ok || v != pc.Value {
		s.epoch++
	}
	s.priorities[pc.Name] = pc.Value
}

// DeletePriorityClass forgets a PriorityClass.
func (s *Store) DeletePriorityClass(name string) {
	s.epoch++
	delete(s.priorities, name)
}

// sortedNodes returns node names in order, rebuilding the order only when
// nodes came or went.
func (s *Store) sortedNodes() []string {
	if s.nodesDirty || len(s.nodeOrder) != len(s.nodes) {
		s.nodeOrder = s.nodeOrder[:0]
		for name := range s.nodes {
			s.nodeOrder = append(s.nodeOrder, name)
		}
		sort.Strings(s.nodeOrder)
		s.nodesDirty = false
		s.orderGen++
	}
	return s.nodeOrder
}
