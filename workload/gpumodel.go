package workload

// GPU models and member failures of scenario files.

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// gpuModel reads a GPU model name: a non-empty label value.
func (p *scenarioReader) gpuModel(n *yaml.Node) (string, error) {
	model, err := p.str(n, "gpuModel")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(model) == "" || strings.ContainsAny(model, " \t") {
		return "", p.errorf(n, "gpuModel %q is not a label value such as A100", model)
	}
	return model, nil
}

// poolGPUModel labels the pool's nodes with their GPU model.
func (p *scenarioReader) poolGPUModel(n *yaml.Node, pool *NodePool) error {
	model, err := p.gpuModel(n)
	if err != nil {
		return err
	}
	if _, clash := pool.Labels[GPUModelLabel]; clash {
		return p.errorf(n, "node pool %q sets label %q both in labels and as its gpuModel", pool.Name, GPUModelLabel)
	}
	labels := make(map[string]string, len(pool.Labels)+1)
	for k, v := range pool.Labels {
		labels[k] = v
	}
	labels[GPUModelLabel] = model
	pool.Labels = labels
	return nil
}

// jobGPUModel sets the job's GPU model; no task may select another model.
func (p *scenarioReader) jobGPUModel(n *yaml.Node, j *Job) error {
	model, err := p.gpuModel(n)
	if err != nil {
		return err
	}
	for _, t := range j.Tasks {
		if v, ok := t.NodeSelector[GPUModelLabel]; ok && v != model {
			return p.errorf(n, "job %q wants gpuModel %q but its task %q selects %s=%s", j.ID, model, t.Role, GPUModelLabel, v)
		}
	}
	j.GPUModel = model
	return nil
}

// failures reads the member failures of job j, whose tasks are read.
func (p *scenarioReader) failures(n *yaml.Node, j *Job) ([]Failure, error) {
	list, err := p.sequence(n, "failures")
	if err != nil {
		return nil, err
	}
	var out []Failure
	for _, item := range list {
		m, err := p.mapping(item, "failure", "at", "member", "restartAfter")
		if err != nil {
			return nil, err
		}
		var f Failure
		if m["at"] == nil {
			return nil, p.errorf(item, "failure of job %q has no at (run time after the job starts)", j.ID)
		}
		if f.At, err = p.seconds(m["at"], "at"); err != nil {
			return nil, err
		}
		if m["member"] == nil {
			return nil, p.errorf(item, "failure of job %q has no member (its index, from 0)", j.ID)
		}
		members := int64(j.Members())
		mem, err := p.integer(m["member"], "member", 0, maxCount)
		if err != nil {
			return nil, err
		}
		if mem >= members {
			return nil, p.errorf(m["member"], "job %q has %d members: member must be between 0 and %d, got %d", j.ID, members, members-1, mem)
		}
		f.Member = int(mem)
		if v := m["restartAfter"]; v != nil {
			if f.RestartAfter, err = p.seconds(v, "restartAfter"); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
	}
	return out, nil
}
