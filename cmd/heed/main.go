// Command heed is the command-line tool of the heed module: a way to see
// heed's decisions without writing a program.
//
// Usage:
//
//	heed <command> [arguments]
//
// Commands:
//
//	demo    play rate-limiting scenarios against an in-process fake vendor
//	get     send one request through heed; exit 75 with retry-at when it must wait
//	poll    follow a job's status URL until a terminal state; exit 0 on success
//
// Run "heed help" for the list of commands, "heed <command> -h" for one
// command's flags.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// command is one subcommand of heed. run gets the arguments after the
// command's name and returns the process exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands maps each subcommand name to its implementation. A new
// subcommand only needs an entry here.
var commands = map[string]command{
	"demo": {
		summary: "play rate-limiting scenarios against an in-process fake vendor",
		run:     runDemo,
	},
	"get": {
		summary: "send one request through heed; exit 75 with retry-at when it must wait",
		run:     runGet,
	},
	"poll": {
		summary: "follow a job's status URL until a terminal state; exit 0 on success",
		run:     runPoll,
	},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args (without the program name) to a subcommand and
// returns the exit code: the subcommand's own, 0 for help, or 2 for a
// missing or an unknown command.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "heed: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:], stdout, stderr)
}

// usage writes the list of commands to w.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("heed: retries rate-limited API calls, and defers what cannot wait.\n\n")
	b.WriteString("Usage:\n\n\theed <command> [arguments]\n\nCommands:\n\n")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "\t%-8s%s\n", name, commands[name].summary)
	}
	b.WriteString("\nRun \"heed <command> -h\" for a command's flags.\n")
	io.WriteString(w, b.String())
}
