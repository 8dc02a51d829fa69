// Command phalanx is the Phalanx command line: `phalanx simulate` replays
// built-in scenarios, scenario files and GPU cluster traces under each
// scheduling policy and compares them; `phalanx scheduler` runs the
// Kubernetes scheduler.
//
// Exit codes: 0 on success, 1 when a command fails (bad input file, write
// error), 2 on a usage error (unknown command, bad flag).
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand. run gets the arguments after the command's
// name and returns the exit code; usage writes its help text.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
	usage         func(out io.Writer)
}

// commands lists the subcommands in the order help shows them.
func commands() []command {
	return []command{
		{"simulate", "compare scheduling policies on built-in scenarios, a scenario file or a GPU trace", runSimulate, simulateUsage},
		{"scheduler", "run as a secondary Kubernetes scheduler (gang scheduling for pods that name it)", runScheduler, schedulerUsage},
		{"gen-trace", "write a synthetic GPU cluster trace (seeded; light or overloaded) for simulate --trace", runGenTrace, genTraceUsage},
		{"status", "show queues and waiting gangs, and why a gang waits, as the scheduler wrote them into the API", runStatus, statusUsage},
		{"version", "print the version, commit and build date", runVersion, versionUsage},
	}
}

// run dispatches args (without the program name) to a subcommand and
// returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		return help(args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "phalanx: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

// help writes the usage of the program, or of the named command.
func help(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		usage(stdout)
		return 0
	case 1:
		for _, c := range commands() {
			if c.name == args[0] {
				c.usage(stdout)
				return 0
			}
		}
		fmt.Fprintf(stderr, "phalanx help: unknown command %q\n\n", args[0])
	default:
		fmt.Fprintf(stderr, "phalanx help: too many arguments: %s\n\n", strings.Join(args, " "))
	}
	usage(stderr)
	return 2
}

func usage(out io.Writer) {
	fmt.Fprint(out, `Phalanx is a gang batch scheduler for Kubernetes: the pods of a job start
together or not at all.

Usage:
  phalanx <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(out, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(out, `  help       show the flags of a command

Run 'phalanx help <command>' for the flags of a command.
Start with 'phalanx simulate'.
`)
}
