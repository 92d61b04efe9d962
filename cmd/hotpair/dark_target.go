package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor"
)

const darkSetSynopsis = `dark set NAME --brokers HOST:PORT[,...] [--source primary|standby] [--strategy relative|identical|constant]
           [--multiplier M] [--rate R] [--until 2h|RFC3339] [--disable] --zk HOST:PORT [--auth user:pass]

A dark target is a candidate build's Kafka cluster (or a prefix on a shared
one). The dispatchers of the source side copy its input there under the
prefix dark.NAME., within a second of this change.`

// nameFirst parses "NAME --flags…" as well as "--flags… NAME": it returns
// the one positional argument, or a usage error.
func nameFirst(a *app, fs *flag.FlagSet, args []string) (string, int, bool) {
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if code, done := parse(fs, args); done {
		return "", code, true
	}
	switch {
	case name == "" && fs.NArg() == 1:
		name = fs.Arg(0)
	case fs.NArg() > 0:
		return "", usageError(fs, a.stderr, "unexpected argument %q", fs.Arg(0)), true
	}
	if name == "" {
		return "", usageError(fs, a.stderr, "the target's NAME is required"), true
	}
	if !contract.ValidDarkName(name) {
		return "", usageError(fs, a.stderr, "NAME %q: use lower-case letters, digits and dashes (at most 40)", name), true
	}
	return name, 0, false
}

// untilFlag reads --until as a duration from now or an RFC 3339 time.
func untilFlag(s string, now time.Time) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return nil, fmt.Errorf("--until %s must be in the future", s)
		}
		t := now.Add(d).UTC()
		return &t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, fmt.Errorf("--until %q is neither a duration (2h) nor an RFC 3339 time", s)
	}
	if !t.After(now) {
		return nil, fmt.Errorf("--until %s is not in the future", s)
	}
	t = t.UTC()
	return &t, nil
}

func runDarkSet(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "dark set", darkSetSynopsis)
	zf := addOpZKFlags(fs)
	var brokers listFlag
	fs.Var(&brokers, "brokers", "the dark target's Kafka bootstrap addresses, comma-separated or repeated (required)")
	source := fs.String("source", "primary", "the live side whose input is copied")
	strategy := fs.String("strategy", "relative", "relative (multiplier × dark/live instances), identical (multiplier) or constant (--rate records/s)")
	multiplier := fs.Float64("multiplier", 0, "sampled fraction of campaigns (relative: per dark/live instance ratio); above 1 clones campaigns")
	rate := fs.Float64("rate", 0, "records per second of a constant target")
	until := fs.String("until", "", "stop by itself after this long (2h) or at this RFC 3339 time")
	disable := fs.Bool("disable", false, "write the target disabled: the dispatchers send it nothing")
	by := fs.String("by", "", "who sets it (default: the --auth user, else $USER)")
	name, code, done := nameFirst(a, fs, args)
	if done {
		return code
	}
	problem, creds := zf.check()
	if problem != "" {
		return usageError(fs, a.stderr, "%s", problem)
	}
	now := time.Now().UTC()
	end, err := untilFlag(*until, now)
	if err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	side, err := contract.ParseSide(*source)
	if err != nil {
		return usageError(fs, a.stderr, "--source: %v", err)
	}
	d := contract.DarkTarget{V: contract.ZNodeVersion, Name: name, Source: side, Strategy: contract.DarkStrategy(*strategy),
		Multiplier: *multiplier, Rate: *rate, Brokers: brokers, Prefix: contract.DarkPrefix(name), Enabled: !*disable,
		Until: end, UpdatedBy: operatorName(*by, creds), UpdatedAt: now}
	if err := d.Validate(); err != nil {
		return usageError(fs, a.stderr, "%s", flagWords(err))
	}
	sess, ok := zf.session(ctx, a, "dark set", creds)
	if !ok {
		return 1
	}
	defer sess.Close()
	if err := dispatch.SetTarget(sess.Conn(), contract.NewPaths(*zf.root), monitor.OperatorPolicy(creds), d); err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark set: %v\n", err)
		return 1
	}
	fmt.Fprintf(a.stdout, "dark target %s set by %s: %s\n", name, d.UpdatedBy, describeTarget(d))
	fmt.Fprintln(a.stdout, "running dispatchers apply it within a second; check with: hotpair dark status")
	return 0
}

// flagWords rewrites a document's field names in a validation error as the
// flags that set them.
func flagWords(err error) string {
	return strings.NewReplacer("multiplier=", "--multiplier ", "rate=", "--rate ", "strategy=", "--strategy ",
		"brokers is empty", "--brokers is required", "source=", "--source ").Replace(err.Error())
}

func runDarkClear(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "dark clear", "dark clear NAME --zk HOST:PORT [--auth user:pass]")
	zf := addOpZKFlags(fs)
	name, code, done := nameFirst(a, fs, args)
	if done {
		return code
	}
	sess, code, ok := zf.open(ctx, a, fs, "dark clear")
	if !ok {
		return code
	}
	defer sess.Close()
	err := dispatch.ClearTarget(sess.Conn(), contract.NewPaths(*zf.root), name)
	if errors.Is(err, dispatch.ErrNoTarget) {
		fmt.Fprintf(a.stdout, "no dark target %s: nothing to clear\n", name)
		return 0
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark clear: %v\n", err)
		return 1
	}
	fmt.Fprintf(a.stdout, "dark target %s cleared: the dispatchers stop feeding it within a second\n", name)
	return 0
}

func runDarkStatus(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "dark status", "dark status --zk HOST:PORT [--zk-root /hotpair] [--json]")
	zf := addOpZKFlags(fs)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	sess, code, ok := zf.open(ctx, a, fs, "dark status")
	if !ok {
		return code
	}
	defer sess.Close()
	st, err := dispatch.ReadStatus(sess.Conn(), contract.NewPaths(*zf.root), time.Now())
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark status: %v\n", err)
		return 1
	}
	if *asJSON {
		err = printJSON(a.stdout, map[string]any{"targets": st})
	} else {
		err = writeDarkStatus(a.stdout, st)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark status: %v\n", err)
		return 1
	}
	return 0
}

// describeTarget is one line about a target document.
func describeTarget(d contract.DarkTarget) string {
	var b strings.Builder
	switch d.Strategy {
	case contract.DarkConstant:
		fmt.Fprintf(&b, "constant %g records/s", d.Rate)
		if d.Multiplier > 0 {
			fmt.Fprintf(&b, " of multiplier %g", d.Multiplier)
		}
	default:
		fmt.Fprintf(&b, "%s × %g", d.Strategy, d.Multiplier)
	}
	fmt.Fprintf(&b, " of %s's input to %s under %s", d.Source, strings.Join(d.Brokers, ","), d.Prefix)
	if !d.Enabled {
		b.WriteString(", DISABLED")
	}
	if d.Until != nil {
		fmt.Fprintf(&b, ", until %s", d.Until.Format(time.RFC3339))
	}
	return b.String()
}

func writeDarkStatus(w io.Writer, st []dispatch.TargetStatus) error {
	if len(st) == 0 {
		_, err := fmt.Fprintln(w, "no dark targets (set one with: hotpair dark set NAME --brokers … --multiplier …)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tSTATE\tFRACTION\tINSTANCES (live/dark)\tDOCUMENT")
	for _, t := range st {
		state := "off"
		switch {
		case t.Paused != "":
			state = "PAUSED: " + string(t.Paused)
		case t.Sending:
			state = "sending"
		}
		counts, docLine := "-", "ERROR: "+t.Error
		if t.Doc != nil {
			docLine = describeTarget(*t.Doc)
			if t.Doc.Strategy == contract.DarkRelative {
				counts = fmt.Sprintf("%d/%d", t.LiveInstances, t.DarkInstances)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%g\t%s\t%s\n", t.Name, state, t.Fraction, counts, docLine)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range st {
		if t.Detail != "" {
			fmt.Fprintf(w, "%s: %s\n", t.Name, t.Detail)
		}
	}
	return nil
}
