package workload

import (
	"strings"
	"testing"
)

func TestResourceAmount(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int64
		err      string
	}{
		{"cpu", "500m", 500, ""},
		{"cpu", "4", 4000, ""},
		{"cpu", "1.5", 1500, ""},
		{"cpu", "0.0001", 1, ""}, // rounded up, as MilliValue does
		{"cpu", "100u", 1, ""},
		{"cpu", "1e3", 1000000, ""},
		{"cpu", "+2", 2000, ""},
		{"memory", "16Gi", 16 << 30, ""},
		{"memory", "1.5Gi", 3 << 29, ""},
		{"memory", "512Mi", 512 << 20, ""},
		{"memory", "1G", 1000000000, ""},
		{"memory", "1k", 1000, ""},
		{"memory", "0.5", 1, ""}, // rounded up, as Value does
		{"memory", "1.G", 1000000000, ""},
		{"memory", "7Ei", 7 << 60, ""},
		{"memory", "9223372036854775807", 9223372036854775807, ""},
		{"memory", "0", 0, ""},
		{"memory", "-0", 0, ""},
		{"memory", "0.000e99999", 0, ""},
		{"memory", "1e-99999", 1, ""},
		{GPU, "2", 2, ""},
		{GPU, "2000m", 2, ""},
		{GPU, "1e1", 10, ""},
		{"pods", "110", 110, ""},
		{GPU, "0.5", 0, `nvidia.com/gpu "0.5" is not a whole number`},
		{GPU, "1500m", 0, "is not a whole number"},
		{"memory", "8Ei", 9223372036854775807, ""}, // Kubernetes caps it
		{"memory", "9223372036854775808", 0, "is too large"},
		{"cpu", "9223372036854775807", 0, "is too large"},
		{"memory", "1e99999", 0, "is too large"},
		{"memory", "16GB", 0, "is not a Kubernetes quantity"},
		{"memory", "1e", 0, "is not a Kubernetes quantity"},
		{"memory", "1e1.5", 0, "is not a Kubernetes quantity"},
		{"memory", " 1", 0, "is not a Kubernetes quantity"},
		{"memory", ".", 0, ""}, // Kubernetes reads it as zero
		{"memory", "-", 0, ""},
		{"memory", "", 0, "quantity is empty"},
		{"memory", "-1Gi", 0, "is negative"},
		{"memory", strings.Repeat("1", 65), 0, "is longer than 64 characters"},
	} {
		got, err := resourceAmount(tc.name, tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s %q: %v", tc.name, tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %q: error %v, want %q", tc.name, tc.in, err, tc.err)
		case got != tc.want:
			t.Errorf("%s %q = %d, want %d", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestParseSeconds(t *testing.T) {
	for _, tc := range []struct {
		in    string
		isInt bool
		want  int64
		err   string
	}{
		{"90s", false, 90, ""},
		{"10m", false, 600, ""},
		{"2h", false, 7200, ""},
		{"1h30m", false, 5400, ""},
		{"0s", false, 0, ""},
		{"0", true, 0, ""},
		{"3600", true, 3600, ""},
		{"1000000000000", true, 1000000000000, ""},
		{"1000000000001", true, 0, "is more than"},
		{"-1", true, 0, "is negative"},
		{"-1s", false, 0, "is negative"},
		{"1500ms", false, 0, "not a whole number of seconds"},
		{"10", false, 0, "is not a duration"},
		{"1d", false, 0, "is not a duration"},
		{"9999999999999999s", false, 0, "is out of range: at most 1000000000000 seconds"},
		{"99999999999999999999", true, 0, "is out of range: at most 1000000000000 seconds"},
	} {
		got, err := parseSeconds(tc.in, tc.isInt)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		case got != tc.want:
			t.Errorf("%q = %d, want %d", tc.in, got, tc.want)
		}
	}
}
