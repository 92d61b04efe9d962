package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/internal/yamlconf"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/pipeline"
)

// configKind is one kind of config file `hotpair config check` knows. A new
// kind (the dark canary's) is one more entry in configKinds.
type configKind struct {
	name string
	// keys are top-level keys that only this kind has: a file with any of
	// them is taken for this kind unless --kind says otherwise.
	keys []string
	// check loads the file as its daemon does at start and returns every
	// problem (errors.Join of several is reported one per line).
	check func(path string) error
	// acls returns the Kafka ACLs the daemon needs, per cluster (`config
	// acls`); every kind has them.
	acls func(path string, darkTargets []string) ([]aclSet, error)
}

var configKinds = []configKind{
	{name: "pipeline", keys: []string{"side", "brokers", "stages", "topics", "storage", "aggregator", "pacer", "bidder", "health", "role", "instance", "build"},
		check: func(path string) error {
			c, err := pipeline.LoadConfig(path)
			if err != nil {
				return err
			}
			if err := c.Validate(); err != nil {
				return err
			}
			_, err = c.Options() // reads the files the Kafka security block names
			return err
		},
		acls: pipelineACLs},
	{name: "monitor", keys: []string{"clusters", "services", "history", "window", "rules", "decision", "stagger", "id"},
		check: func(path string) error {
			c, err := monitor.LoadConfig(path)
			if err != nil {
				return err
			}
			_, err = monitor.New(monitor.Options{Config: c}) // reads zk.auth_file
			return err
		},
		acls: monitorACLs},
	{name: "dark-dispatch", keys: []string{"live", "targets", "group", "start"},
		check: func(path string) error {
			c, err := dispatch.LoadFileConfig(path)
			if err != nil {
				return err
			}
			_, err = c.Config() // reads zk.auth_file and the security blocks' files
			return err
		},
		acls: dispatchACLs},
	{name: "dark-compare", keys: []string{"clusters", "targets", "dark_kafka", "settle", "max_skew", "horizon", "stale", "min_points", "min_campaigns", "relative", "absolute"},
		check: func(path string) error {
			c, err := compare.LoadConfig(path)
			if err != nil {
				return err
			}
			_, err = compare.New(compare.Options{Config: c}) // reads the files the security blocks name
			return err
		},
		acls: compareACLs},
}

// checkableCommands are the command lines `config check -- COMMAND…`
// accepts: each run returns, when app.checkOnly is set, as soon as its flags
// and config are validated, without starting anything.
var checkableCommands = []checkable{
	{[]string{"pipeline"}, runPipeline},
	{[]string{"monitor"}, runMonitorDaemon},
	{[]string{"selectord"}, runSelectord},
	{[]string{"replay", "play"}, runReplayPlay},
	{[]string{"dark", "dispatch"}, runDarkDispatch},
	{[]string{"dark", "compare"}, runDarkCompare},
}

type checkable struct {
	path []string
	run  func(ctx context.Context, a *app, args []string) int
}

func runConfig(ctx context.Context, a *app, args []string) int {
	switch {
	case len(args) > 0 && args[0] == "check":
		return configCheck(ctx, a, args[1:])
	case len(args) > 0 && args[0] == "acls":
		return configACLs(a, args[1:])
	}
	fmt.Fprintln(a.stderr, "usage: hotpair config check [--kind KIND] FILE... [-- COMMAND [ARGS...]]\n"+
		"       hotpair config acls [--kind KIND] [--principal User:NAME] [--format kafka-acls|strimzi] [--dark-target NAME]... FILE...")
	return 2
}

// kindNames are the names of configKinds.
func kindNames() []string {
	kinds := make([]string, len(configKinds))
	for i, k := range configKinds {
		kinds[i] = k.name
	}
	return kinds
}

// configCheck is "hotpair config check": every file (and the command line
// after --) checked as the daemons check them at start; every problem is
// printed. Exit 0: all good; 1: a problem; 2: usage.
func configCheck(ctx context.Context, a *app, args []string) int {
	kinds := kindNames()
	fs := newFlags(a, "config check", "config check [--kind "+strings.Join(kinds, "|")+"] FILE... [-- COMMAND [ARGS...]]\n\n"+
		"Checks config files as the daemons load them at start (the kind is told from the file's keys unless\n"+
		"--kind is given), and a hotpair command line after -- as that command parses it, without running it:\n"+
		"  hotpair config check monitor.yml -- pipeline --config pipeline.yml --instance p-0")
	kind := fs.String("kind", "", "the kind of every FILE: "+strings.Join(kinds, ", ")+" (default: told from its keys)")
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
		if len(command) == 0 {
			return usageError(fs, a.stderr, "no command after --")
		}
	}
	files, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	if len(files) == 0 && command == nil {
		return usageError(fs, a.stderr, "name at least one FILE or a command after --")
	}
	if *kind != "" && !slices.Contains(kinds, *kind) {
		return usageError(fs, a.stderr, "--kind %q is not one of %s", *kind, strings.Join(kinds, ", "))
	}
	bad := 0
	for _, f := range files {
		k, err := kindOf(f, *kind)
		if err == nil {
			err = k.check(f)
		}
		name := "?"
		if k != nil {
			name = k.name
		}
		bad += report(a, name, f, err)
	}
	if command != nil {
		bad += report(a, "command", "hotpair "+strings.Join(command, " "), checkCommand(ctx, command))
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// report prints one checked item and every problem it has; it returns 1
// when it has some.
func report(a *app, kind, what string, err error) int {
	if err == nil {
		fmt.Fprintf(a.stdout, "ok   %-8s %s\n", kind, what)
		return 0
	}
	fmt.Fprintf(a.stdout, "BAD  %-8s %s\n", kind, what)
	for _, p := range problems(err) {
		fmt.Fprintf(a.stdout, "       %s\n", p)
	}
	return 1
}

// problems splits joined errors (and multi-line messages) into lines.
func problems(err error) []string {
	var joined interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	var out []string
	for _, e := range errs {
		for _, line := range strings.Split(strings.TrimSpace(e.Error()), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

// kindOf returns the kind of the file: forced, or told from its top-level keys.
func kindOf(path, forced string) (*configKind, error) {
	if forced != "" {
		i := slices.IndexFunc(configKinds, func(k configKind) bool { return k.name == forced })
		return &configKinds[i], nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var top map[string]any
	if err := yamlconf.Decode(b, &top); err != nil {
		return nil, fmt.Errorf("not YAML: %v", err)
	}
	// The kind with the most of its keys in the file; a tie is ambiguous
	// (the monitor and the dark comparator both have clusters).
	var found []*configKind
	most := 0
	for i, k := range configKinds {
		n := 0
		for _, key := range k.keys {
			if _, ok := top[key]; ok {
				n++
			}
		}
		switch {
		case n == 0 || n < most:
		case n > most:
			found, most = []*configKind{&configKinds[i]}, n
		default:
			found = append(found, &configKinds[i])
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("cannot tell which config this is from its keys: pass --kind")
	}
	return nil, fmt.Errorf("has keys of %s and of %s configs: pass --kind", found[0].name, found[1].name)
}

// checkCommand runs a checkable command's own flag and config parsing with
// app.checkOnly set; what it would have printed is the problem.
func checkCommand(ctx context.Context, command []string) error {
	i := slices.IndexFunc(checkableCommands, func(c checkable) bool {
		return len(command) >= len(c.path) && slices.Equal(command[:len(c.path)], c.path)
	})
	if i < 0 {
		var names []string
		for _, c := range checkableCommands {
			names = append(names, strings.Join(c.path, " "))
		}
		return fmt.Errorf("only these commands can be checked: %s", strings.Join(names, ", "))
	}
	var out bytes.Buffer
	c := checkableCommands[i]
	sub := &app{stdout: &out, stderr: &out, logger: discardLogger(), checkOnly: true}
	if code := c.run(ctx, sub, command[len(c.path):]); code != 0 {
		msg, _, _ := strings.Cut(out.String(), "\nusage: hotpair") // the problem, not the flag list
		return errors.New(strings.TrimSpace(msg))
	}
	return nil
}
