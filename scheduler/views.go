package scheduler

import (
	"maps"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// A snapshot reuses what it computed for a gang in an earlier snapshot
// while nothing it was computed from has changed, kube-scheduler's
// UpdateSnapshot by generation being the model: at 150,000 pods most gangs
// run untouched from one cycle to the next, and recomputing their views
// was most of a cycle.
//
// What a view is computed from, and what says it changed:
//   - the gang's members and its PodGroup (or its absence, the one deleted,
//     why it cannot be read, the failure to create a derived one): gangInfo.gen,
//     bumped by touch;
//   - everything any gang may read (Queues' specs, PriorityClasses, namespace
//     labels, workloads, claims and volumes, restored state, a resource getting
//     a dimension): Store.epoch;
//   - its queue's run times, when its estimate comes from them: historyGen.
// Its queue's estimate factor, when its estimate is corrected by it
// (factorGen), changes the view's estimate alone, and only if the factor of
// the gang's era of arrival moved (core.FactorEras): the view is then
// copied with the estimate corrected again rather than computed.
// The parts of the snapshot built from a view (the core's gang, a running
// gang's members, its releases) are rebuilt with it, and the latter two
// also when its estimate is corrected again, when the node order changes
// (they hold node indexes) or when a refusal to evict one of its members
// expires; the core's gang takes the estimate as it is copied.

// gangCache is what the latest snapshot computed for a gang.
type gangCache struct {
	gen, epoch, history uint64 // what view was computed from
	view                *gangView
	fromHistory         bool // the estimate is the queue's p90 run time
	corrected           bool // the estimate is corrected by the queue's factor
	factors             uint64
	// version counts the views computed, estimates the estimates
	// corrected again in a view otherwise unchanged; the parts below record
	// the versions and node order they were built from.
	version, estimates uint64

	gang        *core.Gang // the core's gang, for a gang with waiting members
	gangVersion uint64
	gangBuilt   bool
	asked       bool // a pending member asks about the pods on nodes

	running                      core.Running // as a candidate victim
	hasRunning, runBuilt         bool
	runVersion, runEst, runOrder uint64
	runUntil                     int64 // a refusal to evict a member ends: rebuild then (0: none)

	releases                     []core.Release
	relBuilt                     bool
	relVersion, relEst, relOrder uint64
}

// touch records that the gang key changed.
func (s *Store) touch(key string) {
	if g := s.gangs[key]; g != nil {
		g.gen++
	}
}

// touchPod records that the gang of the pod uid changed.
func (s *Store) touchPod(uid types.UID) {
	if p := s.pods[uid]; p != nil {
		s.touch(p.gang)
	}
}

// sameQueueSpec reports whether b changes nothing of a that a gang's view
// reads: its spec, and its annotations and labels.
func sameQueueSpec(a, b *v1alpha1.Queue) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) && maps.Equal(a.Annotations, b.Annotations) && maps.Equal(a.Labels, b.Labels)
}

// cached returns g's cache with its view up to date.
func (s *Store) cached(g *gangInfo) *gangCache {
	c := g.cache
	if c == nil {
		c = &gangCache{}
		g.cache = c
	}
	if c.view != nil && c.gen == g.gen && c.epoch == s.epoch && (!c.fromHistory || c.history == s.historyGen[c.view.queue]) {
		if !c.corrected || c.factors == s.factorGen[c.view.queue] {
			return c
		}
		// Only the queue's factor moved: the view is the same but for
		// its estimate (computing it again was most of the cycle after a
		// move at 150,000 pods), and that only if the gang arrived in the
		// era that moved. The core's gang takes the estimate when it is
		// copied (gangOf); releases and running members are rebuilt
		// (estimates).
		c.factors = s.factorGen[c.view.queue]
		if est := s.correctEstimate(c.view.queue, c.view.declared, c.view.arrival); est != c.view.estimate {
			v := *c.view
			v.estimate = est
			c.view, c.estimates = &v, c.estimates+1
		}
		return c
	}
	v := s.view(g)
	c.view, c.gen, c.epoch, c.version = v, g.gen, s.epoch, c.version+1
	c.fromHistory = v.estimateFromHistory
	c.history = s.historyGen[v.queue]
	c.corrected, c.factors = s.correcting && v.declared > 0, s.factorGen[v.queue]
	return c
}

// releasesOf returns what g's members give back when it is expected to end
// (Store.releases), rebuilt only when the view or the node order changed.
func (s *Store) releasesOf(c *gangCache, g *gangInfo, order []string) []core.Release {
	if !c.relBuilt || c.relVersion != c.version || c.relEst != c.estimates || c.relOrder != s.orderGen {
		c.releases = s.releases(c.releases[:0], g, c.view.queue, c.view.estimate, order)
		c.relBuilt, c.relVersion, c.relEst, c.relOrder = true, c.version, c.estimates, s.orderGen
	}
	return c.releases
}

// runningOf returns g as a candidate victim (Store.running), rebuilt only
// when the view or the node order changed, or a refusal to evict one of its
// members ran out.
func (s *Store) runningOf(c *gangCache, g *gangInfo, order []string, now int64) (core.Running, bool) {
	if !c.runBuilt || c.runVersion != c.version || c.runEst != c.estimates || c.runOrder != s.orderGen || c.runUntil != 0 && now >= c.runUntil {
		c.running, c.hasRunning = s.running(g, c.view, order, now)
		c.runBuilt, c.runVersion, c.runEst, c.runOrder = true, c.version, c.estimates, s.orderGen
		c.runUntil = 0
		for _, p := range g.members {
			if until := s.refused[p.pod.UID]; until > now && (c.runUntil == 0 || until < c.runUntil) {
				c.runUntil = until
			}
		}
	}
	return c.running, c.hasRunning
}

// gangOf returns the core's gang for a gang with waiting members, a copy
// whose Pending it shares with the cache (the core never modifies a
// snapshot), and whether a member asks about the pods on nodes.
func (s *Store) gangOf(c *gangCache, key string) (*core.Gang, bool) {
	v := c.view
	if !c.gangBuilt || c.gangVersion != c.version {
		cg := &core.Gang{ID: key, Queue: v.queue, Priority: v.priority, MinMember: v.minMember + len(v.coming),
			Arrival: v.arrival, Bound: v.bound, Invalid: v.invalid, Unsupported: v.unsupported,
			RequiredLevel: v.requiredLevel, Estimate: v.estimate, EstimateDeclared: v.declared > 0}
		// The members to come first: the minimum is the first members.
		members := append(v.coming[:len(v.coming):len(v.coming)], v.pending...)
		cg.Pending = make([]core.Member, len(members))
		asked := false
		for i, p := range members {
			cons := p.cons
			if v.gpuModel != "" {
				cons = s.constraints.withLabel(cons, s.gpuModelLabel, v.gpuModel)
			}
			name := p.pod.Name
			if i < len(v.coming) {
				name = comingName(p.pod)
			}
			cg.Pending[i] = core.Member{Name: name, Request: p.req, Constraints: cons,
				Namespace: p.pod.Namespace, Labels: p.pod.Labels}
			asked = asked || cons.AboutPods()
			if pp := p.pod.Spec.PreemptionPolicy; pp != nil && *pp == corev1.PreemptNever {
				cg.NoPreempt = true // the PriorityClass says so; admission copies it to the pods
			}
		}
		cg.Seal()
		c.gang, c.asked, c.gangBuilt, c.gangVersion = cg, asked, true, c.version
	}
	cg := *c.gang
	cg.Estimate = v.estimate // corrected again since it was built, when the queue's factor moved
	return &cg, c.asked
}
