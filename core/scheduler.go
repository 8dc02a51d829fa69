package core

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Ordering is how a cycle orders gangs across queues.
type Ordering int

const (
	// FairShare visits queues by weighted dominant-resource share, least
	// served first, and gangs within a queue by priority then arrival. A gang
	// that does not fit does not block the gangs behind it.
	FairShare Ordering = iota
	// StrictFIFO visits all gangs by arrival across the whole cluster and
	// stops at the first that does not fit (basic kube-batch behaviour, kept
	// as a baseline).
	StrictFIFO
)

// Config is the validated configuration of a Scheduler.
type Config struct {
	// GPU names the accelerator resource that placement packs on, e.g.
	// "nvidia.com/gpu". Empty means "nvidia.com/gpu".
	GPU string
	// Ordering of gangs across queues.
	Ordering Ordering
	// ReserveAfter, when > 0, turns on reservation with backfill under
	// FairShare: a gang that has waited this many seconds gets nodes
	// reserved for it (reserve.go).
	ReserveAfter int64
	// ReserveAfterBacklog makes ReserveAfter a floor: a gang becomes a
	// candidate for a reservation once it has also waited as long as the
	// cluster needs to run the work waiting now (backlog). A queue's own
	// ReserveAfter is exact and ignores it (reserve.go).
	ReserveAfterBacklog bool
	// ReserveAhead, in seconds, makes a gang a candidate for a reservation
	// that long before it is due (ReserveAfter, the backlog or its queue's
	// ReserveAfter), with a reservation that starts no sooner than it is
	// due: until then its nodes take only gangs expected to end by then
	// (reserve.go). With ReserveAfterBacklog, never before it has waited
	// ReserveAfter (a queue's own ReserveAfter is reserved ahead of). 0
	// reserves for a gang only once it is due.
	ReserveAhead int64
	// Reservations is how many waiting gangs may hold reservations in one
	// cycle, taken by priority then arrival (moved back by work with
	// ReserveByWork; reserve.go); 0 means 1. Each
	// later one is computed as if the earlier ones ran as estimated, so
	// they never claim the same room at the same time.
	Reservations int
	// ReserveByWork, in seconds, orders the reservation candidates of equal
	// priority by arrival moved back by workWeight times the time their work
	// (accelerators asked times Estimate) would take all the schedulable
	// accelerators, by at most ReserveByWork: among the gangs in line for a
	// reservation, one that asks less of the cluster passes those that
	// arrived a little before it, never one that arrived more than
	// ReserveByWork before it (reserve.go). 0 takes them by arrival.
	ReserveByWork int64
	// ShortestFirst orders gangs of equal priority within a queue by their
	// Estimate, shortest first, then by arrival; gangs without an estimate
	// come after those with one, and gangs holding some members but not
	// their minimum before all. It cuts the mean wait when a queue is
	// backed up; reservation (ReserveAfter) keeps long gangs from starving.
	// The default (false) orders them by arrival only.
	ShortestFirst bool
	// Topology lists node label keys from the broadest domain level to the
	// narrowest, e.g. zone then rack; the node is the implicit narrowest
	// level. Gangs prefer the smallest domain that holds their minimum
	// (topology.go). Keys must be non-empty and distinct.
	Topology []string
	// Spread places each member on the fitting node with the most free
	// accelerators, ignoring where the rest of its gang is: the
	// least-requested scoring that kube-scheduler and Volcano use by default,
	// kept as a baseline. The default (false) is Phalanx's best fit.
	Spread bool
	// Pack places each member by best fit alone, ignoring when the nodes'
	// members end: the fitting node with the fewest free accelerators (one
	// that also holds the rest of the gang first, place.go), as Volcano's
	// binpack plugin scores nodes when it is given the accelerator as a
	// resource; kept as a baseline. The default (false) is Phalanx's best
	// fit, which among the nodes that fit prefers those whose members end
	// about when the placed member would (ends.go). Spread and Pack
	// exclude each other.
	Pack bool
	// Preemption turns on, under FairShare, preemption within a queue by
	// priority and reclaim across queues by fair share (preempt.go).
	Preemption bool
	// ReclaimAfter is how long, in seconds, a gang waits before it may
	// reclaim from other queues; 0: at once. Shares shift as gangs come and
	// go, and a gang that would soon fit anyway should not make another
	// lose its run time.
	ReclaimAfter int64
	// ReclaimYoungerOnly limits reclaim to gangs that arrived after the
	// reclaiming gang (Running.Arrival): a gang takes back only what younger
	// gangs of queues over their share got ahead of it, never the room of
	// one that waited longer, such as a big gang that finally runs.
	ReclaimYoungerOnly bool
	// PreemptMinRuntime and ReclaimMinRuntime are how long, in seconds, a
	// running gang (or elastic member) runs, counted from its earliest
	// member's start, before preemption within its queue, or reclaim by
	// another queue, may evict it; a Queue may set its own
	// (Queue.PreemptMinRuntime, Queue.ReclaimMinRuntime). 0: no minimum.
	// A job that is evicted soon after it started loses little, but a
	// minimum run time guarantees progress between evictions and keeps
	// shares that move with every arrival from bouncing room between
	// queues.
	PreemptMinRuntime, ReclaimMinRuntime int64
	// WeighLoss refuses an eviction whose victims' lost run time (member
	// seconds, each member weighted by its accelerators) exceeds what the
	// preemptor gains: its minimum's accelerators times how long it would
	// otherwise wait for the victims' room, until the latest of their
	// estimated ends (Running.Estimate). Victims without an estimate are
	// not weighed.
	WeighLoss bool
}

// MaxReservations bounds Config.Reservations.
const MaxReservations = 64

// DefaultGPU is the accelerator resource used when Config.GPU is empty.
const DefaultGPU = "nvidia.com/gpu"

// Scheduler runs cycles. It holds configuration only, no cluster state, so
// one Scheduler may serve any number of snapshots; RunCycle is safe to call
// from several goroutines on distinct snapshots.
type Scheduler struct {
	cfg Config
	// futures keeps the scratch memory of reservation searches from one
	// cycle to the next (reserve.go); it holds nothing a cycle decides on.
	futures sync.Pool
	// preemptions does the same for preemption phases (preempt.go), and
	// memory for the lists of a cycle (cycle.go).
	preemptions, memory sync.Pool
	// noPreempt is the Scheduler of the same configuration without
	// preemption that forecasts run (forecast.go), made on first use.
	noPreempt     *Scheduler
	noPreemptOnce sync.Once
	// noShortcuts turns off the preemption phase's shortcuts (preempt.go:
	// cannotPayOff, candidates), which must not change a plan; tests
	// compare. shortcuts counts, for them, the trials refused without trial
	// and the candidate lists reused.
	noShortcuts bool
	shortcuts   struct{ refused, reused atomic.Int64 }
}

// New validates cfg and returns a Scheduler.
func New(cfg Config) (*Scheduler, error) {
	if cfg.GPU == "" {
		cfg.GPU = DefaultGPU
	}
	switch cfg.Ordering {
	case FairShare, StrictFIFO:
	default:
		return nil, fmt.Errorf("core: unknown ordering %d", cfg.Ordering)
	}
	if cfg.Spread && cfg.Pack {
		return nil, fmt.Errorf("core: spread and pack exclude each other")
	}
	if cfg.Reservations < 0 || cfg.Reservations > MaxReservations {
		return nil, fmt.Errorf("core: reservations %d is out of range 0 to %d", cfg.Reservations, MaxReservations)
	}
	if cfg.ReserveAhead < 0 {
		return nil, fmt.Errorf("core: reserve-ahead %d is negative", cfg.ReserveAhead)
	}
	if cfg.ReserveByWork < 0 {
		return nil, fmt.Errorf("core: reserve-by-work %d is negative", cfg.ReserveByWork)
	}
	if cfg.ReclaimAfter < 0 {
		return nil, fmt.Errorf("core: reclaim-after %d is negative", cfg.ReclaimAfter)
	}
	if cfg.PreemptMinRuntime < 0 || cfg.ReclaimMinRuntime < 0 {
		return nil, fmt.Errorf("core: minimum run times %d and %d must not be negative", cfg.PreemptMinRuntime, cfg.ReclaimMinRuntime)
	}
	for i, key := range cfg.Topology {
		if key == "" {
			return nil, fmt.Errorf("core: topology level %d is an empty label key", i)
		}
		if j := levelOf(cfg.Topology[:i], key); j >= 0 {
			return nil, fmt.Errorf("core: topology label %q is given twice (levels %d and %d)", key, j, i)
		}
	}
	cfg.Topology = append([]string(nil), cfg.Topology...) // the caller may reuse its slice
	return &Scheduler{cfg: cfg}, nil
}
