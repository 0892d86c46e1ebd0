// Command-line flags: parsing a subcommand's arguments, and the repeated
// -H header flag.

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// parseCommand parses the arguments of the subcommand name with fs, whose
// usage text is usage, and returns its one URL and a function that reports
// a usage error. When done, the command is over and exits with code: help
// was asked for (0) or the arguments are wrong (exitUsage).
func parseCommand(name, usage string, fs *flag.FlagSet, args []string, stderr io.Writer) (target string, usageErr func(format string, a ...any) int, code int, done bool) {
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	usageErr = func(format string, a ...any) int {
		fmt.Fprintf(stderr, "heed "+name+": "+format+"\n\n", a...)
		fs.Usage()
		return exitUsage
	}
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return "", usageErr, exitOK, true
	case err != nil:
		return "", usageErr, exitUsage, true
	case len(pos) != 1:
		return "", usageErr, usageErr("want one URL, got %d arguments", len(pos)), true
	}
	target, err = checkURL(pos[0])
	if err != nil {
		return "", usageErr, usageErr("%v", err), true
	}
	return target, usageErr, 0, false
}

// headerFlags collects repeated -H 'Name: value' flags, as curl takes them.
type headerFlags struct {
	header http.Header
	host   string // a Host header, which net/http takes from Request.Host
	// bad is why a flag was malformed. Set keeps it here rather than
	// return it, since package flag would print the value with it, and
	// a value may hold a secret ("Authorization Bearer sk-…").
	bad error
}

// String returns the headers, one "Name: value" after another.
func (h *headerFlags) String() string {
	if h == nil {
		return ""
	}
	var parts []string
	for k, vs := range h.header {
		for _, v := range vs {
			parts = append(parts, k+": "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// Set adds one "Name: value" header. A malformed one is kept in bad,
// without s, for the command to report after parsing; Set returns nil.
func (h *headerFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	switch {
	case !ok:
		h.fail("no ':'")
		return nil
	case name == "":
		h.fail("no name")
		return nil
	case strings.ContainsAny(name, " \t"):
		h.fail("a name with a space")
		return nil
	}
	value = strings.TrimSpace(value)
	if http.CanonicalHeaderKey(name) == "Host" {
		h.host = value
		return nil
	}
	if h.header == nil {
		h.header = http.Header{}
	}
	h.header.Add(name, value)
	return nil
}

// fail records the first malformed -H.
func (h *headerFlags) fail(what string) {
	if h.bad == nil {
		h.bad = errors.New("-H: want 'Name: value', got " + what)
	}
}

// listFlag is a comma-separated list of words, such as job states.
type listFlag []string

// String returns the list as it is given.
func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set replaces the list with the comma-separated words of s; empty words
// are dropped.
func (l *listFlag) Set(s string) error {
	*l = nil
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			*l = append(*l, w)
		}
	}
	return nil
}

// parseInterspersed parses args with fs, allowing flags after positional
// arguments too ("heed get URL --deadline 5s"), and returns the positional
// ones. "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at "--" or at the first non-flag argument; the
		// former is dropped from fs.Args, so look at what preceded it.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
