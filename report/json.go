package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Inputs is what a run of `phalanx simulate` was given, echoed by WriteJSON
// so that its output says what it measured.
type Inputs struct {
	// Source is "built-in", "scenario FILE" or "trace FILE".
	Source   string   `json:"source"`
	Policies []string `json:"policies"`
	// Options holds every option of the command by flag name, as it
	// applied (defaults, the configuration file and the command line
	// resolved), rendered as the flag would be written.
	Options map[string]string `json:"options"`
}

// jsonPool, jsonQueue and jsonInput describe one input in the JSON output.
type jsonPool struct {
	Name        string            `json:"name"`
	Count       int               `json:"count"`
	At          int64             `json:"at_s"`
	Allocatable map[string]int64  `json:"allocatable"`
	Labels      map[string]string `json:"labels,omitempty"`
	RackSize    int               `json:"rack_size,omitempty"`
}

type jsonQueue struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight"`
}

type jsonInput struct {
	Input    string      `json:"input"`
	Nodes    int         `json:"nodes"`
	GPUs     int64       `json:"gpus"`
	Pools    []jsonPool  `json:"pools"`
	Topology []string    `json:"topology"`
	Queues   []jsonQueue `json:"queues"`
	Jobs     int         `json:"jobs"`
}

// WriteJSON writes exactly one JSON object and a newline:
//
//	{"source": "trace philly.csv", "policies": [...], "options": {...},
//	 "inputs": [{"input": "philly", "nodes": 64, "gpus": 512, "pools": [...], ...}],
//	 "results": [{"input": "philly", "policy": "phalanx", "jobs_total": 2, ...}, ...]}
//
// with the fields of in (when not nil) first, then one element of inputs
// per comparison (its cluster, queues and number of jobs), and one element
// of results per result of every comparison, in order. Each result holds
// the input's name, the policy and, next to them, every key of sim.Metrics
// as its JSON tags name it. Nothing else is written, so the output can be
// piped to jq.
func WriteJSON(out io.Writer, in *Inputs, cs []Comparison) error {
	var buf bytes.Buffer
	buf.WriteByte('{')
	if in != nil {
		head, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		buf.Write(head[1 : len(head)-1])
		buf.WriteByte(',')
	}
	inputs := make([]jsonInput, 0, len(cs))
	for _, c := range cs {
		inputs = append(inputs, describe(c))
	}
	data, err := json.Marshal(inputs)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	buf.WriteString(`"inputs":`)
	buf.Write(data)
	buf.WriteString(`,"results":[`)
	first := true
	for _, c := range cs {
		for _, r := range c.Results {
			metrics, err := json.Marshal(r.Metrics)
			if err != nil {
				return fmt.Errorf("report: metrics of %s on %s: %w", r.Policy, c.Workload.Name, err)
			}
			head, err := json.Marshal(struct {
				Input  string `json:"input"`
				Policy string `json:"policy"`
			}{c.Workload.Name, r.Policy})
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			// Splice the two objects: drop head's "}" and metrics' "{".
			buf.Write(head[:len(head)-1])
			if len(metrics) > 2 {
				buf.WriteByte(',')
				buf.Write(metrics[1:])
			} else {
				buf.WriteByte('}')
			}
		}
	}
	buf.WriteString(`]}`)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, buf.Bytes(), "", "  "); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	pretty.WriteByte('\n')
	if _, err := out.Write(pretty.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// describe returns the cluster, queues and size of c's input.
func describe(c Comparison) jsonInput {
	w := c.Workload
	in := jsonInput{Input: w.Name, Jobs: len(w.Jobs), Topology: w.Topology, GPUs: capacity(w, maxTime),
		Pools: []jsonPool{}, Queues: []jsonQueue{}}
	if in.Topology == nil {
		in.Topology = []string{}
	}
	for _, p := range w.Pools {
		in.Nodes += p.Count
		in.Pools = append(in.Pools, jsonPool{Name: p.Name, Count: p.Count, At: p.At, Allocatable: p.Allocatable, Labels: p.Labels, RackSize: p.RackSize})
	}
	for _, q := range w.Queues {
		in.Queues = append(in.Queues, jsonQueue{Name: q.Name, Weight: q.Weight})
	}
	return in
}
