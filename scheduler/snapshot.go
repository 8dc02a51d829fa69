package scheduler

import (
	"fmt"
	"sort"

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
	minMember int
	queue     string
	priority  int32
	arrival   int64
	invalid   string
	pending   []*podInfo // sorted by name
	bound     int        // bound or assumed and not failed
	// member counts by pod phase, for the PodGroup status.
	nPending, nRunning, nSucceeded, nFailed int32
	allocated                               core.Vector
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
			r := p.req
			r[core.Pods] = 1
			v.allocated = v.allocated.Add(r)
		}
		switch {
		case p.node != "" && p.pod.Status.Phase != corev1.PodFailed:
			v.bound++
		case p.node == "" && !p.terminal && p.pod.DeletionTimestamp == nil:
			v.pending = append(v.pending, p)
			if p.problem != "" && v.invalid == "" {
				v.invalid = fmt.Sprintf("pod %s: %s", p.pod.Name, p.problem)
			}
		}
	}
	sort.Slice(v.pending, func(i, j int) bool { return v.pending[i].pod.Name < v.pending[j].pod.Name })
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
		if pg == nil {
			v.missingPG = true
			v.invalid = fmt.Sprintf("PodGroup %s/%s does not exist; its pods wait until it is created", g.namespace, g.name)
			if why := s.unreadable[g.namespace+"/"+g.name]; why != "" {
				v.invalid = "PodGroup cannot be read: " + why
			}
			return v
		}
		v.podGroup = pg
		v.minMember = int(pg.Spec.MinMember)
		v.arrival = pg.CreationTimestamp.Unix()
		if pg.Spec.Queue != "" {
			v.queue = pg.Spec.Queue
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
	return v
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

func queueAnnotation(p *corev1.Pod) string {
	if q := p.Annotations[AnnotationQueue]; q != "" {
		return q
	}
	return v1alpha1.DefaultQueue
}

// Snapshot builds the core's snapshot of the current state and the views of
// the gangs it contains, keyed by gang key.
func (s *Store) Snapshot() (*core.Snapshot, map[string]*gangView) {
	snap := &core.Snapshot{}
	order := s.sortedNodes()
	snap.Nodes = make([]core.Node, 0, len(order))
	for _, name := range order {
		snap.Nodes = append(snap.Nodes, s.nodes[name].node)
	}
	views := make(map[string]*gangView, len(s.gangs))
	allocated := map[string]core.Vector{}
	for key, g := range s.gangs {
		v := s.view(g)
		views[key] = v
		allocated[v.queue] = allocated[v.queue].Add(v.allocated)
		if len(v.pending) == 0 {
			continue
		}
		cg := &core.Gang{ID: key, Queue: v.queue, Priority: v.priority, MinMember: v.minMember,
			Arrival: v.arrival, Bound: v.bound, Invalid: v.invalid}
		cg.Pending = make([]core.Member, len(v.pending))
		for i, p := range v.pending {
			cg.Pending[i] = core.Member{Name: p.pod.Name, Request: p.req, Constraints: p.cons}
		}
		snap.Gangs = append(snap.Gangs, cg)
	}
	// PodGroups whose pods do not exist yet still get a status: operators
	// such as Volcano's wait for phase Inqueue before they create pods.
	for key, pg := range s.podGroups {
		if views[key] == nil {
			g := &gangInfo{key: key, namespace: pg.Namespace, name: pg.Name,
				membership: Membership{Kind: ByPodGroup, Name: pg.Name}, members: map[types.UID]*podInfo{}}
			views[key] = s.view(g)
		}
	}
	sort.Slice(snap.Gangs, func(i, j int) bool {
		a, b := snap.Gangs[i], snap.Gangs[j]
		if a.Arrival != b.Arrival {
			return a.Arrival < b.Arrival
		}
		return a.ID < b.ID
	})
	names := make([]string, 0, len(s.queues))
	for name := range s.queues {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		q := s.queues[name]
		capability, _ := s.res.limits(q.Spec.Capability)
		guarantee, _ := s.res.vector(q.Spec.Guarantee)
		snap.Queues = append(snap.Queues, core.Queue{Name: name, Weight: int64(max(q.Spec.Weight, 1)),
			Capability: capability, Guarantee: guarantee, Allocated: allocated[name], Closed: q.Spec.State == v1alpha1.QueueClosed})
	}
	// Last: converting queue limits may have registered a resource.
	snap.Resources = s.res.names
	return snap, views
}
