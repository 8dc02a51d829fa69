package scheduler

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/phalanx-sched/phalanx/core"
)

// What a new leader needs to decide as the old one would, beyond what the
// API already says, is recorded in a ConfigMap of the scheduler's own
// (Options.StateNamespace, named phalanx-state-<first scheduler name>):
//
//   - the holds: the room kept for a member that failed while its gang ran,
//     until its replacement comes, and for a preemptor while its victims
//     terminate. Without them a scheduler restarted in between gives that
//     room to whichever gang comes first;
//   - the run times of each queue's latest gangs, which estimate run times
//     (history.go) once the finished pods are gone.
//
// Everything else is rebuilt from the API: gang membership and arrival from
// pods and PodGroups, a partial gang's deadline from its pods' bind times
// (partial.go), reservations afresh each cycle from the running members'
// start times and estimates. A ConfigMap rather than the PodGroups' status,
// because gangs without a PodGroup (ACK's labels, single pods) hold room
// too. The loop writes it through the status writer when it changes, and
// reads it once, after the informers have synced and before the first
// cycle.

// stateKey is the ConfigMap's data key.
const stateKey = "state.json"

// savedState is the ConfigMap's content.
type savedState struct {
	Holds   map[string][]savedHold `json:"holds,omitempty"`   // by gang key
	History map[string][]savedRun  `json:"history,omitempty"` // by queue
	// Eras are the eras of each queue's estimate factor
	// (core.FactorEras), which its latest runs alone do not give back.
	Eras map[string]core.FactorEras `json:"eras,omitempty"`
}

type savedHold struct {
	Node   string              `json:"node"`
	Amount corev1.ResourceList `json:"amount"`
	Until  int64               `json:"until"`
	Failed bool                `json:"failed,omitempty"`
	// Whole, above 0, keeps the hold for a member to come until that many
	// members of the gang hold nodes.
	Whole int `json:"whole,omitempty"`
}

type savedRun struct {
	Gang    string `json:"gang,omitempty"`
	Finish  int64  `json:"finish"`
	Seconds int64  `json:"seconds"`
	// Estimate is the estimate the gang declared, in seconds; absent if
	// none.
	Estimate int64 `json:"estimate,omitempty"`
	// Arrival is when the gang arrived, in Unix seconds; absent in a state
	// written before it was recorded (its start is taken instead).
	Arrival int64 `json:"arrival,omitempty"`
}

// stateName is the ConfigMap's name for a scheduler serving names, or ""
// when the first name cannot be part of an object name.
func stateName(names []string) string {
	name := "phalanx-state-" + names[0]
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return ""
	}
	return name
}

// savedState returns what the store records, in a stable form.
func (s *Store) savedState() savedState {
	var st savedState
	for gang, hs := range s.holds {
		for _, h := range hs {
			if st.Holds == nil {
				st.Holds = map[string][]savedHold{}
			}
			st.Holds[gang] = append(st.Holds[gang], savedHold{Node: h.node, Amount: s.res.resourceList(h.amount),
				Until: h.until, Failed: h.failed, Whole: h.whole})
		}
	}
	for queue, r := range s.history {
		for i := range r.finish {
			if st.History == nil {
				st.History = map[string][]savedRun{}
			}
			st.History[queue] = append(st.History[queue], savedRun{Gang: r.gangs[i], Finish: r.finish[i], Seconds: r.seconds[i],
				Estimate: r.estimates[i], Arrival: r.arrivals[i]})
		}
		if len(r.eras) > 0 {
			if st.Eras == nil {
				st.Eras = map[string]core.FactorEras{}
			}
			st.Eras[queue] = r.eras
		}
	}
	return st
}

// restore puts back what a former leader recorded: holds not yet expired
// of gangs that still exist, and run times, after those learned already.
func (s *Store) restore(st savedState) {
	s.epoch++
	now := s.now().Unix()
	gangs := make([]string, 0, len(st.Holds))
	for gang := range st.Holds {
		gangs = append(gangs, gang)
	}
	sort.Strings(gangs)
	for _, gang := range gangs {
		if s.gangs[gang] == nil || len(s.holds[gang]) > 0 {
			continue
		}
		for _, h := range st.Holds[gang] {
			amount, problem := s.res.vector(h.Amount)
			if h.Until <= now || problem != "" || h.Node == "" {
				continue
			}
			s.holds[gang] = append(s.holds[gang], heldRoom{node: h.Node, amount: amount, until: h.Until, failed: h.Failed, whole: h.Whole})
		}
	}
	for queue, runs := range st.History {
		if s.history[queue] == nil {
			s.history[queue] = &runTimes{}
		}
		r := s.history[queue]
		for _, run := range runs {
			if run.Seconds > 0 && run.Seconds <= maxEstimate && !r.has(run.Gang) {
				est := run.Estimate
				if est < 0 || est > maxEstimate {
					est = 0 // not a declared estimate: learn the run time alone
				}
				arrival := run.Arrival
				if arrival <= 0 || arrival > run.Finish {
					arrival = run.Finish - run.Seconds // not recorded: it arrived by its start
				}
				r.addGang(run.Gang, run.Finish, run.Seconds, est, arrival)
			}
		}
	}
	for queue, eras := range st.Eras {
		if r := s.history[queue]; r != nil && eras.Valid() {
			r.setEras(eras) // the runs replayed give back the latest era at most
		}
	}
}

// loadState reads the ConfigMap a former leader wrote, if any, into the
// store. A state that cannot be read is logged and ignored: it only makes
// the new leader forget holds and run times.
func (s *Scheduler) loadState(ctx context.Context) {
	if s.stateName == "" {
		return
	}
	cm, err := s.kube.CoreV1().ConfigMaps(s.opts.StateNamespace).Get(ctx, s.stateName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return
	case err != nil:
		klog.FromContext(ctx).Error(err, "Cannot read the recorded state; holds and run times start empty",
			"configMap", klog.KRef(s.opts.StateNamespace, s.stateName))
		return
	}
	var st savedState
	if err := json.Unmarshal([]byte(cm.Data[stateKey]), &st); err != nil {
		klog.FromContext(ctx).Error(err, "The recorded state is not readable; holds and run times start empty",
			"configMap", klog.KRef(s.opts.StateNamespace, s.stateName))
		return
	}
	s.store.restore(st)
	s.lastState, _ = json.Marshal(s.store.savedState())
	klog.FromContext(ctx).Info("Restored the recorded state", "gangsWithHolds", len(s.store.holds), "queuesWithHistory", len(st.History))
}

// saveState hands the writer the store's state when it changed.
func (s *Scheduler) saveState() {
	if s.stateName == "" {
		return
	}
	st := s.store.savedState()
	data, err := json.Marshal(st)
	// A ConfigMap holds at most 1 MiB: with many queues, each keeps fewer
	// of its latest runs, down to one, rather than the write being refused
	// and the holds a new leader needs lost with them.
	for keep := historySize / 2; err == nil && len(data) > stateBudget && keep >= 1; keep /= 2 {
		st.keepLatestRuns(keep)
		data, err = json.Marshal(st)
	}
	if err != nil || bytes.Equal(data, s.lastState) {
		return
	}
	s.lastState = data
	ns, name := s.opts.StateNamespace, s.stateName
	// The leader is the ConfigMap's only writer: it is replaced whole,
	// without a resourceVersion, so one write costs one request.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"app.kubernetes.io/name": "phalanx-scheduler"}},
		Data: map[string]string{stateKey: string(data)}}
	s.writer.put(writeKey{kindState, name}, writeJob{do: func(ctx context.Context) error {
		cms := s.opts.StatusKube.CoreV1().ConfigMaps(ns)
		_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		}
		return err
	}})
}

// stateBudget is the most the state ConfigMap's data is let grow to, under
// the API server's 1 MiB for an object.
const stateBudget = 900 << 10

// keepLatestRuns keeps, of each queue's runs, the latest n by finish.
func (st *savedState) keepLatestRuns(n int) {
	for queue, runs := range st.History {
		if len(runs) <= n {
			continue
		}
		slices.SortStableFunc(runs, func(a, b savedRun) int { return cmp.Compare(a.Finish, b.Finish) })
		st.History[queue] = runs[len(runs)-n:]
	}
}

// kindState is the writer's kind for the state ConfigMap.
const kindState = "State"
