package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor"
)

// opZKFlags are the ZooKeeper flags of the operator tools (status, override).
type opZKFlags struct {
	servers listFlag
	root    *string
	auth    *string
	timeout *time.Duration
}

func addOpZKFlags(fs *flag.FlagSet) *opZKFlags {
	f := &opZKFlags{}
	fs.Var(&f.servers, "zk", "ZooKeeper servers, host:port, comma-separated or repeated (required)")
	f.root = fs.String("zk-root", contract.DefaultRoot, "root path of hotpair's znodes")
	f.auth = fs.String("auth", "", "digest identity user:password (the operator identity, to change overrides and dark targets when ACLs are on)")
	f.timeout = fs.Duration("timeout", 10*time.Second, "give up reaching ZooKeeper after this long")
	return f
}

// check validates the flags; it returns a usage problem or "".
func (f *opZKFlags) check() (string, *contract.Credentials) {
	if len(f.servers) == 0 {
		return "--zk is required", nil
	}
	creds, err := contract.ParseCredentials(*f.auth)
	if err != nil {
		return "--auth: " + err.Error(), nil
	}
	if *f.timeout <= 0 {
		return "--timeout must be positive", nil
	}
	return "", creds
}

// connect opens a session and waits until it is usable, at most --timeout.
func (f *opZKFlags) connect(ctx context.Context, a *app, creds *contract.Credentials) (*zkutil.Session, error) {
	sess, err := zkutil.Open(zkutil.Options{Servers: f.servers, SessionTimeout: max(*f.timeout, 4*time.Second),
		Auth: creds, Logger: a.logger})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	defer cancel()
	if err := sess.WaitUsable(ctx); err != nil {
		sess.Close()
		return nil, fmt.Errorf("cannot reach ZooKeeper at %s within %s: %w", strings.Join(f.servers, ","), *f.timeout, err)
	}
	return sess, nil
}

// session connects for cmd ("override set"…); when it cannot, it says why
// and the command exits 1.
func (f *opZKFlags) session(ctx context.Context, a *app, cmd string, creds *contract.Credentials) (*zkutil.Session, bool) {
	sess, err := f.connect(ctx, a, creds)
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair %s: %v\n", cmd, err)
		return nil, false
	}
	return sess, true
}

// open checks the flags and connects for cmd: on a usage problem it prints
// the usage (exit 2), when ZooKeeper cannot be reached it says why (exit 1).
func (f *opZKFlags) open(ctx context.Context, a *app, fs *flag.FlagSet, cmd string) (*zkutil.Session, int, bool) {
	problem, creds := f.check()
	if problem != "" {
		return nil, usageError(fs, a.stderr, "%s", problem), false
	}
	sess, ok := f.session(ctx, a, cmd, creds)
	if !ok {
		return nil, 1, false
	}
	return sess, 0, true
}

// runStatus is "hotpair status": read straight from ZooKeeper, so it works
// while every monitor is down.
func runStatus(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "status", "status --zk HOST:PORT[,...] [--zk-root /hotpair] [--services budget,pacer,bidder] [--json]")
	zf := addOpZKFlags(fs)
	var services listFlag
	fs.Var(&services, "services", "services to show, comma-separated (default budget,pacer,bidder)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	problem, creds := zf.check()
	if problem != "" {
		return usageError(fs, a.stderr, "%s", problem)
	}
	if len(services) == 0 {
		services = contract.ServiceNames()
	}
	var svcs []contract.Service
	for _, s := range services {
		svc, err := contract.ParseService(s)
		if err != nil {
			return usageError(fs, a.stderr, "--services: %q is not one of %s", s, strings.Join(contract.ServiceNames(), ", "))
		}
		svcs = append(svcs, svc)
	}
	sess, ok := zf.session(ctx, a, "status", creds)
	if !ok {
		return 1
	}
	defer sess.Close()
	st, err := monitor.ReadStatus(sess.Conn(), contract.NewPaths(*zf.root), svcs, time.Now())
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair status: %v\n", err)
		return 1
	}
	if *asJSON {
		err = printJSON(a.stdout, st)
	} else {
		err = monitor.WriteStatusText(a.stdout, st)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair status: %v\n", err)
		return 1
	}
	return 0
}

// operatorName is who an override is recorded as set by.
func operatorName(by string, creds *contract.Credentials) string {
	switch {
	case by != "":
		return by
	case creds != nil:
		return creds.User
	case os.Getenv("USER") != "":
		return os.Getenv("USER")
	}
	return "unknown"
}
