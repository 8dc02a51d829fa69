//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatusCommand runs `phalanx status` against the cluster while one gang
// runs and one waits, and checks what it prints: the queue with its counts
// and GPUs, both gangs with the waiting one's reason, and the waiting
// gang's conditions and Event. Then the same binary as the kubectl plugin:
// a real kubectl lists it and runs `kubectl phalanx status`.
func TestStatusCommand(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("status", 3).CPU("4").Memory("16Gi").GPUs(1))
	startScheduler(t)
	queue := e.createQueue(v1alpha1.QueueSpec{Weight: 2})

	// fits runs before big is created: gangs that arrive in the same second
	// go in name order, and big would take every GPU first.
	fits := e.create(tfJob("fits").Workers(1).GPUsPerWorker(1).RunFor("10m").Queue(queue))
	e.eventually(time.Minute, "fits runs", e.running(fits))
	e.create(tfJob("big").Workers(3).GPUsPerWorker(1).RunFor("10m").Queue(queue))
	e.eventually(30*time.Second, "big says it is short of GPUs",
		e.podGroupCondition("big", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "nvidia.com/gpu"))
	e.eventually(30*time.Second, "the queue's status counts both",
		func(ctx context.Context) error {
			q, err := phalanx.SchedulingV1alpha1().Queues().Get(ctx, queue, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if q.Status.Pending != 1 || q.Status.Running != 1 {
				return fmt.Errorf("status pending %d running %d, want 1 and 1", q.Status.Pending, q.Status.Running)
			}
			return nil
		})

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
	lineOf := func(out, first string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == first {
				return l
			}
		}
		t.Fatalf("no line for %s in:\n%s", first, out)
		return ""
	}
	fields := func(l string) []string { return strings.Fields(l) }

	q := fields(lineOf(status("queues"), queue))
	if want := []string{queue, "2", "Open", "true", "1", "1"}; len(q) < 8 || strings.Join(q[:6], " ") != strings.Join(want, " ") || !strings.Contains(q[7], "nvidia.com/gpu=") ||
		!strings.Contains(q[6], "nvidia.com/gpu=1") {
		t.Errorf("queues: %v, want %v and nvidia.com/gpu=1 allocated", q, want)
	}

	gangs := status("gangs", "-n", e.ns)
	var bigLine, fitsLine string
	for _, l := range strings.Split(gangs, "\n") {
		switch f := fields(l); {
		case len(f) > 1 && f[1] == "big":
			bigLine = l
		case len(f) > 1 && f[1] == "fits":
			fitsLine = l
		}
	}
	// Columns: namespace, name, queue, position (none: this scheduler does
	// not forecast), phase, running/min, waiting, reason.
	if f := fields(fitsLine); len(f) < 7 || f[2] != queue || f[3] != "-" || f[4] != "Running" || f[5] != "1/1" || f[6] != "-" {
		t.Errorf("gangs: the running gang's line is %q", fitsLine)
	}
	if f := fields(bigLine); len(f) < 8 || f[2] != queue || f[4] != "Inqueue" || f[5] != "0/3" || f[7] != "Unschedulable" ||
		!strings.Contains(bigLine, "nvidia.com/gpu") {
		t.Errorf("gangs: the waiting gang's line is %q", bigLine)
	}
	if other := status("gangs", "--queue", "no-such-queue"); strings.Contains(other, e.ns) {
		t.Errorf("gangs --queue no-such-queue listed this test's gangs:\n%s", other)
	}

	// kubectl get podgroups: the Reason column of the CRD's printer columns.
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/apis/scheduling.phalanx.dev/v1alpha1/namespaces", e.ns, "podgroups").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(e.ctx)
	if err != nil {
		t.Fatalf("PodGroups as a table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	reason := -1
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Reason" {
			reason = i
		}
	}
	found := false
	for _, row := range table.Rows {
		if len(row.Cells) > reason && reason >= 0 && row.Cells[0] == "big" {
			found = row.Cells[reason] == "Unschedulable"
		}
	}
	if !found {
		t.Errorf("kubectl get podgroups: no Reason Unschedulable for big (columns %v, rows %v)", table.ColumnDefinitions, table.Rows)
	}

	explain := status("explain", e.ns+"/big")
	for _, want := range []string{"PodGroup " + e.ns + "/big, queue " + queue, "minMember 3", "Phase: Inqueue",
		"Unschedulable=True", "Events (latest last):", "Warning  Unschedulable  gang big waits"} {
		if !strings.Contains(explain, want) {
			t.Errorf("explain lacks %q", want)
		}
	}

	// The kubectl plugin: the same binary linked as kubectl-phalanx on the
	// PATH, run by a real kubectl.
	kubectl := os.Getenv("PHALANX_KUBECTL")
	if kubectl == "" {
		t.Fatal("PHALANX_KUBECTL is not set: run the suite with hack/test-e2e.sh, which exports the kubectl hack/k8s-tools/build.sh builds")
	}
	plugins := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(plugins, "kubectl-phalanx")); err != nil {
		t.Fatal(err)
	}
	kubectlRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, args...)
		cmd.Env = append(os.Environ(), "PATH="+plugins+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+os.Getenv("KUBECONFIG"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	if list := kubectlRun("plugin", "list"); !strings.Contains(list, filepath.Join(plugins, "kubectl-phalanx")) {
		t.Errorf("kubectl plugin list does not name %s", filepath.Join(plugins, "kubectl-phalanx"))
	}
	if got, want := lineOf(kubectlRun("phalanx", "status", "queues"), queue), lineOf(status("queues"), queue); got != want {
		t.Errorf("kubectl phalanx status queues: %q, want phalanx status's %q", got, want)
	}
	if got := kubectlRun("phalanx", "status", "explain", e.ns+"/big"); !strings.Contains(got, "PodGroup "+e.ns+"/big, queue "+queue) {
		t.Errorf("kubectl phalanx status explain names no PodGroup %s/big", e.ns)
	}
}
