package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	phalanxfake "github.com/phalanx-sched/phalanx/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func statusFixture() statusClients {
	now := time.Unix(10000, 0)
	at := func(secs int64) metav1.Time { return metav1.Unix(secs, 0) }
	waiting := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "big", CreationTimestamp: at(10000 - 3600)},
		Spec: v1alpha1.PodGroupSpec{MinMember: 8, Queue: "research", MinResources: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("64")}},
		Status: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, Pending: 8, QueuePosition: 1, ExpectedStartTime: ptrTime(at(10000 + 1500)), ExpectedReservationTime: ptrTime(at(10000 + 600)), Conditions: []metav1.Condition{
			{Type: v1alpha1.PodGroupScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable", LastTransitionTime: at(9000)},
			{Type: v1alpha1.PodGroupUnschedulable, Status: metav1.ConditionTrue, Reason: "Unschedulable",
				Message: "0/4 nodes can hold a member:\n 4 have too few nvidia.com/gpu", LastTransitionTime: at(9000)},
			{Type: v1alpha1.PodGroupReserved, Status: metav1.ConditionTrue, Reason: "Reserved",
				Message: "expected to start in 25m0s, on 4 reserved nodes", LastTransitionTime: at(9500)}}}}
	running := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "small", CreationTimestamp: at(5000)},
		Spec: v1alpha1.PodGroupSpec{MinMember: 2},
		Status: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, Running: 2, Conditions: []metav1.Condition{
			{Type: v1alpha1.PodGroupScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", Message: "2/2 members bound", LastTransitionTime: at(5010)}}}}
	// Older than big, but second in the queue (a lower priority, say), and
	// not forecast to start.
	behind := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "behind", CreationTimestamp: at(10000 - 7200)},
		Spec:   v1alpha1.PodGroupSpec{MinMember: 1, Queue: "research"},
		Status: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, Pending: 1, QueuePosition: 2, ExpectedReservationTime: ptrTime(at(10000 + 5400))}}
	research := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "research"}, Spec: v1alpha1.QueueSpec{Weight: 3},
		Status: v1alpha1.QueueStatus{Pending: 1, Allocated: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("16"), corev1.ResourceCPU: resource.MustParse("32")},
			Deserved: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("24")}}}
	def := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: v1alpha1.QueueStatus{Running: 1}}
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "big.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "PodGroup", Namespace: "team-a", Name: "big"},
		Type:           corev1.EventTypeWarning, Reason: "Unschedulable", Message: "gang big waits: 0/4 nodes can hold a member", LastTimestamp: at(9000)}
	return statusClients{kube: fake.NewClientset(event), client: phalanxfake.NewSimpleClientset(waiting, behind, running, research, def), now: now}
}

func TestStatusQueues(t *testing.T) {
	var out bytes.Buffer
	if err := statusFixture().queues(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"QUEUE     WEIGHT  STATE  RECLAIMABLE  PENDING  RUNNING  ALLOCATED                 DESERVED",
		"default   1       Open   true         0        1        -                         -",
		"research  3       Open   true         1        0        cpu=32,nvidia.com/gpu=16  nvidia.com/gpu=24",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("phalanx status queues printed\n%s\nwant\n%s", out.String(), strings.Join(want, "\n"))
	}
}

func TestStatusGangs(t *testing.T) {
	var out bytes.Buffer
	if err := statusFixture().gangs(context.Background(), &out, "", "", false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header and three gangs, got:\n%s", out.String())
	}
	// By queue: default's gang first, then research's in their order.
	for i, want := range [][]string{
		{"NAMESPACE", "NAME", "QUEUE", "POSITION", "PHASE", "RUNNING/MIN", "WAITING", "REASON", "EXPECTED START", "RESERVATION", "MESSAGE"},
		{"team-b", "small", "default", " - ", "Running", "2/2", " - "},
		{"team-a", "big", "research", " 1 ", "Pending", "0/8", "1h0m0s", "Unschedulable", "1970-01-01T03:11:40Z (in 25m0s)",
			"held for 8m20s", "0/4 nodes can hold a member: 4 have too few nvidia.com/gpu"},
		{"team-a", "behind", "research", " 2 ", "Pending", "2h0m0s", "1970-01-01T04:16:40Z (in 1h30m0s)"},
	} {
		for _, field := range want {
			if !strings.Contains(lines[i], field) {
				t.Errorf("line %d %q lacks %q", i, lines[i], field)
			}
		}
	}
	out.Reset()
	if err := statusFixture().gangs(context.Background(), &out, "", "research", false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "small") || !strings.Contains(out.String(), "big") {
		t.Errorf("--queue research printed\n%s", out.String())
	}
}

// A message past 100 characters is cut, unless -o wide.
func TestStatusGangsWide(t *testing.T) {
	c := statusFixture()
	ctx := context.Background()
	pg, err := c.client.SchedulingV1alpha1().PodGroups("team-a").Get(ctx, "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const tail = "; no preemption: no running gang may be evicted for it"
	long := "0/4 nodes can hold a member: 4 have too few nvidia.com/gpu (2 reserved for gang team-a/other)" + tail
	for i := range pg.Status.Conditions {
		if pg.Status.Conditions[i].Type == v1alpha1.PodGroupUnschedulable {
			pg.Status.Conditions[i].Message = long
		}
	}
	if _, err := c.client.SchedulingV1alpha1().PodGroups("team-a").UpdateStatus(ctx, pg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, wide := range []bool{false, true} {
		var out bytes.Buffer
		if err := c.gangs(ctx, &out, "team-a", "", wide); err != nil {
			t.Fatal(err)
		}
		cut := string([]rune(long)[:gangMessageWidth-1]) + "…"
		switch {
		case wide && !strings.Contains(out.String(), long):
			t.Errorf("-o wide does not print the whole message:\n%s", out.String())
		case !wide && (strings.Contains(out.String(), tail) || !strings.Contains(out.String(), cut)):
			t.Errorf("the message is not cut at %d characters:\n%s", gangMessageWidth, out.String())
		}
	}
}

func TestStatusExplain(t *testing.T) {
	var out bytes.Buffer
	if err := statusFixture().explain(context.Background(), &out, "team-a", "big"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"PodGroup team-a/big, queue research, created 1h0m0s ago",
		"minMember 8, minResources nvidia.com/gpu=64",
		"Phase: Pending (members: 8 pending, 0 running, 0 succeeded, 0 failed)",
		"Queue position: 1; expected start: 1970-01-01T03:11:40Z (in 25m0s)",
		"Nodes expected to be reserved for it: 1970-01-01T02:56:40Z (in 10m0s): by then it has waited out the reservation threshold, or is within --reserve-ahead of it (with the backlog, once it has waited --reserve-after), and its turn for a reservation has come",
		"  if nothing arrives meanwhile: work that arrives can lengthen the backlog it waits out, or go before it in line, so on a busy cluster its nodes are likely to be reserved later",
		"Unschedulable=True  Unschedulable, for 16m40s: 0/4 nodes can hold a member",
		"Reserved=True  Reserved, for 8m20s: expected to start in 25m0s",
		"16m40s ago  Warning  Unschedulable  gang big waits",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, out.String())
		}
	}
	if err := statusFixture().explain(context.Background(), &out, "team-a", "nope"); err == nil {
		t.Error("explain of a missing PodGroup did not fail")
	}
}

// The expected start of a gang without a reservation is said to assume
// that nothing arrives that goes before it; a reserved gang's is its
// reservation's.
func TestStatusExplainArrivalsCaveat(t *testing.T) {
	const caveat = "if nothing that goes before it arrives meanwhile"
	for _, reserved := range []bool{true, false} {
		c := statusFixture()
		ctx := context.Background()
		if !reserved {
			pg, err := c.client.SchedulingV1alpha1().PodGroups("team-a").Get(ctx, "big", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pg.Status.Conditions = slices.DeleteFunc(pg.Status.Conditions, func(c metav1.Condition) bool { return c.Type == v1alpha1.PodGroupReserved })
			if _, err := c.client.SchedulingV1alpha1().PodGroups("team-a").UpdateStatus(ctx, pg, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		if err := c.explain(ctx, &out, "team-a", "big"); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), caveat); got == reserved {
			t.Errorf("reserved %v: caveat shown %v:\n%s", reserved, got, out.String())
		}
	}
}

func TestStatusUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"status"}, {"status", "nonsense"}, {"status", "explain"}, {"status", "explain", "no-slash"}, {"status", "queues", "extra"},
		{"status", "explain", "/x"}, {"status", "explain", "ns/"}, {"status", "explain", "a/b/c"}, {"status", "explain", "a/b", "c/d"},
		{"status", "gangs", "-o", "json"}, {"status", "queues", "-o", "wide"}} {
		if code, _, _ := runArgs(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

// A gang kept off nodes reserved for another is told what would let it use
// them; a gang waiting for another reason is not.
func TestStatusExplainReservedNodes(t *testing.T) {
	now := time.Unix(10000, 0)
	pg := func(name, message string) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, CreationTimestamp: metav1.Unix(9000, 0)},
			Spec: v1alpha1.PodGroupSpec{MinMember: 1},
			Status: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, Pending: 1, Conditions: []metav1.Condition{
				{Type: v1alpha1.PodGroupUnschedulable, Status: metav1.ConditionTrue, Reason: "Unschedulable", Message: message,
					LastTransitionTime: metav1.Unix(9500, 0)}}}}
	}
	c := statusClients{kube: fake.NewClientset(), now: now, client: phalanxfake.NewSimpleClientset(
		pg("kept", "0/1 members fit; a member needing 4 nvidia.com/gpu: 0/2 nodes fit (2 reserved for gang team-a/big)"),
		pg("short", "0/1 members fit; short 4 nvidia.com/gpu"))}
	const hint = "Reserved nodes: nodes reserved for another gang are open to this one only if its estimated run time"
	for name, want := range map[string]bool{"kept": true, "short": false} {
		var out bytes.Buffer
		if err := c.explain(context.Background(), &out, "team-a", name); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), hint); got != want {
			t.Errorf("%s: the hint on reserved nodes printed %v, want %v:\n%s", name, got, want, out.String())
		}
	}
}

// TestStatusWithoutCRDs: against an API server that does not serve
// PodGroups and Queues, phalanx status says to install the CRDs; flags
// given after the PodGroup's name count.
func TestStatusWithoutCRDs(t *testing.T) {
	server := httptest.NewServer(http.NotFoundHandler())
	defer server.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	text := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + server.URL + "}\n" +
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"
	if err := os.WriteFile(kubeconfig, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "queues", "--kubeconfig", kubeconfig}, {"status", "explain", "ns/x", "--kubeconfig", kubeconfig}} {
		code, _, stderr := runArgs(t, args...)
		if code != 1 || !strings.Contains(stderr, "install the CRDs") || !strings.Contains(stderr, server.URL) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and a message naming the server and the CRDs", args, code, stderr)
		}
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if code, _, stderr := runArgs(t, "status", "queues"); code != 1 || !strings.Contains(stderr, "give --kubeconfig FILE, set KUBECONFIG, or write ~/.kube/config") {
		t.Errorf("no kubeconfig: exit %d, stderr %q", code, stderr)
	}
}
