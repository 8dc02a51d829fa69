package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes exactly one JSON object and a newline:
//
//	{"results": [{"input": "seed-tfjob", "policy": "phalanx", "jobs_total": 2, ...}, ...]}
//
// with one element per result of every comparison, in order. Each element
// holds the input's name, the policy and, next to them, every key of
// sim.Metrics as its JSON tags name it. Nothing else is written, so the
// output can be piped to jq.
func WriteJSON(out io.Writer, cs []Comparison) error {
	var buf bytes.Buffer
	buf.WriteString(`{"results":[`)
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
