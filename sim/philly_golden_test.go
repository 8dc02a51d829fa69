package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/workload"
)

// phillyGolden holds the figures of the first 20,000 jobs of the Philly
// trace on 64 nodes x 8 GPUs under the phalanx policy with the options that
// were its defaults then (oldDefaults), as the simulator computed them before
// the changes that made it faster (commit ee7e3de, whose `phalanx simulate`
// takes 3 to 4 minutes over the whole trace). A change that alters a figure
// changed a decision: the file is rewritten only for a change meant to. It
// was twice. First when a gang's holds came to win over reservations that
// share their nodes (before, under these options, some preemptors could not
// use the room held for them and evicted again: 3,641 members evicted, 2,897
// since; mean JCT 10h58m, 10h43m since; p99 wait of 8+ GPU jobs 17d8h,
// 19d18h since). Then when placement came to weigh when nodes come free
// (core/ends.go): 3,353 members evicted, mean JCT 11h13m, p99 wait of 8+
// GPU jobs 17d23h. Those options preempt far more than today's defaults.
const phillyGolden = "testdata/philly-64x8-first20000.json"

// TestPhillyFiguresGolden runs the first 20,000 jobs of the Philly trace on
// 64 x 8 GPUs, overloaded as the whole trace is, under the phalanx policy
// (reservations, preemption and reclaim on), and compares every figure of
// phillyGolden with what it prints (compareGoldenFigures). The whole trace takes too long for every test run; it is
// checked by hand, byte for byte, against the JSON the earlier binary
// printed:
//
//	phalanx simulate --trace ../shared/traces/philly_jobs.csv --nodes 64 --gpus-per-node 8 --policy phalanx --output json
//
// (and the same for fifo-gang and volcano, which share the core).
func TestPhillyFiguresGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("long, and single-threaded: run by `make unit`, skipped by the -short race pass")
	}
	if _, err := os.Stat(phillyTrace); err != nil {
		t.Fatalf("the Philly trace is expected beside the repository (../shared/traces): %v", err)
	}
	w, err := workload.ReadTraceFile(phillyTrace, workload.TraceOptions{Nodes: 64, GPUsPerNode: 8, MaxJobs: 20000})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(w, PolicyPhalanx, oldDefaults)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(phillyGolden)
	if err != nil {
		t.Fatal(err)
	}
	if err := compareGoldenFigures(data, w, r); err != nil {
		t.Errorf("%s: %v; the figures must not change", phillyGolden, err)
	}
}

// oldDefaults are the phalanx policy's defaults when phillyGolden was
// written: reservations after a fixed 1h (the backlog came later), for two
// gangs at once and only once a gang is due, no minimum run time before a
// gang is preempted or reclaimed, evictions not weighed against what they
// gain, and the gangs in line for a reservation by arrival alone. The golden
// file checks that the simulator's speed-ups changed nothing, so it runs
// them.
var oldDefaults = Options{ReserveAfter: 3600, FixedReserveAfter: true, ReserveAhead: -1, Reservations: 2, ReserveByWork: -1, PreemptMinRuntime: -1, ReclaimMinRuntime: -1, NoWeighLoss: true}

// goldenNulls are the keys for which the golden file, written when a figure
// over no sample was 0, has 0 where Metrics now has null.
var goldenNulls = map[string]bool{"rack_locality": true, "mean_replacement_wait_s": true, "max_replacement_wait_s": true}

// compareGoldenFigures checks that every figure of the golden JSON is the
// one r prints, byte for byte: keys of Metrics by their value as JSON
// prints it (a 0 of goldenNulls as null), and jain_fairness, which Metrics
// no longer has, against Jain's index computed from r.Jobs as the simulator
// computed it. Keys that Metrics added since are not in the golden file.
func compareGoldenFigures(golden []byte, w *workload.Workload, r *Result) error {
	var want map[string]json.RawMessage
	if err := json.Unmarshal(golden, &want); err != nil {
		return err
	}
	data, err := json.Marshal(r.Metrics)
	if err != nil {
		return err
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(data, &got); err != nil {
		return err
	}
	j, err := json.Marshal(jainOfQueues(w, r))
	if err != nil {
		return err
	}
	got["jain_fairness"] = j
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w, g := string(want[k]), string(got[k])
		if goldenNulls[k] && w == "0" {
			w = "null"
		}
		if g != w {
			diffs = append(diffs, fmt.Sprintf("%s: golden %s, got %s", k, w, g))
		}
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "; "))
	}
	return nil
}

// jainOfQueues is the end-of-run fairness the simulator reported before the
// windowed fairness replaced it: Jain's index (sum x)^2 / (n sum x^2) over
// the queues that demanded GPU time, in the order of w.Queues, of x =
// GPU-seconds received while running / GPU-seconds demanded (GPUs x
// Duration), both summed over the queue's jobs; 1 for fewer than two queues
// or when nothing was received.
func jainOfQueues(w *workload.Workload, r *Result) float64 {
	demand, received := map[string]int64{}, map[string]int64{}
	for _, o := range r.Jobs {
		demand[o.Queue] += o.GPUs * o.Duration
		received[o.Queue] += o.GPUSeconds
	}
	var xs []float64
	for _, q := range w.Queues {
		if d := demand[q.Name]; d > 0 {
			xs = append(xs, float64(received[q.Name])/float64(d))
		}
	}
	if len(xs) <= 1 {
		return 1
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}
