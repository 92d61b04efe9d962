package main

import (
	"context"
	"fmt"

	"github.com/hotpair/hotpair/monitor"
)

// runMonitor is "hotpair monitor --config FILE" (the daemon) and dispatches
// "hotpair monitor simulate".
func runMonitor(ctx context.Context, a *app, args []string) int {
	if len(args) > 0 && args[0] == "simulate" {
		return runMonitorSimulate(ctx, a, args[1:])
	}
	return runMonitorDaemon(ctx, a, args)
}

// runMonitorDaemon is "hotpair monitor --config FILE".
func runMonitorDaemon(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "monitor", "monitor --config FILE\n       hotpair monitor simulate -h")
	cfgPath := fs.String("config", "", "YAML config file, see docs/monitor.md (required)")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	if *cfgPath == "" {
		return usageError(fs, a.stderr, "--config is required")
	}
	cfg, err := monitor.LoadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair monitor: %v\n", err)
		return 1
	}
	reg := newRegistry()
	m, err := monitor.New(monitor.Options{Config: cfg, Logger: a.logger, Registerer: reg, Gatherer: reg})
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair monitor: %v\n", err)
		return 1
	}
	if a.checkOnly {
		return 0
	}
	if err := m.Run(ctx); err != nil {
		fmt.Fprintf(a.stderr, "hotpair monitor: %v\n", err)
		return 1
	}
	return 0
}
