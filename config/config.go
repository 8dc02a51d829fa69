// Package config reads PhalanxConfiguration, the versioned file that
// `phalanx scheduler --config` and `phalanx simulate --config` share, so
// that a simulated result is run with the settings the scheduler is
// deployed with:
//
//	apiVersion: phalanx.dev/v1alpha1
//	kind: PhalanxConfiguration
//	scheduling:          # both commands
//	  reserveAfter: 1h
//	  reserveAfterBacklog: true
//	  reserveAhead: 48h
//	  reservations: 4
//	  reserveByWork: 24h
//	  shortestFirst: true
//	  preemption: true
//	  reclaimAfter: 0s
//	  reclaimYoungerOnly: false
//	  holdFailedMember: 5m
//	scheduler:           # phalanx scheduler only
//	  schedulerNames: [phalanx, kube-batch]
//	  topology: [topology.kubernetes.io/zone, phalanx.dev/rack]
//
// Every field stands for the command-line flag of the same meaning
// (FlagValues names them); a flag given on the command line wins over the
// file, and the file over the flag's default.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/core"
	"sigs.k8s.io/yaml"
)

// APIVersion and Kind identify the file.
const (
	APIVersion = "phalanx.dev/v1alpha1"
	Kind       = "PhalanxConfiguration"
)

// Defaults of the scheduling section that both commands' flags take
// (TestSharedFlagDefaults checks that they do). The simulator's Options
// resolve their zero values to the same (sim.Default*).
const (
	// DefaultReserveAfter: how long a gang that does not fit waits at least
	// before nodes are reserved for it (with DefaultReserveAfterBacklog, a
	// floor). Reserved nodes stay partly idle while they drain; on the
	// Philly trace, with a fixed threshold, a day's wait was the shortest
	// that kept both the mean completion time and the big gangs' wait ahead
	// of the baselines (docs/evaluation.md).
	DefaultReserveAfter = 24 * time.Hour
	// DefaultReserveAfterBacklog: a gang also waits, before nodes are
	// reserved for it, as long as the cluster needs to run the work waiting
	// now; under overload only the gangs passed over longer than that drain
	// nodes (docs/evaluation.md).
	DefaultReserveAfterBacklog = true
	// DefaultReserveAhead: nodes are reserved for a gang up to this long
	// before it is due (the threshold above), for a reservation that starts
	// no sooner than it is due; until then the nodes take only gangs
	// expected to end by then. On the Philly trace and the synthetic ones,
	// two days lowered both the mean completion time and the big gangs'
	// wait against reserving only once a gang is due (docs/evaluation-notebook.md,
	// "An eighth pass"). With the backlog, never before reserveAfter: only
	// the backlog's part of the threshold is reserved ahead of ("A twelfth
	// pass").
	DefaultReserveAhead = 48 * time.Hour
	// DefaultReservations: how many waiting gangs may hold reservations at
	// once. Four rather than two once the backlog counted what running
	// gangs keep from the waiting work (docs/evaluation-notebook.md, "A ninth
	// pass" and "A tenth pass").
	DefaultReservations = 4
	// DefaultReserveByWork: the gangs in line for a reservation go by
	// arrival moved back by eight times the time their work would take the
	// whole cluster, by at most this long, so that under overload a gang of
	// one or two nodes passes the biggest gangs that arrived a little before
	// it, and none is passed by a gang that arrived more than a day after it
	// (docs/evaluation-notebook.md, "A fifteenth pass").
	DefaultReserveByWork = 24 * time.Hour
	// DefaultPreemptMinRuntime and DefaultReclaimMinRuntime: how long a gang
	// runs before it may be preempted within its queue, or reclaimed by
	// another queue (docs/evaluation.md says how reclaim's was chosen). A
	// gang of higher priority preempts at once by default: its priority is
	// the user's word that it matters more, as in kube-scheduler.
	DefaultPreemptMinRuntime = 0
	DefaultReclaimMinRuntime = time.Hour
	// DefaultWeighLoss: an eviction must not lose more run time than it
	// gains.
	DefaultWeighLoss = true
	// DefaultCorrectEstimates: declared run-time estimates are multiplied
	// by how the queue's latest gangs ran against theirs (the median ratio,
	// followed when it moves more than a quarter away; core.EstimateFactor),
	// by era of arrival (core.FactorEras).
	DefaultCorrectEstimates = true
)

// Configuration is the file.
type Configuration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Scheduling is what both the scheduler and the simulator read.
	Scheduling Scheduling `json:"scheduling,omitempty"`
	// Scheduler is read by phalanx scheduler only.
	Scheduler Scheduler `json:"scheduler,omitempty"`
}

// Scheduling holds the policy settings of both commands. Unset fields keep
// the flags' defaults.
type Scheduling struct {
	// ReserveAfter: how long a gang that does not fit waits before nodes are
	// reserved for it (--reserve-after); 0 turns reservations off.
	ReserveAfter *Duration `json:"reserveAfter,omitempty"`
	// ReserveAfterBacklog: reserveAfter is a floor, and a gang also waits
	// nine tenths of the time the cluster needs to run the work waiting
	// now, the backlog (--reserve-after-backlog).
	ReserveAfterBacklog *bool `json:"reserveAfterBacklog,omitempty"`
	// ReserveAhead: how long before a gang is due (reserveAfter, the
	// backlog) nodes may be reserved for it, for a reservation that starts
	// no sooner than it is due (--reserve-ahead); 0: only once it is due.
	// With reserveAfterBacklog, never before the gang has waited
	// reserveAfter.
	ReserveAhead *Duration `json:"reserveAhead,omitempty"`
	// Reservations: how many gangs may hold reservations at once
	// (--reservations).
	Reservations *int `json:"reservations,omitempty"`
	// ReserveByWork: the most a gang's work (its GPUs times its estimate)
	// moves it back in line for a reservation (--reserve-by-work); 0: by
	// arrival.
	ReserveByWork *Duration `json:"reserveByWork,omitempty"`
	// ShortestFirst: within a queue and priority, shorter estimated run
	// times first (--shortest-first).
	ShortestFirst *bool `json:"shortestFirst,omitempty"`
	// Preemption: preemption within a queue and reclaim between queues
	// (--preemption).
	Preemption *bool `json:"preemption,omitempty"`
	// ReclaimAfter: how long a gang waits before it reclaims from queues
	// over their share (--reclaim-after).
	ReclaimAfter *Duration `json:"reclaimAfter,omitempty"`
	// ReclaimYoungerOnly: reclaim only from gangs that arrived later
	// (--reclaim-younger-only).
	ReclaimYoungerOnly *bool `json:"reclaimYoungerOnly,omitempty"`
	// PreemptMinRuntime: how long a gang runs before a gang of higher
	// priority in its queue may preempt it (--preempt-min-runtime); a
	// Queue's preemptMinRuntimeSeconds overrides it.
	PreemptMinRuntime *Duration `json:"preemptMinRuntime,omitempty"`
	// ReclaimMinRuntime: how long a gang runs before another queue may
	// reclaim its room (--reclaim-min-runtime); a Queue's
	// reclaimMinRuntimeSeconds overrides it.
	ReclaimMinRuntime *Duration `json:"reclaimMinRuntime,omitempty"`
	// WeighLoss: refuse an eviction whose victims would lose more GPU time
	// than the preemptor gains by starting before their estimated ends
	// (--weigh-loss).
	WeighLoss *bool `json:"weighLoss,omitempty"`
	// CorrectEstimates: multiply a gang's declared estimate by the median
	// ratio of run time to declared estimate of its queue's latest
	// completed gangs (--correct-estimates).
	CorrectEstimates *bool `json:"correctEstimates,omitempty"`
	// HoldFailedMember: how long a failed member's room is kept for its
	// replacement (--hold-failed-member).
	HoldFailedMember *Duration `json:"holdFailedMember,omitempty"`
}

// Scheduler holds the settings of phalanx scheduler alone.
type Scheduler struct {
	SchedulerNames     []string  `json:"schedulerNames,omitempty"`     // --scheduler-name, each
	Topology           []string  `json:"topology,omitempty"`           // --topology
	GPUResource        *string   `json:"gpuResource,omitempty"`        // --gpu-resource
	GPUModelLabel      *string   `json:"gpuModelLabel,omitempty"`      // --gpu-model-label
	PartialGangTimeout *Duration `json:"partialGangTimeout,omitempty"` // --partial-gang-timeout
	CyclePeriod        *Duration `json:"cyclePeriod,omitempty"`        // --cycle-period
	BindWorkers        *int      `json:"bindWorkers,omitempty"`        // --bind-workers
	KubeAPIQPS         *float64  `json:"kubeAPIQPS,omitempty"`         // --kube-api-qps
	KubeAPIBurst       *int      `json:"kubeAPIBurst,omitempty"`       // --kube-api-burst
	PodEventQPS        *float64  `json:"podEventQPS,omitempty"`        // --pod-event-qps
	PodEventBurst      *int      `json:"podEventBurst,omitempty"`      // --pod-event-burst
	ForecastPeriod     *Duration `json:"forecastPeriod,omitempty"`     // --forecast-period
	ForecastHorizon    *Duration `json:"forecastHorizon,omitempty"`    // --forecast-horizon
}

// Duration is a Go duration written as a string ("90m", "1h30m", "0s").
type Duration struct{ time.Duration }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"90m\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		// A type error, which the decoder gives the field's path (explain).
		return &json.UnmarshalTypeError{Value: strconv.Quote(s), Type: reflect.TypeOf(Duration{})}
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// Read reads and checks the file at path.
func Read(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads a configuration from YAML (or JSON) and checks it: the
// apiVersion and kind, no unknown field, each value in range. Errors name
// the field.
func Parse(data []byte) (*Configuration, error) {
	if n := documents(data); n > 1 {
		return nil, fmt.Errorf("%d YAML documents; give one (the settings of the others would be ignored)", n)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		if _, lax := yaml.YAMLToJSON(data); lax == nil {
			// YAML, but a key is given twice: say which, on one line.
			msg := strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:")), " ")
			return nil, fmt.Errorf("%s; give each field once", msg)
		}
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	if err := checkShape(js); err != nil {
		return nil, err
	}
	var c Configuration
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, explain(err)
	}
	if c.APIVersion != APIVersion || c.Kind != Kind {
		return nil, fmt.Errorf("apiVersion %q and kind %q: want %s and %s", c.APIVersion, c.Kind, APIVersion, Kind)
	}
	for _, v := range c.FlagValues("scheduler") {
		if v.number && strings.HasPrefix(v.Value, "-") {
			return nil, fmt.Errorf("%s: %s must not be negative", v.Field, v.Value)
		}
	}
	if n := c.Scheduling.Reservations; n != nil && (*n < 1 || *n > core.MaxReservations) {
		return nil, fmt.Errorf("scheduling.reservations: %d; give 1 to %d (reservations are turned off with reserveAfter: 0s)", *n, core.MaxReservations)
	}
	sv := reflect.ValueOf(c.Scheduling)
	for i := range sv.NumField() {
		if d, ok := sv.Field(i).Interface().(*Duration); ok && d != nil && d.Duration%time.Second != 0 {
			return nil, fmt.Errorf("scheduling.%s: %v; give whole seconds (both commands count in seconds)", jsonName(sv.Type().Field(i)), d.Duration)
		}
	}
	if n := c.Scheduler.BindWorkers; n != nil && *n < 1 {
		return nil, fmt.Errorf("scheduler.bindWorkers: %d; give at least 1", *n)
	}
	if q := c.Scheduler.KubeAPIQPS; q != nil && *q <= 0 {
		return nil, fmt.Errorf("scheduler.kubeAPIQPS: %v; give more than 0", *q)
	}
	if d := c.Scheduler.CyclePeriod; d != nil && d.Duration <= 0 {
		return nil, fmt.Errorf("scheduler.cyclePeriod: %v; give more than 0", d.Duration)
	}
	if n := c.Scheduler.KubeAPIBurst; n != nil && *n < 1 {
		return nil, fmt.Errorf("scheduler.kubeAPIBurst: %d; give at least 1", *n)
	}
	return &c, nil
}

// documents counts the YAML documents of data that hold more than
// comments.
func documents(data []byte) int {
	n, content := 0, false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "---" || strings.HasPrefix(line, "--- ") {
			if content {
				n++
			}
			content = false
			continue
		}
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			content = true
		}
	}
	if content {
		n++
	}
	return n
}

// checkShape checks what the decoder would pass over or name badly: the
// file and its sections are mappings, no field is null (which would
// silently keep the default), and every duration is a string.
func checkShape(js []byte) error {
	var top any
	if err := json.Unmarshal(js, &top); err != nil {
		return err
	}
	if top == nil {
		return nil // empty: the apiVersion check says what is missing
	}
	m, ok := top.(map[string]any)
	if !ok {
		return fmt.Errorf("want a mapping of apiVersion, kind, scheduling and scheduler, got %s", jsonKind(top))
	}
	for _, section := range []struct {
		name string
		typ  reflect.Type
	}{{"scheduling", reflect.TypeOf(Scheduling{})}, {"scheduler", reflect.TypeOf(Scheduler{})}} {
		v, present := m[section.name]
		if !present {
			continue
		}
		fields, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want a mapping of settings, got %s", section.name, jsonKind(v))
		}
		for _, key := range slices.Sorted(maps.Keys(fields)) {
			value, path := fields[key], section.name+"."+key
			if value == nil {
				return fmt.Errorf("%s: no value; give one, or leave the field out for the default", path)
			}
			if f, ok := fieldByTag(section.typ, key); ok && f.Type == reflect.TypeOf(&Duration{}) {
				if _, isString := value.(string); !isString {
					return fmt.Errorf("%s: want a duration such as \"90m\", got %s", path, jsonKind(value))
				}
			}
		}
	}
	return nil
}

// fieldByTag finds the field of struct t whose JSON name is name.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); jsonName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// jsonName is a field's name in the file.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// jsonKind says what a decoded JSON value is, for messages.
func jsonKind(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return strconv.Quote(v)
	case float64:
		return "the number " + strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return "the boolean " + strconv.FormatBool(v)
	}
	return "nothing"
}

// explain turns a decoding error into one that names the field.
func explain(err error) error {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Type == reflect.TypeOf(Duration{}):
		return fmt.Errorf("%s: want a duration such as \"90m\", got %s", typeErr.Field, typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Errorf("%s: want %s, got a %s", typeErr.Field, typeErr.Type, typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return err
}

// FlagValue is a field of the file set, as the value of a command's flag.
type FlagValue struct {
	Flag  string // the flag's name, without dashes
	Field string // the field's path in the file, for messages
	Value string // as the flag would be given
	// number: a duration or a number, never negative.
	number bool
}

// FlagValues lists the fields that are set, as values of the flags of
// command ("scheduler" or "simulate"); the simulator reads the scheduling
// section only.
func (c *Configuration) FlagValues(command string) []FlagValue {
	var out []FlagValue
	add := func(flag, field, value string) { out = append(out, FlagValue{Flag: flag, Field: field, Value: value}) }
	addNumber := func(flag, field, value string) {
		out = append(out, FlagValue{Flag: flag, Field: field, Value: value, number: true})
	}
	dur := func(flag, field string, d *Duration) {
		if d != nil {
			addNumber(flag, field, d.Duration.String())
		}
	}
	integer := func(flag, field string, n *int) {
		if n != nil {
			addNumber(flag, field, strconv.Itoa(*n))
		}
	}
	boolean := func(flag, field string, b *bool) {
		if b != nil {
			add(flag, field, strconv.FormatBool(*b))
		}
	}
	str := func(flag, field string, s *string) {
		if s != nil {
			add(flag, field, *s)
		}
	}
	float := func(flag, field string, f *float64) {
		if f != nil {
			addNumber(flag, field, strconv.FormatFloat(*f, 'g', -1, 64))
		}
	}
	s := &c.Scheduling
	dur("reserve-after", "scheduling.reserveAfter", s.ReserveAfter)
	boolean("reserve-after-backlog", "scheduling.reserveAfterBacklog", s.ReserveAfterBacklog)
	dur("reserve-ahead", "scheduling.reserveAhead", s.ReserveAhead)
	integer("reservations", "scheduling.reservations", s.Reservations)
	dur("reserve-by-work", "scheduling.reserveByWork", s.ReserveByWork)
	boolean("shortest-first", "scheduling.shortestFirst", s.ShortestFirst)
	boolean("preemption", "scheduling.preemption", s.Preemption)
	dur("reclaim-after", "scheduling.reclaimAfter", s.ReclaimAfter)
	boolean("reclaim-younger-only", "scheduling.reclaimYoungerOnly", s.ReclaimYoungerOnly)
	dur("preempt-min-runtime", "scheduling.preemptMinRuntime", s.PreemptMinRuntime)
	dur("reclaim-min-runtime", "scheduling.reclaimMinRuntime", s.ReclaimMinRuntime)
	boolean("weigh-loss", "scheduling.weighLoss", s.WeighLoss)
	boolean("correct-estimates", "scheduling.correctEstimates", s.CorrectEstimates)
	dur("hold-failed-member", "scheduling.holdFailedMember", s.HoldFailedMember)
	if command != "scheduler" {
		return out
	}
	r := &c.Scheduler
	for i, name := range r.SchedulerNames {
		add("scheduler-name", fmt.Sprintf("scheduler.schedulerNames[%d]", i), name)
	}
	if r.Topology != nil {
		add("topology", "scheduler.topology", strings.Join(r.Topology, ","))
	}
	str("gpu-resource", "scheduler.gpuResource", r.GPUResource)
	str("gpu-model-label", "scheduler.gpuModelLabel", r.GPUModelLabel)
	dur("partial-gang-timeout", "scheduler.partialGangTimeout", r.PartialGangTimeout)
	dur("cycle-period", "scheduler.cyclePeriod", r.CyclePeriod)
	integer("bind-workers", "scheduler.bindWorkers", r.BindWorkers)
	float("kube-api-qps", "scheduler.kubeAPIQPS", r.KubeAPIQPS)
	integer("kube-api-burst", "scheduler.kubeAPIBurst", r.KubeAPIBurst)
	float("pod-event-qps", "scheduler.podEventQPS", r.PodEventQPS)
	integer("pod-event-burst", "scheduler.podEventBurst", r.PodEventBurst)
	dur("forecast-period", "scheduler.forecastPeriod", r.ForecastPeriod)
	dur("forecast-horizon", "scheduler.forecastHorizon", r.ForecastHorizon)
	return out
}
