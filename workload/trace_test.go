package workload

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const phillyPath = "../../shared/traces/philly_jobs.csv"

// pod is the requests of a trace pod of g GPUs.
func pod(g int64) map[string]int64 {
	return map[string]int64{GPU: g, "cpu": 1000 * g, "memory": 4 << 30 * g}
}

func TestReadTrace(t *testing.T) {
	// Columns out of order, an extra column, ties in submit time.
	in := "vc,extra,num_gpus,job_id,duration_s,submit_time_s\n" +
		"b,x,1,j0,100,50\n" +
		"a,y,3,j1,200,10\n" +
		"b,z,2,j2,300,50\n"
	got, err := ReadTrace(strings.NewReader(in), "t.csv", TraceOptions{Nodes: 3, GPUsPerNode: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := &Workload{
		Name:      "t.csv",
		Resources: []string{GPU},
		Pools: []NodePool{{
			Name: "trace", Count: 3,
			Allocatable: map[string]int64{GPU: 2, "cpu": 64000, "memory": 512 << 30, "pods": 110},
		}},
		Queues: []Queue{{Name: "b", Weight: 1}, {Name: "a", Weight: 1}},
		Jobs: []Job{
			{ID: "j1", Queue: "a", Submit: 10, Duration: 200, MinMember: 2, Source: "t.csv:3", Tasks: []Task{
				{Role: "worker", Replicas: 1, Requests: pod(2)},
				{Role: "remainder", Replicas: 1, Requests: pod(1)},
			}},
			{ID: "j0", Queue: "b", Submit: 50, Duration: 100, MinMember: 1, Source: "t.csv:2", Tasks: []Task{
				{Role: "worker", Replicas: 1, Requests: pod(1)},
			}},
			{ID: "j2", Queue: "b", Submit: 50, Duration: 300, MinMember: 1, Source: "t.csv:4", Tasks: []Task{
				{Role: "worker", Replicas: 1, Requests: pod(2)},
			}},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ReadTrace (-want +got):\n%s", d)
	}
}

func TestTraceNodeShape(t *testing.T) {
	for _, tc := range []struct {
		k           int
		cpu, memory int64
	}{
		{1, 64000, 512 << 30},
		{8, 64000, 512 << 30},
		{16, 128000, 1024 << 30},
	} {
		w, err := ReadTrace(strings.NewReader("job_id,submit_time_s,duration_s,num_gpus,vc\n"), "t.csv", TraceOptions{Nodes: 1, GPUsPerNode: tc.k})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{GPU: int64(tc.k), "cpu": tc.cpu, "memory": tc.memory, "pods": 110}
		if d := cmp.Diff(want, w.Pools[0].Allocatable); d != "" {
			t.Errorf("K=%d: allocatable (-want +got):\n%s", tc.k, d)
		}
	}
}

func TestTracePodSplit(t *testing.T) {
	for _, tc := range []struct {
		g, k      int64
		minMember int
		tasks     []Task
	}{
		{1, 8, 1, []Task{{Role: "worker", Replicas: 1, Requests: pod(1)}}},
		{8, 8, 1, []Task{{Role: "worker", Replicas: 1, Requests: pod(8)}}},
		{12, 8, 2, []Task{
			{Role: "worker", Replicas: 1, Requests: pod(8)},
			{Role: "remainder", Replicas: 1, Requests: pod(4)},
		}},
		{16, 8, 2, []Task{{Role: "worker", Replicas: 2, Requests: pod(8)}}},
		{3, 2, 2, []Task{
			{Role: "worker", Replicas: 1, Requests: pod(2)},
			{Role: "remainder", Replicas: 1, Requests: pod(1)},
		}},
		{128, 8, 16, []Task{{Role: "worker", Replicas: 16, Requests: pod(8)}}},
		{7, 1, 7, []Task{{Role: "worker", Replicas: 7, Requests: pod(1)}}},
	} {
		in := "job_id,submit_time_s,duration_s,num_gpus,vc\nj,0,1," + strconv.FormatInt(tc.g, 10) + ",q\n"
		w, err := ReadTrace(strings.NewReader(in), "t.csv", TraceOptions{Nodes: 1, GPUsPerNode: int(tc.k)})
		if err != nil {
			t.Fatalf("G=%d K=%d: %v", tc.g, tc.k, err)
		}
		j := w.Jobs[0]
		if j.MinMember != tc.minMember || j.Members() != tc.minMember {
			t.Errorf("G=%d K=%d: MinMember %d, members %d, want %d", tc.g, tc.k, j.MinMember, j.Members(), tc.minMember)
		}
		if j.Total(GPU) != tc.g {
			t.Errorf("G=%d K=%d: total GPUs %d", tc.g, tc.k, j.Total(GPU))
		}
		if d := cmp.Diff(tc.tasks, j.Tasks); d != "" {
			t.Errorf("G=%d K=%d: tasks (-want +got):\n%s", tc.g, tc.k, d)
		}
	}
	// A pod without GPUs (not produced from traces) still asks for 1 CPU and 4Gi.
	if d := cmp.Diff(map[string]int64{"cpu": 1000, "memory": 4 << 30}, tracePod("worker", 1, 0).Requests); d != "" {
		t.Errorf("zero-GPU pod (-want +got):\n%s", d)
	}
}

func TestTraceMaxJobs(t *testing.T) {
	// Row 3 is bad but is never read.
	in := "job_id,submit_time_s,duration_s,num_gpus,vc\nb,5,1,1,q\na,1,1,1,r\nc,x,1,1,q\n"
	w, err := ReadTrace(strings.NewReader(in), "t.csv", TraceOptions{Nodes: 1, GPUsPerNode: 8, MaxJobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range w.Jobs {
		ids = append(ids, j.ID)
	}
	if d := cmp.Diff([]string{"a", "b"}, ids); d != "" {
		t.Errorf("jobs (-want +got):\n%s", d)
	}
}

const traceHeaderRow = "job_id,submit_time_s,duration_s,num_gpus,vc\n"

// badTraces are small bad files and the error each must give; the fuzz
// test starts from them too.
var badTraces = func() []struct {
	name, in string
	opt      TraceOptions
	want     string
} {
	const h = traceHeaderRow
	ok := TraceOptions{Nodes: 1, GPUsPerNode: 8}
	return []struct {
		name, in string
		opt      TraceOptions
		want     string
	}{
		{"empty", "", ok, "p.csv:1: empty trace"},
		{"missing column", "job_id,submit_time_s,duration_s,vc\nj,0,1,q\n", ok, `p.csv:1: the header lacks column "num_gpus"`},
		{"header after blank lines", "\n\njob_id,vc\n", ok, `p.csv:3: the header lacks column "submit_time_s"`},
		{"duplicate column", "job_id,vc,submit_time_s,duration_s,num_gpus,vc\n", ok, `p.csv:1: column "vc" appears twice`},
		{"not an integer", h + "j,0,1,1,q\nk,0,1,abc,q\n", ok, `p.csv:3: num_gpus "abc" is not an integer`},
		{"fraction", h + "j,0.5,1,1,q\n", ok, `p.csv:2: submit_time_s "0.5" is not an integer`},
		{"negative", h + "j,0,-5,1,q\n", ok, "p.csv:2: duration_s -5 is negative"},
		{"zero GPUs", h + "j,0,1,0,q\n", ok, "p.csv:2: num_gpus is 0, a job needs at least 1"},
		{"too many GPUs", h + "j,0,1,99999999,q\n", ok, "p.csv:2: num_gpus 99999999 is more than 1048576"},
		{"huge time", h + "j,99999999999999,1,1,q\n", ok, "p.csv:2: submit_time_s 99999999999999 is more than"},
		{"missing fields", h + "j,0,1\n", ok, "p.csv:2: 3 field(s), the header has 5"},
		{"extra fields", h + "j,0,1,1,q,z\n", ok, "p.csv:2: 6 field(s), the header has 5"},
		{"empty field", h + "j,,1,1,q\n", ok, "p.csv:2: submit_time_s is empty"},
		{"empty job_id", h + " ,0,1,1,q\n", ok, "p.csv:2: job_id is empty"},
		{"empty vc", h + "j,0,1,1,\n", ok, "p.csv:2: vc is empty"},
		{"duplicate job_id", h + "j,0,1,1,q\nk,0,1,1,q\nj,0,1,1,q\n", ok, `p.csv:4: duplicate job_id "j" (first on line 2)`},
		{"bad quote", h + "j,0,1,1,q\nk,0,\"1,1,q\n", ok, "p.csv:3:"},
		{"no nodes", h, TraceOptions{GPUsPerNode: 8}, "workload: p.csv: nodes must be between 1 and"},
		{"no GPUs per node", h, TraceOptions{Nodes: 1}, "workload: p.csv: GPUs per node must be between 1 and"},
	}
}()

func TestReadTraceErrors(t *testing.T) {
	for _, tc := range badTraces {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ReadTrace(strings.NewReader(tc.in), "p.csv", tc.opt)
			if err == nil {
				t.Fatalf("no error, got %d jobs; want %q", len(w.Jobs), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestReadTraceFileMissing(t *testing.T) {
	_, err := ReadTraceFile("testdata/no-such.csv", TraceOptions{Nodes: 1, GPUsPerNode: 8})
	if err == nil || !strings.HasPrefix(err.Error(), "workload: open testdata/no-such.csv") {
		t.Errorf("error %v, want workload: open ...", err)
	}
}

// TestPhilly reads the head of the real Philly trace and checks the jobs per
// GPU size against counts taken from the file with a plain line split.
func TestPhilly(t *testing.T) {
	const rows, k = 2000, 8
	f, err := os.Open(phillyPath)
	if os.IsNotExist(err) {
		t.Fatalf("the Philly trace is not at %s (it lives in the shared traces folder next to the project)", phillyPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	want := map[int64]int{} // GPUs -> jobs
	s := bufio.NewScanner(f)
	s.Scan() // header: job_id,submit_time_s,duration_s,num_gpus,vc
	for n := 0; n < rows && s.Scan(); n++ {
		g, err := strconv.ParseInt(strings.Split(s.Text(), ",")[3], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		want[g]++
	}

	w, err := ReadTraceFile(phillyPath, TraceOptions{Nodes: 100, GPUsPerNode: k, MaxJobs: rows})
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "philly_jobs.csv" || len(w.Jobs) != rows {
		t.Fatalf("name %q, %d jobs; want philly_jobs.csv, %d", w.Name, len(w.Jobs), rows)
	}
	got := map[int64]int{}
	for _, j := range w.Jobs {
		g := j.Total(GPU)
		got[g]++
		if pods := int((g + k - 1) / k); j.MinMember != pods || j.Members() != pods {
			t.Errorf("%s: %d GPUs as %d members, MinMember %d; want %d", j.ID, g, j.Members(), j.MinMember, pods)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("jobs by GPUs (-want +got):\n%s", d)
	}
	checkInvariants(t, w)
}

// BenchmarkReadPhilly reads the whole Philly trace (82,247 jobs).
func BenchmarkReadPhilly(b *testing.B) {
	data, err := os.ReadFile(phillyPath)
	if err != nil {
		b.Skipf("the Philly trace is not at %s", phillyPath)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadTrace(bytes.NewReader(data), "philly_jobs.csv", TraceOptions{Nodes: 550, GPUsPerNode: 8}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTraceRacks(t *testing.T) {
	in := "job_id,submit_time_s,duration_s,num_gpus,vc\nj0,0,10,1,a\n"
	w, err := ReadTrace(strings.NewReader(in), "t.csv", TraceOptions{Nodes: 5, GPUsPerNode: 8, NodesPerRack: 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{DefaultRackLabel}, w.Topology); diff != "" {
		t.Errorf("topology (-want +got):\n%s", diff)
	}
	p := &w.Pools[0]
	if got := []string{p.RackOf(0), p.RackOf(1), p.RackOf(2), p.RackOf(4)}; !cmp.Equal(got, []string{"trace-rack-0", "trace-rack-0", "trace-rack-1", "trace-rack-2"}) {
		t.Errorf("racks = %v", got)
	}
	if _, err := ReadTrace(strings.NewReader(in), "t.csv", TraceOptions{Nodes: 5, GPUsPerNode: 8, NodesPerRack: -1}); err == nil ||
		!strings.Contains(err.Error(), "nodes per rack must not be negative") {
		t.Errorf("negative nodes per rack: err = %v", err)
	}
}
