//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/scheduler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTopology: 4 nodes of 4 GPUs in racks r1 and r2, interleaved in name
// order so that placement without topology mixes racks, and a scheduler
// with --topology=phalanx.dev/rack. A gang of 3 x 4 GPUs that requires one
// rack waits, saying that no rack can hold it, though the cluster could; a
// gang of 2 x 4 GPUs without a requirement lands within one rack; a gang
// that requires a label that is not a level is told so.
func TestTopology(t *testing.T) {
	e := newEnv(t)
	for i, rack := range []string{"r1", "r2", "r1", "r2"} {
		e.addNodes(kwokNodes(fmt.Sprintf("topo-%c", 'a'+i), 1).GPUs(4).Label(labelRack, rack))
	}
	startSchedulerOpts(t, scheduler.Options{Topology: []string{labelRack}})

	wide := e.create(gang("wide").Members(3).GPUs(4).RequiredTopology(labelRack))
	e.eventually(30*time.Second, "wide says no rack can hold it",
		e.podGroupCondition("wide", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue,
			"no single phalanx.dev/rack can hold the gang", "12 nvidia.com/gpu needed, at most 8 free in one"))
	e.eventually(10*time.Second, "its pods say so too",
		e.podsCondition(wide, corev1.PodScheduled, corev1.ConditionFalse, "no single phalanx.dev/rack"))

	region := e.create(gang("region").Members(1).GPUs(1).RequiredTopology("topology.kubernetes.io/region"))
	e.eventually(30*time.Second, "a gang requiring a label that is not a level is told so",
		e.podGroupCondition("region", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue,
			"requires one topology.kubernetes.io/region, which is not a topology level of the scheduler"))

	pair := e.create(gang("pair").Members(2).GPUs(4))
	e.eventually(30*time.Second, "pair runs", e.running(pair))
	e.eventually(10*time.Second, "pair is within one rack", e.withinOneDomain(pair, labelRack))
	e.consistently(2*time.Second, "wide and region to stay unbound", all(e.noneBound(wide), e.noneBound(region)))
}

// TestGPUModel: 2 V100 nodes and 2 A100 nodes of 4 GPUs, the V100s first in
// name order. A gang with gpuModel A100 lands on A100 nodes only; an ACK
// gang annotated phalanx.dev/gpu-model: V100 then lands on V100 nodes,
// although the A100 node the first gang started is where packing would put
// it; a gang asking for a model no node has waits and says so.
func TestGPUModel(t *testing.T) {
	e := newEnv(t)
	e.addNodes(kwokNodes("gm-1", 2).GPUs(4).Label(labelGPUModel, "V100"))
	e.addNodes(kwokNodes("gm-2", 2).GPUs(4).Label(labelGPUModel, "A100"))
	startScheduler(t)

	a100 := e.create(gang("a100").Members(2).GPUs(1).GPUModel("A100"))
	e.eventually(30*time.Second, "a100 runs", e.running(a100))
	e.eventually(10*time.Second, "a100 is on A100 nodes", e.onNodesLabelled(a100, labelGPUModel, "A100"))

	v100 := e.create(ackJob("v100").Workers(2).GPUsPerWorker(1).PodAnnotation(annGPUModel, "V100"))
	e.eventually(30*time.Second, "v100 runs", e.running(v100))
	e.eventually(10*time.Second, "v100 is on V100 nodes", e.onNodesLabelled(v100, labelGPUModel, "V100"))

	h100 := e.create(gang("h100").Members(1).GPUs(1).GPUModel("H100"))
	e.eventually(30*time.Second, "h100 says no node has its model",
		e.podGroupCondition("h100", v1alpha1.PodGroupUnschedulable, metav1.ConditionTrue,
			"no node has GPU model H100 (label nvidia.com/gpu.product)"))
	e.consistently(2*time.Second, "h100 to stay unbound", e.noneBound(h100))
}

// withinOneDomain: j's pods are bound to nodes that share one value of label.
func (e *env) withinOneDomain(j *job, label string) check {
	return func(ctx context.Context) error {
		nodes, err := e.nodesOf(ctx, j)
		if err != nil {
			return err
		}
		values := map[string][]string{}
		for pod, node := range nodes {
			n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			values[n.Labels[label]] = append(values[n.Labels[label]], pod+"@"+node)
		}
		if len(values) != 1 {
			return fmt.Errorf("gang %s spans %d values of %s: %v", j.name, len(values), label, values)
		}
		return nil
	}
}

// onNodesLabelled: every pod of j is bound to a node whose label is value.
func (e *env) onNodesLabelled(j *job, label, value string) check {
	return func(ctx context.Context) error {
		nodes, err := e.nodesOf(ctx, j)
		if err != nil {
			return err
		}
		for pod, node := range nodes {
			n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := n.Labels[label]; got != value {
				return fmt.Errorf("pod %s of %s is on %s, whose %s is %q, want %q", pod, j.name, node, label, got, value)
			}
		}
		return nil
	}
}
