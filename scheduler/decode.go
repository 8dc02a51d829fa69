package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// One object the scheduler cannot read must never stop it. A typed informer
// decodes a whole list at once, so a single PodGroup or Queue whose value
// its Go type cannot hold (stored before the CRD bounded it, or written
// through another version) fails every list: the informer never syncs and
// no gang is scheduled. Our PodGroups and Queues are therefore read through
// the dynamic client and converted one object at a time. An object that
// does not convert is skipped and reported where its owner looks: a
// Warning Event on it, an error in the log, phalanx_unreadable_objects_total,
// and the gangs that need it wait saying "PodGroup cannot be read: ..." or
// "queue ... cannot be read: ...".

// fromUnstructured converts obj, a JSON object as the dynamic client
// decodes it, into out, a pointer to a Go value. path names obj in error
// messages ("" for a whole object, "spec" for its spec).
//
// Unlike runtime.DefaultUnstructuredConverter alone, it fails on every
// number that the Go field it lands in cannot hold exactly: the converter
// wraps 2147483648 in an int32 around to -2147483648 (and 4294967297 to 1)
// without a word. Such an error names the field, e.g. spec.minMember.
func fromUnstructured(obj map[string]any, path string, out any) error {
	if err := checkNumbers(path, obj, reflect.TypeOf(out)); err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, out); err != nil {
		if path != "" {
			return fmt.Errorf("%s: %w", path, err)
		}
		return err
	}
	return nil
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// checkNumbers returns an error naming the first field of raw, in the
// order of the fields of t, whose value is meant for an integer field of t
// and is not an integer that field can hold. Fields t does not have, and
// values of types that decode themselves (Quantity, Time), are left to the
// converter.
func checkNumbers(path string, raw any, t reflect.Type) error {
	if raw == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if m, ok := raw.(map[string]any); ok {
			return checkFields(path, m, t)
		}
	case reflect.Slice, reflect.Array:
		if l, ok := raw.([]any); ok {
			for i, x := range l {
				if err := checkNumbers(fmt.Sprintf("%s[%d]", path, i), x, t.Elem()); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if m, ok := raw.(map[string]any); ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if err := checkNumbers(fmt.Sprintf("%s[%s]", path, k), m[k], t.Elem()); err != nil {
					return err
				}
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return checkInteger(path, raw, t)
	}
	return nil
}

// checkFields checks the JSON fields of m that are fields of the struct t,
// inlined (embedded) structs included.
func checkFields(path string, m map[string]any, t reflect.Type) error {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" && (f.Anonymous || slices.Contains(strings.Split(opts, ","), "inline")) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := checkFields(path, m, ft); err != nil {
					return err
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		field := name
		if path != "" {
			field = path + "." + name
		}
		if err := checkNumbers(field, m[name], f.Type); err != nil {
			return err
		}
	}
	return nil
}

// checkInteger reports whether raw is an integer that t, an integer type,
// holds exactly.
func checkInteger(path string, raw any, t reflect.Type) error {
	bits := t.Bits()
	signed := t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64
	var fits bool
	v := reflect.ValueOf(raw)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		fits = fitsInt(v.Int(), signed, bits)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := v.Uint()
		fits = n <= math.MaxInt64 && fitsInt(int64(n), signed, bits) || !signed && bits == 64
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if f != math.Trunc(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: %v is not an integer", path, raw)
		}
		// The range of t is [lo, hi); both ends are powers of two, which a
		// float64 holds exactly.
		lo, hi := 0.0, math.Ldexp(1, bits)
		if signed {
			lo, hi = -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1)
		}
		fits = f >= lo && f < hi
	default:
		return fmt.Errorf("%s: %s is not an integer", path, describe(raw))
	}
	if !fits {
		return fmt.Errorf("%s: %v does not fit in an %s (%s)", path, raw, t.Kind(), integerRange(signed, bits))
	}
	return nil
}

func fitsInt(n int64, signed bool, bits int) bool {
	if signed {
		limit := int64(math.MaxInt64 >> (64 - bits))
		return n >= -limit-1 && n <= limit
	}
	return n >= 0 && uint64(n) <= uint64(math.MaxUint64)>>(64-bits)
}

func integerRange(signed bool, bits int) string {
	if signed {
		limit := int64(math.MaxInt64 >> (64 - bits))
		return fmt.Sprintf("%d to %d", -limit-1, limit)
	}
	return fmt.Sprintf("0 to %d", uint64(math.MaxUint64)>>(64-bits))
}

func describe(raw any) string {
	switch v := raw.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%v (%T)", raw, raw)
}

// podGroupFromUnstructured converts one of our PodGroups.
func podGroupFromUnstructured(u *unstructured.Unstructured) (*v1alpha1.PodGroup, error) {
	pg := &v1alpha1.PodGroup{}
	if err := fromUnstructured(u.Object, "", pg); err != nil {
		return nil, err
	}
	return pg, nil
}

// queueFromUnstructured converts one of our Queues.
func queueFromUnstructured(u *unstructured.Unstructured) (*v1alpha1.Queue, error) {
	q := &v1alpha1.Queue{}
	if err := fromUnstructured(u.Object, "", q); err != nil {
		return nil, err
	}
	return q, nil
}

// ownAPI is how unreadable tracks our own PodGroups, ahead of any other
// scheduler's API group.
const ownAPI = ""

// unreadable remembers, by PodGroup key (namespace/name) and API group
// (ownAPI for ours), why a PodGroup could not be read. Several APIs may
// each have a PodGroup of one name; the store holds one reason per key,
// that of the first API, in the order ours then ForeignPodGroups, whose
// PodGroup is unreadable. Only the loop goroutine uses it.
type unreadable map[string]map[string]string

// set records why the PodGroup key of group could not be read ("" once it
// can, or is deleted), updates the store, and reports whether the reason
// changed, i.e. whether it is news worth an Event.
func (u unreadable) set(store *Store, key, group, why string) bool {
	old := u[key][group]
	switch {
	case why != "":
		if u[key] == nil {
			u[key] = map[string]string{}
		}
		u[key][group] = why
	default:
		delete(u[key], group)
		if len(u[key]) == 0 {
			delete(u, key)
		}
	}
	first := u[key][ownAPI]
	for _, gvr := range ForeignPodGroups {
		if first != "" {
			break
		}
		first = u[key][gvr.Group]
	}
	store.SetUnreadablePodGroup(key, first)
	return why != old
}

// reportUnreadable tells the object's owner that the scheduler skips it:
// a Warning Event on the object, an error in the log, and the metric,
// once per object and reason. kind labels the metric.
func (s *Scheduler) reportUnreadable(ctx context.Context, kind string, u *unstructured.Unstructured, err error) {
	s.metrics.UnreadableObjects.WithLabelValues(kind).Inc()
	klog.FromContext(ctx).Error(err, "Cannot read object; skipping it until it is fixed", "kind", kind,
		"object", klog.KRef(u.GetNamespace(), u.GetName()), "apiVersion", u.GetAPIVersion())
	if s.recorder != nil {
		s.recorder.Eventf(u, corev1.EventTypeWarning, ReasonUnreadable, "The scheduler cannot read this %s and skips it: %v", kind, err)
	}
}

// ReasonUnreadable is the reason of the Event on an object the scheduler
// cannot read.
const ReasonUnreadable = "Unreadable"
