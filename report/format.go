// Package report renders simulator results for people and programs: the
// metrics table, the JSON document of `phalanx simulate --output json`, the
// kubectl-like pod views and job timelines of small scenarios, and the plot
// of GPUs in use over time. It only reads what package sim returns and the
// workload it ran; it never runs a simulation and never decides an outcome.
package report

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// Comparison is every requested policy's result over one input, in the
// order reports show them.
type Comparison struct {
	Workload *workload.Workload
	Results  []*sim.Result
	// Wall is how long each run of Results took; nil or shorter when
	// unknown. Only the table shows it: JSON output stays reproducible.
	Wall []time.Duration
}

// Duration renders seconds of virtual time the way people read them: "45s",
// "10m", "10m30s", "3h12m", "2d4h". It rounds to the second below an hour,
// to the minute below a day and to the hour above.
func Duration(seconds float64) string {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return "-"
	}
	neg := ""
	if seconds < 0 {
		neg, seconds = "-", -seconds
	}
	s := int64(math.Round(seconds))
	switch {
	case s < 60:
		return fmt.Sprintf("%s%ds", neg, s)
	case s < 3600:
		return neg + pair(s/60, "m", s%60, "s")
	case s < 86400:
		m := (s + 30) / 60
		if m == 24*60 {
			return neg + "1d"
		}
		return neg + pair(m/60, "h", m%60, "m")
	default:
		h := (s + 1800) / 3600
		return neg + pair(h/24, "d", h%24, "h")
	}
}

// pair renders "<a><ua><b><ub>", leaving out a zero b.
func pair(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, ua)
	}
	return fmt.Sprintf("%d%s%d%s", a, ua, b, ub)
}

// Instant renders a point of virtual time as an offset from zero.
func Instant(t int64) string { return Duration(float64(t)) }

// gpuTime renders GPU-seconds: "none", as a duration below 100 hours
// ("9m30s", "3h12m"), else in GPU-hours with thousands separators.
func gpuTime(s float64) string {
	switch {
	case s == 0:
		return "none"
	case math.IsNaN(s) || s < 100*3600:
		return Duration(s)
	default:
		return grouped(int64(math.Round(s/3600))) + " GPU-h"
	}
}

// plural renders "1 job", "2 jobs".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return grouped(n) + " " + noun + "s"
}

// grouped renders n with a comma every three digits.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}

// percent renders a ratio in [0, 1] as a percentage.
func percent(r float64) string {
	if math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*r)
}

// wall renders a wall-clock duration with a precision that suits it.
func wall(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// capacity returns the GPUs of the nodes that joined by time t.
func capacity(w *workload.Workload, t int64) int64 {
	var n int64
	for _, p := range w.Pools {
		if p.At <= t {
			n += int64(p.Count) * p.Allocatable[workload.GPU]
		}
	}
	return n
}
