package scheduler

import (
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/randfill"
)

// leanAlsoReads are the ignored fields (podspec.go) that leanPod keeps
// because other parts read them: preemption caps the grace period, run
// time estimates read the deadline, and an ephemeral volume's claim is
// named after the volume.
var leanAlsoReads = map[string]bool{
	"terminationGracePeriodSeconds": true,
	"activeDeadlineSeconds":         true,
	"volumes[].name":                true,
}

// randomPods fills n pods with random values in every field, half of
// them ours.
func randomPods(seed int64, n int) []*corev1.Pod {
	f := randfill.New().RandSource(rand.NewSource(seed)).NilChance(0.2).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(64), resource.DecimalSI)
		},
		func(l *corev1.ResourceList, c randfill.Continue) {
			*l = corev1.ResourceList{}
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "nvidia.com/gpu", "example.com/fpga"} {
				if c.Intn(2) == 0 {
					(*l)[name] = *resource.NewQuantity(1+c.Int63n(8), resource.DecimalSI)
				}
			}
		})
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		p := &corev1.Pod{}
		f.Fill(p)
		if i%2 == 0 {
			p.Spec.SchedulerName = "phalanx"
		}
		if i%4 == 0 {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
				Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(int64(1000+i), 0)})
		}
		if i%3 == 0 {
			p.Annotations = map[string]string{lastAppliedAnnotation: strings.Repeat("x", 100), "keep": "me"}
		}
		pods[i] = p
	}
	return pods
}

// valuesAt returns what v holds at path (JSON names; "[]" walks a list),
// one value per list element reached; a nil pointer on the way gives nil.
func valuesAt(v reflect.Value, parts []string) []any {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return []any{nil}
		}
		v = v.Elem()
	}
	if len(parts) == 0 {
		return []any{v.Interface()}
	}
	name, list := strings.CutSuffix(parts[0], "[]")
	f, ok := jsonField(v, name)
	if !ok {
		panic("no field " + name + " in " + v.Type().String())
	}
	if !list {
		return valuesAt(f, parts[1:])
	}
	out := []any{f.Len()}
	for i := 0; i < f.Len(); i++ {
		out = append(out, valuesAt(f.Index(i), parts[1:])...)
	}
	return out
}

// jsonField is v's field of that JSON name, looking into inlined structs.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	for i := 0; i < v.NumField(); i++ {
		sf := v.Type().Field(i)
		tag := strings.Split(sf.Tag.Get("json"), ",")[0]
		if tag == name {
			return v.Field(i), true
		}
		if tag == "" && sf.Anonymous {
			if f, ok := jsonField(v.Field(i), name); ok {
				return f, true
			}
		}
	}
	return reflect.Value{}, false
}

// TestLeanPodKeepsWhatIsRead fills pods with random values in every field
// and checks what leanPod keeps against podspec.go's lists: every handled
// or unsupported field unchanged (volumes: those backed by claims; limits:
// the same requests result), every ignored field gone unless another part
// reads it, and the metadata and status the scheduler reads. Then the
// store must make the same of the lean pod as of the whole one.
func TestLeanPodKeepsWhatIsRead(t *testing.T) {
	leaves, into := map[string]bool{}, map[string]bool{}
	specFields(reflect.TypeOf(corev1.PodSpec{}), "", expandedFields, leaves, into)
	for seed := int64(1); seed <= 40; seed++ {
		for _, pod := range randomPods(seed, 10) {
			lean := leanPod(pod.DeepCopy())
			// What the scheduler reads: the volumes backed by claims, and
			// the ports that bind a port of the node.
			claims := pod.DeepCopy()
			for _, cs := range [][]corev1.Container{claims.Spec.Containers, claims.Spec.InitContainers} {
				for i := range cs {
					ports := cs[i].Ports
					cs[i].Ports = nil
					for _, p := range ports {
						if p.HostPort > 0 {
							cs[i].Ports = append(cs[i].Ports, p)
						}
					}
				}
			}
			claims.Spec.Volumes = nil
			for _, v := range pod.Spec.Volumes {
				if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
					claims.Spec.Volumes = append(claims.Spec.Volumes, v)
				}
			}
			for path := range leaves {
				parts := strings.Split(path, ".")
				_, handled := handledFields[path]
				_, unsupported := unsupportedFields[path]
				got := valuesAt(reflect.ValueOf(lean.Spec), parts)
				switch {
				case strings.HasSuffix(path, "resources.limits"):
					// Compared below, by what they amount to.
				case handled || unsupported || leanAlsoReads[path]:
					want := valuesAt(reflect.ValueOf(claims.Spec), parts)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("seed %d: leanPod changed %s, which the scheduler reads (-whole +lean):\n%s", seed, path, diff)
					}
				default:
					for _, v := range got {
						if _, isLen := v.(int); isLen || v == nil {
							continue
						}
						if !reflect.ValueOf(v).IsZero() {
							t.Fatalf("seed %d: leanPod kept %s = %v, which nothing reads", seed, path, v)
						}
					}
				}
			}
			if !quantitiesEqual(podRequests(pod), podRequests(lean)) {
				t.Fatalf("seed %d: requests %v of the whole pod, %v of the lean one", seed, podRequests(pod), podRequests(lean))
			}
			for i := range pod.Spec.Containers {
				if !quantitiesEqual(containerRequests(&pod.Spec.Containers[i]), containerRequests(&lean.Spec.Containers[i])) {
					t.Fatalf("seed %d: container %d asks for other resources once lean", seed, i)
				}
			}

			wantMeta := pod.ObjectMeta
			wantMeta.ManagedFields = nil
			if _, ok := pod.Annotations[lastAppliedAnnotation]; ok {
				wantMeta.Annotations = map[string]string{"keep": "me"}
			}
			if diff := cmp.Diff(wantMeta, lean.ObjectMeta); diff != "" {
				t.Fatalf("seed %d: metadata (-want +lean):\n%s", seed, diff)
			}
			var scheduled []corev1.PodCondition
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					scheduled = append(scheduled, c)
				}
			}
			if pod.Status.Phase != lean.Status.Phase || !reflect.DeepEqual(scheduled, lean.Status.Conditions) ||
				!reflect.DeepEqual(pod.Status.StartTime, lean.Status.StartTime) || lastFinish(pod) != lastFinish(lean) {
				t.Fatalf("seed %d: the status the scheduler reads changed", seed)
			}
			if lean.Status.PodIP != "" || len(lean.Status.InitContainerStatuses) > 0 {
				t.Fatalf("seed %d: leanPod kept status fields nothing reads", seed)
			}
		}
	}
}

func quantitiesEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if r, ok := b[name]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

// TestLeanPodSameInStore: the store makes the same of a lean pod as of the
// whole one: requests, problem, gang, constraints, volume waits and
// unsupported fields.
func TestLeanPodSameInStore(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		whole, lean := NewStore([]string{"phalanx"}), NewStore([]string{"phalanx"})
		clock := func() time.Time { return time.Unix(5000, 0) } // the stores stamp binds they first see
		whole.now, lean.now = clock, clock
		for _, pod := range randomPods(seed, 20) {
			pod.Namespace, pod.DeletionTimestamp = "ns", nil
			pod.Status.StartTime = &metav1.Time{}
			whole.SetPod(pod.DeepCopy())
			lean.SetPod(leanPod(pod.DeepCopy()))
			a, b := whole.pods[pod.UID], lean.pods[pod.UID]
			if a.req != b.req || a.problem != b.problem || a.gang != b.gang || a.other != b.other || a.node != b.node ||
				a.terminal != b.terminal || a.volumeWait != b.volumeWait || a.unsupported != b.unsupported ||
				!reflect.DeepEqual(a.cons, b.cons) || a.boundSince() != b.boundSince() {
				t.Fatalf("seed %d, pod %s: the store reads the lean pod otherwise:\nwhole %+v\nlean  %+v", seed, pod.Name, a, b)
			}
		}
	}
}

// operatorPod is a worker pod as a training operator writes it and the API
// server and a kubelet complete it: environment, mounts, the service
// account's projected volume, default tolerations, a running status.
func operatorPod(i int) *corev1.Pod {
	name := fmt.Sprintf("bert-large-worker-%d", i)
	env := []corev1.EnvVar{{Name: "PYTHONUNBUFFERED", Value: "1"}, {Name: "MASTER_PORT", Value: "23456"},
		{Name: "MASTER_ADDR", Value: "bert-large-master-0"}, {Name: "WORLD_SIZE", Value: "64"}, {Name: "RANK", Value: strconv.Itoa(i)},
		{Name: "PET_NPROC_PER_NODE", Value: "auto"}, {Name: "PET_NNODES", Value: "64"},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}}}
	expiry := int64(3607)
	mode := int32(420)
	gpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		"nvidia.com/gpu": resource.MustParse("1")}
	started := metav1.Unix(1700000000, 0)
	conds := []corev1.PodCondition{}
	for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		conds = append(conds, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: started})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-nlp", UID: types.UID(fmt.Sprintf("6f1c8a2e-0b7d-4c1e-9a55-%012d", i)),
			ResourceVersion: strconv.Itoa(1000000 + i), CreationTimestamp: started,
			Labels: map[string]string{"training.kubeflow.org/job-name": "bert-large", "training.kubeflow.org/operator-name": "pytorchjob-controller",
				"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": strconv.Itoa(i),
				"training.kubeflow.org/job-role": "worker"},
			Annotations: map[string]string{"scheduling.k8s.io/group-name": "bert-large"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "bert-large",
				UID: "0c5e2d8f-3a41-4f7b-8e6d-2b9a7c1d4e5f", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}},
		Spec: corev1.PodSpec{SchedulerName: "phalanx", NodeName: fmt.Sprintf("gpu-node-%04d", i/8),
			RestartPolicy: corev1.RestartPolicyOnFailure, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default",
			TerminationGracePeriodSeconds: ptr(int64(30)), EnableServiceLinks: ptr(true), PreemptionPolicy: ptr(corev1.PreemptLowerPriority),
			Priority: ptr(int32(0)), SecurityContext: &corev1.PodSecurityContext{},
			Containers: []corev1.Container{{Name: "pytorch", Image: "registry.example.com/nlp/bert-large-train:2024.11.3-cuda12.4",
				Command: []string{"torchrun"}, Args: []string{"--nnodes=64", "--nproc-per-node=1", "/workspace/train.py", "--config", "/workspace/configs/bert-large.yaml"},
				Env: env, Ports: []corev1.ContainerPort{{Name: "pytorchjob-port", ContainerPort: 23456, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu},
				VolumeMounts: []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"},
					{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent}},
			Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode,
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiry, Path: "token"}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
							FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}}}}}}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conds, HostIP: "10.20.3.17", PodIP: "10.244.17.9",
			HostIPs: []corev1.HostIP{{IP: "10.20.3.17"}}, PodIPs: []corev1.PodIP{{IP: "10.244.17.9"}}, StartTime: &started, QOSClass: corev1.PodQOSGuaranteed,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "pytorch", Ready: true, Started: ptr(true),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
				Image:       "registry.example.com/nlp/bert-large-train:2024.11.3-cuda12.4",
				ImageID:     "registry.example.com/nlp/bert-large-train@sha256:7d9f4c2b1e8a6f3d5c0b9a8e7f6d5c4b3a2918e7d6c5b4a39281706f5e4d3c2b",
				ContainerID: "containerd://4b8e1f6a2c9d7e3b5a0f8c1d6e2a9b7f3c5d8e0a1b4f7c2e9d6a3b8f5c1e7d0a"}}},
	}
}

func ptr[T any](v T) *T { return &v }

// BenchmarkPodCacheBytes reports what a cached pod costs in the heap, whole
// and lean, for the operator's worker pod above and for the scale
// benchmark's minimal pod: each is encoded as protobuf and decoded again, as
// the informer receives it, and the heap is measured after a collection.
//
//	go test ./scheduler -run '^$' -bench PodCacheBytes -benchtime 1x
func BenchmarkPodCacheBytes(b *testing.B) {
	const n = 20000
	minimal := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%06d", i), Namespace: "scale-pending",
			UID: types.UID(fmt.Sprintf("6f1c8a2e-0b7d-4c1e-9a55-%012d", i)), ResourceVersion: strconv.Itoa(1000000 + i),
			Labels: map[string]string{"app": "scale", LabelACKName: "g-" + strconv.Itoa(i/8), LabelACKMinAvailable: "8"}},
			Spec: corev1.PodSpec{SchedulerName: "phalanx", RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
				TerminationGracePeriodSeconds: ptr(int64(0)), Priority: ptr(int32(0)), EnableServiceLinks: ptr(true),
				PreemptionPolicy: ptr(corev1.PreemptLowerPriority), SecurityContext: &corev1.PodSecurityContext{},
				Containers: []corev1.Container{{Name: "c", Image: "none", TerminationMessagePath: "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")},
						Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
				Tolerations: []corev1.Toleration{
					{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
					{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	for _, tc := range []struct {
		name string
		pod  func(int) *corev1.Pod
	}{{"operator", operatorPod}, {"minimal", minimal}} {
		data := make([][]byte, n)
		for i := range data {
			var err error
			if data[i], err = tc.pod(i).Marshal(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(tc.name+"/cached", func(b *testing.B) {
			for range b.N {
				before := heapInUse()
				idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
				st := NewStore([]string{"phalanx"})
				trim := trimForCache(newSharer())
				for i := range data {
					p := &corev1.Pod{}
					if err := p.Unmarshal(data[i]); err != nil {
						b.Fatal(err)
					}
					o, _ := trim(p)
					if err := idx.Add(o); err != nil {
						b.Fatal(err)
					}
					st.SetPod(o.(*corev1.Pod))
				}
				after := heapInUse()
				b.ReportMetric(float64(after-before)/n, "B/pod")
				runtime.KeepAlive(idx)
				runtime.KeepAlive(st)
			}
		})
		for _, lean := range []bool{false, true} {
			name := tc.name + "/whole"
			if lean {
				name = tc.name + "/lean"
			}
			b.Run(name, func(b *testing.B) {
				for range b.N {
					before := heapInUse()
					pods := make([]*corev1.Pod, n)
					for i := range pods {
						p := &corev1.Pod{}
						if err := p.Unmarshal(data[i]); err != nil {
							b.Fatal(err)
						}
						if lean {
							p = leanPod(p)
						}
						pods[i] = p
					}
					after := heapInUse()
					b.ReportMetric(float64(after-before)/n, "B/pod")
					runtime.KeepAlive(pods)
				}
			})
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
