package core

import (
	"math"
	"slices"
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

// factorCase is a case of a factor derived from a queue's record: its
// estimates and run times, the factor of its one era, the factor wanted.
type factorCase struct {
	name     string
	est, ran []int64
	factor   float64
	want     float64
}

// checkFactors checks f, a factor derived from a queue's record (what it is
// called in messages), over the cases.
func checkFactors(t *testing.T, what string, f func(estimates, ran, arrivals []int64, eras FactorEras) float64, cases []factorCase) {
	t.Helper()
	for _, tc := range cases {
		var eras FactorEras
		if tc.factor != 1 {
			eras = FactorEras{{From: math.MinInt64, Factor: tc.factor}}
		}
		if got := f(tc.est, tc.ran, nil, eras); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %s %g, want %g", tc.name, what, got, tc.want)
		}
	}
}

func TestWorkFactor(t *testing.T) {
	n := func(v ...int64) []int64 { return v }
	checkFactors(t, "work factor", WorkFactor, []factorCase{
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
	})
}

// The overrun factor is the 90th percentile (nearest rank) of run time over
// corrected estimate, at least 1: of the ratios 1 to 10, the 9th; of 20
// ratios, the 18th.
func TestOverrunFactor(t *testing.T) {
	n := func(v ...int64) []int64 { return v }
	ramp := func(k int) (est, ran []int64) {
		for i := 1; i <= k; i++ {
			est, ran = append(est, 100), append(ran, int64(100*i))
		}
		return est, ran
	}
	est10, ran10 := ramp(10)
	est20, ran20 := ramp(20)
	checkFactors(t, "overrun factor", OverrunFactor, []factorCase{
		{"exact: exactly 1", n(100, 200, 300, 400, 500), n(100, 200, 300, 400, 500), 1, 1},
		{"four, too few", n(100, 100, 100, 100), n(400, 400, 400, 400), 1, 1},
		{"ratios 1 to 10: the 9th", est10, ran10, 1, 9},
		{"ratios 1 to 20: the 18th", est20, ran20, 1, 18},
		{"ratios 1 to 10, corrected by 2", est10, ran10, 2, 4.5},
		{"all shorter than estimated: 1", n(100, 100, 100, 100, 100), n(50, 60, 70, 80, 90), 1, 1},
		{"one in five overran twice: the nearest rank of 90% is the 5th", n(100, 100, 100, 100, 100), n(100, 100, 100, 100, 200), 1, 2},
		{"pairs without an estimate or a run time are skipped", n(100, 0, 100, 100, 100, 100, -5), n(50, 5000, 0, 50, 50, 50, 5000), 1, 1},
		{"bounded above", n(1, 1, 1, 1, 1), n(1e7, 1e7, 1e7, 1e7, 1e7), 1, 1e3},
	})
}

// A team that padded its estimates twice over (ratios 0.5) and then halves
// them (ratios 2): when the factor moves, the new one applies from the
// first gang, in order of arrival, of the new habit, whatever the order in
// which the gangs completed; the gangs that arrived before keep the factor
// of their time.
func TestFactorErasMoved(t *testing.T) {
	const minFrom = math.MinInt64
	var none FactorEras
	if none.At(5) != 1 || none.Current() != 1 {
		t.Errorf("no eras: factor %g at 5, current %g; want 1", none.At(5), none.Current())
	}
	first := none.Moved([]float64{0.5, 0.5, 0.5, 0.5, 0.5}, []int64{10, 11, 12, 13, 14}, 0.5)
	if want := (FactorEras{{minFrom, 0.5}}); !slices.Equal(first, want) {
		t.Fatalf("the first factor learned: eras %v, want %v (every gang, even those that arrived before the first recorded)", first, want)
	}
	// Completed in an order other than arrival's.
	ratios := []float64{0.5, 2, 0.5, 2, 2, 0.5, 2, 2, 0.5, 2, 0.5}
	arrivals := []int64{20, 105, 30, 101, 120, 40, 100, 110, 50, 130, 60}
	moved := first.Moved(ratios, arrivals, 2)
	if want := (FactorEras{{minFrom, 0.5}, {100, 2}}); !slices.Equal(moved, want) {
		t.Fatalf("eras %v, want %v", moved, want)
	}
	if !slices.Equal(first, FactorEras{{minFrom, 0.5}}) {
		t.Errorf("Moved modified its receiver: %v", first)
	}
	for _, c := range []struct {
		arrival int64
		want    float64
	}{{-1000, 0.5}, {60, 0.5}, {99, 0.5}, {100, 2}, {1e9, 2}} {
		if got := moved.At(c.arrival); got != c.want {
			t.Errorf("a gang that arrived at %d: factor %g, want %g", c.arrival, got, c.want)
		}
	}
	if moved.Current() != 2 {
		t.Errorf("current factor %g, want 2", moved.Current())
	}

	// A later move whose split lies before the latest era's start replaces
	// it; the earlier eras stay.
	three := FactorEras{{minFrom, 1}, {10, 2}, {20, 0.5}}
	again := three.Moved([]float64{2, 2, 2, 2, 2, 4, 4, 4, 4, 4}, []int64{11, 12, 13, 14, 14, 15, 16, 20, 25, 30}, 4)
	if want := (FactorEras{{minFrom, 1}, {10, 2}, {15, 4}}); !slices.Equal(again, want) {
		t.Errorf("eras %v, want %v", again, want)
	}
	// A split before the later eras' starts: the factor that applied
	// before it stays for the earlier arrivals.
	early := three.Moved([]float64{1, 1, 1, 1, 1, 4, 4, 4, 4, 4}, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 4)
	if want := (FactorEras{{minFrom, 1}, {5, 4}}); !slices.Equal(early, want) {
		t.Errorf("eras %v, want %v", early, want)
	}
	// Before every era's start (the oldest were dropped): the first era's
	// factor, which covered those arrivals, stays for them.
	trimmed := FactorEras{{50, 2}, {60, 0.5}}
	before := trimmed.Moved([]float64{2, 2, 2, 2, 2, 4, 4, 4, 4, 4}, []int64{30, 31, 32, 33, 34, 40, 45, 50, 60, 70}, 4)
	if want := (FactorEras{{minFrom, 2}, {40, 4}}); !slices.Equal(before, want) {
		t.Errorf("eras %v, want %v", before, want)
	}

	// At most MaxFactorEras: the oldest goes, and the next covers its
	// gangs.
	var many FactorEras = FactorEras{{minFrom, 1}}
	for i := range int64(2 * MaxFactorEras) {
		was, f := many.Current(), 4/many.Current()
		ratios := []float64{was, was, was, was, was, f, f, f, f, f}
		var arrivals []int64
		for k := range int64(10) {
			arrivals = append(arrivals, 10*i+k)
		}
		many = many.Moved(ratios, arrivals, f)
	}
	if len(many) != MaxFactorEras || !many.Valid() {
		t.Fatalf("%d eras, valid %v; want %d, valid", len(many), many.Valid(), MaxFactorEras)
	}
	if got, want := many.At(-5), many[0].Factor; got != want {
		t.Errorf("the oldest kept era covers the earlier arrivals: %g, want %g", got, want)
	}
}

// A move that the gangs before the split do not contradict, as when noise
// around right estimates moves the median past the band, moves the factor
// of the latest era and starts none: the earlier gangs' median ratio must
// lie at least FactorEraChange (twice) from the new factor.
func TestFactorErasNoise(t *testing.T) {
	eras := FactorEras{{math.MinInt64, 2}, {100, 1}}
	noisy := eras.Moved([]float64{0.9, 1.1, 1.3, 1.4, 1.3}, []int64{110, 120, 130, 140, 150}, 1.3)
	if want := (FactorEras{{math.MinInt64, 2}, {100, 1.3}}); !slices.Equal(noisy, want) {
		t.Errorf("eras %v, want %v", noisy, want)
	}
	// 1.9 times apart: not yet; 2.1 times: an era; 2.1 times but four
	// gangs before the split: too few to tell.
	arrivals := []int64{110, 111, 112, 113, 114, 130, 140, 150, 160, 170}
	for _, c := range []struct {
		f      float64
		before int
		want   FactorEras
	}{
		{1.9, 5, FactorEras{{math.MinInt64, 2}, {100, 1.9}}},
		{2.1, 5, FactorEras{{math.MinInt64, 2}, {100, 1}, {130, 2.1}}},
		{2.1, 4, FactorEras{{math.MinInt64, 2}, {100, 2.1}}},
	} {
		ratios := []float64{1, 1, 1, 1, 1, c.f, c.f, c.f, c.f, c.f}
		if c.before == 4 {
			ratios[4] = c.f
		}
		got := eras.Moved(ratios, arrivals, c.f)
		if !slices.Equal(got, c.want) {
			t.Errorf("earlier gangs at 1, the new factor %g: eras %v, want %v", c.f, got, c.want)
		}
	}
	// Only gangs of the new factor: nothing to split from.
	all := eras.Moved([]float64{3, 3, 3, 3, 3}, []int64{110, 120, 130, 140, 150}, 3)
	if want := (FactorEras{{math.MinInt64, 2}, {100, 3}}); !slices.Equal(all, want) {
		t.Errorf("eras %v, want %v", all, want)
	}
}

// Halfway through a change of habits the median of the latest completions
// lies between the two habits (for an even count, the geometric mean of the
// middle two: about 0.99 between 0.5 and 1.96), and the factor moves there. The
// gangs that arrived before the change still ran at 0.5: they keep it
// (compared with the median of all, about 0.99, they would not look twice apart),
// and the later ones get the factor of their era as it follows.
func TestFactorErasHalfway(t *testing.T) {
	eras := FactorEras{{math.MinInt64, 0.5}}
	ratios := []float64{0.5, 0.5, 0.5, 0.5, 0.5, 1.96, 1.96, 1.96, 1.96, 1.96}
	arrivals := []int64{1, 2, 3, 4, 5, 10, 11, 12, 13, 14}
	f := EstimateFactor(ratios, eras.Current())
	if want := math.Sqrt(0.5 * 1.96); math.Abs(f-want) > 1e-12 {
		t.Fatalf("the median halfway %g, want %g", f, want)
	}
	halfway := eras.Moved(ratios, arrivals, f)
	if want := (FactorEras{{math.MinInt64, 0.5}, {10, f}}); !slices.Equal(halfway, want) {
		t.Fatalf("halfway: eras %v, want %v", halfway, want)
	}
	ratios, arrivals = append(ratios[1:], 1.96), append(arrivals[1:], 15)
	f = EstimateFactor(ratios, halfway.Current())
	if got, want := halfway.Moved(ratios, arrivals, f), (FactorEras{{math.MinInt64, 0.5}, {10, 1.96}}); f != 1.96 || !slices.Equal(got, want) {
		t.Errorf("one more of the new habit: factor %g, eras %v; want 1.96, %v", f, got, want)
	}
}

// More ratios than EstimateSamples (Moved is not given more by the drivers,
// but nothing stops a caller): still valid eras, split where the habit
// changed.
func TestFactorErasMovedLong(t *testing.T) {
	var ratios []float64
	var arrivals []int64
	for i := range 3 * EstimateSamples {
		r := 0.5
		if i >= 2*EstimateSamples {
			r = 2
		}
		ratios, arrivals = append(ratios, r), append(arrivals, int64(i))
	}
	got := FactorEras{{math.MinInt64, 0.5}}.Moved(ratios, arrivals, 2)
	if want := (FactorEras{{math.MinInt64, 0.5}, {2 * EstimateSamples, 2}}); !slices.Equal(got, want) {
		t.Errorf("eras %v, want %v", got, want)
	}
}

func TestFactorErasValid(t *testing.T) {
	for _, c := range []struct {
		eras FactorEras
		want bool
	}{
		{nil, true},
		{FactorEras{{math.MinInt64, 0.5}, {100, 2}}, true},
		{FactorEras{{100, 2}, {100, 0.5}}, false},
		{FactorEras{{100, 2}, {50, 0.5}}, false},
		{FactorEras{{0, 0}}, false},
		{FactorEras{{0, 2000}}, false},
		{FactorEras{{0, math.NaN()}}, false},
		{make(FactorEras, MaxFactorEras+1), false},
	} {
		if got := c.eras.Valid(); got != c.want {
			t.Errorf("%v valid: %v, want %v", c.eras, got, c.want)
		}
	}
}

// The work factor reads each completed gang's estimate as its own era
// corrected it: estimates right under the factor of their time give 1.
func TestWorkFactorByEra(t *testing.T) {
	eras := FactorEras{{math.MinInt64, 0.5}, {100, 2}}
	est := []int64{200, 200, 200, 100, 100, 100}
	ran := []int64{100, 100, 100, 200, 200, 200}
	arrivals := []int64{10, 20, 30, 100, 110, 120}
	if got := WorkFactor(est, ran, arrivals, eras); got != 1 {
		t.Errorf("work factor %g, want 1", got)
	}
	// Without the arrivals, every estimate is corrected by the latest
	// era: 900 s ran against 1,800 s.
	if got := WorkFactor(est, ran, nil, eras); got != 0.5 {
		t.Errorf("work factor %g without arrivals, want 0.5", got)
	}
}
