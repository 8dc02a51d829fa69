package workload

// A scenario is a YAML file that states a cluster, its queues and the jobs
// submitted to it, in the vocabulary of Kubernetes users:
//
//	name: seed-tfjob                # optional, defaults to the file name
//	description: "..."              # optional
//	nodePools:
//	- name: gpu
//	  count: 4                      # optional, default 1
//	  at: 0s                        # optional: when the pool joins
//	  resources: {cpu: "4", memory: 16Gi, nvidia.com/gpu: 1}  # pods: 110 unless given
//	  labels: {gpu: 1060g1}
//	  gpuModel: A100                # optional: label nvidia.com/gpu.product=A100
//	  taints: [{key: dedicated, value: ml, effect: NoSchedule}]
//	  rackSize: 2                   # optional: racks of 2 nodes, labelled
//	  rackLabel: phalanx.dev/rack   #   <rackLabel>=<pool>-rack-<k> (the default label)
//	queues:                         # optional: "default" (weight 1) if none
//	- name: research
//	  weight: 2                     # optional, default 1
//	  capability: {nvidia.com/gpu: 8}
//	  guarantee: {nvidia.com/gpu: 2}
//	  reclaimable: false            # optional, default true: other queues never reclaim from it
//	  strictOrder: true             # optional: jobs run strictly in order; the head gets nodes reserved at once
//	jobs:
//	- name: job1
//	  queue: default                # optional, default "default"
//	  priority: 0                   # optional
//	  submit: 0s                    # optional, default 0s
//	  duration: 10m
//	  minMember: 4                  # optional, default: all members
//	  requiredTopology: phalanx.dev/rack  # optional: start within one rack or wait
//	  gpuModel: A100                # optional: every member needs nvidia.com/gpu.product=A100
//	  failures:                     # optional: members that fail while the job runs
//	  - {at: 10m, member: 1, restartAfter: 60s}  # 10m after the job starts, member 1 (from 0)
//	                                # fails; its replacement is created 60s later
//	  tasks:
//	  - role: ps
//	    replicas: 1                 # optional, default 1
//	    requests: {cpu: "1"}
//	    nodeSelector: {gpu: 1060g1}
//	    tolerations: [{key: dedicated, operator: Equal, value: ml, effect: NoSchedule}]
//	    affinity:                   # required node affinity: at least one term holds
//	    - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
//
// Pools split into racks make their rack label the workload's topology level;
// all such pools must use the same label.
//
// Amounts are Kubernetes quantities ("500m", "4", "16Gi"); times are Go
// durations ("90s", "10m", "2h") or integer seconds. Unknown fields are
// errors, so that a typo is never silently ignored. docs/scenarios.md
// documents every field (TestScenariosDocNamesEveryField keeps it so).

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultQueue is the queue of jobs that name none, and the only queue of a
// scenario that declares none.
const DefaultQueue = "default"

// DefaultPods is the pod capacity of a node whose resources do not say,
// as Kubernetes' default maxPods.
const DefaultPods = 110

// ReadScenarioFile reads the YAML scenario at path (see ReadScenario).
// Errors name the path as given; the workload is named after the file's base
// name unless the scenario names itself.
func ReadScenarioFile(path string) (*Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	return readScenario(f, path, filepath.Base(path))
}

// ReadScenario reads a YAML scenario (format at the top of scenario.go) from
// r. name names the input in errors, which all read "name:line: problem",
// and is the workload's name unless the scenario gives one.
//
// On success: every job's queue is among the workload's queues; every job
// has at least one task, every task at least one replica; MinMember is at
// least 1 (and may exceed the number of members: the scheduler reports
// that); at most 5 extended resources are used; the totals of every job and
// of the cluster fit in int64; jobs are sorted by submit time, ties in file
// order. ReadScenario does not panic on any input.
func ReadScenario(r io.Reader, name string) (*Workload, error) {
	return readScenario(r, name, name)
}

func readScenario(r io.Reader, file, defaultName string) (*Workload, error) {
	p := &scenarioReader{yamlReader: yamlReader{file: file}, extended: map[string]bool{}}
	root, err := p.parse(r)
	if err != nil {
		return nil, err
	}
	w, err := p.workload(root)
	if err != nil {
		return nil, err
	}
	if w.Name == "" {
		w.Name = defaultName
	}
	return w, nil
}

// scenarioReader reads one scenario file.
type scenarioReader struct {
	yamlReader
	extended map[string]bool
}

func (p *scenarioReader) workload(root *yaml.Node) (*Workload, error) {
	m, err := p.mapping(root, "scenario", "name", "description", "nodePools", "queues", "jobs")
	if err != nil {
		if root.Kind == yaml.ScalarNode && strings.HasSuffix(strings.ToLower(p.file), ".csv") {
			return nil, fmt.Errorf("%w (a trace in CSV is given with --trace)", err)
		}
		return nil, err
	}
	w := &Workload{}
	if n := m["name"]; n != nil {
		if w.Name, err = p.str(n, "name"); err != nil {
			return nil, err
		}
	}
	if n := m["description"]; n != nil {
		if w.Description, err = p.str(n, "description"); err != nil {
			return nil, err
		}
	}
	if w.Pools, err = p.pools(m["nodePools"]); err != nil {
		return nil, err
	}
	for _, pool := range w.Pools {
		if pool.RackSize > 0 && len(w.Topology) == 0 {
			w.Topology = []string{pool.RackLabel}
		}
	}
	if w.Queues, err = p.queues(m["queues"]); err != nil {
		return nil, err
	}
	if w.Jobs, err = p.jobs(m["jobs"], w.Queues, m["queues"] != nil); err != nil {
		return nil, err
	}
	for r := range p.extended {
		w.Resources = append(w.Resources, r)
	}
	sort.Strings(w.Resources)
	sortJobs(w.Jobs)
	return w, nil
}

// items reads an optional list of mappings; names must be unique.
func (p *scenarioReader) items(n *yaml.Node, what string, read func(*yaml.Node) (string, error)) error {
	if n == nil {
		return nil
	}
	list, err := p.sequence(n, what+"s")
	if err != nil {
		return err
	}
	lines := map[string]int{}
	for _, item := range list {
		name, err := read(item)
		if err != nil {
			return err
		}
		if first, dup := lines[name]; dup {
			return p.errorf(item, "duplicate %s name %q (first on line %d)", what, name, first)
		}
		lines[name] = item.Line
	}
	return nil
}

func (p *scenarioReader) name(m map[string]*yaml.Node, n *yaml.Node, what string) (string, error) {
	if m["name"] == nil {
		return "", p.errorf(n, "%s has no name", what)
	}
	s, err := p.str(m["name"], what+" name")
	if err == nil && strings.TrimSpace(s) == "" {
		err = p.errorf(m["name"], "%s name is empty", what)
	}
	return s, err
}

func (p *scenarioReader) pools(n *yaml.Node) ([]NodePool, error) {
	var pools []NodePool
	var total map[string]int64 // of the whole cluster, to reject overflow
	err := p.items(n, "node pool", func(n *yaml.Node) (string, error) {
		m, err := p.mapping(n, "node pool", "name", "count", "at", "resources", "labels", "taints", "rackSize", "rackLabel", "gpuModel")
		if err != nil {
			return "", err
		}
		pool := NodePool{Count: 1}
		if pool.Name, err = p.name(m, n, "node pool"); err != nil {
			return "", err
		}
		if v := m["count"]; v != nil {
			c, err := p.integer(v, "count", 0, maxCount)
			if err != nil {
				return "", err
			}
			pool.Count = int(c)
		}
		if v := m["at"]; v != nil {
			if pool.At, err = p.seconds(v, "at"); err != nil {
				return "", err
			}
		}
		if m["resources"] == nil {
			return "", p.errorf(n, "node pool %q has no resources", pool.Name)
		}
		if pool.Allocatable, err = p.resources(m["resources"], "resources", true); err != nil {
			return "", err
		}
		if _, ok := pool.Allocatable["pods"]; !ok {
			pool.Allocatable["pods"] = DefaultPods
		}
		if total, err = p.addTotal(total, pool.Allocatable, int64(pool.Count), m["resources"], "the cluster"); err != nil {
			return "", err
		}
		if v := m["labels"]; v != nil {
			if pool.Labels, err = p.stringMap(v, "labels"); err != nil {
				return "", err
			}
		}
		if v := m["taints"]; v != nil {
			if pool.Taints, err = p.taints(v); err != nil {
				return "", err
			}
		}
		if v := m["gpuModel"]; v != nil {
			if err := p.poolGPUModel(v, &pool); err != nil {
				return "", err
			}
		}
		if err := p.racks(m, n, &pool, pools); err != nil {
			return "", err
		}
		pools = append(pools, pool)
		return pool.Name, nil
	})
	return pools, err
}

// racks reads the rack fields of a pool; earlier are the pools read before.
func (p *scenarioReader) racks(m map[string]*yaml.Node, n *yaml.Node, pool *NodePool, earlier []NodePool) error {
	if v := m["rackSize"]; v != nil {
		size, err := p.integer(v, "rackSize", 0, maxCount)
		if err != nil {
			return err
		}
		pool.RackSize = int(size)
	}
	if v := m["rackLabel"]; v != nil {
		label, err := p.str(v, "rackLabel")
		if err != nil {
			return err
		}
		if strings.TrimSpace(label) == "" {
			return p.errorf(v, "rackLabel is empty")
		}
		if pool.RackSize == 0 {
			return p.errorf(v, "node pool %q has a rackLabel but no rackSize", pool.Name)
		}
		pool.RackLabel = label
	}
	if pool.RackSize == 0 {
		return nil
	}
	if pool.RackLabel == "" {
		pool.RackLabel = DefaultRackLabel
	}
	if _, clash := pool.Labels[pool.RackLabel]; clash {
		return p.errorf(n, "node pool %q sets label %q both in labels and as its rack label", pool.Name, pool.RackLabel)
	}
	for _, e := range earlier {
		if e.RackSize > 0 && e.RackLabel != pool.RackLabel {
			return p.errorf(n, "node pool %q labels its racks %q but pool %q uses %q: all racks must share one label",
				pool.Name, pool.RackLabel, e.Name, e.RackLabel)
		}
	}
	return nil
}

// addTotal adds n times amounts to total and fails if a sum overflows.
func (p *scenarioReader) addTotal(total, amounts map[string]int64, n int64, at *yaml.Node, what string) (map[string]int64, error) {
	if total == nil {
		total = map[string]int64{}
	}
	for r, v := range amounts {
		sum, ok := mulAdd(total[r], n, v)
		if !ok {
			return nil, p.errorf(at, "the total %s of %s exceeds %d", r, what, int64(math.MaxInt64))
		}
		total[r] = sum
	}
	return total, nil
}

func (p *scenarioReader) queues(n *yaml.Node) ([]Queue, error) {
	var queues []Queue
	err := p.items(n, "queue", func(n *yaml.Node) (string, error) {
		m, err := p.mapping(n, "queue", "name", "weight", "capability", "guarantee", "reclaimable", "strictOrder")
		if err != nil {
			return "", err
		}
		q := Queue{Weight: 1}
		if q.Name, err = p.name(m, n, "queue"); err != nil {
			return "", err
		}
		if v := m["weight"]; v != nil {
			if q.Weight, err = p.integer(v, "weight", 1, maxCount); err != nil {
				return "", err
			}
		}
		if v := m["capability"]; v != nil {
			if q.Capability, err = p.resources(v, "capability", true); err != nil {
				return "", err
			}
		}
		if v := m["guarantee"]; v != nil {
			if q.Guarantee, err = p.resources(v, "guarantee", true); err != nil {
				return "", err
			}
		}
		if v := m["reclaimable"]; v != nil {
			reclaimable, err := p.boolean(v, "reclaimable")
			if err != nil {
				return "", err
			}
			q.NoReclaim = !reclaimable
		}
		if v := m["strictOrder"]; v != nil {
			if q.StrictOrder, err = p.boolean(v, "strictOrder"); err != nil {
				return "", err
			}
		}
		queues = append(queues, q)
		return q.Name, nil
	})
	if err == nil && len(queues) == 0 {
		queues = []Queue{{Name: DefaultQueue, Weight: 1}}
	}
	return queues, err
}

func (p *scenarioReader) jobs(n *yaml.Node, queues []Queue, declared bool) ([]Job, error) {
	var jobs []Job
	err := p.items(n, "job", func(n *yaml.Node) (string, error) {
		j, err := p.job(n, queues, declared)
		if err != nil {
			return "", err
		}
		jobs = append(jobs, j)
		return j.ID, nil
	})
	return jobs, err
}

func (p *scenarioReader) job(n *yaml.Node, queues []Queue, declared bool) (Job, error) {
	m, err := p.mapping(n, "job", "name", "queue", "priority", "submit", "duration", "minMember", "tasks", "requiredTopology", "gpuModel", "failures")
	if err != nil {
		return Job{}, err
	}
	j := Job{Queue: DefaultQueue, Source: p.file + ":" + strconv.Itoa(n.Line)}
	if j.ID, err = p.name(m, n, "job"); err != nil {
		return Job{}, err
	}
	if v := m["queue"]; v != nil {
		if j.Queue, err = p.str(v, "queue"); err != nil {
			return Job{}, err
		}
	}
	if !hasQueue(queues, j.Queue) {
		at := n
		if m["queue"] != nil {
			at = m["queue"]
		}
		if !declared {
			return Job{}, p.errorf(at, "job %q names queue %q but the scenario declares no queues (only %q exists)", j.ID, j.Queue, DefaultQueue)
		}
		return Job{}, p.errorf(at, "job %q names queue %q, which is not declared (queues: %s)", j.ID, j.Queue, QueueNames(queues))
	}
	if v := m["priority"]; v != nil {
		pr, err := p.integer(v, "priority", math.MinInt32, math.MaxInt32)
		if err != nil {
			return Job{}, err
		}
		j.Priority = int32(pr)
	}
	if v := m["submit"]; v != nil {
		if j.Submit, err = p.seconds(v, "submit"); err != nil {
			return Job{}, err
		}
	}
	if m["duration"] == nil {
		return Job{}, p.errorf(n, "job %q has no duration", j.ID)
	}
	if j.Duration, err = p.seconds(m["duration"], "duration"); err != nil {
		return Job{}, err
	}
	if m["tasks"] == nil {
		return Job{}, p.errorf(n, "job %q has no tasks", j.ID)
	}
	if j.Tasks, err = p.tasks(m["tasks"], j.ID); err != nil {
		return Job{}, err
	}
	if j.Members() > maxCount {
		return Job{}, p.errorf(m["tasks"], "job %q has %d members, more than %d", j.ID, j.Members(), maxCount)
	}
	j.MinMember = j.Members()
	if v := m["minMember"]; v != nil {
		mm, err := p.integer(v, "minMember", 1, maxCount)
		if err != nil {
			return Job{}, err
		}
		j.MinMember = int(mm)
	}
	if v := m["requiredTopology"]; v != nil {
		if j.RequiredTopology, err = p.str(v, "requiredTopology"); err != nil {
			return Job{}, err
		}
		if strings.TrimSpace(j.RequiredTopology) == "" {
			return Job{}, p.errorf(v, "requiredTopology is empty: name a node label key such as %q", DefaultRackLabel)
		}
	}
	if v := m["gpuModel"]; v != nil {
		if err := p.jobGPUModel(v, &j); err != nil {
			return Job{}, err
		}
	}
	if v := m["failures"]; v != nil {
		if j.Failures, err = p.failures(v, &j); err != nil {
			return Job{}, err
		}
	}
	return j, nil
}

// sortJobs sorts jobs by submit time, ties in input order. Traces usually
// come sorted: checking first spares moving every job.
func sortJobs(jobs []Job) {
	bySubmit := func(a, b Job) int { return cmp.Compare(a.Submit, b.Submit) }
	if !slices.IsSortedFunc(jobs, bySubmit) {
		slices.SortStableFunc(jobs, bySubmit)
	}
}

func hasQueue(queues []Queue, name string) bool {
	for _, q := range queues {
		if q.Name == name {
			return true
		}
	}
	return false
}

// QueueNames lists the names of queues, comma-separated, for messages.
func QueueNames(queues []Queue) string {
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = q.Name
	}
	return strings.Join(names, ", ")
}

func (p *scenarioReader) tasks(n *yaml.Node, job string) ([]Task, error) {
	list, err := p.sequence(n, "tasks")
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, p.errorf(n, "job %q has no tasks", job)
	}
	var tasks []Task
	var total map[string]int64 // of the job, to reject overflow
	lines := map[string]int{}
	for _, n := range list {
		t, err := p.task(n)
		if err != nil {
			return nil, err
		}
		if total, err = p.addTotal(total, t.Requests, int64(t.Replicas), n, "job "+strconv.Quote(job)); err != nil {
			return nil, err
		}
		if first, dup := lines[t.Role]; dup {
			return nil, p.errorf(n, "duplicate role %q in job %q (first on line %d)", t.Role, job, first)
		}
		lines[t.Role] = n.Line
		tasks = append(tasks, t)
	}
	return tasks, nil
}

func (p *scenarioReader) task(n *yaml.Node) (Task, error) {
	m, err := p.mapping(n, "task", "role", "replicas", "requests", "nodeSelector", "tolerations", "affinity")
	if err != nil {
		return Task{}, err
	}
	t := Task{Replicas: 1}
	if m["role"] == nil {
		return Task{}, p.errorf(n, "task has no role")
	}
	if t.Role, err = p.str(m["role"], "role"); err != nil {
		return Task{}, err
	}
	if strings.TrimSpace(t.Role) == "" {
		return Task{}, p.errorf(m["role"], "role is empty")
	}
	if v := m["replicas"]; v != nil {
		r, err := p.integer(v, "replicas", 1, maxCount)
		if err != nil {
			return Task{}, err
		}
		t.Replicas = int(r)
	}
	t.Requests = map[string]int64{}
	if v := m["requests"]; v != nil {
		if t.Requests, err = p.resources(v, "requests", false); err != nil {
			return Task{}, err
		}
	}
	if v := m["nodeSelector"]; v != nil {
		if t.NodeSelector, err = p.stringMap(v, "nodeSelector"); err != nil {
			return Task{}, err
		}
	}
	if v := m["tolerations"]; v != nil {
		if t.Tolerations, err = p.tolerations(v); err != nil {
			return Task{}, err
		}
	}
	if v := m["affinity"]; v != nil {
		if t.Affinity, err = p.affinity(v); err != nil {
			return Task{}, err
		}
	}
	return t, nil
}

// resources reads a mapping of resource names to quantities. Pods may be
// given for nodes and queues, not requested by a task: every member takes
// one pod slot.
func (p *scenarioReader) resources(n *yaml.Node, what string, allowPods bool) (map[string]int64, error) {
	n, err := p.resolve(n)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%s must be a mapping of resource names to amounts, got %s", what, describe(n))
	}
	out := make(map[string]int64, len(n.Content)/2)
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.scalarNode(n.Content[i], "resource name")
		if err != nil {
			return nil, err
		}
		name := k.Value
		if err := checkResourceName(name); err != nil {
			return nil, p.errorf(k, "%s: %v", what, err)
		}
		if name == "pods" && !allowPods {
			return nil, p.errorf(k, "%s: pods cannot be requested; every member takes one pod slot", what)
		}
		if first, dup := lines[name]; dup {
			return nil, p.errorf(k, "duplicate resource %q in %s (first on line %d)", name, what, first)
		}
		lines[name] = k.Line
		if isExtended(name) && !p.extended[name] {
			if len(p.extended) == maxExtended {
				return nil, p.errorf(k, "too many extended resources: %q would be the %dth, at most %d are supported", name, maxExtended+1, maxExtended)
			}
			p.extended[name] = true
		}
		v, err := p.scalarNode(n.Content[i+1], what+" "+name)
		if err != nil {
			return nil, err
		}
		if isNull(v) {
			return nil, p.errorf(v, "%s %s has no amount", what, name)
		}
		amount, err := resourceAmount(name, v.Value)
		if err != nil {
			return nil, p.errorf(v, "%s %s: %v", what, name, err)
		}
		out[name] = amount
	}
	return out, nil
}
