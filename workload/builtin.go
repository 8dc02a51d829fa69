package workload

import (
	"bytes"
	"embed"
	"fmt"
)

//go:embed builtin/*.yaml
var builtinFiles embed.FS

// builtinNames lists the built-in scenarios in the order Builtin returns them.
var builtinNames = []string{"seed-tfjob.yaml", "seed-ack.yaml", "deadlock.yaml"}

// Builtin returns the built-in scenarios `phalanx simulate` runs with no
// arguments: the seed experiments, seed-tfjob then seed-ack, then deadlock
// (two gangs racing for the same GPUs). Each call
// parses them afresh, so callers own what they get. The files are embedded
// in the binary and a test parses them, so Builtin does not fail at run
// time; it panics only if a build embeds a broken file.
func Builtin() []*Workload {
	out := make([]*Workload, 0, len(builtinNames))
	for _, name := range builtinNames {
		w, err := readBuiltin(name)
		if err != nil {
			panic(fmt.Sprintf("workload: broken built-in scenario: %v", err))
		}
		out = append(out, w)
	}
	return out
}

func readBuiltin(name string) (*Workload, error) {
	data, err := builtinFiles.ReadFile("builtin/" + name)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	return ReadScenario(bytes.NewReader(data), "builtin/"+name)
}
