package report

import (
	"strings"
	"testing"
)

// TestNiceTicksLabels: the labelled ticks are round values written with the
// step's decimals and no float noise.
func TestNiceTicksLabels(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 1.2, "0.0 0.2 0.4 0.6 0.8 1.0 1.2"},
		{0, 600, "0 100 200 300 400 500 600"},
		{0, 0.03, "0.000 0.005 0.010 0.015 0.020 0.025 0.030"},
	} {
		var labels []string
		for _, tick := range (niceTicks{}).Ticks(tt.lo, tt.hi) {
			if tick.Label != "" {
				labels = append(labels, tick.Label)
			}
		}
		if got := strings.Join(labels, " "); got != tt.want {
			t.Errorf("ticks of [%v, %v]: %s, want %s", tt.lo, tt.hi, got, tt.want)
		}
	}
}
