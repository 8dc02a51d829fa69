package main

import (
	"regexp"
	"strings"
	"testing"
)

// tableRow returns the cells of the metrics table row labelled label in
// out (columns are at least 3 spaces apart, words one), nil if none.
func tableRow(out, label string) []string {
	for _, l := range strings.Split(out, "\n") {
		if c := regexp.MustCompile(` {3,}`).Split(strings.TrimSpace(l), -1); c[0] == label {
			return c[1:]
		}
	}
	return nil
}

// TestBuiltinDeadlock: the default run shows the deadlock of two gangs
// racing for the same GPUs: pod by pod neither job completes and 8 GPUs are
// held idle for ever, which the table says rather than "none"; every gang
// policy completes both.
func TestBuiltinDeadlock(t *testing.T) {
	code, stdout, stderr := runArgs(t, "simulate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	section := between(stdout, "Scenario deadlock", "simulated in")
	if section == "" {
		t.Fatalf("no deadlock scenario in the default run:\n%s", stdout)
	}
	// Columns: phalanx, pod-by-pod, fifo-gang, volcano.
	want := map[string][]string{
		"  completed": {"2", "0", "2", "2"},
		"  stuck (fit the cluster, never ran)":   {"0", "2", "0", "0"},
		"job completion time, mean":              {"1h30m", "—", "1h30m", "1h30m"},
		"GPU time held idle by incomplete gangs": {"none", "8h+, 8 GPUs never freed", "none", "none"},
	}
	for label, cells := range want {
		got := tableRow(section, strings.TrimSpace(label))
		if strings.Join(got, "|") != strings.Join(cells, "|") {
			t.Errorf("row %q: %q, want %q", label, got, cells)
		}
	}
}
