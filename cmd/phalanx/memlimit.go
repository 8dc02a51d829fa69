package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupMemoryLimit returns the memory limit of the cgroup the process runs
// in, read under root (/sys/fs/cgroup): cgroup v2's memory.max, else v1's
// memory/memory.limit_in_bytes; 0 when there is none.
func cgroupMemoryLimit(root string) int64 {
	for _, file := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(data))
		if s == "max" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 { // v1 says "no limit" with a number near 2^63
			return 0
		}
		return n
	}
	return 0
}

// setMemoryLimit gives Go's collector a soft limit of 90% of the
// container's memory limit, unless GOMEMLIMIT is set: as the heap nears it
// the collector runs more often, where by default it lets the heap grow to
// twice what is live and the kernel kills the process. It returns the
// limit set, 0 if none.
func setMemoryLimit(root string) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	limit := cgroupMemoryLimit(root)
	if limit == 0 {
		return 0
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	return soft
}
