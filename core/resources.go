package core

import (
	"fmt"
	"math"
	"strings"
)

// MaxDims is the number of resource dimensions a Vector holds: CPU, memory,
// pods, and up to MaxDims-3 extended resources (GPUs and other devices) named
// by Snapshot.Resources.
const MaxDims = 8

// The fixed dimensions of every Vector. Extended resources start at FirstExtended.
const (
	CPU           = 0 // milli-CPU
	Memory        = 1 // bytes
	Pods          = 2 // pod slots
	FirstExtended = 3
)

// Unlimited marks a dimension of a Queue's capability that has no cap.
const Unlimited int64 = math.MaxInt64

// Vector is an amount of every resource dimension, as exact integers. It is a
// value type: copying it is cheap and never aliases.
type Vector [MaxDims]int64

// Add returns v + o.
func (v Vector) Add(o Vector) Vector {
	for i := range v {
		v[i] += o[i]
	}
	return v
}

// Sub returns v - o.
func (v Vector) Sub(o Vector) Vector {
	for i := range v {
		v[i] -= o[i]
	}
	return v
}

// Fits reports whether v <= free in every dimension.
func (v Vector) Fits(free Vector) bool {
	for i := range v {
		if v[i] > free[i] {
			return false
		}
	}
	return true
}

// IsZero reports whether every dimension is zero.
func (v Vector) IsZero() bool { return v == Vector{} }

// Unbounded returns a Vector with every dimension Unlimited, the capability of
// a queue with no caps.
func Unbounded() Vector {
	var v Vector
	for i := range v {
		v[i] = Unlimited
	}
	return v
}

// ResourceNames names the dimensions of the Vectors of one snapshot. The
// first three are always "cpu", "memory" and "pods"; the rest are extended
// resources such as "nvidia.com/gpu".
type ResourceNames []string

// NewResourceNames returns the names of the fixed dimensions followed by the
// given extended resources, in the order given. It fails if there are more
// extended resources than a Vector holds, or a name repeats.
func NewResourceNames(extended ...string) (ResourceNames, error) {
	if len(extended) > MaxDims-FirstExtended {
		return nil, fmt.Errorf("core: %d extended resources given, at most %d are supported", len(extended), MaxDims-FirstExtended)
	}
	names := ResourceNames{"cpu", "memory", "pods"}
	for _, e := range extended {
		if names.Index(e) >= 0 {
			return nil, fmt.Errorf("core: resource %q named twice", e)
		}
		names = append(names, e)
	}
	return names, nil
}

// Index returns the dimension of the named resource, or -1.
func (n ResourceNames) Index(name string) int {
	for i, x := range n {
		if x == name {
			return i
		}
	}
	return -1
}

// Name returns the name of dimension d.
func (n ResourceNames) Name(d int) string {
	if d < len(n) {
		return n[d]
	}
	return fmt.Sprintf("resource#%d", d)
}

// Format renders the non-zero dimensions of v, e.g. "4 nvidia.com/gpu, 2 cpu".
// Extended resources come first because they are what users wait for.
func (n ResourceNames) Format(v Vector) string {
	var parts []string
	for d := FirstExtended; d < MaxDims; d++ {
		if v[d] != 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v[d], n.Name(d)))
		}
	}
	if v[CPU] != 0 {
		parts = append(parts, formatMilli(v[CPU])+" cpu")
	}
	if v[Memory] != 0 {
		parts = append(parts, formatBytes(v[Memory])+" memory")
	}
	if v[Pods] != 0 {
		parts = append(parts, fmt.Sprintf("%d pods", v[Pods]))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// dimsByImportance lists the dimensions in the order Format renders them.
var dimsByImportance = func() []int {
	var out []int
	for d := FirstExtended; d < MaxDims; d++ {
		out = append(out, d)
	}
	return append(out, CPU, Memory, Pods)
}()

// amount renders v of dimension d alone, e.g. "4 nvidia.com/gpu", or
// "no nvidia.com/gpu" for zero.
func (n ResourceNames) amount(d int, v int64) string {
	if v == 0 {
		switch d {
		case CPU:
			return "no cpu"
		case Memory:
			return "no memory"
		case Pods:
			return "no pod slots"
		}
		return "no " + n.Name(d)
	}
	var one Vector
	one[d] = v
	return n.Format(one)
}

func formatMilli(m int64) string {
	if m%1000 == 0 {
		return fmt.Sprintf("%d", m/1000)
	}
	return fmt.Sprintf("%dm", m)
}

func formatBytes(b int64) string {
	const gi, mi = 1 << 30, 1 << 20
	switch {
	case b%gi == 0:
		return fmt.Sprintf("%dGi", b/gi)
	case b%mi == 0:
		return fmt.Sprintf("%dMi", b/mi)
	}
	return fmt.Sprintf("%d", b)
}
