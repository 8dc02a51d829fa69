package core

import (
	"math"
	"testing"
)

func TestEstimateFactor(t *testing.T) {
	ratios := func(rs ...float64) []float64 { return rs }
	for _, tc := range []struct {
		name    string
		ratios  []float64
		current float64
		want    float64
	}{
		{"none", nil, 2, 1},
		{"within a quarter of the factor so far: it stays", ratios(1.2, 1.2, 1.2, 1.2, 1.2), 1, 1},
		{"within a quarter below: it stays", ratios(1.7, 1.7, 1.7, 1.7, 1.7), 2, 2},
		{"more than a quarter over: it follows", ratios(1.3, 1.3, 1.3, 1.3, 1.3), 1, 1.3},
		{"more than a quarter under: it follows", ratios(1.5, 1.5, 1.5, 1.5, 1.5), 2, 1.5},
		{"four, too few", ratios(2, 2, 2, 2), 1, 1},
		{"five, every gang ran twice its estimate", ratios(2, 2, 2, 2, 2), 1, 2},
		{"odd count: the middle one", ratios(5, 0.1, 1.5, 0.9, 3), 1, 1.5},
		{"even count: geometric mean of the middle two", ratios(0.5, 2, 0.1, 10, 0.2, 40), 1, 1},
		{"one gang hung: the median barely moves", ratios(0.5, 0.5, 0.5, 0.5, 0.5, 500), 1, 0.5},
		{"bounded above", ratios(1e6, 1e6, 1e6, 1e6, 1e6), 1, 1e3},
		{"bounded below", ratios(1e-6, 1e-6, 1e-6, 1e-6, 1e-6), 1, 1e-3},
	} {
		in := append([]float64(nil), tc.ratios...)
		if got := EstimateFactor(tc.ratios, tc.current); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: factor %g, want %g", tc.name, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.ratios[i] {
				t.Errorf("%s: the ratios were modified", tc.name)
				break
			}
		}
	}
}

func TestCorrectEstimate(t *testing.T) {
	for _, tc := range []struct {
		est    int64
		factor float64
		limit  int64
		want   int64
	}{
		{600, 1, 100, 600}, // a factor of 1 changes nothing, not even past the limit
		{600, 2, 1 << 40, 1200},
		{600, 0.5, 1 << 40, 300},
		{0, 2, 1 << 40, 0},         // unknown stays unknown
		{3, 0.001, 1 << 40, 1},     // at least a second
		{1000, 0.0015, 1 << 40, 2}, // rounded
		{1 << 39, 1000, 1 << 40, 1 << 40},
	} {
		if got := CorrectEstimate(tc.est, tc.factor, tc.limit); got != tc.want {
			t.Errorf("CorrectEstimate(%d, %g, %d) = %d, want %d", tc.est, tc.factor, tc.limit, got, tc.want)
		}
	}
	if r, ok := EstimateRatio(600, 1200); !ok || r != 2 {
		t.Errorf("EstimateRatio(600, 1200) = %g, %v; want 2, true", r, ok)
	}
	for _, c := range [][2]int64{{0, 10}, {10, 0}, {-5, 10}} {
		if _, ok := EstimateRatio(c[0], c[1]); ok {
			t.Errorf("EstimateRatio(%d, %d) ok, want not", c[0], c[1])
		}
	}
}

func TestWorkFactor(t *testing.T) {
	n := func(v ...int64) []int64 { return v }
	for _, tc := range []struct {
		name     string
		est, ran []int64
		factor   float64
		want     float64
	}{
		{"exact: exactly 1", n(100, 200, 300, 400, 500), n(100, 200, 300, 400, 500), 1, 1},
		{"four, too few", n(100, 100, 100, 100), n(50, 50, 50, 50), 1, 1},
		{"sums, not ratios: the long gang weighs most", n(100, 100, 100, 100, 1000), n(200, 200, 200, 200, 200), 1, 1000.0 / 1400},
		{"over the corrected estimates", n(100, 100, 100, 100, 100), n(300, 300, 300, 300, 300), 2, 1.5},
		{"corrected right: 1", n(100, 100, 100, 100, 100), n(300, 300, 300, 300, 300), 3, 1},
		{"pairs without an estimate or a run time are skipped", n(100, 0, 100, 100, 100, 100, -5), n(50, 50, 0, 50, 50, 50, 50), 1, 1},
		{"skipped to four: too few", n(100, 0, 100, 100, 100), n(50, 50, 50, 50, 50), 1, 1},
		{"bounded above", n(1, 1, 1, 1, 1), n(1e7, 1e7, 1e7, 1e7, 1e7), 1, 1e3},
		{"bounded below", n(1e7, 1e7, 1e7, 1e7, 1e7), n(1, 1, 1, 1, 1), 1, 1e-3},
		{"no factor: 1", n(100, 100, 100, 100, 100), n(50, 50, 50, 50, 50), 0, 1},
		{"ran shorter than estimates", n(100, 100, 100, 100, 100), n(50, 50, 50, 50, 50), 1, 0.5},
	} {
		if got := WorkFactor(tc.est, tc.ran, tc.factor); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: work factor %g, want %g", tc.name, got, tc.want)
		}
	}
}
