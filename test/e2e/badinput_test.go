//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBadInput feeds one scheduler the mistakes users make and checks that
// each is reported where the user looks, that nothing malformed is bound,
// and that the scheduler keeps serving well-formed gangs.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("bad", 2).GPUs(4))
	startScheduler(t)

	// (a) A pod naming no gang is a gang of one.
	e.createPod(makePod("lonely").CPU("1").Obj())
	e.eventually(30*time.Second, "a pod with no group runs", e.podRunning("lonely"))

	// (b) A pod naming a PodGroup that does not exist waits, and says so.
	e.createPod(makePod("orphan").CPU("1").Group("no-such-group").Obj())
	e.eventually(30*time.Second, "an Event on the orphan says its PodGroup does not exist",
		e.eventOn("orphan", "FailedScheduling", "PodGroup", "no-such-group", "does not exist"))
	e.eventually(10*time.Second, "the orphan's PodScheduled condition says why",
		e.podCondition("orphan", corev1.PodScheduled, corev1.ConditionFalse, "does not exist"))

	// (c) minMember 0 is refused by the CRD's validation.
	zero := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "zero"}, Spec: v1alpha1.PodGroupSpec{MinMember: 0}}
	if _, err := phalanx.SchedulingV1alpha1().PodGroups(e.ns).Create(e.ctx, zero, metav1.CreateOptions{}); err == nil {
		t.Errorf("a PodGroup with minMember 0 was accepted")
	} else if !strings.Contains(err.Error(), "minMember") {
		t.Errorf("creating a PodGroup with minMember 0 failed without naming minMember: %v", err)
	} else {
		t.Logf("minMember 0 refused: %v", err)
	}

	// (d) A PodGroup of minMember 5 with 3 pods waits for the other 2.
	short := e.create(gang("short").Members(3).GPUs(1).MinMember(5))
	e.eventually(30*time.Second, "the PodGroup says 3 of its 5 members exist",
		e.podGroupCondition("short", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, "3 of 5 members exist"))

	// (e) ACK's min-available must be a number.
	e.createPod(makePod("abc").CPU("1").Label(labelACKName, "abc-gang").Label(labelACKMinAvail, "abc").Obj())
	e.eventually(30*time.Second, "the pod's PodScheduled condition names the bad label",
		e.podCondition("abc", corev1.PodScheduled, corev1.ConditionFalse, labelACKMinAvail, `"abc"`))

	// (f) An estimate that is not a duration.
	e.createPod(makePod("soon").CPU("1").Annotation(annEstimate, "soon").Obj())
	e.eventually(30*time.Second, "the pod's PodScheduled condition names the bad estimate",
		e.podCondition("soon", corev1.PodScheduled, corev1.ConditionFalse, annEstimate, `"soon"`, "neither a duration"))

	bad := all(e.unbound("orphan"), e.noneBound(short), e.unbound("abc"), e.unbound("soon"))
	e.consistently(holdStill, "the malformed gangs to stay unbound", bad)

	// (g) The scheduler still serves a well-formed gang.
	ok := e.create(gang("fine").Members(2).GPUs(1))
	e.eventually(30*time.Second, "a valid 2-pod gang runs", e.running(ok))
	e.eventually(10*time.Second, "its PodGroup is Running", e.podGroupPhase("fine", v1alpha1.PodGroupRunning))
	if err := bad(e.ctx); err != nil {
		e.dump()
		t.Fatalf("a malformed gang was bound: %v", err)
	}
}
