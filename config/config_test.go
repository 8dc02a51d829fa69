package config

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`apiVersion: phalanx.dev/v1alpha1
kind: PhalanxConfiguration
scheduling:
  reserveAfter: 90m
  shortestFirst: false
scheduler:
  kubeAPIQPS: 500
  schedulerNames: [a, b]
  forecastPeriod: 1m
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Scheduling.ReserveAfter.Duration != 90*time.Minute || *c.Scheduling.ShortestFirst || *c.Scheduler.KubeAPIQPS != 500 {
		t.Errorf("parsed %+v", c)
	}
	var got []string
	for _, v := range c.FlagValues("scheduler") {
		got = append(got, v.Flag+"="+v.Value)
	}
	if want := "reserve-after=1h30m0s shortest-first=false scheduler-name=a scheduler-name=b kube-api-qps=500 forecast-period=1m0s"; strings.Join(got, " ") != want {
		t.Errorf("scheduler flags %v, want %s", got, want)
	}
	if n := len(c.FlagValues("simulate")); n != 2 {
		t.Errorf("the simulator gets %d settings, want the 2 of the scheduling section", n)
	}
	if _, err := Parse([]byte("apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\nscheduler:\n  kubeAPIQPS: 0\n")); err == nil ||
		!strings.Contains(err.Error(), "scheduler.kubeAPIQPS") {
		t.Errorf("a QPS of 0: %v", err)
	}
	if _, err := Parse([]byte("apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\nscheduler:\n  forecastPeriod: -1s\n")); err == nil ||
		!strings.Contains(err.Error(), "scheduler.forecastPeriod") {
		t.Errorf("a negative forecast period: %v", err)
	}
	ahead, err := Parse([]byte("apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\nscheduling:\n  reserveAhead: 12h\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := ahead.FlagValues("simulate"); len(v) != 1 || v[0].Flag != "reserve-ahead" || v[0].Value != "12h0m0s" {
		t.Errorf("reserveAhead: 12h gives the flags %+v, want reserve-ahead=12h0m0s", v)
	}
	if _, err := Parse([]byte("apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\nscheduling:\n  reserveAhead: -1h\n")); err == nil ||
		!strings.Contains(err.Error(), "scheduling.reserveAhead") {
		t.Errorf("a negative reserveAhead: %v", err)
	}
}

// TestParseErrors: a file the decoder alone would take with a setting
// ignored, or reject without naming the field, is refused with a message
// that names it.
func TestParseErrors(t *testing.T) {
	header := "apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\n"
	for _, tt := range []struct{ name, text, want string }{
		{"a number for a duration", header + "scheduling:\n  reserveAfter: 3600\n", `scheduling.reserveAfter: want a duration such as "90m", got the number 3600`},
		{"a list for a duration", header + "scheduler:\n  cyclePeriod: [1, 2]\n", "scheduler.cyclePeriod: want a duration such as \"90m\", got a list"},
		{"an empty duration", header + "scheduling:\n  reserveAhead: \"\"\n", `scheduling.reserveAhead: want a duration such as "90m", got ""`},
		{"no value", header + "scheduling:\n  reserveAfter:\n", "scheduling.reserveAfter: no value"},
		{"a key twice", header + "scheduling:\n  reserveAfter: 1h\n  reserveAfter: 2h\n", `line 5: key "reserveAfter" already set in map; give each field once`},
		{"two documents", header + "---\n" + header + "scheduling:\n  reserveAfter: 2h\n", "2 YAML documents; give one"},
		{"a section that is no mapping", header + "scheduling: 5\n", "scheduling: want a mapping of settings, got the number 5"},
		{"a file that is a list", "- a\n- b\n", "want a mapping of apiVersion, kind, scheduling and scheduler, got a list"},
		{"reservations over the bound", header + "scheduling:\n  reservations: 65\n", "scheduling.reservations: 65; give 1 to 64"},
		{"part of a second", header + "scheduling:\n  reclaimAfter: 1500ms\n", "scheduling.reclaimAfter: 1.5s; give whole seconds"},
		{"no burst", header + "scheduler:\n  kubeAPIBurst: 0\n", "scheduler.kubeAPIBurst: 0; give at least 1"},
		{"no cycle period", header + "scheduler:\n  cyclePeriod: 0s\n", "scheduler.cyclePeriod: 0s; give more than 0"},
	} {
		if _, err := Parse([]byte(tt.text)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.want)
		}
	}
	// One document after a leading separator, and comments, are one file.
	if _, err := Parse([]byte("# settings\n---\n" + header + "scheduler:\n  cyclePeriod: 500ms\n")); err != nil {
		t.Errorf("one document after ---: %v", err)
	}
}

// FuzzParse: no input makes Parse panic, and what it accepts gives flag
// values that are never negative numbers.
func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\nscheduling:\n  reserveAfter: 1h\n  reservations: 2\n"))
	f.Add([]byte("apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\nscheduler:\n  topology: [a, b]\n  bindWorkers: -1\n"))
	f.Add([]byte("apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\nscheduling:\n  reserveAhead: 48h\n  reserveAfterBacklog: true\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		for _, v := range c.FlagValues("scheduler") {
			if v.number && strings.HasPrefix(v.Value, "-") {
				t.Errorf("accepted %s = %s", v.Field, v.Value)
			}
		}
	})
}
