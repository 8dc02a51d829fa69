package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/phalanx-sched/phalanx/core"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Preemption, reclaim and holds, as the adapter carries them out.
//
// The core chooses victims among the running members of our gangs
// (Snapshot.Running, built here) and returns evictions; the adapter marks
// each victim as evicting, so the next snapshots count it as terminating
// even before the informer reports its deletionTimestamp, and posts an
// Eviction (policy/v1) for it, with the pod's own termination grace period
// unless --preemption-grace-period caps it. A refused eviction (a
// PodDisruptionBudget, say) unmarks the victim, and the core may choose it
// again after evictionRetry; meanwhile it chooses others or waits.
//
// Holds keep room on a node for one gang:
//   - for a preemptor while its victims terminate (Plan.Holds), until it is
//     placed or the grace period plus a minute has passed;
//   - for the replacement of a member that failed or was deleted while its
//     gang ran (Kubernetes' own scheduler would give the room to whoever
//     comes first, and the gang could wait forever for it), for
//     --hold-failed-member, until a member of the gang is bound again;
//   - for a member to come (an MPIJob's launcher, which mpi-operator
//     creates once the workers are Ready, launcherAfterWorkers; a
//     LeaderWorkerSet group's workers, created once the leader is Ready or
//     bound, workersAfterLeader; the followers of a JobSet's jobs with
//     exclusive placement, admitted once their leader is bound,
//     followersAfterLeaders), on the node the cycle that placed the
//     gang's first members found for it, until a member of the gang is
//     bound on that node, the gang holds all its members, none of them
//     holds a node any more, or comingHoldFor has passed.
// The store drops a gang's holds when the gang is gone.

// heldRoom is one hold the store keeps.
type heldRoom struct {
	node   string
	amount core.Vector
	until  int64 // Unix seconds
	// failed: kept for the replacement of a failed member, and spent by the
	// next bind of a member of the gang.
	failed bool
	// whole, when above 0, says the hold is kept for a member the gang's
	// workload creates once the gang runs (comingRoom), until whole
	// members hold nodes.
	whole int
}

// comingHoldFor bounds how long the room of members to come is held once
// the gang's first members are placed: their workload creates them when
// those are Ready, which pulling a large image may take minutes; members
// that never get Ready must not keep the room for ever.
const comingHoldFor = time.Hour

// comingRoom keeps room on node for a member to come of gang, which the
// cycle that placed the gang found there, until whole members hold nodes.
func (s *Store) comingRoom(gang, node string, amount core.Vector, whole int) {
	s.holds[gang] = append(s.holds[gang], heldRoom{node: node, amount: amount,
		until: s.now().Add(comingHoldFor).Unix(), whole: whole})
}

// holdingNodes counts g's members that hold nodes. A hold for members to
// come, kept until whole members hold nodes, is no longer needed once that
// many do, or none.
func holdingNodes(g *gangInfo) int {
	n := 0
	for _, p := range g.members {
		if p.holds() {
			n++
		}
	}
	return n
}

// lostMember records, when a pod of one of our gangs frees a node without
// having succeeded or been evicted by us, what it held, so that the
// replacement can have it back.
func (s *Store) lostMember(p *podInfo, node string) {
	if s.holdFailed <= 0 || p.gang == "" || s.evicting[p.pod.UID] {
		return
	}
	g := s.gangs[p.gang]
	if g == nil {
		return // the whole gang is gone: nothing to come back for
	}
	v := s.view(g)
	if v.bound+1 < v.minMember {
		return // the gang was not running whole: nothing to keep running
	}
	s.holds[p.gang] = append(s.holds[p.gang], heldRoom{node: node, amount: p.slot(),
		until: s.now().Unix() + s.holdFailed, failed: true})
}

// MarkEvicting records that the pod is being evicted by us.
func (s *Store) MarkEvicting(uid types.UID) {
	s.evicting[uid] = true
	s.touchPod(uid)
}

// evictionRetry is how long a pod whose eviction was refused (by a
// PodDisruptionBudget, say) is not chosen as a victim again.
const evictionRetry = 10 * time.Second

// EvictionRefused undoes MarkEvicting after a refused eviction, and keeps
// the pod from being chosen again for evictionRetry: without that, every
// cycle would ask again at once. why, the refusal, is what the preemptor's
// status says until it runs.
func (s *Store) EvictionRefused(uid types.UID, preemptor, why string) {
	delete(s.evicting, uid)
	if s.pods[uid] != nil { // else it went meanwhile: nothing to keep
		s.refused[uid] = s.now().Add(evictionRetry).Unix()
		s.touchPod(uid)
	}
	s.refusals[preemptor] = why
}

// Refusal returns why the latest eviction for the gang was refused, if one
// was since it last reached its minimum.
func (s *Store) Refusal(gang string) string { return s.refusals[gang] }

// ForgetRefusal drops the gang's refusal: it was placed, or is gone.
func (s *Store) ForgetRefusal(gang string) { delete(s.refusals, gang) }

// SetPlanHolds replaces every preemptor's holds by those of the latest
// plan, by gang key: a gang no longer waiting for victims holds nothing for
// them.
func (s *Store) SetPlanHolds(byGang map[string][]heldRoom) {
	for gang := range byGang {
		if s.holds[gang] == nil {
			s.holds[gang] = nil // visited below
		}
	}
	for gang, hs := range s.holds {
		kept := append(lasting(hs), byGang[gang]...)
		if len(kept) == 0 {
			delete(s.holds, gang)
		} else {
			s.holds[gang] = kept
		}
	}
}

// Placed drops holds a gang no longer needs: all of them once it reached
// its minimum (but those kept for failed members and members to come), and
// per member bound, the hold for a member to come on the node of the bind
// if there is one, else one hold for a failed member (on that node if
// there is one there).
func (s *Store) Placed(gang string, boundOn []string, satisfied bool) {
	hs := s.holds[gang]
	if len(hs) == 0 {
		return
	}
	if satisfied {
		hs = lasting(hs)
	}
	for _, node := range boundOn {
		// A bind on a node held for a member to come spends that hold:
		// the member came, or another member of the gang was placed there,
		// in its room or beside it.
		i := slices.IndexFunc(hs, func(h heldRoom) bool { return h.whole > 0 && h.node == node })
		if i < 0 {
			for j, h := range hs {
				if h.failed && (i < 0 || h.node == node) {
					i = j
				}
			}
		}
		if i >= 0 {
			hs = append(hs[:i], hs[i+1:]...)
		}
	}
	if len(hs) == 0 {
		delete(s.holds, gang)
		return
	}
	s.holds[gang] = hs
}

// snapshotHolds drops expired holds and those of gangs that are gone, and
// returns the rest for the core, in a stable order.
func (s *Store) snapshotHolds(order []string, now int64) []core.Hold {
	var out []core.Hold
	keys := make([]string, 0, len(s.holds))
	for key := range s.holds {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if s.gangs[key] == nil {
			delete(s.holds, key)
			continue
		}
		kept := s.holds[key][:0]
		holding := -1 // members of the gang holding nodes, counted for the first hold to come
		for _, h := range s.holds[key] {
			if h.whole > 0 && holding < 0 {
				holding = holdingNodes(s.gangs[key])
			}
			if h.until <= now || h.whole > 0 && (holding == 0 || holding >= h.whole) {
				continue
			}
			kept = append(kept, h)
			n := sort.SearchStrings(order, h.node)
			if n < len(order) && order[n] == h.node {
				out = append(out, core.Hold{Gang: key, Node: n, Amount: h.amount})
			}
		}
		if len(kept) == 0 {
			delete(s.holds, key)
		} else {
			s.holds[key] = kept
		}
	}
	return out
}

// running returns g's members that hold nodes, for the core's choice of
// victims; bind in flight are left out (they cannot be evicted yet).
func (s *Store) running(g *gangInfo, v *gangView, order []string, now int64) (core.Running, bool) {
	r := core.Running{Gang: g.key, Queue: v.queue, Priority: v.priority, MinMember: v.minMember, Arrival: v.arrival}
	if !v.estimateFromHistory {
		r.Estimate = v.estimate // a declared estimate; a guess from the queue's history is not weighed
	}
	for _, p := range g.members {
		if !p.holds() || p.assumed {
			continue
		}
		n := sort.SearchStrings(order, p.node)
		if n == len(order) || order[n] != p.node {
			continue
		}
		r.Members = append(r.Members, core.Placed{Name: p.pod.Name, Node: n, Request: p.req, Start: p.started(),
			Terminating: p.pod.DeletionTimestamp != nil || s.evicting[p.pod.UID],
			Unevictable: s.refused[p.pod.UID] > now})
	}
	sort.Slice(r.Members, func(i, j int) bool { return r.Members[i].Name < r.Members[j].Name })
	return r, len(r.Members) > 0
}

// carryOut evicts the plan's victims and keeps its holds.
func (s *Scheduler) carryOut(ctx context.Context, plan core.Plan, views map[string]*gangView, now int64) {
	byGang := map[string][]heldRoom{}
	until := now + int64(s.opts.PreemptionGracePeriod.Seconds()) + 60
	if s.opts.PreemptionGracePeriod <= 0 {
		until = now + defaultGraceSeconds + 60
	}
	order := s.store.sortedNodes()
	for _, h := range plan.Holds {
		if h.Node >= 0 && h.Node < len(order) {
			byGang[h.Gang] = append(byGang[h.Gang], heldRoom{node: order[h.Node], amount: h.Amount, until: until})
		}
	}
	s.store.SetPlanHolds(byGang)
	for _, e := range plan.Evictions {
		v := views[e.Gang]
		if v == nil {
			continue
		}
		var victim *podInfo
		for _, p := range v.info.members {
			if p.pod.Name == e.Member {
				victim = p
			}
		}
		if victim == nil || victim.pod.Spec.NodeName != e.Node {
			continue
		}
		s.store.MarkEvicting(victim.pod.UID)
		s.evict(ctx, victim, v.queue, now, e)
	}
}

// defaultGraceSeconds is Kubernetes' default termination grace period, the
// time a hold for a preemptor counts on when pods keep their own.
const defaultGraceSeconds = 30

// evict posts the eviction of victim, a member of a gang of queue, for
// preemption or reclaim; once it is accepted, the queue's evicted pods and
// the GPU time the victim had run (now being Unix seconds) are counted.
func (s *Scheduler) evict(ctx context.Context, victim *podInfo, queue string, now int64, e core.Eviction) {
	pod := victim.pod
	kind, why := "preempt", fmt.Sprintf("Preempted on %s for gang %s (rule: preemption within a queue; priority %d over this gang's %d)",
		e.Node, e.Preemptor, e.PreemptorPriority, e.VictimPriority)
	if e.Reclaim {
		kind, why = "reclaim", fmt.Sprintf("Reclaimed on %s for gang %s (rule: fair-share reclaim; this pod's queue holds more than its deserved share)",
			e.Node, e.Preemptor)
	}
	var grace *int64
	if g := s.opts.PreemptionGracePeriod; g > 0 {
		secs := int64(g.Seconds())
		if own := pod.Spec.TerminationGracePeriodSeconds; own == nil || *own > secs {
			grace = &secs
		}
	}
	var ran float64
	if start := victim.started(); start > 0 && now > start {
		ran = float64(now - start)
	}
	gpus := podRequests(pod)[corev1.ResourceName(s.opts.GPU)]
	gpuSeconds := gpus.AsApproximateFloat64() * ran
	s.postEviction(ctx, pod, kind, e.Preemptor, grace, corev1.EventTypeNormal, "Preempted", why, func() {
		s.send(ctx, func() {
			if !s.store.hasQueue(queue) {
				return // deleted meanwhile: its series went with it (queueMetrics)
			}
			s.metrics.QueueEvictedPods.WithLabelValues(queue, kind).Inc()
			s.metrics.QueueGPUSecondsLost.WithLabelValues(queue).Add(gpuSeconds)
		})
	})
}

// postEviction posts the Eviction (policy/v1) of pod off the loop, with the
// grace period given or the pod's own, and records an Event of reason and
// message on it once the eviction is accepted. A refused eviction is
// counted, logged, and handed to the loop (EvictionRefused) for gang, the
// gang the room was for, whose status then says why.
//
// accepted, if not nil, runs (on a call worker) once the eviction is
// accepted; not when the pod is already gone.
func (s *Scheduler) postEviction(ctx context.Context, pod *corev1.Pod, kind, gang string, grace *int64, eventType, reason, message string,
	accepted func()) {
	s.dispatch(func() {
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
		if grace != nil {
			ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: grace}
		}
		err := s.kube.CoreV1().Pods(pod.Namespace).EvictV1(ctx, ev)
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			// The pod went by itself (it ended, or was deleted): its room is
			// free, and no run time was thrown away for the gang.
			s.metrics.Evictions.WithLabelValues(kind, "gone").Inc()
			return
		case ctx.Err() != nil:
			return
		default:
			s.metrics.Evictions.WithLabelValues(kind, "error").Inc()
			klog.FromContext(ctx).Error(err, "Eviction refused; tried again in a later cycle", "pod", klog.KObj(pod), "kind", kind, "for", gang)
			why := fmt.Sprintf("the eviction of %s/%s was refused (%v); it is tried again after %v", pod.Namespace, pod.Name, err, evictionRetry)
			s.send(ctx, func() { s.store.EvictionRefused(pod.UID, gang, why) })
			return
		}
		s.metrics.Evictions.WithLabelValues(kind, "ok").Inc()
		if accepted != nil {
			accepted()
		}
		if s.recorder != nil {
			s.recorder.Event(pod, eventType, reason, message)
		}
	})
}

// lasting keeps, in place, the holds for failed members' replacements and
// for members to come: those that outlive the preemptions of a plan and
// the gang's reaching its minimum.
func lasting(hs []heldRoom) []heldRoom {
	kept := hs[:0]
	for _, h := range hs {
		if h.failed || h.whole > 0 {
			kept = append(kept, h)
		}
	}
	return kept
}
