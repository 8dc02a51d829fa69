package sim

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/workload"
)

// By default a higher priority preempts at once: the golden scenario's
// preemption happens at 10m (high bound after the 30 s grace period). A
// minimum run time of 1h protects low, which started less than an hour
// before, so high waits for it to end.
func TestMinRuntimeDelaysPreemption(t *testing.T) {
	w := readGolden(t, "preemption") // low (1h) at 0, high at 10m, both 8 GPUs
	r := runWith(t, w, PolicyPhalanx, Options{})
	if d := cmp.Diff(map[string]span{"low": {2430, 6030}, "high": {630, 2430}}, spans(r)); d != "" {
		t.Errorf("defaults: spans (-want +got):\n%s", d)
	}
	r = runWith(t, w, PolicyPhalanx, Options{PreemptMinRuntime: 3600})
	if d := cmp.Diff(map[string]span{"low": {0, 3600}, "high": {3600, 5400}}, spans(r)); d != "" {
		t.Errorf("1h minimum: spans (-want +got):\n%s", d)
	}
	if r.Metrics.PreemptedGangs != 0 {
		t.Errorf("1h minimum: %d preemptions of a gang younger than the minimum", r.Metrics.PreemptedGangs)
	}
}

// Weighing the loss of a reclaim: queue a runs ends (8 GPUs, 1h, priority
// 1) and long (8 GPUs, 2h, priority 0, so the cheaper victim) on the two
// nodes from 0; claim (8 GPUs, 10m) of queue b, of equal weight, arrives
// at 50m, within b's deserved half. Reclaiming long would throw away 8 x
// 50m, and long would wait again at least claim's 10m, to start claim at
// most 10m sooner (8 x 10m: ends frees its node at 1h), so claim waits for
// that node.
func TestWeighLossKeepsAVictimNearItsEnd(t *testing.T) {
	w := newWorkload().
		pool("n", 2, gpus(8), cpu(32)).
		queue("a", 1).queue("b", 1).
		job("ends", at(0), runs(3600), inQueue("a"), priority(1), task("w", 1, gpus(8))).
		job("long", at(0), runs(7200), inQueue("a"), task("w", 1, gpus(8))).
		job("claim", at(3000), runs(600), inQueue("b"), task("w", 1, gpus(8))).
		build()
	r := runWith(t, w, PolicyPhalanx, Options{ReclaimMinRuntime: -1})
	if d := cmp.Diff(map[string]span{"ends": {0, 3600}, "long": {0, 7200}, "claim": {3600, 4200}}, spans(r)); d != "" {
		t.Errorf("weighed: spans (-want +got):\n%s", d)
	}
	// Unweighed, long is evicted at 50m (claim bound after the 30 s grace
	// period) and restarts from scratch on the node ends frees at 1h.
	evicted := map[string]span{"ends": {0, 3600}, "long": {3600, 10800}, "claim": {3030, 3630}}
	r = runWith(t, w, PolicyPhalanx, Options{ReclaimMinRuntime: -1, NoWeighLoss: true})
	if d := cmp.Diff(evicted, spans(r)); d != "" {
		t.Errorf("unweighed: spans (-want +got):\n%s", d)
	}
	// Preemption by priority is not weighed: the same claim in queue a,
	// of priority 10, evicts long at once under the defaults.
	w.Jobs[2].Queue, w.Jobs[2].Priority = "a", 10
	r = runWith(t, w, PolicyPhalanx, Options{})
	if d := cmp.Diff(evicted, spans(r)); d != "" {
		t.Errorf("by priority, weighed: spans (-want +got):\n%s", d)
	}
}

// No gang is evicted for a gang that then does not start: on an overloaded
// synthetic trace every preemptor is bound while the room its victims free
// is held for it (grace period + holdMargin after the eviction), under the
// defaults and under the defaults before them (no minimum run time, losses
// not weighed, reservations after 1h), which evict far more. With those,
// before holds won over reservations (core.TestHoldWinsOverReservation),
// 29 of 244 preemptors on this trace were not: the victim, just started on
// nodes reserved for it, waited again with its old arrival and got its
// reservation back, on nodes that took in the room held for the preemptor,
// which then could not use its own hold and evicted again once it expired.
func TestPreemptorsStart(t *testing.T) {
	var b bytes.Buffer
	if err := workload.GenerateTrace(&b, workload.GenOptions{Seed: 4, Jobs: 1500, GPUs: 64,
		Load: workload.LoadOverloaded, Queues: 4}); err != nil {
		t.Fatal(err)
	}
	w, err := workload.ReadTrace(&b, "gen.csv", workload.TraceOptions{Nodes: 8, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"defaults", "unrestrained"} {
		opt := Options{}
		if name == "unrestrained" {
			opt = oldDefaults // and reservations after 1h
		}
		opt.Record = true
		r := runWith(t, w, PolicyPhalanx, opt)
		type eviction struct {
			at                int64
			victim, preemptor string
		}
		var evictions []eviction
		bound := map[string][]int64{} // by job, ascending
		for _, e := range r.Events {
			switch e.Kind {
			case "evicted":
				if i := strings.LastIndex(e.Reason, " by "); i >= 0 {
					evictions = append(evictions, eviction{e.Time, e.Job, e.Reason[i+4:]})
				}
			case "bound":
				bound[e.Job] = append(bound[e.Job], e.Time)
			}
		}
		if name == "unrestrained" && len(evictions) == 0 {
			t.Fatalf("%s: no preemption: the test shows nothing", name)
		}
		next := func(job string, after int64) int64 {
			for _, b := range bound[job] {
				if b >= after {
					return b
				}
			}
			return math.MaxInt64
		}
		before, late := 0, 0
		for _, e := range evictions {
			p, v := next(e.preemptor, e.at), next(e.victim, e.at+1)
			if p > e.at+DefaultGracePeriod+holdMargin {
				late++
				t.Errorf("%s: %s evicted %s at %d s and was bound next at %d s, after its hold", name, e.preemptor, e.victim, e.at, p)
			}
			if v < p {
				before++
			}
		}
		t.Logf("%s: %d evictions; %d preemptors bound after their hold, %d victims bound again before their preemptor",
			name, len(evictions), late, before)
	}
}
