package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGangOrdersMatchTheirDefinitions checks that sorting by gang keys
// gives the orders the comparison functions define, on gangs that tie
// often, in every input order.
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
			got := slices.Clone(gangs)
			_, _ = sortGangs(got, o.o, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d, order %d: sortGangs differs from its definition", trial, o.o)
			}
			sortGangs(got, o.o, nil) // sorted input stays as it is
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d, order %d: sortGangs changed a sorted input", trial, o.o)
			}
		}
	}
}
