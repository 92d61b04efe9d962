package main

import (
	"context"
	"fmt"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/internal/kafka"
)

// runDarkDispatch is "hotpair dark dispatch --config FILE": the dispatcher
// daemon, serving /metrics and /healthz.
func runDarkDispatch(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "dark dispatch", "dark dispatch --config FILE [--http HOST:PORT] [--group-instance-id ID]")
	path := fs.String("config", "", "YAML config (docs/dark.md, Dispatcher) (required)")
	httpAddr := fs.String("http", "", "serve /metrics and /healthz here (overrides http.listen; off serves nothing)")
	instanceID := fs.String("group-instance-id", "", "this replica's static group membership, e.g. $(POD_NAME) of a StatefulSet (overrides group_instance_id)")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	if *path == "" {
		return usageError(fs, a.stderr, "--config is required")
	}
	fc, err := dispatch.LoadFileConfig(*path)
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark dispatch: %v\n", err)
		return 1
	}
	if *httpAddr != "" || *instanceID != "" {
		if *httpAddr != "" {
			fc.HTTP.Listen = *httpAddr
		}
		if *instanceID != "" {
			fc.GroupInstanceID = *instanceID
		}
		if err := fc.Validate(); err != nil {
			return usageError(fs, a.stderr, "--http, --group-instance-id: %v", err)
		}
	}
	cfg, err := fc.Config()
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark dispatch: %v\n", err)
		return 1
	}
	reg := newRegistry()
	d, err := dispatch.New(cfg, dispatch.WithLogger(a.logger), dispatch.WithRegisterer(reg))
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark dispatch: %v\n", err)
		return 1
	}
	if a.checkOnly {
		return 0
	}
	if !checkKafka(ctx, a, "dark dispatch", kafka.Cluster{Name: cfg.Side.String(), Brokers: cfg.LiveBrokers, Auth: cfg.LiveAuth}) {
		return 1
	}
	if fc.HTTP.Listen != "off" {
		addr, err := serveHTTP(ctx, a.logger, fc.HTTP.Listen, metricsMux(reg))
		if err != nil {
			fmt.Fprintf(a.stderr, "hotpair dark dispatch: http.listen: %v\n", err)
			return 1
		}
		fmt.Fprintf(a.stdout, "dark dispatch of the %s side: /metrics and /healthz on http://%s\n", cfg.Side, addr)
	}
	if err := d.Run(ctx); err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark dispatch: %v\n", err)
		return 1
	}
	return 0
}
