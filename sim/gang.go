package sim

// This file runs the gang policies ("phalanx", "fifo-gang") through the core.
// The simulator keeps one core.Snapshot for the whole run and updates it
// incrementally: the state writes node Used and queue Allocated as members
// bind and free, and this file keeps Snapshot.Gangs, the gangs that still
// have pending members, in arrival order (Submit, then ID, the core's own
// tie rule, so the core never has to sort). Each cycle hands the snapshot to
// RunCycle, checks every bind of the plan against the snapshot (known gang,
// member and node, admitted by the node's filters, fits its free resources)
// and applies it through the state; a bad plan aborts the run with an error.
// A gang leaves the list when its last member is bound or when its job
// completes with elastic members still pending. The diagnostics of the last
// cycle name why each never-started job waits.

import (
	"fmt"
	"sort"

	"github.com/phalanx-sched/phalanx/core"
)

// cycler is the part of *core.Scheduler the gang policies use; tests
// substitute a fake.
type cycler interface {
	RunCycle(snap *core.Snapshot, now int64) (core.Plan, core.Diagnostics)
}

// gangEntry is one pending gang and its job.
type gangEntry struct {
	gang core.Gang
	job  *job
	// ix[k] is the job member of gang.Pending[k]; -1 marks it bound in the
	// plan being applied.
	ix     []int32
	cursor int
	// touched is set while the plan being applied binds members of the gang.
	touched bool
}

type gangPolicy struct {
	s       *state
	sched   cycler
	entries []*gangEntry
	byID    map[string]*gangEntry
	dirty   bool
	last    core.Diagnostics
	reasons map[string]string
	touched []*gangEntry
	said    map[string]string // last reason recorded per gang
	reserve bool              // the core reserves: keep Snapshot.Releases
}

func newGangPolicy(s *state, sched cycler) *gangPolicy {
	return &gangPolicy{s: s, sched: sched, byID: make(map[string]*gangEntry)}
}

func (g *gangPolicy) arrive(jobs []*job) {
	batch := append([]*job(nil), jobs...)
	sort.SliceStable(batch, func(a, b int) bool { return batch[a].spec.ID < batch[b].spec.ID })
	for _, j := range batch {
		if len(j.members) == 0 {
			continue
		}
		e := &gangEntry{job: j, ix: make([]int32, len(j.members))}
		e.gang = core.Gang{
			ID:        j.spec.ID,
			Queue:     j.spec.Queue,
			Priority:  j.spec.Priority,
			MinMember: j.spec.MinMember,
			Arrival:   j.spec.Submit,
			Estimate:  j.spec.Duration,
			Pending:   make([]core.Member, len(j.members)),

			RequiredLevel: j.spec.RequiredTopology,
		}
		for m := range j.members {
			mem := &j.members[m]
			e.gang.Pending[m] = core.Member{Name: mem.name, Request: mem.req, Constraints: mem.cons}
			e.ix[m] = int32(m)
		}
		g.entries = append(g.entries, e)
		g.s.snap.Gangs = append(g.s.snap.Gangs, &e.gang)
		g.byID[e.gang.ID] = e
	}
}

func (g *gangPolicy) completed(j *job) {
	if e, ok := g.byID[j.spec.ID]; ok {
		e.gang.Pending, e.ix = nil, nil
		g.dirty = true
	}
}

// compact drops the gangs with no pending member, keeping the order.
func (g *gangPolicy) compact() {
	if !g.dirty {
		return
	}
	g.dirty = false
	k := 0
	for _, e := range g.entries {
		if len(e.gang.Pending) == 0 {
			delete(g.byID, e.gang.ID)
			continue
		}
		g.entries[k] = e
		g.s.snap.Gangs[k] = &e.gang
		k++
	}
	clear(g.entries[k:])
	clear(g.s.snap.Gangs[k:])
	g.entries = g.entries[:k]
	g.s.snap.Gangs = g.s.snap.Gangs[:k]
}

func (g *gangPolicy) cycle() error {
	g.compact()
	if len(g.entries) == 0 {
		return nil
	}
	if g.reserve {
		g.s.snap.Releases = g.s.releases(g.s.snap.Releases[:0])
	}
	plan, diag := g.sched.RunCycle(&g.s.snap, g.s.now)
	g.last = diag
	g.recordReasons(diag)
	var e *gangEntry
	for _, b := range plan.Binds {
		if e == nil || e.gang.ID != b.Gang {
			var ok bool
			if e, ok = g.byID[b.Gang]; !ok {
				return fmt.Errorf("sim: at %d s the plan binds unknown gang %q", g.s.now, b.Gang)
			}
			if !e.touched {
				e.touched = true
				g.touched = append(g.touched, e)
			}
		}
		if err := g.apply(e, b); err != nil {
			return err
		}
	}
	for _, e := range g.touched {
		k := 0
		for i, x := range e.ix {
			if x >= 0 {
				e.gang.Pending[k], e.ix[k] = e.gang.Pending[i], x
				k++
			}
		}
		clear(e.gang.Pending[k:])
		e.gang.Bound += len(e.ix) - k
		e.gang.Pending, e.ix = e.gang.Pending[:k], e.ix[:k]
		e.cursor, e.touched = 0, false
		if k == 0 {
			g.dirty = true
		}
	}
	clear(g.touched)
	g.touched = g.touched[:0]
	return nil
}

// recordReasons adds a "waiting" event each time a gang's reason to wait
// changes, when the run is recorded.
func (g *gangPolicy) recordReasons(diag core.Diagnostics) {
	if !g.s.record {
		return
	}
	if g.said == nil {
		g.said = make(map[string]string)
	}
	for _, st := range diag.Pending {
		msg := st.Message()
		if g.said[st.Gang] == msg {
			continue
		}
		g.said[st.Gang] = msg
		g.s.events = append(g.s.events, PodEvent{Time: g.s.now, Job: st.Gang, Kind: "waiting", Reason: msg})
	}
}

// apply checks one bind against the snapshot and carries it out.
func (g *gangPolicy) apply(e *gangEntry, b core.Bind) error {
	s := g.s
	n, ok := s.nodeIdx[b.Node]
	if !ok {
		return fmt.Errorf("sim: at %d s the plan binds %s to unknown node %q", s.now, b.Member, b.Node)
	}
	// Binds usually come in pending order: search from where the last one
	// was found, wrapping around.
	k := -1
	for i := range e.gang.Pending {
		at := (e.cursor + i) % len(e.gang.Pending)
		if e.ix[at] >= 0 && e.gang.Pending[at].Name == b.Member {
			k = at
			break
		}
	}
	if k < 0 {
		return fmt.Errorf("sim: at %d s the plan binds %q of gang %q, which is not pending", s.now, b.Member, b.Gang)
	}
	e.cursor = k + 1
	m := int(e.ix[k])
	e.ix[k] = -1
	mem := &e.job.members[m]
	node := &s.snap.Nodes[n]
	if !core.Admits(node, mem.cons) {
		return fmt.Errorf("sim: at %d s the plan binds %q to node %q, which its constraints exclude", s.now, b.Member, b.Node)
	}
	if !fitsNode(node, mem.req) {
		return fmt.Errorf("sim: at %d s the plan binds %q to node %q, which has only %s free",
			s.now, b.Member, b.Node, s.names.Format(node.Allocatable.Sub(node.Used)))
	}
	s.bind(e.job, m, n)
	return nil
}

func (g *gangPolicy) reason(j *job) string {
	if len(j.members) == 0 {
		return "job has no members"
	}
	if g.reasons == nil {
		g.reasons = make(map[string]string, len(g.last.Pending))
		for _, st := range g.last.Pending {
			msg := st.Message()
			if msg == "" {
				msg = string(st.Reason)
			}
			g.reasons[st.Gang] = msg
		}
	}
	if msg, ok := g.reasons[j.spec.ID]; ok {
		return msg
	}
	return "no diagnostic from the scheduler"
}

// fitsNode reports whether req plus one pod fits the free resources of n.
func fitsNode(n *core.Node, req core.Vector) bool {
	req[core.Pods]++
	return req.Fits(n.Allocatable.Sub(n.Used))
}
