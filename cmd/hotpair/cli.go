package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(a *app, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "usage: hotpair %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args and returns (exit code, done). done is true when the
// command must return the code now: 0 after -h, 2 after a usage error.
func parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("inspect FILE --json"; flag stops at the first positional
// one), and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var pos []string
	for {
		if code, done := parse(fs, args); done {
			return nil, code, true
		}
		if fs.NArg() == 0 {
			return pos, 0, false
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// parseNoArgs is parse for a command that takes flags only: a positional
// argument is a usage error.
func parseNoArgs(a *app, fs *flag.FlagSet, args []string) (int, bool) {
	if code, done := parse(fs, args); done {
		return code, true
	}
	if fs.NArg() > 0 {
		return usageError(fs, a.stderr, "unexpected argument %q", fs.Arg(0)), true
	}
	return 0, false
}

// usageError prints msg and the flag set's usage and returns exit code 2.
func usageError(fs *flag.FlagSet, w io.Writer, format string, args ...any) int {
	fmt.Fprintf(w, "hotpair %s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return 2
}

// listFlag is a repeatable or comma-separated string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// printJSON prints v as indented JSON: the --json output of every command.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runSubcommand runs the subcommand of command ("replay", "bench") named by
// args[0]; without one, or with an unknown one, it prints the subcommands
// and where doc has the details, and returns 2 (0 for -h).
func runSubcommand(ctx context.Context, a *app, command, doc string, subs []command, args []string) int {
	if len(args) > 0 {
		for _, c := range subs {
			if c.name == args[0] {
				return c.run(ctx, a, args[1:])
			}
		}
	}
	w := a.stderr
	help := len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")
	if len(args) > 0 && !help {
		fmt.Fprintf(w, "hotpair %s: unknown subcommand %q\n\n", command, args[0])
	}
	fmt.Fprintf(w, "usage: hotpair %s SUBCOMMAND [flags]\n\nsubcommands:\n", command)
	for _, c := range subs {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'hotpair %s SUBCOMMAND -h' for its flags; %s has the details.\n", command, doc)
	if help {
		return 0
	}
	return 2
}
