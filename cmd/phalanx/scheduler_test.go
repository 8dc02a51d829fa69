package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func TestSchedulerFlags(t *testing.T) {
	var f schedulerFlags
	fs := schedulerFlagSet(&f, &bytes.Buffer{})
	err := fs.Parse([]string{"--reserve-after=90m", "--topology", "topology.kubernetes.io/zone, phalanx.dev/rack",
		"--gpu-model-label=example.com/gpu-model"})
	if err != nil {
		t.Fatal(err)
	}
	if f.reserveAfter != 90*time.Minute || f.gpuModelLabel != "example.com/gpu-model" {
		t.Errorf("reserve-after %v, gpu-model-label %q", f.reserveAfter, f.gpuModelLabel)
	}
	if diff := cmp.Diff(labelKeys{"topology.kubernetes.io/zone", "phalanx.dev/rack"}, f.topology); diff != "" {
		t.Errorf("topology (-want +got):\n%s", diff)
	}

	// Defaults reserve for gangs that waited a day (four at once), as
	// phalanx simulate does, shortest first on, topology empty, health and
	// metrics on loopback, and client-go's lease timings.
	f = schedulerFlags{}
	if err := schedulerFlagSet(&f, &bytes.Buffer{}).Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.reserveAfter != 24*time.Hour || len(f.topology) != 0 || f.gpuModelLabel != "nvidia.com/gpu.product" ||
		f.reservations != 4 || !f.shortestFirst || f.address != "127.0.0.1:10280" ||
		f.leaseDuration != 15*time.Second || f.renewDeadline != 10*time.Second || f.retryPeriod != 2*time.Second || f.partialTimeout != 5*time.Minute {
		t.Errorf("defaults: %+v", f)
	}
}

func TestSchedulerRejectsBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--topology=rack one"}, "not a label key"},
		{[]string{"--gpu-model-label=a b"}, "--gpu-model-label"},
		{[]string{"--reserve-after=-1m"}, "negative"},
		{[]string{"--reserve-after=3600"}, "parse error (a duration with its unit, such as 90s, 30m or 24h)"},
		{[]string{"--bogus"}, "phalanx scheduler: flag provided but not defined: -bogus"},
		{[]string{"--reservations=-1"}, "--reservations -1: give 1 to 64"},
		{[]string{"--reservations=0"}, "--reservations 0: give 1 to 64"},
		{[]string{"--reservations=65"}, "--reservations 65: give 1 to 64"},
		{[]string{"--kube-api-burst=0"}, "--kube-api-burst 0: give more than 0"},
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps 0 and"},
		{[]string{"--bind-workers=0"}, "--bind-workers 0 and --cycle-period 1s: give more than 0"},
		{[]string{"--cycle-period=0s"}, "--bind-workers 32 and --cycle-period 0s: give more than 0"},
		{[]string{"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=5s"}, "< --leader-elect-lease-duration (5s)"},
		{[]string{"--leader-elect-retry-period=0s"}, "0 < --leader-elect-retry-period (0s)"},
		{[]string{"--partial-gang-timeout=-1s"}, "--partial-gang-timeout -1s is negative"},
	} {
		var stderr bytes.Buffer
		if code := runScheduler(tt.args, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message saying %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}

func TestServesStreamingLists(t *testing.T) {
	for _, c := range []struct {
		major, minor string
		want         bool
	}{
		{"1", "33", false}, {"1", "34", true}, {"1", "35+", true}, {"2", "0", true}, {"1", "", false}, {"", "", false},
	} {
		kube := fake.NewClientset()
		kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{Major: c.major, Minor: c.minor}
		if got := servesStreamingLists(kube); got != c.want {
			t.Errorf("server %s.%s: streaming lists %v, want %v", c.major, c.minor, got, c.want)
		}
	}
}

type fakeReadiness struct{ ready, standby bool }

func (f fakeReadiness) Ready() bool   { return f.ready }
func (f fakeReadiness) Standby() bool { return f.standby }

// TestHealthEndpoints: a standby replica is ready (a Deployment of two
// rolls out) but does not say it schedules; a replica still syncing is
// neither.
func TestHealthEndpoints(t *testing.T) {
	for _, tt := range []struct {
		name                     string
		r                        fakeReadiness
		healthz, readyz, leaderz int
	}{
		{"scheduling", fakeReadiness{ready: true}, 200, 200, 200},
		{"standby", fakeReadiness{standby: true}, 200, 200, 503},
		{"syncing", fakeReadiness{}, 200, 503, 503},
	} {
		mux := http.NewServeMux()
		healthHandlers(mux, tt.r)
		for path, want := range map[string]int{"/healthz": tt.healthz, "/readyz": tt.readyz, "/leaderz": tt.leaderz} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != want {
				t.Errorf("%s: %s answers %d, want %d", tt.name, path, rec.Code, want)
			}
		}
	}
}
