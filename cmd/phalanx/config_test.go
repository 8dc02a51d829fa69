package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/config"
	"github.com/phalanx-sched/phalanx/sim"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestSharedFlagDefaults: every setting of the configuration's scheduling
// section is a flag of both commands with the same default, so that a
// simulation with the defaults predicts the scheduler with its defaults.
func TestSharedFlagDefaults(t *testing.T) {
	var sf schedulerFlags
	sched := schedulerFlagSet(&sf, io.Discard)
	var mf simulateFlags
	simu := newSimulateFlagSet(&mf)
	all := func(b bool) *bool { return &b }
	d := &config.Duration{Duration: time.Minute}
	n := 1
	c := config.Configuration{Scheduling: config.Scheduling{ReserveAfter: d, Reservations: &n, ShortestFirst: all(true),
		Preemption: all(true), ReclaimAfter: d, ReclaimYoungerOnly: all(true), HoldFailedMember: d,
		PreemptMinRuntime: d, ReclaimMinRuntime: d, WeighLoss: all(true), ReserveAfterBacklog: all(true),
		CorrectEstimates: all(true), ReserveAhead: d, ReserveByWork: d}}
	shared := c.FlagValues("simulate")
	if want := reflect.TypeOf(c.Scheduling).NumField(); len(shared) != want {
		t.Fatalf("%d shared settings listed, want the %d of Scheduling (each set above)", len(shared), want)
	}
	for _, v := range shared {
		a, b := sched.Lookup(v.Flag), simu.Lookup(v.Flag)
		if a == nil || b == nil {
			t.Errorf("%s: flag --%s: in phalanx scheduler %v, in phalanx simulate %v", v.Field, v.Flag, a != nil, b != nil)
			continue
		}
		if a.DefValue != b.DefValue {
			t.Errorf("--%s defaults to %s in phalanx scheduler and %s in phalanx simulate", v.Flag, a.DefValue, b.DefValue)
		}
	}
}

// TestSimulatorDefaults: the simulator's Options resolve their zero values
// to the defaults of the configuration, so that sim.Run with Options{}
// (the golden tests, the benchmarks) is what the commands run by default.
func TestSimulatorDefaults(t *testing.T) {
	for _, c := range []struct {
		name      string
		sim, conf time.Duration
	}{
		{"reserve-after", sim.DefaultReserveAfter * time.Second, config.DefaultReserveAfter},
		{"preempt-min-runtime", sim.DefaultPreemptMinRuntime * time.Second, config.DefaultPreemptMinRuntime},
		{"reclaim-min-runtime", sim.DefaultReclaimMinRuntime * time.Second, config.DefaultReclaimMinRuntime},
		{"reserve-ahead", sim.DefaultReserveAhead * time.Second, config.DefaultReserveAhead},
		{"reserve-by-work", sim.DefaultReserveByWork * time.Second, config.DefaultReserveByWork},
	} {
		if c.sim != c.conf {
			t.Errorf("%s: sim's default %v, the configuration's %v", c.name, c.sim, c.conf)
		}
	}
	if sim.DefaultReservations != config.DefaultReservations {
		t.Errorf("reservations: sim's default %d, the configuration's %d", sim.DefaultReservations, config.DefaultReservations)
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "phalanx.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFile: the file sets both commands' flags; a flag given on the
// command line wins.
func TestConfigFile(t *testing.T) {
	path := writeConfig(t, `apiVersion: phalanx.dev/v1alpha1
kind: PhalanxConfiguration
scheduling:
  reserveAfter: 10m
  reservations: 3
  preemption: false
  holdFailedMember: 2m
scheduler:
  schedulerNames: [phalanx, kube-batch]
  topology: [topology.kubernetes.io/zone, phalanx.dev/rack]
  bindWorkers: 8
`)
	var f schedulerFlags
	fs := schedulerFlagSet(&f, io.Discard)
	if err := fs.Parse([]string{"--reservations", "1"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfig(fs, path, "scheduler"); err != nil {
		t.Fatal(err)
	}
	if f.reserveAfter != 10*time.Minute || f.reservations != 1 || f.preemption || f.holdFailed != 2*time.Minute ||
		strings.Join(f.names, ",") != "phalanx,kube-batch" || strings.Join(f.topology, ",") != "topology.kubernetes.io/zone,phalanx.dev/rack" ||
		f.bindWorkers != 8 {
		t.Errorf("scheduler flags after the file: %+v", f)
	}

	cfg, err := parseSimulate([]string{"--config", path, "--preemption=true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.opt.ReserveAfter != 600 || cfg.opt.Reservations != 3 || cfg.opt.NoPreemption || cfg.opt.HoldFailed != 120 {
		t.Errorf("simulate options after the file: %+v", cfg.opt)
	}
	// simulate's other name for the setting wins over the file as well.
	cfg, err = parseSimulate([]string{"--config", path, "--hold-failed", "30s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.opt.HoldFailed != 30 {
		t.Errorf("--hold-failed 30s over the file's 2m: %d s", cfg.opt.HoldFailed)
	}
	if _, err := parseSimulate([]string{"--hold-failed", "1m", "--hold-failed-member", "2m"}); err == nil ||
		!strings.Contains(err.Error(), "give one of them") {
		t.Errorf("both names of one setting: %v", err)
	}
}

// TestConfigErrors: a bad file stops either command before it does
// anything, with a message naming the field.
func TestConfigErrors(t *testing.T) {
	header := "apiVersion: phalanx.dev/v1alpha1\nkind: PhalanxConfiguration\n"
	for _, tt := range []struct {
		name, text, want string
	}{
		{"wrong kind", "apiVersion: phalanx.dev/v1alpha1\nkind: KubeSchedulerConfiguration\n", "want phalanx.dev/v1alpha1 and PhalanxConfiguration"},
		{"unknown field", header + "scheduling:\n  reserveAftr: 1h\n", `unknown field "reserveAftr"`},
		{"bad duration", header + "scheduling:\n  reserveAfter: soon\n", `"soon"`},
		{"wrong type", header + "scheduling:\n  reservations: two\n", "scheduling.reservations"},
		{"negative", header + "scheduling:\n  holdFailedMember: -5m\n", "scheduling.holdFailedMember: -5m0s must not be negative"},
		{"no reservations", header + "scheduling:\n  reservations: 0\n", "scheduling.reservations: 0; give 1 to 64"},
		{"too many reservations", header + "scheduling:\n  reservations: 65\n", "scheduling.reservations: 65; give 1 to 64"},
		{"part of a second", header + "scheduling:\n  reserveAfter: 1500ms\n", "scheduling.reserveAfter: 1.5s; give whole seconds"},
		{"no burst", header + "scheduler:\n  kubeAPIBurst: 0\n", "scheduler.kubeAPIBurst: 0; give at least 1"},
		{"bad topology", header + "scheduler:\n  topology: [\"not a key!\"]\n", "scheduler.topology"},
		{"not yaml", "scheduling: [\n", "not YAML"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.text)
			for _, args := range [][]string{{"scheduler", "--config", path}, {"simulate", "--config", path}} {
				if args[0] == "simulate" && strings.Contains(tt.text, "scheduler:") {
					continue // the simulator does not read that section
				}
				code, stdout, stderr := runArgs(t, args...)
				if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, path) {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and an error naming %s and saying %q", args[0], code, stdout, stderr, path, tt.want)
				}
			}
		})
	}
	if code, _, stderr := runArgs(t, "simulate", "--config", filepath.Join(t.TempDir(), "missing.yaml")); code != 2 || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("a missing file: exit %d, %q", code, stderr)
	}
}

// TestDeployedConfig: the configuration deploy/ ships parses, and sets the
// scheduler's flags without error.
func TestDeployedConfig(t *testing.T) {
	data, err := os.ReadFile("../../deploy/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("deploy/config.yaml: %v", err)
	}
	path := writeConfig(t, cm.Data["config.yaml"])
	var f schedulerFlags
	fs := schedulerFlagSet(&f, io.Discard)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := applyConfig(fs, path, "scheduler"); err != nil {
		t.Fatalf("deploy/config.yaml's config.yaml: %v", err)
	}
	if strings.Join(f.names, ",") != "phalanx,kube-batch" {
		t.Errorf("scheduler names %v", f.names)
	}
	dep, err := os.ReadFile("../../deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dep), "--config=/etc/phalanx/config.yaml") || !strings.Contains(string(dep), "name: phalanx-config") {
		t.Error("deploy/deployment.yaml does not mount the configuration and pass --config")
	}
}
