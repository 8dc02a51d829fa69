package workload

import (
	"bytes"
	"math"
	"testing"
)

func genTrace(t *testing.T, opt GenOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := GenerateTrace(&b, opt); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGenerateTraceDeterministic(t *testing.T) {
	opt := GenOptions{Seed: 7, Jobs: 2000, GPUs: 512, Load: LoadOverloaded, Queues: 6}
	a, b := genTrace(t, opt), genTrace(t, opt)
	if !bytes.Equal(a, b) {
		t.Fatal("the same options gave two different traces")
	}
	opt.Seed = 8
	if bytes.Equal(a, genTrace(t, opt)) {
		t.Fatal("seeds 7 and 8 gave the same trace")
	}
}

// The trace reads back as a trace; its offered load is the one asked for
// (arrivals are random, so within 15%), and a heavier level offers more;
// its jobs are the documented mix.
func TestGenerateTraceLoadAndMix(t *testing.T) {
	loads := map[float64]float64{}
	for _, load := range []float64{LoadLight, LoadOverloaded} {
		data := genTrace(t, GenOptions{Seed: 3, Jobs: 20000, GPUs: 512, Load: load, Queues: 6})
		w, err := ReadTrace(bytes.NewReader(data), "gen.csv", TraceOptions{Nodes: 64, GPUsPerNode: 8})
		if err != nil {
			t.Fatal(err)
		}
		got, err := OfferedLoad(w)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-load)/load > 0.15 {
			t.Errorf("load %v: offered %.3f", load, got)
		}
		loads[load] = got
		if len(w.Jobs) != 20000 || len(w.Queues) != 6 {
			t.Fatalf("%d jobs in %d queues, want 20000 in 6", len(w.Jobs), len(w.Queues))
		}
		byGPUs := map[int64]int{}
		perQueue := map[string]int{}
		for _, j := range w.Jobs {
			byGPUs[j.Total(GPU)]++
			perQueue[j.Queue]++
		}
		if one := float64(byGPUs[1]) / 20000; one < 0.70 || one > 0.80 {
			t.Errorf("load %v: %.2f of jobs take 1 GPU, want about 0.75", load, one)
		}
		for _, g := range []int64{8, 16, 32, 64} {
			if byGPUs[g] == 0 {
				t.Errorf("load %v: no gang of %d GPUs", load, g)
			}
		}
		if perQueue["q0"] < 2*perQueue["q3"] {
			t.Errorf("load %v: q0 has %d jobs, q3 %d: demand is not skewed", load, perQueue["q0"], perQueue["q3"])
		}
	}
	if loads[LoadOverloaded] <= 1.5*loads[LoadLight] {
		t.Errorf("offered loads: overloaded %.3f, light %.3f", loads[LoadOverloaded], loads[LoadLight])
	}
}

func TestGenerateTraceChecksOptions(t *testing.T) {
	for _, opt := range []GenOptions{
		{Jobs: 0, GPUs: 64, Load: 1, Queues: 1},
		{Jobs: 1, GPUs: 0, Load: 1, Queues: 1},
		{Jobs: 1, GPUs: 63, Load: 1, Queues: 1}, // its gangs of 64 would never fit
		{Jobs: 1, GPUs: 64, Load: 0, Queues: 1},
		{Jobs: 1, GPUs: 64, Load: math.NaN(), Queues: 1},
		{Jobs: 1, GPUs: 64, Load: 1, Queues: 0},
	} {
		if err := GenerateTrace(&bytes.Buffer{}, opt); err == nil {
			t.Errorf("%+v: no error", opt)
		}
	}
	for s, want := range map[string]float64{"light": LoadLight, "overloaded": LoadOverloaded, "0.9": 0.9} {
		if got, err := ParseLoad(s); err != nil || got != want {
			t.Errorf("ParseLoad(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "heavy", "0", "-1", "NaN"} {
		if _, err := ParseLoad(s); err == nil {
			t.Errorf("ParseLoad(%q): no error", s)
		}
	}
}
