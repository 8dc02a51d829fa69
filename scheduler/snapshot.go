package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AnnotationQueue names the queue of a pod that has no PodGroup (an ACK
// label gang or a gang of one).
const AnnotationQueue = "scheduling.phalanx.dev/queue"

// gangView is what one cycle knows of a gang: the fields the core needs and
// the counts its status reports.
type gangView struct {
	info      *gangInfo
	podGroup  *v1alpha1.PodGroup // nil for label gangs, single pods, or a missing PodGroup
	missingPG bool
	// notAllowed: the gang's namespace may not use its queue (tenancy.go).
	notAllowed bool
	minMember  int
	queue      string
	priority   int32
	arrival    int64
	invalid    string
	pending    []*podInfo // sorted by name
	// coming are members the gang's workload will create only once the
	// gang runs (an MPIJob's launcher, launcherAfterWorkers; a
	// LeaderWorkerSet group's workers, workersAfterLeader; the followers
	// of a JobSet's jobs with exclusive placement,
	// followersAfterLeaders): the core
	// places them with the minimum, and the room found for them is held
	// (comingRoom) rather than bound. They are not counted in minMember.
	// comingWhat and comingWhy say which they are and when they come.
	coming                []*podInfo
	comingWhat, comingWhy string
	// gated are the members that schedulingGates keep from being placed;
	// heldByGates: the gang's minimum needs some of them, so the gang
	// waits (invalid says so).
	gated       []*podInfo
	heldByGates bool
	// volumeWait says why a member's volumes keep it from being placed
	// for now; unsupported names a constraint of a member that Phalanx
	// does not implement (the first member by name of each).
	volumeWait, unsupported string
	bound                   int // bound or assumed and not failed
	// member counts by pod phase, for the PodGroup status.
	nPending, nRunning, nSucceeded, nFailed int32
	allocated                               core.Vector
	// estimate is how long the gang runs once started, in seconds; 0 when
	// unknown (gangspec.go); estimateFromHistory: it is its queue's
	// p90 run time. declared is the estimate the gang declares (its
	// PodGroup's estimatedRuntimeSeconds or the annotation), 0 if none;
	// estimate is declared times its queue's factor when the store
	// corrects estimates.
	estimate, declared  int64
	estimateFromHistory bool
	// requiredLevel is the topology label the gang's minimum must fit in
	// one domain of; gpuModel the value its nodes' GPU-model label must
	// have; modelMissing that no node has it.
	requiredLevel string
	gpuModel      string
	gpuModelLabel string
	modelMissing  bool
	// partialSince, for a gang holding some members but not its minimum,
	// is when it last made progress: its latest bind, or the creation of its
	// newest waiting member (a replacement). Both come from the API server,
	// so a restarted scheduler counts from the same time.
	partialSince int64
}

// partial reports whether the gang holds some members but not its minimum
// and waits for the rest.
func (v *gangView) partial() bool { return v.bound > 0 && v.bound < v.minMember && len(v.pending) > 0 }

// comingMember returns the member to come that the core's gang calls name.
func (v *gangView) comingMember(name string) *podInfo {
	for _, p := range v.coming {
		if comingName(p.pod) == name {
			return p
		}
	}
	return nil
}

func (v *gangView) member(name string) *podInfo {
	i := sort.Search(len(v.pending), func(i int) bool { return v.pending[i].pod.Name >= name })
	if i < len(v.pending) && v.pending[i].pod.Name == name {
		return v.pending[i]
	}
	return nil
}

// view computes the gang's view. It never fails: whatever is wrong with the
// gang's definition becomes v.invalid, which the core reports.
func (s *Store) view(g *gangInfo) *gangView {
	v := &gangView{info: g, queue: v1alpha1.DefaultQueue, minMember: 1}
	var first *podInfo
	for _, p := range g.members {
		if first == nil || p.pod.Name < first.pod.Name {
			first = p
		}
		switch p.pod.Status.Phase {
		case corev1.PodRunning:
			v.nRunning++
		case corev1.PodSucceeded:
			v.nSucceeded++
		case corev1.PodFailed:
			v.nFailed++
		default:
			v.nPending++
		}
		if p.holds() {
			v.allocated = v.allocated.Add(p.slot())
		}
		switch {
		case p.node != "" && p.pod.Status.Phase != corev1.PodFailed:
			v.bound++
			v.partialSince = max(v.partialSince, p.boundSince())
		case p.node == "" && !p.terminal && p.pod.DeletionTimestamp == nil && len(p.pod.Spec.SchedulingGates) > 0:
			v.gated = append(v.gated, p) // not ours to place until its gates are gone
		case p.node == "" && !p.terminal && p.pod.DeletionTimestamp == nil:
			v.pending = append(v.pending, p)
			v.partialSince = max(v.partialSince, p.pod.CreationTimestamp.Unix())
		}
	}
	sort.Slice(v.pending, func(i, j int) bool { return v.pending[i].pod.Name < v.pending[j].pod.Name })
	// The first waiting member, by name, that cannot be placed says why.
	for _, p := range v.pending {
		switch {
		case p.problem != "" && v.invalid == "":
			v.invalid = fmt.Sprintf("pod %s: %s", p.pod.Name, p.problem)
		case p.volumeWait != "" && v.volumeWait == "":
			v.volumeWait = fmt.Sprintf("pod %s waits: %s", p.pod.Name, p.volumeWait)
		case p.unsupported != "" && v.unsupported == "":
			v.unsupported = fmt.Sprintf("pod %s: %s", p.pod.Name, p.unsupported)
		}
	}
	if first == nil && g.membership.Kind != ByPodGroup {
		return v
	}
	if first != nil {
		v.arrival = first.pod.CreationTimestamp.Unix()
	}
	for _, p := range g.members {
		v.arrival = min(v.arrival, p.pod.CreationTimestamp.Unix())
		if p.pod.Spec.Priority != nil {
			v.priority = max(v.priority, *p.pod.Spec.Priority)
		}
	}
	switch g.membership.Kind {
	case ByPodGroup:
		pg := s.podGroup(g.namespace + "/" + g.name)
		if last := s.gone[g.key]; pg == nil && last != nil && v.bound > 0 {
			// Deleted while members run: they stay a gang of its
			// minMember, never loose pods that any gang may preempt;
			// what waits, waits for a PodGroup.
			v.minMember, v.arrival = int(last.Spec.MinMember), last.CreationTimestamp.Unix()
			if last.Spec.Queue != "" {
				v.queue = last.Spec.Queue
			}
			v.priority = max(v.priority, s.priorities[last.Spec.PriorityClassName])
			v.missingPG = true
			v.invalid = fmt.Sprintf("PodGroup %s/%s was deleted; its %d bound members keep its minMember %d until they end, the others wait until it is created again",
				g.namespace, g.name, v.bound, v.minMember)
			return v
		}
		if pg == nil {
			v.missingPG = true
			v.invalid = fmt.Sprintf("PodGroup %s/%s does not exist; its pods wait until it is created", g.namespace, g.name)
			if why := s.unreadable[g.namespace+"/"+g.name]; why != "" {
				v.invalid = "PodGroup cannot be read: " + why
			}
			s.explainDerived(g, v) // a PodGroup Phalanx creates from the pods' workload (owners.go)
			return v
		}
		v.podGroup = pg
		v.minMember = int(pg.Spec.MinMember)
		if min, ok, coming := s.launcherAfterWorkers(pg, g); ok {
			v.minMember = min // an MPIJob's launcher counts once it exists
			if coming != nil {
				s.toCome(v, []*corev1.Pod{coming}, fmt.Sprintf("its launcher (%s)", coming.Name),
					fmt.Sprintf("which mpi-operator creates once the %d workers are Ready", min))
			}
		} else if min, ok, coming, why := s.workersAfterLeader(pg, g); ok {
			v.minMember = min // a LeaderWorkerSet's workers count once they exist
			if coming != nil {
				what := fmt.Sprintf("its %d workers", len(coming))
				if len(coming) == 1 {
					what = "its worker"
				}
				s.toCome(v, coming, what, why)
			}
		} else if coming, of, why := s.followersAfterLeaders(pg, g); coming != nil {
			what := fmt.Sprintf("its %d followers", len(coming))
			if len(coming) == 1 {
				what = "its follower"
			}
			s.toCome(v, coming, what, why)
			for i, c := range v.coming {
				c.cons = of[i].cons // one group with its leader (core.placeAnchored)
			}
		}
		v.arrival = pg.CreationTimestamp.Unix()
		switch {
		case pg.Spec.Queue != "":
			v.queue = pg.Spec.Queue
		case first != nil:
			// A PodGroup API without queues (scheduler-plugins'): the
			// members' annotation names it, as for pods without one.
			v.queue = queueAnnotation(first.pod)
		}
		if pc := pg.Spec.PriorityClassName; pc != "" {
			value, ok := s.priorities[pc]
			if !ok {
				v.invalid = fmt.Sprintf("priorityClassName %q does not exist", pc)
			}
			v.priority = value
		}
	case ByLabels:
		v.minMember = labelMin(g, v)
		v.queue = queueAnnotation(first.pod)
	case Single:
		v.queue = queueAnnotation(first.pod)
	}
	s.applySpec(g, v)
	if why := s.unreadableQueues[v.queue]; why != "" && v.invalid == "" {
		v.invalid = fmt.Sprintf("queue %q cannot be read: %s", v.queue, why)
	}
	if why := s.queueRefuses(v.queue, g.namespace); why != "" {
		v.notAllowed, v.invalid = true, why
	}
	if v.invalid == "" {
		v.holdByGates()
	}
	if v.invalid == "" && v.volumeWait != "" {
		v.invalid = v.volumeWait
	}
	return v
}

// holdByGates makes the gang wait, invalid to the core, when its minimum
// needs members that schedulingGates hold: nothing of it is placed until
// enough gates are gone. Elastic members held by gates just wait.
func (v *gangView) holdByGates() {
	if len(v.gated) == 0 || v.bound+len(v.pending) >= v.minMember {
		return
	}
	sort.Slice(v.gated, func(i, j int) bool { return v.gated[i].pod.Name < v.gated[j].pod.Name })
	seen := map[string]bool{}
	var gates []string
	for _, p := range v.gated {
		for _, g := range p.pod.Spec.SchedulingGates {
			if !seen[g.Name] {
				seen[g.Name] = true
				gates = append(gates, g.Name)
			}
		}
	}
	sort.Strings(gates)
	members := v.bound + len(v.pending) + len(v.gated)
	v.heldByGates = true
	v.invalid = fmt.Sprintf("%d of %d members are held by schedulingGates (%s); the gang needs %d to start",
		len(v.gated), members, strings.Join(gates, ", "), v.minMember)
}

// labelMin is the min-available of a label gang: its members must agree.
// Members are read in name order so that the message is stable.
func labelMin(g *gangInfo, v *gangView) int {
	members := make([]*podInfo, 0, len(g.members))
	for _, p := range g.members {
		members = append(members, p)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].pod.Name < members[j].pod.Name })
	agreed := int32(0)
	for _, p := range members {
		m := MembershipOf(p.pod)
		if m.Problem != "" {
			v.invalid = fmt.Sprintf("pod %s: %s", p.pod.Name, m.Problem)
			return 1
		}
		if agreed != 0 && m.MinAvailable != agreed {
			v.invalid = fmt.Sprintf("members disagree on %s: %d and %d", LabelACKMinAvailable, agreed, m.MinAvailable)
			return 1
		}
		agreed = m.MinAvailable
	}
	return int(agreed)
}

// Recycle hands back a snapshot and its views that nothing reads any more:
// the next snapshot fills them again. The scheduler hands back every
// cycle's but those a forecast goes on reading.
func (s *Store) Recycle(snap *core.Snapshot, views map[string]*gangView) {
	clear(views)
	s.spareViews = views
	clear(snap.Nodes) // what they point to may go
	clear(snap.Running)
	clear(snap.Releases)
	clear(snap.Gangs)
	s.spare = core.Snapshot{Nodes: snap.Nodes, Running: snap.Running, Releases: snap.Releases, Gangs: snap.Gangs}
}

func orNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// withRoom returns s emptied, with room for n elements.
func withRoom[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

func queueAnnotation(p *corev1.Pod) string {
	if q := p.Annotations[AnnotationQueue]; q != "" {
		return q
	}
	return v1alpha1.DefaultQueue
}

// Snapshot builds the core's snapshot of the current state and the views of
// the gangs it contains, keyed by gang key.
func (s *Store) Snapshot() (*core.Snapshot, map[string]*gangView) {
	// The lists that hold every node, running gang and release are filled
	// again in the memory of a snapshot handed back (Recycle), or made to
	// the size of the last: at 150,000 pods, growing them anew each cycle
	// was most of what the scheduler allocated.
	now := s.now().Unix()
	order := s.sortedNodes()
	spare := s.spare
	s.spare = core.Snapshot{}
	snap := &core.Snapshot{
		Nodes:    withRoom(spare.Nodes, len(order)),
		Running:  withRoom(spare.Running, s.sizes.Running),
		Releases: withRoom(spare.Releases, s.sizes.Releases),
		Gangs:    withRoom(spare.Gangs, s.sizes.Gangs),
	}
	for _, name := range order {
		snap.Nodes = append(snap.Nodes, s.nodes[name].node)
	}
	views := s.spareViews
	s.spareViews = nil
	if views == nil {
		views = make(map[string]*gangView, len(s.gangs))
	}
	allocated := map[string]core.Vector{}
	reserving := s.reservations()
	var models map[string]bool // GPU models the nodes have, computed on first use
	var completed []*gangView  // recorded after the loop, so that every view saw the same history
	asked := false             // a pending member asks about the pods on nodes
	for key, g := range s.gangs {
		c := s.cached(g) // views.go
		v := c.view
		views[key] = v
		allocated[v.queue] = allocated[v.queue].Add(v.allocated)
		if v.nSucceeded > 0 && int(v.nSucceeded) == len(g.members) && !g.recorded {
			completed = append(completed, v)
		}
		if reserving && v.estimate > 0 {
			snap.Releases = append(snap.Releases, s.releasesOf(c, g, order)...)
		}
		if s.preempting && v.bound > 0 {
			if r, ok := s.runningOf(c, g, order, now); ok {
				snap.Running = append(snap.Running, r)
			}
		}
		if len(v.pending) == 0 && !v.heldByGates {
			continue
		}
		cg, asks := s.gangOf(c, key)
		asked = asked || asks
		if v.gpuModel != "" {
			if models == nil {
				models = s.gpuModels()
			}
			v.gpuModelLabel, v.modelMissing = s.gpuModelLabel, !models[v.gpuModel]
		}
		snap.Gangs = append(snap.Gangs, cg)
	}
	s.sizes.Running, s.sizes.Releases, s.sizes.Gangs = len(snap.Running), len(snap.Releases), len(snap.Gangs)
	// Empty is nil, whatever memory the lists came in.
	snap.Nodes, snap.Running, snap.Releases, snap.Gangs = orNil(snap.Nodes), orNil(snap.Running), orNil(snap.Releases), orNil(snap.Gangs)
	slices.SortFunc(snap.Running, func(a, b core.Running) int { return cmp.Compare(a.Gang, b.Gang) })
	s.snapshotPods(snap, order, asked) // podterms.go
	snap.Holds = s.snapshotHolds(order, now)
	for _, v := range completed {
		s.recordCompletion(v.info, v.queue, v.declared, v.arrival)
	}
	// The core breaks ties between releases by their order: make it the
	// same whatever the order of the map of gangs.
	slices.SortFunc(snap.Releases, func(a, b core.Release) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return slices.Compare(a.Amount[:], b.Amount[:])
	})
	// PodGroups whose pods do not exist yet still get a status: operators
	// such as Volcano's wait for phase Inqueue before they create pods. The
	// instance that claims the PodGroup writes it; none does while pods of
	// another scheduler name it.
	idle := func(key string, pg *v1alpha1.PodGroup, claimed bool) {
		if views[key] == nil && s.others[key] == 0 && claimed && s.podGroup(key) == pg {
			g := &gangInfo{key: key, namespace: pg.Namespace, name: pg.Name,
				membership: Membership{Kind: ByPodGroup, Name: pg.Name}, members: map[types.UID]*podInfo{}}
			views[key] = s.view(g)
		}
	}
	for key, pg := range s.podGroups {
		idle(key, pg, s.claims(pg.Annotations))
	}
	for group, pgs := range s.foreign {
		for key, pg := range pgs {
			idle(key, pg, s.claimsForeign(group, pg.Annotations))
		}
	}
	sort.Slice(snap.Gangs, func(i, j int) bool {
		a, b := snap.Gangs[i], snap.Gangs[j]
		if a.Arrival != b.Arrival {
			return a.Arrival < b.Arrival
		}
		return a.ID < b.ID
	})
	names := make([]string, 0, len(s.queues)+len(s.volcanoQueues))
	for name := range s.queues {
		names = append(names, name)
	}
	for name := range s.volcanoQueues {
		if s.queues[name] == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		q := s.queues[name]
		if q == nil {
			q = s.volcanoQueues[name]
		}
		capability, _ := s.res.limits(q.Spec.Capability)
		guarantee, _ := s.res.vector(q.Spec.Guarantee)
		cq := core.Queue{Name: name, Weight: int64(max(q.Spec.Weight, 1)),
			Capability: capability, Guarantee: guarantee, Allocated: allocated[name], Closed: q.Spec.State == v1alpha1.QueueClosed,
			NoReclaim: q.Spec.Reclaimable != nil && !*q.Spec.Reclaimable, StrictOrder: q.Spec.StrictOrder}
		if r := q.Spec.ReserveAfterSeconds; r != nil && *r > 0 {
			cq.ReserveAfter = int64(*r)
		}
		if s.correcting {
			cq.WorkFactor = s.history[name].workFactor()
			cq.OverrunFactor = s.history[name].overrunFactor()
		}
		cq.PreemptMinRuntime = minRuntime(q.Spec.PreemptMinRuntimeSeconds)
		cq.ReclaimMinRuntime = minRuntime(q.Spec.ReclaimMinRuntimeSeconds)
		snap.Queues = append(snap.Queues, cq)
	}
	// Last: converting queue limits may have registered a resource.
	snap.Resources = s.res.names
	return snap, views
}

// minRuntime is a Queue's minimum run time as core.Queue has it: unset, 0
// (the scheduler's applies); 0, -1 (none).
func minRuntime(s *int32) int64 {
	switch {
	case s == nil:
		return 0
	case *s <= 0:
		return -1
	}
	return int64(*s)
}

// reservations reports whether a cycle may reserve nodes, and so needs the
// releases of running members: the scheduler reserves, or a Queue sets its
// own threshold or runs in strict order.
func (s *Store) reservations() bool {
	if s.reserving {
		return true
	}
	for _, q := range s.queues {
		if r := q.Spec.ReserveAfterSeconds; r != nil && *r > 0 || q.Spec.StrictOrder {
			return true
		}
	}
	return false
}

// releases appends what each member of g, of queue, holding a node gives
// back when g is expected to end: estimate seconds after the member started
// (its pod's startTime, or when it was bound if it has not started yet),
// passed if g overran its estimate (the core decides what to expect then);
// a pod being deleted when its grace period ends.
// Members of gangs without an estimate, and pods of other schedulers, are
// left out: the core never counts on a release whose end is unknown. order
// is the snapshot's sorted node names.
func (s *Store) releases(dst []core.Release, g *gangInfo, queue string, estimate int64, order []string) []core.Release {
	for _, p := range g.members {
		if !p.holds() {
			continue
		}
		n := sort.SearchStrings(order, p.node)
		if n == len(order) || order[n] != p.node {
			continue // bound to a node the store does not know
		}
		start := p.started()
		if start == 0 {
			continue
		}
		at := start + estimate
		if d := p.pod.DeletionTimestamp; d != nil {
			at = d.Unix() // deletion time plus grace period
		}
		dst = append(dst, core.Release{Node: n, Amount: p.slot(), At: at, Queue: queue})
	}
	return dst
}

// gpuModels returns the values of the GPU-model label across the nodes.
func (s *Store) gpuModels() map[string]bool {
	models := map[string]bool{}
	for _, n := range s.nodes {
		if m, ok := n.node.Labels[s.gpuModelLabel]; ok {
			models[m] = true
		}
	}
	return models
}
