package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// phalanx status reads what the scheduler wrote into the API (Queues' and
// PodGroups' status, Events) and prints it; it needs no access to the
// scheduler itself.

func statusUsage(out io.Writer) {
	fmt.Fprint(out, `Usage: phalanx status queues  [--kubeconfig FILE]
       phalanx status gangs   [--kubeconfig FILE] [-n NAMESPACE] [--queue QUEUE] [-o wide]
       phalanx status explain [--kubeconfig FILE] NAMESPACE/NAME

What the scheduler wrote into the API, read back:

  queues   each Queue: weight, state, gangs pending and running, what its bound
           pods hold and what it deserves (its fair share)
  gangs    each PodGroup, by queue and place in it: its position among the
           queue's waiting gangs, phase, members running of the minimum, how
           long it has waited, when it is expected to start (the scheduler's
           forecast), and why it waits (its Unschedulable condition, cut at
           100 characters; whole with -o wide)
  explain  one PodGroup: its spec, status, position and expected start,
           conditions and latest Events

Gangs defined only by pod labels (no PodGroup object) are not listed; their
pods' PodScheduled condition says why they wait.
`)
}

// statusClients are the clients phalanx status reads with.
type statusClients struct {
	kube   kubernetes.Interface
	client versioned.Interface
	now    time.Time
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		statusUsage(stderr)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("status "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { statusUsage(stderr) }
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; empty means $KUBECONFIG, ~/.kube/config or the in-cluster service account, as kubectl")
	namespace := fs.String("n", "", "gangs: only this namespace (default: all)")
	queue := fs.String("queue", "", "gangs: only this queue")
	output := fs.String("o", "", "gangs: wide prints each message whole")
	// Flags may follow the arguments, as with kubectl.
	var positional []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional, rest = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	var target string
	switch sub {
	case "queues", "gangs":
		switch {
		case *output != "" && sub == "queues":
			fmt.Fprintf(stderr, "phalanx status queues: -o %q: phalanx status queues takes no -o\n", *output)
			return 2
		case *output != "" && *output != "wide":
			fmt.Fprintf(stderr, "phalanx status gangs: -o %q: the only output is -o wide\n", *output)
			return 2
		}
		if len(positional) > 0 {
			fmt.Fprintf(stderr, "phalanx status %s: unexpected arguments: %s\n", sub, strings.Join(positional, " "))
			return 2
		}
	case "explain":
		ns, name, ok := "", "", len(positional) == 1
		if ok {
			ns, name, ok = strings.Cut(positional[0], "/")
		}
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			fmt.Fprintln(stderr, "phalanx status explain: want one NAMESPACE/NAME of a PodGroup")
			return 2
		}
		target = positional[0]
	default:
		fmt.Fprintf(stderr, "phalanx status: unknown view %q (queues, gangs or explain)\n\n", sub)
		statusUsage(stderr)
		return 2
	}
	cfg, err := clientConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "phalanx status: %v\n", err)
		return 1
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "phalanx status: %v\n", err)
		return 1
	}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "phalanx status: %v\n", err)
		return 1
	}
	c := statusClients{kube: kube, client: client, now: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch sub {
	case "queues":
		err = c.queues(ctx, stdout)
	case "gangs":
		err = c.gangs(ctx, stdout, *namespace, *queue, *output == "wide")
	case "explain":
		ns, name, _ := strings.Cut(target, "/")
		err = c.explain(ctx, stdout, ns, name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "phalanx status %s: %v\n", sub, apiError(err, cfg.Host))
		return 1
	}
	return 0
}

// clientConfig finds the API server as kubectl does: the file given, else
// $KUBECONFIG, else ~/.kube/config, else the in-cluster service account.
func clientConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		if in, inErr := rest.InClusterConfig(); inErr == nil {
			return in, nil
		}
		return nil, fmt.Errorf("no cluster to read: give --kubeconfig FILE, set KUBECONFIG, or write ~/.kube/config")
	}
	return cfg, err
}

// apiError adds to an error of the API server what a user can do about it.
func apiError(err error, host string) error {
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &status) && apierrors.IsNotFound(err) &&
		strings.HasPrefix(status.Status().Message, "the server could not find the requested resource"):
		// Not an object that is missing (its message names it) but the
		// resource: client-go's words for a bare 404.
		return fmt.Errorf("%w: the API server at %s does not serve Phalanx's PodGroups and Queues; install the CRDs "+
			"(kubectl apply -f deploy/crds, or the Helm chart charts/phalanx)", err, host)
	case errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
		return fmt.Errorf("%w: the API server at %s did not answer within 30 s", err, host)
	}
	return err
}

func (c statusClients) queues(ctx context.Context, out io.Writer) error {
	list, err := c.client.SchedulingV1alpha1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE\tWEIGHT\tSTATE\tRECLAIMABLE\tPENDING\tRUNNING\tALLOCATED\tDESERVED")
	for _, q := range list.Items {
		state := string(q.Spec.State)
		if state == "" {
			state = string(v1alpha1.QueueOpen)
		}
		reclaimable := q.Spec.Reclaimable == nil || *q.Spec.Reclaimable
		fmt.Fprintf(w, "%s\t%d\t%s\t%t\t%d\t%d\t%s\t%s\n", q.Name, max(q.Spec.Weight, 1), state, reclaimable,
			q.Status.Pending, q.Status.Running, resources(q.Status.Allocated), resources(q.Status.Deserved))
	}
	return w.Flush()
}

// gangMessageWidth is where phalanx status gangs cuts a message, unless
// wide.
const gangMessageWidth = 100

func (c statusClients) gangs(ctx context.Context, out io.Writer, namespace, queue string, wide bool) error {
	list, err := c.client.SchedulingV1alpha1().PodGroups(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var pgs []v1alpha1.PodGroup
	for _, pg := range list.Items {
		if queue == "" || queueOf(&pg) == queue {
			pgs = append(pgs, pg)
		}
	}
	sort.Slice(pgs, func(i, j int) bool {
		a, b := &pgs[i], &pgs[j]
		if qa, qb := queueOf(a), queueOf(b); qa != qb {
			return qa < qb
		}
		// Waiting gangs in their queue's order, then the others.
		if pa, pb := positionKey(a), positionKey(b); pa != pb {
			return pa < pb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tQUEUE\tPOSITION\tPHASE\tRUNNING/MIN\tWAITING\tREASON\tEXPECTED START\tRESERVATION\tMESSAGE")
	for i := range pgs {
		pg := &pgs[i]
		phase := string(pg.Status.Phase)
		if phase == "" {
			phase = "-"
		}
		waiting, reason, message, start, reserved := "-", "-", "", "-", "-"
		conds := pg.Status.Conditions
		if !meta.IsStatusConditionTrue(conds, v1alpha1.PodGroupScheduled) {
			waiting = age(c.now, pg.CreationTimestamp.Time)
		}
		if cond := meta.FindStatusCondition(conds, v1alpha1.PodGroupUnschedulable); cond != nil && cond.Status == metav1.ConditionTrue {
			reason, message = cond.Reason, cond.Message
		}
		// Nodes reserved for it, or when they are expected to be.
		if cond := meta.FindStatusCondition(conds, v1alpha1.PodGroupReserved); cond != nil && cond.Status == metav1.ConditionTrue {
			start = cond.Message
			reserved = "held for " + age(c.now, cond.LastTransitionTime.Time)
		} else if t := pg.Status.ExpectedReservationTime; t != nil {
			reserved = startText(c.now, t.Time)
		}
		if t := pg.Status.ExpectedStartTime; t != nil {
			start = startText(c.now, t.Time)
		}
		position := "-"
		if p := pg.Status.QueuePosition; p > 0 {
			position = fmt.Sprint(p)
		}
		if wide {
			message = oneLine(message, 0)
		} else {
			message = oneLine(message, gangMessageWidth)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", pg.Namespace, pg.Name, queueOf(pg), position, phase,
			pg.Status.Running, pg.Spec.MinMember, waiting, reason, start, reserved, message)
	}
	return w.Flush()
}

func (c statusClients) explain(ctx context.Context, out io.Writer, namespace, name string) error {
	pg, err := c.client.SchedulingV1alpha1().PodGroups(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "PodGroup %s/%s, queue %s, created %s ago\n", pg.Namespace, pg.Name, queueOf(pg), age(c.now, pg.CreationTimestamp.Time))
	fmt.Fprintf(out, "  minMember %d", pg.Spec.MinMember)
	if pg.Spec.PriorityClassName != "" {
		fmt.Fprintf(out, ", priorityClassName %s", pg.Spec.PriorityClassName)
	}
	if len(pg.Spec.MinResources) > 0 {
		fmt.Fprintf(out, ", minResources %s", resources(pg.Spec.MinResources))
	}
	if pg.Spec.RequiredTopology != "" {
		fmt.Fprintf(out, ", requiredTopology %s", pg.Spec.RequiredTopology)
	}
	if pg.Spec.GPUModel != "" {
		fmt.Fprintf(out, ", gpuModel %s", pg.Spec.GPUModel)
	}
	if e := pg.Spec.EstimatedRuntimeSeconds; e != nil {
		fmt.Fprintf(out, ", estimated run time %s", time.Duration(*e)*time.Second)
	}
	fmt.Fprintln(out)
	st := pg.Status
	phase := string(st.Phase)
	if phase == "" {
		phase = "not yet written by the scheduler"
	}
	fmt.Fprintf(out, "Phase: %s (members: %d pending, %d running, %d succeeded, %d failed)\n", phase, st.Pending, st.Running, st.Succeeded, st.Failed)
	switch {
	case st.QueuePosition > 0 && st.ExpectedStartTime != nil:
		fmt.Fprintf(out, "Queue position: %d; expected start: %s\n", st.QueuePosition, startText(c.now, st.ExpectedStartTime.Time))
		if !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.PodGroupReserved) {
			// docs/evaluation.md, "How close the expected start comes".
			fmt.Fprintln(out, "  if nothing that goes before it arrives meanwhile: a gang that arrives later and goes first (a higher "+
				"priority or a shorter estimated run time in its queue, or a queue below its share) moves it back, so on a busy "+
				"cluster it is likely to start later")
		}
	case st.QueuePosition > 0:
		fmt.Fprintf(out, "Queue position: %d; expected start: not within the scheduler's forecast (running gangs without an estimated run time never end in it)\n", st.QueuePosition)
	}
	if t := st.ExpectedReservationTime; t != nil {
		fmt.Fprintf(out, "Nodes expected to be reserved for it: %s: by then it has waited out the reservation threshold, or is within --reserve-ahead of it (with the backlog, once it has waited --reserve-after), and its turn for a reservation has come\n", startText(c.now, t.Time))
		// docs/evaluation.md, "How close the expected start comes".
		fmt.Fprintln(out, "  if nothing arrives meanwhile: work that arrives can lengthen the backlog it waits out, or go before it in line, so on a busy "+
			"cluster its nodes are likely to be reserved later")
	}
	if cond := meta.FindStatusCondition(st.Conditions, v1alpha1.PodGroupUnschedulable); cond != nil &&
		cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, "reserved for gang") {
		fmt.Fprintln(out, "Reserved nodes: nodes reserved for another gang are open to this one only if its estimated run time "+
			"(spec.estimatedRuntimeSeconds, or the annotation phalanx.dev/estimated-runtime, times its queue's estimate factor, "+
			"the metric phalanx_queue_estimate_factor) ends before that gang's expected start")
	}
	if len(st.Conditions) > 0 {
		fmt.Fprintln(out, "Conditions:")
		for _, cond := range st.Conditions {
			fmt.Fprintf(out, "  %s=%s  %s, for %s: %s\n", cond.Type, cond.Status, cond.Reason, age(c.now, cond.LastTransitionTime.Time), cond.Message)
		}
	}
	events, err := c.kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.name": name, "involvedObject.kind": "PodGroup"}.AsSelector().String()})
	if err != nil {
		return err
	}
	sort.Slice(events.Items, func(i, j int) bool { return eventTime(&events.Items[i]).Before(eventTime(&events.Items[j])) })
	if n := len(events.Items); n > 10 {
		events.Items = events.Items[n-10:]
	}
	if len(events.Items) > 0 {
		fmt.Fprintln(out, "Events (latest last):")
		for i := range events.Items {
			ev := &events.Items[i]
			fmt.Fprintf(out, "  %s ago  %s  %s  %s\n", age(c.now, eventTime(ev)), ev.Type, ev.Reason, ev.Message)
		}
	}
	return nil
}

// positionKey orders a queue's waiting gangs by their place in it, before
// the gangs that have none.
func positionKey(pg *v1alpha1.PodGroup) int64 {
	if p := pg.Status.QueuePosition; p > 0 {
		return int64(p)
	}
	return 1 << 32
}

// startText is an expected start as a time of day and how far ahead it is.
func startText(now, t time.Time) string {
	at := t.UTC().Format(time.RFC3339)
	if d := t.Sub(now).Round(time.Second); d > 0 {
		return fmt.Sprintf("%s (in %s)", at, d)
	}
	return at + " (due)"
}

// queueOf is the queue a PodGroup names, the default one if none.
func queueOf(pg *v1alpha1.PodGroup) string {
	if pg.Spec.Queue == "" {
		return v1alpha1.DefaultQueue
	}
	return pg.Spec.Queue
}

// resources prints a resource list in name order, "-" when empty.
func resources(rl corev1.ResourceList) string {
	if len(rl) == 0 {
		return "-"
	}
	var parts []string
	for name, q := range rl {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// age is how long since t, to the second, "-" if t is unknown.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String()
}

func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// oneLine keeps a message on its line of the table, cut at n runes if n > 0.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); n > 0 && len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
