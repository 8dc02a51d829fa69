package workload

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Bounds that keep every amount the parsers produce, and the sums and
// products the simulator forms from them, far from int64 overflow.
const (
	// maxSeconds bounds submit times, durations and pool arrival times
	// (about 31,700 years), so that Submit+Duration never overflows.
	maxSeconds = 1_000_000_000_000
	// maxCount bounds node counts, replicas, minMember and pods per job.
	maxCount = 1 << 20
	// maxQuantityLen bounds the text of one quantity.
	maxQuantityLen = 64
	// maxExtended is how many extended resources the core's vectors hold.
	maxExtended = 5
)

// parseQuantity parses a Kubernetes quantity ("500m", "4", "16Gi", "1.5e3")
// with k8s.io/apimachinery's resource.ParseQuantity and returns
// ceil(q * 10^scale), scale being 0 or 3 (milli), and whether that is exact.
// Beyond what ParseQuantity rejects, it rejects texts longer than
// maxQuantityLen, negative amounts, and amounts that do not fit in int64
// (which Value and MilliValue would cap silently).
func parseQuantity(s string, scale int) (v int64, exact bool, err error) {
	if s == "" {
		return 0, false, fmt.Errorf("quantity is empty")
	}
	if len(s) > maxQuantityLen {
		return 0, false, fmt.Errorf("quantity %.20q... is longer than %d characters", s, maxQuantityLen)
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, false, fmt.Errorf("quantity %q is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)", s)
	}
	if q.Sign() < 0 {
		return 0, false, fmt.Errorf("quantity %q is negative", s)
	}
	limit := new(big.Int).SetInt64(math.MaxInt64)
	if scale == 3 {
		limit.Div(limit, big.NewInt(1000))
	}
	if q.AsDec().Cmp(new(inf.Dec).SetUnscaledBig(limit)) > 0 {
		return 0, false, fmt.Errorf("quantity %q is too large", s)
	}
	var back *resource.Quantity
	if scale == 3 {
		v = q.MilliValue()
		back = resource.NewMilliQuantity(v, q.Format)
	} else {
		v = q.Value()
		back = resource.NewQuantity(v, q.Format)
	}
	return v, back.Cmp(q) == 0, nil
}

// resourceAmount parses the amount of the named resource: cpu in milli-CPU
// (rounded up, as MilliValue does), memory in bytes (rounded up, as Value
// does), pods and extended resources as exact integers.
func resourceAmount(name, s string) (int64, error) {
	switch name {
	case "cpu":
		v, _, err := parseQuantity(s, 3)
		return v, err
	case "memory":
		v, _, err := parseQuantity(s, 0)
		return v, err
	}
	v, exact, err := parseQuantity(s, 0)
	if err != nil {
		return 0, err
	}
	if !exact {
		return 0, fmt.Errorf("%s %q is not a whole number", name, s)
	}
	return v, nil
}

// checkResourceName accepts cpu, memory, pods and domain-qualified extended
// resources such as nvidia.com/gpu, so that a typo ("cpus", "gpu") is an
// error rather than a new resource nobody provides.
func checkResourceName(name string) error {
	switch name {
	case "cpu", "memory", "pods":
		return nil
	case "":
		return fmt.Errorf("resource name is empty")
	}
	prefix, rest, ok := strings.Cut(name, "/")
	if !ok || prefix == "" || rest == "" || strings.Contains(rest, "/") ||
		strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("unknown resource %q: use cpu, memory, pods or a domain-qualified extended resource such as %s", name, GPU)
	}
	return nil
}

// isExtended reports whether a valid resource name is an extended resource.
func isExtended(name string) bool {
	return name != "cpu" && name != "memory" && name != "pods"
}

// durationSyntax is the form of a Go duration, whatever its size.
var durationSyntax = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)

// parseSeconds parses a Go duration ("90s", "10m", "2h") or a plain integer
// (isInt) as whole, non-negative seconds no larger than maxSeconds.
func parseSeconds(s string, isInt bool) (int64, error) {
	if isInt {
		v, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%q is out of range: at most %d seconds", s, maxSeconds)
		}
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration: use e.g. 90s, 10m, 2h or integer seconds", s)
		}
		return checkSeconds(s, v)
	}
	d, err := time.ParseDuration(s)
	if err != nil && durationSyntax.MatchString(s) { // past what Go's can hold (about 292 years)
		return 0, fmt.Errorf("%q is out of range: at most %d seconds", s, maxSeconds)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: use e.g. 90s, 10m, 2h or integer seconds", s)
	}
	if d%time.Second != 0 {
		return 0, fmt.Errorf("%q is not a whole number of seconds", s)
	}
	return checkSeconds(s, int64(d/time.Second))
}

func checkSeconds(s string, v int64) (int64, error) {
	if v < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	if v > maxSeconds {
		return 0, fmt.Errorf("%q is more than %d seconds", s, int64(maxSeconds))
	}
	return v, nil
}

// mulAdd returns acc + n*v and whether it fits in int64; n and v are >= 0.
func mulAdd(acc, n, v int64) (int64, bool) {
	if n != 0 && v > (math.MaxInt64-acc)/n {
		return 0, false
	}
	return acc + n*v, true
}
