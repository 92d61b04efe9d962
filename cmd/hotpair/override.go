package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor"
)

const overrideSynopsis = `override set --service S --side primary|standby --reason TEXT (--for DURATION | --until RFC3339) --zk HOST:PORT [--auth user:pass]
       hotpair override clear --service S [--reason TEXT] --zk HOST:PORT [--auth user:pass]

An override pins a service to a side until it expires or is cleared; it beats
every health rule. The monitor leader applies it at once.`

// runOverride is "hotpair override set|clear".
func runOverride(ctx context.Context, a *app, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "set":
			return runOverrideSet(ctx, a, args[1:])
		case "clear":
			return runOverrideClear(ctx, a, args[1:])
		}
	}
	fs := newFlags(a, "override", overrideSynopsis)
	if code, done := parse(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		return usageError(fs, a.stderr, "set or clear?")
	}
	return usageError(fs, a.stderr, "unknown subcommand %q (set or clear)", fs.Arg(0))
}

func runOverrideSet(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "override set", overrideSynopsis)
	zf := addOpZKFlags(fs)
	service := fs.String("service", "", "service to pin: budget, pacer or bidder (required)")
	side := fs.String("side", "", "side to pin it to: primary or standby (required)")
	reason := fs.String("reason", "", "why, for the people on call after you (required)")
	dur := fs.Duration("for", 0, "how long the override lasts (this or --until is required; at most 168h)")
	until := fs.String("until", "", "when the override ends, RFC 3339 (this or --for is required)")
	by := fs.String("by", "", "who sets it (default: the --auth user, else $USER)")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	problem, creds := zf.check()
	if problem != "" {
		return usageError(fs, a.stderr, "%s", problem)
	}
	now := time.Now()
	var end time.Time
	switch {
	case *service == "" || *side == "":
		return usageError(fs, a.stderr, "--service and --side are required")
	case *reason == "":
		return usageError(fs, a.stderr, "--reason is required")
	case (*dur == 0) == (*until == ""):
		return usageError(fs, a.stderr, "give exactly one of --for and --until: an override must expire")
	case *dur != 0:
		end = now.Add(*dur)
	default:
		t, err := time.Parse(time.RFC3339, *until)
		if err != nil {
			return usageError(fs, a.stderr, "--until %q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", *until)
		}
		end = t
	}
	req := monitor.OverrideRequest{Service: *service, Side: *side, Until: end, Reason: *reason, By: operatorName(*by, creds)}
	if err := req.Validate(now); err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	sess, ok := zf.session(ctx, a, "override set", creds)
	if !ok {
		return 1
	}
	defer sess.Close()
	conn := sess.Conn()
	paths := contract.NewPaths(*zf.root)
	o, err := monitor.SetOverride(conn, paths, monitor.OperatorPolicy(creds), req, now)
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair override set: %v\n", err)
		return 1
	}
	fmt.Fprintf(a.stdout, "override set: %s pinned to %s until %s (%s from now), by %s: %s\n",
		req.Service, o.Side, o.Until.Format(time.RFC3339), o.Until.Sub(now).Round(time.Second), o.By, o.Reason)
	noteMonitor(a.stdout, conn, paths)
	return 0
}

func runOverrideClear(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "override clear", overrideSynopsis)
	zf := addOpZKFlags(fs)
	service := fs.String("service", "", "service whose override ends now (required)")
	reason := fs.String("reason", "", "why it ends (kept with the ended override)")
	by := fs.String("by", "", "who clears it (default: the --auth user, else $USER)")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	problem, creds := zf.check()
	if problem != "" {
		return usageError(fs, a.stderr, "%s", problem)
	}
	if contract.ServiceByName(*service) == 0 {
		return usageError(fs, a.stderr, "--service is required: one of %s", strings.Join(contract.ServiceNames(), ", "))
	}
	sess, ok := zf.session(ctx, a, "override clear", creds)
	if !ok {
		return 1
	}
	defer sess.Close()
	conn := sess.Conn()
	paths := contract.NewPaths(*zf.root)
	o, err := monitor.ClearOverride(conn, paths, contract.ServiceByName(*service), operatorName(*by, creds), *reason, time.Now())
	if errors.Is(err, monitor.ErrNoOverride) {
		fmt.Fprintf(a.stdout, "no override in force for %s: nothing to clear\n", *service)
		return 0
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair override clear: %v\n", err)
		return 1
	}
	fmt.Fprintf(a.stdout, "override of %s cleared by %s; the health rules decide again (%s)\n", *service, o.By, o.Reason)
	noteMonitor(a.stdout, conn, paths)
	return 0
}

// noteMonitor warns when no monitor runs to apply the change.
func noteMonitor(w io.Writer, conn *zk.Conn, paths contract.Paths) {
	st, err := monitor.ReadStatus(conn, paths, nil, time.Now())
	switch {
	case err != nil:
		fmt.Fprintf(w, "(could not check for a running monitor: %v)\n", err)
	case st.Leader == nil:
		fmt.Fprintln(w, "WARNING: no monitor replica is running: nothing applies this until one starts")
	default:
		fmt.Fprintf(w, "the monitor leader %s applies it now; check with: hotpair status\n", st.Leader.ID)
	}
}
