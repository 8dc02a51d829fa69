package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The two Volcano baselines differ only in where members go. Two one-GPU
// jobs run for ten hours on two nodes of 8 GPUs: volcano spreads them, one
// on each node, and a gang of a whole node waits until one of them ends;
// volcano-binpack puts both on one node, and the gang starts on the other
// as it arrives.
func TestVolcanoBinpackPacks(t *testing.T) {
	w := newWorkload().
		pool("n", 2, gpus(8), cpu(64)).
		job("a", at(0), runs(36000), task("w", 1, gpus(1), cpu(1))).
		job("b", at(10), runs(36000), task("w", 1, gpus(1), cpu(1))).
		job("big", at(20), runs(3600), task("w", 1, gpus(8), cpu(8))).
		build()
	for _, tc := range []struct {
		policy string
		want   map[string]span
	}{
		{PolicyVolcano, map[string]span{"a": {0, 36000}, "b": {10, 36010}, "big": {36000, 39600}}},
		{PolicyVolcanoBinpack, map[string]span{"a": {0, 36000}, "b": {10, 36010}, "big": {20, 3620}}},
	} {
		if d := cmp.Diff(tc.want, spans(runWith(t, w, tc.policy, Options{}))); d != "" {
			t.Errorf("%s: spans (-want +got):\n%s", tc.policy, d)
		}
	}
}
