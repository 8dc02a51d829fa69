package core

import "testing"

// SealHolds tells a member changed in place after Seal (what cycles cannot
// see) from changes that make cycles ignore the summary.
func TestSealHolds(t *testing.T) {
	g := MakeGang("g").Members(3, GPUs(2)).Min(2).Obj()
	if !g.SealHolds() {
		t.Error("never sealed: want true (cycles derive everything)")
	}
	g.Seal()
	if !g.SealHolds() {
		t.Error("just sealed: want true")
	}
	g.Pending[1].Request[gpuDim] = 4
	if g.SealHolds() {
		t.Error("a member's request changed in place after Seal: want false")
	}
	g.Seal()
	if !g.SealHolds() {
		t.Error("sealed again: want true")
	}
	g.Bound = 1 // the summary no longer matches, so cycles ignore it
	if !g.SealHolds() {
		t.Error("bound changed: want true (the summary is not used)")
	}
}
