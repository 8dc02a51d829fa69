package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// endsSnapshot is three nodes of 8 GPUs: soon and late each run a 4-GPU
// member, ending at 100 s and at lateEnd (0: unknown; -1: no release at
// all, as the scheduler gives none for a gang without an estimate), and
// empty runs nothing. One gang of one 2-GPU member waits, with the estimate
// given (0: none). Without the release of soon when soonEnd is 0.
func endsSnapshot(estimate, soonEnd, lateEnd int64) *Snapshot {
	s := MakeSnapshot().Nodes(
		MakeNode("soon").GPUs(8).CPUs(64).UsedGPUs(4),
		MakeNode("late").GPUs(8).CPUs(64).UsedGPUs(4),
		MakeNode("empty").GPUs(8).CPUs(64),
	).Gangs(MakeGang("g").Members(1, GPUs(2), CPUs(1)).Estimate(estimate)).Obj()
	held := Vector{gpuDim: 4, Pods: 1}
	if soonEnd > 0 {
		s.Releases = append(s.Releases, Release{Node: 0, Amount: held, At: soonEnd, Queue: "default"})
	}
	if lateEnd >= 0 {
		s.Releases = append(s.Releases, Release{Node: 1, Amount: held, At: lateEnd, Queue: "default"})
	}
	return s
}

// A member of a gang with an estimate goes to the node whose expected free
// time its own end pushes back least, where best fit alone takes the first
// of two equally full nodes; an empty node comes after the partly used ones.
func TestPlaceByEnds(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		estimate, soonEnd, lateEnd int64
		drop                       string // a node made unschedulable
		want                       string
	}{
		{"no estimate: best fit, the first of the fullest", 0, 100, 5000, "", "soon"},
		{"late runs past the member's end: not pushed back", 1000, 100, 5000, "", "late"},
		{"late's member has no known end: never free", 1000, 100, 0, "", "late"},
		{"late's GPUs are held by no release: never free", 1000, 100, -1, "", "late"},
		{"both pushed back: late the least", 1000, 100, 600, "", "late"},
		{"a partly used node before an empty one", 1000, 100, 600, "late", "soon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := endsSnapshot(tc.estimate, tc.soonEnd, tc.lateEnd)
			for i := range s.Nodes {
				if s.Nodes[i].Name == tc.drop {
					s.Nodes[i].Unschedulable = true
				}
			}
			plan, _ := runAt(t, s, Config{}, 0)
			if diff := cmp.Diff(map[string][]string{"g": {tc.want}}, nodesOf(plan)); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

// The choice by ends holds until the first expected end passes (soon's at
// 100 s, when late is taken), or, when the node taken ends first, until the
// member would push its free time back: soon, ending at 1500 s, is taken
// until 1500-1000+1 s, and late from then on.
func TestPlaceByEndsUntil(t *testing.T) {
	for _, tc := range []struct {
		soonEnd, until int64
		before, after  string
	}{{100, 100, "late", "late"}, {1500, 501, "soon", "late"}} {
		plan, _ := runAt(t, endsSnapshot(1000, tc.soonEnd, 5000), Config{}, 0)
		if plan.Until != tc.until {
			t.Errorf("soon ending at %d: Until %d, want %d", tc.soonEnd, plan.Until, tc.until)
		}
		for at, want := range map[int64]string{0: tc.before, tc.until - 1: tc.before, tc.until: tc.after} {
			p, _ := runAt(t, endsSnapshot(1000, tc.soonEnd, 5000), Config{}, at)
			if diff := cmp.Diff(map[string][]string{"g": {want}}, nodesOf(p)); diff != "" {
				t.Errorf("soon ending at %d, at %d s (-want +got):\n%s", tc.soonEnd, at, diff)
			}
		}
	}
}

// Pack (the binpack baseline) places by best fit alone, though the gang has
// an estimate: the first of the two fullest nodes, where placing by ends
// takes late and Spread (the least-requested baseline) the empty node.
func TestPackIgnoresEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"by ends", Config{}, "late"},
		{"pack", Config{Pack: true}, "soon"},
		{"spread", Config{Spread: true}, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, _ := runAt(t, endsSnapshot(1000, 100, 5000), tc.cfg, 0)
			if diff := cmp.Diff(map[string][]string{"g": {tc.want}}, nodesOf(plan)); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := New(Config{Spread: true, Pack: true}); err == nil {
		t.Error("New accepted Spread and Pack together")
	}
}
