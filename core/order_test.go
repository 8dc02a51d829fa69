package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGangOrdersMatchTheirDefinitions checks that gangSorter gives the
// orders the comparison functions define, on gangs that tie often, whatever
// order they come in.
func TestGangOrdersMatchTheirDefinitions(t *testing.T) {
	orders := []struct {
		o    gangOrder
		less func(a, b *Gang) bool
	}{
		{byArrival, arrivedBefore},
		{byPriority, partialFirst(gangBefore)},
		{byEstimate, partialFirst(shorterBefore)},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		var gangs []*Gang
		for i := range 1 + r.IntN(60) {
			g := &Gang{ID: fmt.Sprintf("g%03d", r.IntN(1000)*1000+i), Priority: int32(r.IntN(3) - 1),
				Arrival: int64(r.IntN(5)), Estimate: int64(r.IntN(4)) * 100, MinMember: 1 + r.IntN(3)}
			if r.IntN(8) == 0 {
				g.Priority = int32(r.Int64N(1<<32) - 1<<31) // extremes too
			}
			g.Bound = r.IntN(g.MinMember + 1)
			if trial%2 == 1 {
				// One priority, none partial, every estimate known: keys
				// that differ in their low word only.
				g.Priority, g.Bound, g.Estimate = 0, 0, 1+r.Int64N(400)
			}
			gangs = append(gangs, g)
		}
		for _, o := range orders {
			want := slices.Clone(gangs)
			slices.SortFunc(want, func(a, b *Gang) int {
				switch {
				case o.less(a, b):
					return -1
				case o.less(b, a):
					return 1
				}
				return 0
			})
			var s gangSorter
			// In any order, in arrival order (how callers keep them), and
			// in order o already.
			arrival := slices.Clone(gangs)
			slices.SortFunc(arrival, func(a, b *Gang) int {
				if arrivedBefore(a, b) {
					return -1
				}
				return 1
			})
			for _, in := range [][]*Gang{gangs, arrival, want} {
				got := slices.Clone(in)
				if !s.sort(got, o.o) {
					if !slices.Equal(in, want) {
						t.Fatalf("trial %d, order %d: the sort says it moved no gang, but the gangs were out of order", trial, o.o)
					}
					continue
				}
				if !slices.Equal(got, want) {
					t.Fatalf("trial %d, order %d: the sort differs from its definition", trial, o.o)
				}
				for i, at := range s.perm {
					if got[i] != in[at] {
						t.Fatalf("trial %d, order %d: perm[%d] is %d, which held another gang", trial, o.o, i, at)
					}
				}
			}
		}
	}
}

// TestShapesNumberSignatures checks that equal signatures, and only they,
// get the same number.
func TestShapesNumberSignatures(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cons := []*Constraints{nil, {}, {NodeSelector: map[string]string{"a": "b"}}}
	var s shapes
	byNumber := map[int32]gangSignature{}
	numbers := map[gangSignature]int32{}
	for range 2000 {
		sig := gangSignature{shape: shapeKey{req: Vector{CPU: int64(r.IntN(4)), gpuDim: int64(r.IntN(3))}, c: cons[r.IntN(len(cons))]},
			n: 1 + r.IntN(3), required: []string{"", "rack", "zone"}[r.IntN(3)]}
		n := s.number(sig)
		if prev, ok := byNumber[n]; ok && prev != sig {
			t.Fatalf("%+v and %+v share number %d", prev, sig, n)
		}
		if prev, ok := numbers[sig]; ok && prev != n {
			t.Fatalf("%+v got numbers %d and %d", sig, prev, n)
		}
		byNumber[n], numbers[sig] = sig, n
	}
}
