//go:build e2e

package e2e

import (
	"fmt"
	"strconv"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The keys users write, spelled out here rather than taken from the
// scheduler package, so that a typo there fails these tests.
const (
	annGroupName       = "scheduling.k8s.io/group-name"                   // kube-batch / Volcano, written by tf-operator
	labelACKName       = "pod-group.scheduling.sigs.k8s.io/name"          // ACK
	labelACKMinAvail   = "pod-group.scheduling.sigs.k8s.io/min-available" // ACK
	annRunFor          = "phalanx.dev/run-for"                            // hack/kwok-stages.yaml
	labelJob           = "tf-job-name"                                    // tf-operator's job label
	resourceGPU        = corev1.ResourceName("nvidia.com/gpu")
	defaultSchedulerNm = "phalanx"
)

// The keys of reservations, topology and GPU models (scheduler/gangspec.go).
const (
	annQueue      = "scheduling.phalanx.dev/queue" // the queue of a gang without a PodGroup
	annEstimate   = "phalanx.dev/estimated-runtime"
	annGPUModel   = "phalanx.dev/gpu-model"
	labelGPUModel = "nvidia.com/gpu.product" // the scheduler's default --gpu-model-label
	labelRack     = "phalanx.dev/rack"
)

// podBuilder builds one bare pod. Resources go in limits, as tf-operator's
// users write them; the API server copies them into requests.
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			SchedulerName: defaultSchedulerNm,
			RestartPolicy: corev1.RestartPolicyOnFailure,
			Containers: []corev1.Container{{
				Name: "tensorflow", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}},
			}},
		},
	}}
}

func (b *podBuilder) SchedulerName(n string) *podBuilder { b.pod.Spec.SchedulerName = n; return b }
func (b *podBuilder) Image(img string) *podBuilder       { b.pod.Spec.Containers[0].Image = img; return b }
func (b *podBuilder) Label(k, v string) *podBuilder      { b.pod.Labels[k] = v; return b }
func (b *podBuilder) Annotation(k, v string) *podBuilder { b.pod.Annotations[k] = v; return b }

// Group names the pod's PodGroup with the kube-batch annotation.
func (b *podBuilder) Group(pg string) *podBuilder { return b.Annotation(annGroupName, pg) }

// RunFor makes KWOK complete the pod that long after it starts running.
func (b *podBuilder) RunFor(d string) *podBuilder {
	if d != "" {
		b.pod.Annotations[annRunFor] = d
	}
	return b
}

func (b *podBuilder) CPU(q string) *podBuilder {
	b.pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse(q)
	return b
}

func (b *podBuilder) GPUs(n int64) *podBuilder {
	if n > 0 {
		b.pod.Spec.Containers[0].Resources.Limits[resourceGPU] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return b
}

func (b *podBuilder) Obj() *corev1.Pod { return b.pod.DeepCopy() }

// jobBuilder builds a gang as the job operators of the seed experiments
// create it: tf-operator with --enable-gang-scheduling (a PodGroup named
// after the job, minMember = all replicas, every pod annotated with
// scheduling.k8s.io/group-name), or a TFJob with ACK's labels only (no
// PodGroup object).
type jobBuilder struct {
	name          string
	schedulerName string
	runFor        string
	ps, workers   int
	psCPU         string
	workerCPU     string
	workerGPUs    int64
	labelsOnly    bool
	foreign       *schema.GroupVersionResource // the PodGroup is of this API (another scheduler's), not ours
	minMember     int32                        // 0: every replica
	minAvailable  string                       // labels-only: the raw label value; "": minMember
	image         string
	queue         string
	estimate      *int64 // PodGroup spec.estimatedRuntimeSeconds
	topology      string // PodGroup spec.requiredTopology
	gpuModel      string // PodGroup spec.gpuModel
	priorityClass string // PodGroup spec.priorityClassName and the pods'
	annotations   map[string]string
	pgAnnotations map[string]string // on the PodGroup
	nodeSelector  map[string]string // the pods'
}

// tfJob is a TFJob of tf-operator with gang scheduling on: a PodGroup and
// annotated pods <name>-ps-<i> and <name>-worker-<i>.
func tfJob(name string) *jobBuilder {
	return &jobBuilder{name: name, schedulerName: defaultSchedulerNm, psCPU: "1", image: "yylin1/tf-benchmarks-gpu:gpu-v1"}
}

// ackJob is a TFJob whose template carries ACK's labels: the gang is
// implied by pod-group.scheduling.sigs.k8s.io/name and /min-available.
func ackJob(name string) *jobBuilder {
	b := tfJob(name)
	b.labelsOnly = true
	b.image = "registry.cn-hangzhou.aliyuncs.com/kubeflow-images-public/tf-benchmarks-gpu:v20171202-bdab599-dirty-284af3"
	return b
}

// gang is a plain gang of identical members: a PodGroup and n workers.
func gang(name string) *jobBuilder { return tfJob(name) }

func (b *jobBuilder) PS(n int) *jobBuilder                { b.ps = n; return b }
func (b *jobBuilder) Workers(n int) *jobBuilder           { b.workers = n; return b }
func (b *jobBuilder) Members(n int) *jobBuilder           { return b.Workers(n) }
func (b *jobBuilder) GPUsPerWorker(n int64) *jobBuilder   { b.workerGPUs = n; return b }
func (b *jobBuilder) GPUs(n int64) *jobBuilder            { return b.GPUsPerWorker(n) }
func (b *jobBuilder) WorkerCPU(q string) *jobBuilder      { b.workerCPU = q; return b }
func (b *jobBuilder) RunFor(d string) *jobBuilder         { b.runFor = d; return b }
func (b *jobBuilder) SchedulerName(n string) *jobBuilder  { b.schedulerName = n; return b }
func (b *jobBuilder) MinMember(n int32) *jobBuilder       { b.minMember = n; return b }
func (b *jobBuilder) MinAvailable(raw string) *jobBuilder { b.minAvailable = raw; return b }

// Queue puts the gang in a queue: its PodGroup's spec.queue, or the pods'
// queue annotation for a labels-only job.
func (b *jobBuilder) Queue(q string) *jobBuilder { b.queue = q; return b }

// Estimate sets the PodGroup's spec.estimatedRuntimeSeconds.
func (b *jobBuilder) Estimate(secs int64) *jobBuilder { b.estimate = &secs; return b }

// RequiredTopology sets the PodGroup's spec.requiredTopology.
func (b *jobBuilder) RequiredTopology(label string) *jobBuilder { b.topology = label; return b }

// NodeSelector puts a node selector on the pods.
func (b *jobBuilder) NodeSelector(k, v string) *jobBuilder {
	b.nodeSelector = map[string]string{k: v}
	return b
}

// PriorityClass sets the PodGroup's and the pods' priorityClassName.
func (b *jobBuilder) PriorityClass(name string) *jobBuilder { b.priorityClass = name; return b }

// GPUModel sets the PodGroup's spec.gpuModel.
func (b *jobBuilder) GPUModel(m string) *jobBuilder { b.gpuModel = m; return b }

// PodAnnotation puts an annotation on every pod of the job.
func (b *jobBuilder) PodAnnotation(k, v string) *jobBuilder {
	if b.annotations == nil {
		b.annotations = map[string]string{}
	}
	b.annotations[k] = v
	return b
}

// PodGroupAnnotation puts an annotation on the job's PodGroup.
func (b *jobBuilder) PodGroupAnnotation(k, v string) *jobBuilder {
	if b.pgAnnotations == nil {
		b.pgAnnotations = map[string]string{}
	}
	b.pgAnnotations[k] = v
	return b
}

// ForeignPodGroup makes the job's PodGroup one of another scheduler's API,
// such as kube-batch's or Volcano's, as tf-operator creates it.
func (b *jobBuilder) ForeignPodGroup(api schema.GroupVersionResource) *jobBuilder {
	b.foreign = &api
	return b
}

func (b *jobBuilder) size() int { return b.ps + b.workers }

func (b *jobBuilder) min() int32 {
	if b.minMember > 0 {
		return b.minMember
	}
	return int32(b.size())
}

// PodGroup is the job's PodGroup, or nil for a labels-only job.
func (b *jobBuilder) PodGroup() *v1alpha1.PodGroup {
	if b.labelsOnly {
		return nil
	}
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Annotations: b.pgAnnotations},
		Spec: v1alpha1.PodGroupSpec{MinMember: b.min(), Queue: b.queue, EstimatedRuntimeSeconds: b.estimate,
			RequiredTopology: b.topology, GPUModel: b.gpuModel, PriorityClassName: b.priorityClass},
	}
}

// Pods are the job's members, PS first.
func (b *jobBuilder) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	add := func(role string, i int, p *podBuilder) {
		p.Label("group-name", "kubeflow.org").Label(labelJob, b.name).
			Label("tf-replica-type", role).Label("tf-replica-index", strconv.Itoa(i)).
			SchedulerName(b.schedulerName).Image(b.image).RunFor(b.runFor)
		if b.labelsOnly {
			minAvail := b.minAvailable
			if minAvail == "" {
				minAvail = strconv.Itoa(int(b.min()))
			}
			p.Label(labelACKName, b.name).Label(labelACKMinAvail, minAvail)
			if b.queue != "" {
				p.Annotation(annQueue, b.queue)
			}
		} else {
			p.Group(b.name)
		}
		for k, v := range b.annotations {
			p.Annotation(k, v)
		}
		p.pod.Spec.PriorityClassName = b.priorityClass
		p.pod.Spec.NodeSelector = b.nodeSelector
		out = append(out, p.Obj())
	}
	for i := 0; i < b.ps; i++ {
		add("ps", i, makePod(fmt.Sprintf("%s-ps-%d", b.name, i)).CPU(b.psCPU))
	}
	for i := 0; i < b.workers; i++ {
		p := makePod(fmt.Sprintf("%s-worker-%d", b.name, i)).GPUs(b.workerGPUs)
		if b.workerCPU != "" {
			p.CPU(b.workerCPU)
		}
		add("worker", i, p)
	}
	return out
}

// nodesBuilder builds KWOK nodes shaped like hack/kwok-nodes.sh prints
// them: annotated kwok.x-k8s.io/node=fake, no taints, capacity equal to
// allocatable. KWOK sets their Ready condition.
type nodesBuilder struct {
	prefix      string
	count       int
	cpu, memory string
	pods        string
	gpus        int64
	labels      map[string]string
}

func kwokNodes(prefix string, count int) *nodesBuilder {
	return &nodesBuilder{prefix: prefix, count: count, cpu: "32", memory: "256Gi", pods: "110"}
}

func (b *nodesBuilder) CPU(q string) *nodesBuilder    { b.cpu = q; return b }
func (b *nodesBuilder) Memory(q string) *nodesBuilder { b.memory = q; return b }
func (b *nodesBuilder) GPUs(n int64) *nodesBuilder    { b.gpus = n; return b }

// Label puts a label on every node, such as a rack or a GPU model.
func (b *nodesBuilder) Label(k, v string) *nodesBuilder {
	if b.labels == nil {
		b.labels = map[string]string{}
	}
	b.labels[k] = v
	return b
}

func (b *nodesBuilder) Objs() []*corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(b.cpu),
		corev1.ResourceMemory:           resource.MustParse(b.memory),
		corev1.ResourcePods:             resource.MustParse(b.pods),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	if b.gpus > 0 {
		res[resourceGPU] = *resource.NewQuantity(b.gpus, resource.DecimalSI)
	}
	var out []*corev1.Node
	for i := 0; i < b.count; i++ {
		name := fmt.Sprintf("%s-%d", b.prefix, i)
		labels := map[string]string{"type": "kwok", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
			"kubernetes.io/hostname": name}
		for k, v := range b.labels {
			labels[k] = v
		}
		out = append(out, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      labels,
			},
			Status: corev1.NodeStatus{
				Allocatable: res.DeepCopy(),
				Capacity:    res.DeepCopy(),
				NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux",
					KubeletVersion: "fake", KubeProxyVersion: "fake"},
			},
		})
	}
	return out
}
