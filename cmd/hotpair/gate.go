package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/monitor/core"
)

// runGate is "hotpair gate": the rollout gate from ZooKeeper alone (no
// monitor needs to answer), for scripts and CI pipelines. Exit 0: the side
// may be deployed now; 1: not (or ZooKeeper could not be read); 2: usage.
func runGate(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "gate", "gate --zk HOST:PORT[,...] --side primary|standby --held DURATION [--max-age 10m] [--json]")
	zf := addOpZKFlags(fs)
	side := fs.String("side", "", "the side about to be deployed (required)")
	held := fs.Duration("held", 0, "how long the other side must have been healthy on its current build, e.g. 1h (required; use at least the monitor's stagger.period)")
	maxAge := fs.Duration("max-age", core.DefaultGateMaxAge, "refuse when a selection is older than this (no monitor leading)")
	asJSON := fs.Bool("json", false, "print the answer as JSON (the body of the monitor's /api/v1/gate)")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	problem, creds := zf.check()
	if problem != "" {
		return usageError(fs, a.stderr, "%s", problem)
	}
	s, _ := contract.ParseSide(*side)
	req := core.GateRequest{Side: s, Hold: *held, MaxAge: *maxAge}
	if err := req.Validate(); err != nil {
		if s == 0 {
			err = fmt.Errorf("side must be %s or %s, got %q", contract.Primary, contract.Standby, *side)
		}
		return usageError(fs, a.stderr, "%v", err)
	}
	sess, ok := zf.session(ctx, a, "gate", creds)
	if !ok {
		return 1
	}
	defer sess.Close()
	st, err := monitor.ReadStatus(sess.Conn(), contract.NewPaths(*zf.root), contract.Services(), time.Now())
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair gate: %v\n", err)
		return 1
	}
	regs, err := monitor.ReadRegistrations(sess.Conn(), contract.NewPaths(*zf.root))
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair gate: %v\n", err)
		return 1
	}
	ans := monitor.Gate(st, regs, req)
	if *asJSON {
		err = printJSON(a.stdout, ans)
	} else {
		err = monitor.WriteGateText(a.stdout, ans)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair gate: %v\n", err)
		return 1
	}
	if !ans.OK {
		return 1
	}
	return 0
}
