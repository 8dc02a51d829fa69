package workload

// Queue weights for traces, whose rows name a queue (vc) but not its weight:
// `phalanx simulate --queue-weights`.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// QueueWeights says how to weigh a workload's queues. The zero value is
// "equal".
type QueueWeights struct {
	mode     weightMode
	explicit []namedWeight
}

type weightMode int

const (
	weightsEqual weightMode = iota
	weightsGPUHours
	weightsExplicit
)

type namedWeight struct {
	name   string
	weight int64
}

// maxGPUHoursWeight is the weight of the queue with the most GPU-hours under
// "gpu-hours"; the others get their share of it, at least 1.
const maxGPUHoursWeight = 100

// ParseQueueWeights parses one of:
//
//	equal             every queue weighs 1
//	gpu-hours         weight proportional to the queue's GPU-hours in the
//	                  workload (GPUs x duration of its jobs), scaled so the
//	                  largest is 100, rounded, at least 1
//	a=3,b=1           the named queues get these weights (integers from 1 to
//	                  1048576); queues not named weigh 1
//
// Names are checked against the workload by Apply.
func ParseQueueWeights(s string) (QueueWeights, error) {
	switch strings.TrimSpace(s) {
	case "equal":
		return QueueWeights{mode: weightsEqual}, nil
	case "gpu-hours":
		return QueueWeights{mode: weightsGPUHours}, nil
	case "":
		return QueueWeights{}, fmt.Errorf("workload: queue weights are empty: want equal, gpu-hours or a list such as a=3,b=1")
	}
	qw := QueueWeights{mode: weightsExplicit}
	for _, item := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(item, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return QueueWeights{}, fmt.Errorf("workload: queue weight %q is not name=weight (want equal, gpu-hours or a list such as a=3,b=1)", item)
		}
		weight, err := strconv.ParseInt(value, 10, 64)
		if err != nil || weight < 1 || weight > maxCount {
			return QueueWeights{}, fmt.Errorf("workload: weight of queue %q is %q: want an integer from 1 to %d", name, value, maxCount)
		}
		if slices.ContainsFunc(qw.explicit, func(nw namedWeight) bool { return nw.name == name }) {
			return QueueWeights{}, fmt.Errorf("workload: queue %q is weighed twice", name)
		}
		qw.explicit = append(qw.explicit, namedWeight{name, weight})
	}
	return qw, nil
}

// String returns the form ParseQueueWeights reads.
func (qw QueueWeights) String() string {
	switch qw.mode {
	case weightsGPUHours:
		return "gpu-hours"
	case weightsExplicit:
		parts := make([]string, len(qw.explicit))
		for i, nw := range qw.explicit {
			parts[i] = nw.name + "=" + strconv.FormatInt(nw.weight, 10)
		}
		return strings.Join(parts, ",")
	}
	return "equal"
}

// Apply sets the weight of every queue of w. It fails, changing nothing,
// when an explicit list names a queue w does not have. w.Queues is replaced,
// not written in place.
func (qw QueueWeights) Apply(w *Workload) error {
	queues := slices.Clone(w.Queues)
	switch qw.mode {
	case weightsEqual:
		for i := range queues {
			queues[i].Weight = 1
		}
	case weightsGPUHours:
		hours := make(map[string]float64, len(queues))
		for i := range w.Jobs {
			j := &w.Jobs[i]
			hours[j.Queue] += float64(j.Total(GPU)) * float64(j.Duration) / 3600
		}
		var most float64
		for _, h := range hours {
			most = max(most, h)
		}
		for i := range queues {
			queues[i].Weight = 1
			if most > 0 {
				queues[i].Weight = max(1, int64(math.Round(maxGPUHoursWeight*hours[queues[i].Name]/most)))
			}
		}
	case weightsExplicit:
		for _, nw := range qw.explicit {
			k := slices.IndexFunc(queues, func(q Queue) bool { return q.Name == nw.name })
			if k < 0 {
				return fmt.Errorf("workload: %s has no queue %q to weigh (queues: %s)", w.Name, nw.name, QueueNames(w.Queues))
			}
		}
		for i := range queues {
			queues[i].Weight = 1
			for _, nw := range qw.explicit {
				if nw.name == queues[i].Name {
					queues[i].Weight = nw.weight
				}
			}
		}
	}
	w.Queues = queues
	return nil
}
