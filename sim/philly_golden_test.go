package sim

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phalanx-sched/phalanx/workload"
)

// phillyGolden holds the figures of the first 20,000 jobs of the Philly
// trace on 64 nodes x 8 GPUs under the phalanx policy with the default
// options, as the simulator computed them before the changes that made it
// faster (commit ee7e3de, whose `phalanx simulate` takes 3 to 4 minutes over
// the whole trace). It is written once and never rewritten: a change that
// alters a figure changed a decision.
const phillyGolden = "testdata/philly-64x8-first20000.json"

// TestPhillyFiguresGolden runs the first 20,000 jobs of the Philly trace on
// 64 x 8 GPUs, overloaded as the whole trace is, under the phalanx policy
// (reservations, preemption and reclaim on), and compares every figure with
// phillyGolden. The whole trace takes too long for every test run; it is
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
	r, err := Run(w, PolicyPhalanx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(phillyGolden)
	if err != nil {
		t.Fatal(err)
	}
	var want Metrics
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%s: %v", phillyGolden, err)
	}
	if diff := cmp.Diff(want, r.Metrics); diff != "" {
		t.Errorf("the figures differ from %s (-golden +got); they must not change:\n%s", phillyGolden, diff)
	}
	// The floats too, as the JSON prints them.
	got, err := json.MarshalIndent(r.Metrics, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(data) {
		t.Errorf("the figures print differently from %s:\n%s", phillyGolden, got)
	}
}
