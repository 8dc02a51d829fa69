package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                int64
	}{
		{"v2 limit", "memory.max", "2147483648\n", 2147483648},
		{"v2 none", "memory.max", "max\n", 0},
		{"v1 limit", "memory/memory.limit_in_bytes", "1073741824\n", 1073741824},
		{"v1 none", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0},
		{"garbage", "memory.max", "lots\n", 0},
		{"no file", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.file != "" {
				path := filepath.Join(root, tc.file)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := cgroupMemoryLimit(root); got != tc.want {
				t.Errorf("cgroupMemoryLimit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	if got := setMemoryLimit(root); got != 900000000 || debug.SetMemoryLimit(-1) != 900000000 {
		t.Errorf("setMemoryLimit = %d (Go's limit %d), want 900000000", got, debug.SetMemoryLimit(-1))
	}
	t.Setenv("GOMEMLIMIT", "500MiB")
	if got := setMemoryLimit(root); got != 0 {
		t.Errorf("with GOMEMLIMIT set, setMemoryLimit = %d, want 0 (left to Go)", got)
	}
}
