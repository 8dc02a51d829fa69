package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Set at link time by make build:
//
//	go build -ldflags "-X main.buildVersion=... -X main.buildCommit=... -X main.buildDate=..."
//
// A binary built without them reports what Go recorded of the module and
// the checkout.
var buildVersion, buildCommit, buildDate string

// versionInfo is what `phalanx version` prints: the version, the commit
// (with "+dirty" when built from a modified tree) and the build date.
func versionInfo() (v, c, d string) {
	v, c, d = buildVersion, buildCommit, buildDate
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return orUnknown(v), orUnknown(c), orUnknown(d)
	}
	if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	var revision, when, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if c == "" && revision != "" {
		c = revision + dirty
	}
	if d == "" {
		d = when // the commit's time, the best a plain go build knows
	}
	return orUnknown(v), orUnknown(c), orUnknown(d)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "phalanx version: takes no arguments\n")
		return 2
	}
	v, c, d := versionInfo()
	fmt.Fprintf(stdout, "phalanx %s\ncommit: %s\nbuilt: %s\ngo: %s %s/%s\n", v, c, d, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

func versionUsage(out io.Writer) {
	fmt.Fprintln(out, "usage: phalanx version\n\nPrints the version, the commit and the build date of this binary, and the Go it was built with.")
}
