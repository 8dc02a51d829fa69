package core

// This file holds the model the core decides over. Every type is plain data:
// the caller (the Kubernetes adapter or the simulator) builds a Snapshot, the
// core reads it and never writes to it. (A caller may Seal a gang it keeps
// from cycle to cycle: the core then reads what Seal recorded.)

// TaintEffect is what a taint does to members that do not tolerate it.
type TaintEffect string

// The taint effects, as Kubernetes names them. Only NoSchedule and NoExecute
// keep a member off a node; PreferNoSchedule is a preference and is ignored
// by the filter.
const (
	NoSchedule       TaintEffect = "NoSchedule"
	PreferNoSchedule TaintEffect = "PreferNoSchedule"
	NoExecute        TaintEffect = "NoExecute"
)

// Taint repels members that do not tolerate it.
type Taint struct {
	Key    string
	Value  string
	Effect TaintEffect
}

// TolerationOperator is how a toleration matches a taint's value.
type TolerationOperator string

// Toleration operators: Equal compares the value, Exists ignores it.
const (
	TolerationEqual  TolerationOperator = "Equal"
	TolerationExists TolerationOperator = "Exists"
)

// Toleration lets a member onto nodes with a matching taint. An empty Key
// with operator Exists tolerates every taint; an empty Effect matches every
// effect.
type Toleration struct {
	Key      string
	Operator TolerationOperator
	Value    string
	Effect   TaintEffect
}

// SelectorOperator is the operator of a node affinity requirement.
type SelectorOperator string

// The node affinity operators of Kubernetes.
const (
	SelectorIn           SelectorOperator = "In"
	SelectorNotIn        SelectorOperator = "NotIn"
	SelectorExists       SelectorOperator = "Exists"
	SelectorDoesNotExist SelectorOperator = "DoesNotExist"
	SelectorGt           SelectorOperator = "Gt"
	SelectorLt           SelectorOperator = "Lt"
)

// Requirement is one node-label expression of a NodeSelectorTerm.
type Requirement struct {
	Key      string
	Operator SelectorOperator
	Values   []string
}

// NodeSelectorTerm holds if all of its requirements hold.
type NodeSelectorTerm struct {
	MatchExpressions []Requirement
}

// Constraints restrict which nodes a member may run on. Members built from
// the same template should share one *Constraints: the core remembers, per
// cycle, which (request, constraints) shapes found no node, keyed on the
// pointer.
type Constraints struct {
	// NodeSelector labels must all be present on the node with these values.
	NodeSelector map[string]string
	// Affinity is required node affinity: at least one term must hold.
	// Empty means no requirement.
	Affinity []NodeSelectorTerm
	// Tolerations let the member onto tainted nodes.
	Tolerations []Toleration
	// VolumeAffinity holds the required node affinity of the member's bound
	// PersistentVolumes, one entry a volume: each entry must hold (at least
	// one of its terms), in addition to Affinity.
	VolumeAffinity [][]NodeSelectorTerm
	// PodAffinity terms must all hold: each requires a pod it selects in the
	// node's domain of its topology key (podconstraints.go).
	PodAffinity []PodAffinityTerm
	// PodAntiAffinity terms must all hold: each forbids the node's domain of
	// its topology key when a pod it selects is there. They are also kept
	// by the pods that come after the member (symmetry).
	PodAntiAffinity []PodAffinityTerm
	// Spread constraints (whenUnsatisfiable: DoNotSchedule) must all hold.
	Spread []SpreadConstraint
	// HostPorts the member's containers bind on the node.
	HostPorts []HostPort
}

// LabelSelector selects pods by their labels, as metav1.LabelSelector: every
// MatchLabels pair and every expression must hold. The expressions use In,
// NotIn, Exists and DoesNotExist. An empty selector selects every pod; a
// nil *LabelSelector selects none.
type LabelSelector struct {
	MatchLabels      map[string]string
	MatchExpressions []Requirement
}

// PodAffinityTerm names the pods a member must be near (affinity) or away
// from (anti-affinity): those Selector selects in the namespaces the term
// covers, on nodes sharing the value of TopologyKey.
type PodAffinityTerm struct {
	Selector *LabelSelector
	// Namespaces the term covers, with those NamespaceSelector selects
	// (Snapshot.Namespaces gives their labels). Both empty means the
	// namespace of the member that declares the term.
	Namespaces        []string
	NamespaceSelector *LabelSelector
	TopologyKey       string
}

// SpreadConstraint is a topology spread constraint with whenUnsatisfiable
// DoNotSchedule. Pods are counted in the member's own namespace; a caller
// folds matchLabelKeys into Selector.
type SpreadConstraint struct {
	MaxSkew     int32
	TopologyKey string
	Selector    *LabelSelector
	// MinDomains, when above the number of eligible domains, makes the
	// global minimum 0.
	MinDomains int32
	// IgnoreNodeAffinity counts domains of nodes the member's nodeSelector
	// and node affinity refuse (nodeAffinityPolicy: Ignore); by default
	// they are not counted.
	IgnoreNodeAffinity bool
	// HonorTaints leaves out domains of nodes whose taints the member does
	// not tolerate (nodeTaintsPolicy: Honor); by default they are counted.
	HonorTaints bool
}

// HostPort is a port a container binds on its node's network.
type HostPort struct {
	Port     int32
	Protocol string // TCP when empty
	IP       string // every address when empty or 0.0.0.0
}

// Pod is a pod bound to a node, whoever placed it: pod affinity, spread and
// host ports count it.
type Pod struct {
	// Node indexes Snapshot.Nodes.
	Node      int
	Namespace string
	Labels    map[string]string
	// Constraints of the pod, nil when it has none: only its anti-affinity
	// (which keeps others away) and its host ports (taken) are read.
	Constraints *Constraints
}

// Node is a machine members can be placed on.
type Node struct {
	Name        string
	Allocatable Vector
	// Used is what is already requested on the node by every pod bound to it,
	// whoever scheduled it.
	Used          Vector
	Labels        map[string]string
	Taints        []Taint
	Unschedulable bool
}

// Queue is a tenant's share of the cluster.
type Queue struct {
	Name string
	// Weight is the queue's relative share; values below 1 count as 1,
	// values above 2^20 as 2^20.
	Weight int64
	// Capability caps what the queue's gangs may hold; Unlimited dimensions
	// are not capped. The zero Vector means the queue may hold nothing.
	Capability Vector
	// Guarantee is what the queue deserves whatever the weights say.
	Guarantee Vector
	// Allocated is what the queue's bound members hold now.
	Allocated Vector
	// Closed queues accept no new placements.
	Closed bool
	// ReserveAfter, when > 0, overrides Config.ReserveAfter for the gangs of
	// this queue.
	ReserveAfter int64
	// NoReclaim keeps other queues from reclaiming what this queue's gangs
	// hold, even beyond its deserved share (preempt.go).
	NoReclaim bool
	// PreemptMinRuntime and ReclaimMinRuntime, when > 0, override
	// Config.PreemptMinRuntime and Config.ReclaimMinRuntime for the running
	// gangs of this queue; < 0: no minimum for them.
	PreemptMinRuntime, ReclaimMinRuntime int64
	// StrictOrder runs the queue's gangs strictly by priority then arrival:
	// the first that does not fit blocks the later ones, and nodes are
	// reserved for it at once, without waiting for the reservation
	// threshold (reserve.go).
	StrictOrder bool
	// WorkFactor multiplies the estimates of the queue's waiting gangs
	// where the reservation threshold sums them (the backlog, reserve.go),
	// and, when above 1, where backfill asks whether a gang ends before a
	// reservation starts (backfillEstimate):
	// how much its gangs ran, in sum, against their estimates (WorkFactor,
	// estimates.go). 0 counts as 1. It applies to the gangs whose estimate
	// was declared (Gang.EstimateDeclared), the only ones it is learned
	// from.
	WorkFactor float64
	// OverrunFactor multiplies the estimate of a gang of the queue that
	// declared one where backfill asks whether it ends before a
	// reservation starts (backfillEstimate): how far past their corrected
	// estimates the queue's gangs run, nine times in ten (OverrunFactor,
	// estimates.go). 1, or 0, when they keep to them. Above e, the
	// backlog does not count on the expected ends of the queue's running
	// members (untrustedOverrun, reserve.go).
	OverrunFactor float64
}

// Member is one pod of a gang that is waiting for a node.
type Member struct {
	Name        string
	Request     Vector
	Constraints *Constraints
	// Namespace and Labels of the member's pod, for the pod affinity and
	// spread of others and its own.
	Namespace string
	Labels    map[string]string
}

// Gang is a group of members placed all-or-nothing: the first MinMember
// members (counting those already Bound) are placed in one transaction or not
// at all; members beyond that are elastic and placed one by one.
type Gang struct {
	// ID is unique in the snapshot; plans and diagnostics name gangs by it.
	ID       string
	Queue    string
	Priority int32
	// MinMember is how many members must run together. Values below 1 make
	// the gang invalid; the core reports it and places nothing.
	MinMember int
	// Arrival orders gangs of equal priority: earlier first, then by ID.
	Arrival int64
	// Bound counts members that already hold a node (bound, running or
	// finished); they count toward MinMember.
	Bound int
	// Pending are the members waiting for a node, in the order they should
	// be placed.
	Pending []Member
	// Invalid, when not empty, is why the gang's spec cannot be scheduled; the
	// core reports it as is and places nothing.
	Invalid string
	// Unsupported, when not empty, names a constraint of a member that the
	// scheduler does not implement; the gang waits with
	// ReasonUnsupportedConstraint and this text, and nothing is placed.
	Unsupported string
	// RequiredLevel, when not empty, is a label key of Config.Topology: the
	// gang's minimum must lie within one domain of that level (topology.go)
	// or the gang waits. A key that is not a level makes the gang invalid.
	RequiredLevel string
	// Estimate is how long the gang is expected to run once started, in
	// seconds; 0 means unknown. Only gangs with an estimate may backfill
	// nodes reserved for another gang (reserve.go).
	Estimate int64
	// EstimateDeclared: Estimate is one the user declared (corrected by
	// the queue's EstimateFactor), not one the driver derived otherwise (a
	// time limit, the queue's past run times). Only such estimates are
	// multiplied by the queue's WorkFactor, which is learned from them.
	EstimateDeclared bool
	// NoPreempt: the gang never evicts others to make room for itself
	// (Kubernetes' preemptionPolicy: Never).
	NoPreempt bool

	// sealed is what Seal recorded (sealed.ok), kept in the gang for the
	// cache lines it shares with it.
	sealed gangSummary
}

// Seal records what cycles derive from the gang's members alone (their
// total request, the total of the minimum, whether the minimum's members
// are alike, whether a request is negative), so that cycle after cycle need
// not derive it again. A caller that keeps a gang from one snapshot to the
// next calls Seal after changing its Pending, Bound, MinMember or
// RequiredLevel; cycles ignore a summary whose member count, first member's
// address, bound, minimum or required level are not the gang's, and derive
// what they need then. Changing a member in place after Seal without
// calling it again is an error that cycles cannot see; SealHolds tells it
// in the callers' tests.
func (g *Gang) Seal() {
	s := &g.sealed
	*s = gangSummary{ok: true, pending: len(g.Pending), bound: g.Bound, minMember: g.MinMember, required: g.RequiredLevel}
	if len(g.Pending) > 0 {
		s.first = &g.Pending[0]
	}
	s.demand, s.negative = demandOf(g.Pending), negativeRequest(g.Pending)
	if need := g.MinMember - g.Bound; g.MinMember >= 1 && need > 0 && need <= len(g.Pending) {
		_, s.want = minimumOf(g)
		s.sig, s.uniform = signatureOf(g.Pending[:need], g.RequiredLevel)
		s.minimum = true
	}
}

// SealHolds reports whether what Seal recorded of g, if cycles still use
// it, is what Seal would record now: false when a member was changed in
// place after Seal without calling it again, the error cycles cannot see.
// Tests of callers that keep gangs from one snapshot to the next check the
// contract with it.
func (g *Gang) SealHolds() bool {
	s := g.summary()
	if s == nil {
		return true // not used: cycles derive what they need
	}
	fresh := *g // the same members, so the same first member's address
	fresh.Seal()
	return fresh.sealed == *s
}

// gangSummary is what Seal records of a gang.
type gangSummary struct {
	ok                        bool
	pending, bound, minMember int
	first                     *Member
	required                  string
	// negative is validate's text for the first negative request, if any.
	negative string
	// demand is the total request of the pending members, pod slots
	// excluded.
	demand Vector
	// With minimum, want is minimumOf's total, and sig and uniform are
	// signatureOf's of the members the minimum needs.
	minimum bool
	want    Vector
	sig     gangSignature
	uniform bool
}

// summary returns what Seal recorded of g if it is still g's, or nil.
func (g *Gang) summary() *gangSummary {
	s := &g.sealed
	if !s.ok || s.pending != len(g.Pending) || s.bound != g.Bound || s.minMember != g.MinMember ||
		s.required != g.RequiredLevel || len(g.Pending) > 0 && s.first != &g.Pending[0] {
		return nil
	}
	return s
}

// wantOf is minimumOf(g)'s total. g must be valid (validate).
func wantOf(g *Gang) Vector {
	if s := g.summary(); s != nil && s.minimum {
		return s.want
	}
	_, want := minimumOf(g)
	return want
}

// Release is what a running member will give back to its node when it is
// expected to finish: the cycle's reservations count on it.
type Release struct {
	// Node indexes Snapshot.Nodes.
	Node int
	// Amount is the member's request, its pod slot included.
	Amount Vector
	// At is when the member is expected to finish; 0 means unknown, and such
	// a release is never counted on.
	At int64
	// Queue is the queue of the member's gang.
	Queue string
}

// Running is a gang with members holding nodes: the victims preemption and
// reclaim choose from (preempt.go).
type Running struct {
	// Gang is the gang's ID; the same gang may also be in Snapshot.Gangs if
	// it has members pending.
	Gang      string
	Queue     string
	Priority  int32
	MinMember int
	// Arrival is when the gang arrived, as Gang.Arrival.
	Arrival int64
	// Estimate is how long each member is expected to run from its Start,
	// as Gang.Estimate; 0 means unknown. Only Config.WeighLoss reads it.
	Estimate int64
	// Members hold nodes now, terminating ones included.
	Members []Placed
}

// Placed is a member holding a node.
type Placed struct {
	Name string
	// Node indexes Snapshot.Nodes.
	Node int
	// Request is the member's request, without its pod slot.
	Request Vector
	// Start is when the member started running; the run time an eviction
	// loses is counted from it.
	Start int64
	// Terminating members are being evicted: they still use their node
	// (Node.Used counts them) but will free it soon. They are never chosen
	// as victims again, and preemption counts on what they free.
	Terminating bool
	// Unevictable members are never victims, nor is a whole gang that has
	// one; e.g. the caller's eviction was refused and it waits before trying
	// again.
	Unevictable bool
}

// Hold keeps resources on a node for one gang: no other gang may use them.
// A hold is made for a preemptor whose victims are terminating (Plan.Holds),
// or by the caller for the replacement of a member that failed while its gang
// was running. The caller keeps a hold for as long as it should last and
// passes it in every snapshot; the core applies it as given, clipped to
// what is free on the node.
type Hold struct {
	Gang string
	// Node indexes Snapshot.Nodes.
	Node   int
	Amount Vector
}

// Snapshot is the state one cycle decides over. The core only reads it.
type Snapshot struct {
	Resources ResourceNames
	Nodes     []Node
	Queues    []Queue
	// Gangs with pending members. Callers that keep them in arrival order
	// save the core a sort.
	Gangs []*Gang
	// Releases of running members, in any order; used only when
	// reservations are on (Config.ReserveAfter), and by placement, which
	// prefers the nodes whose expected free time a member's end pushes
	// back least (ends.go).
	Releases []Release
	// Running gangs, in any order; used only when preemption is on
	// (Config.Preemption).
	Running []Running
	// Holds in force.
	Holds []Hold
	// Pods bound to nodes, whoever placed them. Needed only when some pod
	// declares pod affinity, anti-affinity, spread or host ports; a caller
	// may leave it empty otherwise.
	Pods []Pod
	// Namespaces gives the labels of each namespace, for the
	// NamespaceSelector of pod affinity terms.
	Namespaces map[string]map[string]string
}
