package main

import (
	"flag"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/config"
)

// applyConfig sets, from the PhalanxConfiguration file at path, the flags
// of command that the command line did not give: the command line wins
// over the file, the file over the defaults. Errors name the file and the
// field.
func applyConfig(fs *flag.FlagSet, path, command string) error {
	c, err := config.Read(path)
	if err != nil {
		return fmt.Errorf("--config %w", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		given[f.Name] = true
		// A flag given under another of its names (phalanx simulate's
		// --hold-failed for --hold-failed-member) wins over the file too:
		// two names of one variable hold the same Value.
		fs.VisitAll(func(g *flag.Flag) {
			if sameVariable(g.Value, f.Value) {
				given[g.Name] = true
			}
		})
	})
	for _, v := range c.FlagValues(command) {
		if fs.Lookup(v.Flag) == nil {
			return fmt.Errorf("--config %s: %s: phalanx %s has no flag --%s", path, v.Field, command, v.Flag)
		}
		if given[v.Flag] {
			continue
		}
		if err := fs.Set(v.Flag, v.Value); err != nil {
			return fmt.Errorf("--config %s: %s: %q: %w", path, v.Field, v.Value, err)
		}
	}
	return nil
}

// sameVariable reports whether two flag values set one variable: both
// point at it.
func sameVariable(a, b flag.Value) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// parseHint adds to a flag package error what the flag's values look like,
// where it only says "parse error": --reserve-after 3600 wants a unit.
func parseHint(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	_, rest, ok := strings.Cut(msg, " for flag -")
	if !ok || !strings.HasSuffix(msg, ": parse error") {
		return msg
	}
	name, _, _ := strings.Cut(rest, ":")
	f := fs.Lookup(name)
	if f == nil {
		return msg
	}
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return msg
	}
	switch getter.Get().(type) {
	case time.Duration:
		return msg + " (a duration with its unit, such as 90s, 30m or 24h)"
	case int, int64:
		return msg + " (a whole number)"
	case uint, uint64:
		return msg + " (a whole number, 0 or more)"
	case float64:
		return msg + " (a number)"
	}
	return msg
}
