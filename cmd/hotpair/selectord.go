package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/selector"
)

// runSelectord serves the selection snapshot over HTTP (selector.Server).
func runSelectord(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "selectord",
		"selectord --zk HOST:PORT[,HOST:PORT...] [--zk-root /hotpair] [--services budget,pacer,bidder] [--default-side primary] [--http :9480]")
	var zkServers, services listFlag
	fs.Var(&zkServers, "zk", "ZooKeeper servers, host:port, comma-separated or repeated (required)")
	root := fs.String("zk-root", contract.DefaultRoot, "root path of hotpair's znodes")
	fs.Var(&services, "services", "services to watch, comma-separated (default budget,pacer,bidder)")
	defaultSide := fs.String("default-side", "primary", "side answered for a service before its selection was read: primary or standby")
	httpAddr := fs.String("http", ":9480", "HTTP listen address")
	sessionTimeout := fs.Duration("zk-session-timeout", 10*time.Second, "ZooKeeper session timeout")
	zkAuth := fs.String("zk-auth", "", "digest identity user:password, only when the selection is not world-readable")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	if len(zkServers) == 0 {
		return usageError(fs, a.stderr, "--zk is required")
	}
	svcs, err := selectordServices(services)
	if err != nil {
		return usageError(fs, a.stderr, "--services: %v", err)
	}
	side, err := contract.ParseSide(*defaultSide)
	if err != nil {
		return usageError(fs, a.stderr, "--default-side: %v", err)
	}
	if *sessionTimeout < time.Second {
		return usageError(fs, a.stderr, "--zk-session-timeout %s is below 1s", *sessionTimeout)
	}
	auth, err := contract.ParseCredentials(*zkAuth)
	if err != nil {
		return usageError(fs, a.stderr, "--zk-auth: %v", err)
	}
	if _, _, err := net.SplitHostPort(*httpAddr); err != nil {
		return usageError(fs, a.stderr, "--http %q is not host:port (e.g. :9480)", *httpAddr)
	}

	reg := newRegistry()
	sel, err := selector.New(zkServers,
		selector.WithRoot(*root), selector.WithServices(svcs...), selector.WithDefaultSide(side),
		selector.WithSessionTimeout(*sessionTimeout), selector.WithAuth(auth),
		selector.WithLogger(a.logger), selector.WithRegisterer(reg))
	if err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	srv, err := selector.NewServer(selector.ServerOptions{
		Addr: *httpAddr, Selector: sel, Gatherer: reg, Logger: a.logger,
		OnListening: func(addr net.Addr) { fmt.Fprintln(a.stdout, "selectord listening on", addr) },
	})
	if err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	if a.checkOnly {
		return 0
	}
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintln(a.stderr, "hotpair selectord:", err)
		return 1
	}
	return 0
}

// selectordServices parses --services (all services when empty).
func selectordServices(names []string) ([]contract.Service, error) {
	if len(names) == 0 {
		return contract.Services(), nil
	}
	seen := map[contract.Service]bool{}
	var out []contract.Service
	for _, n := range names {
		svc, err := contract.ParseService(n)
		if err != nil {
			return nil, err
		}
		if seen[svc] {
			return nil, fmt.Errorf("%s is listed twice", n)
		}
		seen[svc] = true
		out = append(out, svc)
	}
	return out, nil
}
