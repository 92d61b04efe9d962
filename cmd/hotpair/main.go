// Command hotpair runs hotpair's daemons and tools. Each subcommand parses its
// flags and config, then hands off to a component's Run.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// command is one subcommand. run returns the process exit code: 0 success,
// 1 failure, 2 bad usage.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) int
}

// commands lists every subcommand, in the order usage prints them.
var commands = []command{
	{"pipeline", "run one side's pipeline stages against a Kafka cluster", runPipeline},
	{"ingest", "dual-write ad events or budgets (JSON lines) to both clusters", runIngest},
	{"selectord", "serve the read side's selection over HTTP (JSON, long poll, SSE) for clients without ZooKeeper", runSelectord},
	{"monitor", "run a health monitor replica (--config FILE); 'monitor simulate' replays a health history", runMonitor},
	{"status", "show every service's active side, why, each side's verdict and overrides, from ZooKeeper", runStatus},
	{"history", "print what the monitor decided and why (switches with their evidence), from the decision record in Kafka", runHistory},
	{"override", "pin a service to a side until an expiry ('set'), or end the pin ('clear')", runOverride},
	{"gate", "the rollout gate from ZooKeeper: may a side be deployed now? (exit 0 yes, 1 no)", runGate},
	{"config", "check config files ('config check FILE...'): every problem, named; print the Kafka ACLs a daemon needs ('config acls FILE...')", runConfig},
	{"sandbox", "run the whole system in one process, inject faults, run failure scenarios", runSandbox},
	{"fault", "inject, heal and list faults in a running sandbox", runFault},
	{"zookeeper", "run a local Apache ZooKeeper server on a free loopback port (development)", runZookeeper},
	{"bench", "measure a side's pipeline end to end against bare goka and raw franz-go ('bench pipeline')", runBench},
	{"dark", "the dark canary: feed a candidate build a copy of live traffic ('dark dispatch', 'dark set|clear|status'), judge it ('dark compare', 'dark report')", runDark},
	{"replay", "record, inspect, retime and play topic traffic; verify a candidate pipeline build", runReplay},
	{"version", "print the build version", runVersion},
}

// app carries what every subcommand writes to.
type app struct {
	stdout, stderr io.Writer
	logger         *slog.Logger
	// checkOnly is set by `config check`: a command in checkableCommands
	// returns 0 once its flags and config are validated, starting nothing.
	checkOnly bool
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			a := &app{stdout: stdout, stderr: stderr,
				logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel()}))}
			return c.run(ctx, a, args[1:])
		}
	}
	fmt.Fprintf(stderr, "hotpair: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hotpair COMMAND [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'hotpair COMMAND -h' for a command's flags.")
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("HOTPAIR_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
