package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Queue a holds nothing and waits with four 1-GPU gangs; queue b holds the
// 6 GPUs used on node "full" and waits with "big", a gang of a whole node's
// 8 GPUs. In turn by share, a's gangs take full's 2 free GPUs and then
// two of empty's, and big finds no node; tried first, big takes empty and
// a's last two gangs wait.
func wholeNodesSnapshot() *snapBuilder {
	return MakeSnapshot().
		Nodes(MakeNode("full").GPUs(8).UsedGPUs(6), MakeNode("empty").GPUs(8)).
		Queues(MakeQueue("a"), MakeQueue("b").AllocatedGPUs(6)).
		Gangs(
			MakeGang("big").Queue("b").Members(1, GPUs(8)).Arrival(0).Estimate(1000),
			MakeGang("a1").Queue("a").Members(1, GPUs(1)).Arrival(1).Estimate(100),
			MakeGang("a2").Queue("a").Members(1, GPUs(1)).Arrival(2).Estimate(100),
			MakeGang("a3").Queue("a").Members(1, GPUs(1)).Arrival(3).Estimate(100),
			MakeGang("a4").Queue("a").Members(1, GPUs(1)).Arrival(4).Estimate(100),
		)
}

func TestWholeNodesFirst(t *testing.T) {
	inTurn := []string{"a1", "a2", "a3", "a4"}
	// Reservations on, but nothing has waited a day: no reservation.
	const day = 86400
	on := Config{ShortestFirst: true, ReserveAfter: day}
	for _, tc := range []struct {
		name   string
		change func(s *Snapshot)
		cfg    Config
		want   []string
	}{
		{"a whole node's gang first", nil, on, []string{"a1", "a2", "big"}},
		{"by arrival too", nil, Config{ReserveAfter: day}, []string{"a1", "a2", "big"}},
		{"reservations off: its queue's turn", nil, Config{ShortestFirst: true}, inTurn},
		{"no estimate: its queue's turn", func(s *Snapshot) { gangOf(s, "big").Estimate = 0 }, on, inTurn},
		{"less than a node: its queue's turn", func(s *Snapshot) {
			// big asks 7 GPUs; with eight gangs a's turns come first until
			// five of them have taken empty's GPUs.
			gangOf(s, "big").Pending[0].Request[gpuDim] = 7
			for _, id := range []string{"a5", "a6", "a7", "a8"} {
				s.Gangs = append(s.Gangs, MakeGang(id).Queue("a").Members(1, GPUs(1)).Arrival(5).Estimate(100).Obj())
			}
		}, on, []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"}},
		{"strict-order queue: its queue's order", func(s *Snapshot) {
			// b's head fits nowhere, nor is any room for it known to
			// come: nothing is reserved, and big waits behind it.
			s.Queues[1].StrictOrder = true
			s.Gangs = append(s.Gangs, MakeGang("head").Queue("b").Members(2, GPUs(8)).Arrival(-1).Estimate(1000).Obj())
		}, on, inTurn},
		{"queue at capability: its queue's turn says so", func(s *Snapshot) { s.Queues[1].Capability[gpuDim] = 10 }, on, inTurn},
		{"closed queue: its queue's turn says so", func(s *Snapshot) { s.Queues[1].Closed = true }, on, inTurn},
		{"fits nowhere: its queue's turn", func(s *Snapshot) { s.Nodes[1].Used[gpuDim] = 1 }, on, inTurn},
		{"a reservation in the cycle: its queue's turn", func(s *Snapshot) {
			// huge, of queue c, has waited past ReserveAfter and is
			// reserved both nodes from when full's members end, 10000 s;
			// the others end before then and may use them meanwhile. big
			// has not waited that long.
			gangOf(s, "big").Arrival = 450
			c := MakeQueue("c").Obj()
			s.Queues = append(s.Queues, c)
			s.Gangs = append(s.Gangs, MakeGang("huge").Queue("c").Members(2, GPUs(8)).Arrival(0).Estimate(1000).Obj())
			s.Releases = []Release{{Node: 0, Amount: Vector{Pods: 1, gpuDim: 6}, At: 10000}}
		}, Config{ShortestFirst: true, ReserveAfter: 60}, inTurn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wholeNodesSnapshot().Obj()
			if tc.change != nil {
				tc.change(s)
			}
			plan, diag := runAt(t, s, tc.cfg, 500)
			if diff := cmp.Diff(tc.want, keys(placed(plan))); diff != "" {
				t.Errorf("placed (-want +got):\n%s", diff)
			}
			// Every gang is placed once or reported pending once.
			seen := map[string]int{}
			for _, b := range plan.Binds {
				seen[b.Gang]++
			}
			for _, st := range diag.Pending {
				seen[st.Gang]++
			}
			for _, g := range s.Gangs {
				if seen[g.ID] != 1 {
					t.Errorf("gang %s placed or reported %d times, want once", g.ID, seen[g.ID])
				}
			}
		})
	}
}

func gangOf(s *Snapshot, id string) *Gang {
	for _, g := range s.Gangs {
		if g.ID == id {
			return g
		}
	}
	panic("no gang " + id)
}
