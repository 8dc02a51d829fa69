//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/scheduler"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestForecastStatus: two nodes of one GPU. "first" (2 GPUs, estimated
// 600 s) runs; "second" (2 GPUs, 300 s) and then "third" (1 GPU) wait. The
// scheduler forecasts second to start when first ends (its start + 600 s)
// and third when second ends (+ 900 s), writes status.queuePosition and
// status.expectedStartTime, kubectl get shows the Expected Start column and
// phalanx status gangs and explain print both.
func TestForecastStatus(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("forecast", 2).CPU("4").Memory("16Gi").GPUs(1))
	metrics := startSchedulerMetrics(t, scheduler.Options{ForecastPeriod: 2 * time.Second})
	first := e.create(tfJob("first").Workers(2).GPUsPerWorker(1).RunFor("20m").Estimate(600))
	e.eventually(time.Minute, "first runs", e.running(first))
	e.create(tfJob("second").Workers(2).GPUsPerWorker(1).RunFor("20m").Estimate(300))
	e.create(tfJob("third").Workers(1).GPUsPerWorker(1).RunFor("20m"))

	// first's members release their room estimate seconds after they
	// started (the latest of the two).
	var started time.Time
	e.eventually(30*time.Second, "first's pods have a start time", func(ctx context.Context) error {
		pods, err := e.pods(ctx, first)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.Status.StartTime == nil {
				return fmt.Errorf("pod %s has no start time", p.Name)
			}
			if p.Status.StartTime.After(started) {
				started = p.Status.StartTime.Time
			}
		}
		return nil
	})
	want := map[string]struct {
		position int32
		start    time.Time
	}{"second": {1, started.Add(600 * time.Second)}, "third": {2, started.Add(900 * time.Second)}}
	e.eventually(time.Minute, "the waiting gangs' positions and expected starts", func(ctx context.Context) error {
		for name, w := range want {
			pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			st := pg.Status
			if st.QueuePosition != w.position || st.ExpectedStartTime == nil {
				return fmt.Errorf("%s: position %d, expected start %v; want %d and %s", name, st.QueuePosition, st.ExpectedStartTime, w.position, w.start)
			}
			// Whole seconds, and a start rounded to the second.
			if d := st.ExpectedStartTime.Sub(w.start); d < -time.Second || d > time.Second {
				return fmt.Errorf("%s: expected start %s, want %s", name, st.ExpectedStartTime.UTC(), w.start.UTC())
			}
		}
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, "first", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pg.Status.QueuePosition != 0 || pg.Status.ExpectedStartTime != nil {
			return fmt.Errorf("first runs but has position %d and expected start %v", pg.Status.QueuePosition, pg.Status.ExpectedStartTime)
		}
		return nil
	})
	shown := map[string]time.Time{}
	for _, name := range []string{"second", "third"} {
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		shown[name] = pg.Status.ExpectedStartTime.Time
	}

	// kubectl get podgroups: the Expected Start column.
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/apis/scheduling.phalanx.dev/v1alpha1/namespaces", e.ns, "podgroups").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(e.ctx)
	if err != nil {
		t.Fatalf("PodGroups as a table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	column := -1
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Expected Start" {
			column = i
		}
	}
	cell := ""
	for _, row := range table.Rows {
		if column >= 0 && len(row.Cells) > column && row.Cells[0] == "second" {
			cell = fmt.Sprint(row.Cells[column])
		}
	}
	if want := shown["second"].UTC().Format(time.RFC3339); cell != want {
		t.Errorf("kubectl get podgroups: Expected Start of second is %q, want %q (columns %v)", cell, want, table.ColumnDefinitions)
	}

	bin := buildPhalanx(t)
	status := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"status"}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+os.Getenv("KUBECONFIG"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("phalanx status %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("phalanx status %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	gangs := strings.Split(status("gangs", "-n", e.ns), "\n")
	var order []string
	for _, l := range gangs[1:] {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		order = append(order, f[1])
		switch f[1] {
		case "second", "third":
			pos := fmt.Sprint(map[string]int{"second": 1, "third": 2}[f[1]])
			at := shown[f[1]].UTC().Format(time.RFC3339)
			if f[3] != pos || !strings.Contains(l, at+" (in ") {
				t.Errorf("gangs: %s's line %q, want position %s and expected start %s", f[1], l, pos, at)
			}
		case "first":
			if f[3] != "-" || f[4] != string(v1alpha1.PodGroupRunning) {
				t.Errorf("gangs: first's line %q, want no position and phase Running", l)
			}
		}
	}
	if got := strings.Join(order, " "); got != "second third first" {
		t.Errorf("gangs listed in the order %q, want the waiting ones in their queue's order, then the others", got)
	}
	explain := status("explain", e.ns+"/third")
	if want := "Queue position: 2; expected start: " + shown["third"].UTC().Format(time.RFC3339); !strings.Contains(explain, want) {
		t.Errorf("explain lacks %q", want)
	}
	// third holds no reservation: its expected start assumes nothing that
	// goes first arrives, and explain says so.
	if want := "if nothing that goes before it arrives meanwhile"; !strings.Contains(explain, want) {
		t.Errorf("explain lacks %q", want)
	}

	// first goes long before its estimate. Its pods go one at a time:
	// second (2 GPUs) starts, or third (1 GPU) if it takes the first GPU
	// freed. Whichever starts, starts about as long before its expected
	// start as it had left, and the scheduler's metric weighs that start
	// against that gang's first expected start.
	e.deletePods(first)
	deleted := time.Now()
	e.eventually(time.Minute, "a start is weighed against its expected start", func(ctx context.Context) error {
		started := ""
		for _, name := range []string{"second", "third"} {
			pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pg.Status.Phase == v1alpha1.PodGroupRunning {
				started = name
			}
		}
		if started == "" {
			return fmt.Errorf("neither second nor third runs yet")
		}
		left := shown[started].Sub(deleted).Seconds()
		families, err := metrics.Registry.Gather()
		if err != nil {
			return err
		}
		for _, f := range families {
			if f.GetName() != "phalanx_queue_start_forecast_error_seconds" {
				continue
			}
			for _, s := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range s.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				h := s.GetHistogram()
				if labels["direction"] != "early" || h.GetSampleCount() != 1 {
					return fmt.Errorf("series %v: %d starts weighed, want 1 early", labels, h.GetSampleCount())
				}
				// It started within a minute of the deletion. The scheduler
				// counts whole seconds (its cycle's time and the expected
				// start are truncated), so the start may seem up to 2 s
				// earlier than the deletion.
				if sum := h.GetSampleSum(); sum > left+2 || sum < left-60 {
					return fmt.Errorf("%s started %.0f s before its first expected start, want about %.0f", started, sum, left)
				}
				return nil
			}
		}
		return fmt.Errorf("no start weighed yet")
	})
}

// TestForecastReservation: on 2 nodes of 4 GPUs, "first" (4 GPUs,
// estimated 600 s) runs and gang "big" (2 x 4 GPUs) waits in a queue whose
// reserveAfterSeconds is 120. The forecast reserves both nodes for big once
// it has waited 120 s: status.expectedReservationTime is its arrival plus
// 120 s, to the second, and phalanx status explain and gangs print it; big
// holds no reservation yet.
func TestForecastReservation(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("fresv", 2).GPUs(4))
	after := int32(120)
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 1, ReserveAfterSeconds: &after})
	startSchedulerOpts(t, scheduler.Options{ForecastPeriod: 2 * time.Second})
	first := e.create(gang("first").Members(1).GPUs(4).Queue(queue).Estimate(600).RunFor("20m"))
	e.eventually(time.Minute, "first runs", e.running(first))

	// big arrives when its PodGroup or its first pod is created, within
	// these bounds (the API server's timestamps are whole seconds).
	before := time.Now().Truncate(time.Second).Add(-time.Second)
	e.create(gang("big").Members(2).GPUs(4).Queue(queue).RunFor("4s"))
	latest := time.Now().Add(time.Second)
	var reserveAt time.Time
	e.eventually(30*time.Second, "big's status.expectedReservationTime", func(ctx context.Context) error {
		pg, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return err
		}
		at := pg.Status.ExpectedReservationTime
		if at == nil {
			return fmt.Errorf("no expectedReservationTime (status %+v)", pg.Status)
		}
		if lo, hi := before.Add(120*time.Second), latest.Add(120*time.Second); at.Time.Before(lo) || at.Time.After(hi) {
			return fmt.Errorf("expectedReservationTime %s, want within [%s, %s]", at.UTC(), lo.UTC(), hi.UTC())
		}
		if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupReserved); c != nil && c.Status == metav1.ConditionTrue {
			return fmt.Errorf("big holds a reservation already: %+v", c)
		}
		reserveAt = at.Time
		return nil
	})

	bin := buildPhalanx(t)
	status := func(args ...string) string {
		cmd := exec.Command(bin, append([]string{"status"}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+os.Getenv("KUBECONFIG"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("phalanx status %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := status("explain", e.ns+"/big")
	if want := "Nodes expected to be reserved for it: " + reserveAt.UTC().Format(time.RFC3339); !strings.Contains(out, want) {
		t.Errorf("phalanx status explain lacks %q:\n%s", want, out)
	}
	// The same time in the RESERVATION column of phalanx status gangs.
	out = status("gangs", "-n", e.ns)
	lines := strings.Split(out, "\n")
	col := strings.Index(lines[0], "RESERVATION")
	var got string
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "big" && col >= 0 && len(l) > col {
			got = l[col:]
		}
	}
	if want := reserveAt.UTC().Format(time.RFC3339) + " (in "; !strings.HasPrefix(got, want) {
		t.Errorf("phalanx status gangs: big's RESERVATION column reads %q, want %q...:\n%s", got, want, out)
	}
}
