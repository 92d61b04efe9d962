package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/sandbox"
)

func runSandbox(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "sandbox", "sandbox [--scenario NAME [--json]] [flags]")
	zk := fs.String("zk", "", "use this ZooKeeper (host:port) instead of starting the local Apache ZooKeeper server")
	zkRoot := fs.String("zk-root", "/hotpair", "root of hotpair's znodes")
	httpAddr := fs.String("http", "127.0.0.1:9400", "address of the on-call page, the fault API and /metrics")
	addrFile := fs.String("addr-file", "", "once ready, write the addresses (and the operator credentials) as JSON to this file")
	campaigns := fs.Int("campaigns", 40, "simulated campaigns")
	qps := fs.Float64("qps", 300, "simulated ad requests per second at the day curve's mean")
	day := fs.Duration("day", 10*time.Minute, "how long one simulated day of the traffic curve lasts (time runs faster)")
	insecure := fs.Bool("insecure", false, "turn security off: ZooKeeper ACLs, and TLS and SASL on both Kafka clusters")
	instances := fs.Int("instances", 1, "run each side's pipeline as this many instances sharing its partitions")
	partitions := fs.Int("partitions", 4, "partitions of every topic")
	window := fs.Duration("window", sandbox.DemoTiming().Window, "the monitor's evaluation window (the aggregator's window, "+sandbox.DemoTiming().AggWindow.String()+", shrinks to a quarter of it if it is shorter than 4 of them)")
	grace := fs.Duration("grace", sandbox.DemoTiming().Grace, "how long the primary must stay healthy before traffic returns to it")
	scenario := fs.String("scenario", "", "run this scripted scenario to the end and exit 0 only if it held: "+strings.Join(sandbox.ScenarioNames(), ", "))
	asJSON := fs.Bool("json", false, "with --scenario: print the timeline as one JSON object")
	dark := fs.Bool("dark", false, "also run a dark target: a third Kafka cluster and a dark pipeline (role dark, name "+sandbox.DarkName+") as a separate process")
	darkBinary := fs.String("dark-binary", "", "with --dark: the hotpair binary of the dark pipeline, a candidate build (default: this binary)")
	darkMultiplier := fs.Float64("dark-multiplier", 0.25, "with --dark: the relative multiplier of the dark copy of live traffic")
	darkDispatchers := fs.Int("dark-dispatchers", 1, "with --dark: dispatcher replicas sharing the copy of the primary's input (fault crash-dispatcher-replica kills one)")
	saveHistory := fs.String("save-history", "", "with --scenario: at its end, write the health samples of both clusters to this JSON-lines file for hotpair monitor simulate")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	if (*asJSON || *saveHistory != "") && *scenario == "" {
		return usageError(fs, a.stderr, "--json and --save-history need --scenario")
	}
	if *campaigns < 2 || *qps <= 0 || *day < time.Minute {
		return usageError(fs, a.stderr, "--campaigns must be at least 2, --qps positive, --day at least 1m")
	}
	if (*darkBinary != "" || *darkMultiplier != 0.25) && !*dark {
		return usageError(fs, a.stderr, "--dark-binary and --dark-multiplier need --dark")
	}
	if *darkDispatchers < 1 || *darkDispatchers > 8 {
		return usageError(fs, a.stderr, "--dark-dispatchers must be between 1 and 8")
	}
	if *darkMultiplier <= 0 || *darkMultiplier > 10 {
		return usageError(fs, a.stderr, "--dark-multiplier must be in (0, 10]")
	}
	if *instances < 1 || *instances > 16 || *partitions < 1 || *partitions > 64 {
		return usageError(fs, a.stderr, "--instances must be between 1 and 16, --partitions between 1 and 64")
	}
	opts := sandbox.Options{ZK: *zk, ZKRoot: *zkRoot, HTTP: *httpAddr, Campaigns: *campaigns, QPS: *qps, Day: *day,
		Insecure: *insecure, SaveHistory: *saveHistory, Instances: *instances, Partitions: int32(*partitions), Logger: a.logger,
		Dark: *dark, DarkBinary: *darkBinary, DarkMultiplier: *darkMultiplier, DarkDispatchers: *darkDispatchers}
	if *scenario != "" {
		return runScenario(ctx, a, fs, *scenario, opts, *asJSON, *addrFile)
	}
	opts.Timing = sandbox.DemoTiming()
	opts.Timing.Window, opts.Timing.Grace = *window, *grace
	opts.Timing.AggWindow = min(opts.Timing.AggWindow, *window/4)
	sb, err := sandbox.New(opts)
	if err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	err = sb.Run(ctx, func(addr sandbox.Addresses) {
		writeAddrFile(a, *addrFile, addr) // before the banner: whoever waits for it finds the file
		printAddresses(a, addr)
	})
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair sandbox:", err)
		return 1
	}
	return 0
}

func printAddresses(a *app, addr sandbox.Addresses) {
	w := a.stdout
	fmt.Fprintf(w, "hotpair sandbox is up.\n\n")
	fmt.Fprintf(w, "  on-call page     http://%s/\n", addr.HTTP)
	fmt.Fprintf(w, "  primary brokers  %s\n", strings.Join(addr.PrimaryBrokers, ","))
	fmt.Fprintf(w, "  standby brokers  %s\n", strings.Join(addr.StandbyBrokers, ","))
	if len(addr.DarkBrokers) > 0 {
		fmt.Fprintf(w, "  dark brokers     %s   (dark target %s: topics %s*)\n", strings.Join(addr.DarkBrokers, ","), sandbox.DarkName, contract.DarkPrefix(sandbox.DarkName))
	}
	fmt.Fprintf(w, "  ZooKeeper        %s (root %s)\n", addr.ZK, addr.ZKRoot)
	if addr.OperatorAuth != "" {
		fmt.Fprintf(w, "  operator auth    %s   (for hotpair override --auth)\n", addr.OperatorAuth)
	}
	if addr.KafkaSecurityProtocol != "" {
		fmt.Fprintf(w, "  Kafka            %s, SASL %s user %s password %s\n", addr.KafkaSecurityProtocol,
			addr.KafkaSASLMechanism, addr.KafkaSASLUsername, addr.KafkaSASLPassword)
		fmt.Fprintf(w, "  Kafka CA         %s\n", addr.KafkaCAFile)
	}
	fmt.Fprintf(w, "\nTry:\n")
	fmt.Fprintf(w, "  hotpair fault inject --http %s stall --service budget --side primary\n", addr.HTTP)
	fmt.Fprintf(w, "  hotpair status --zk %s --zk-root %s\n", addr.ZK, addr.ZKRoot)
	fmt.Fprintf(w, "  hotpair fault heal --http %s --all\n", addr.HTTP)
	if len(addr.DarkBrokers) > 0 {
		fmt.Fprintf(w, "  hotpair dark status --zk %s --zk-root %s\n", addr.ZK, addr.ZKRoot)
	}
	if addr.KafkaSecurityProtocol != "" {
		fmt.Fprintf(w, "  kcat -X security.protocol=%s -X sasl.mechanisms=%s -X sasl.username=%s -X sasl.password=%s -X ssl.ca.location=%s -b %s -L\n",
			addr.KafkaSecurityProtocol, addr.KafkaSASLMechanism, addr.KafkaSASLUsername, addr.KafkaSASLPassword,
			addr.KafkaCAFile, strings.Join(addr.PrimaryBrokers, ","))
	}
	fmt.Fprintf(w, "\nCtrl-C stops everything.\n")
}

func runScenario(ctx context.Context, a *app, fs *flag.FlagSet, name string, opts sandbox.Options, asJSON bool, addrFile string) int {
	if !sandbox.HasScenario(name) {
		fmt.Fprintf(a.stderr, "hotpair sandbox: no scenario %q; scenarios: %s\n\n", name, strings.Join(sandbox.ScenarioNames(), ", "))
		fs.Usage()
		return 2
	}
	if opts.HTTP == "127.0.0.1:9400" {
		opts.HTTP = "127.0.0.1:0" // a scenario must not need a fixed port
	}
	var progress func(sandbox.Event, time.Time)
	if !asJSON {
		progress = func(e sandbox.Event, start time.Time) { fmt.Fprintln(a.stdout, e.String(start)) }
	}
	res, err := sandbox.RunScenario(ctx, name, opts, progress, func(addr sandbox.Addresses) { writeAddrFile(a, addrFile, addr) })
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair sandbox:", err)
		return 1
	}
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(a.stdout, string(b))
	} else {
		fmt.Fprintln(a.stdout)
		for _, c := range res.Checks {
			mark := "PASS"
			if !c.Passed {
				mark = "FAIL"
			}
			fmt.Fprintf(a.stdout, "%s  %s: %s\n", mark, c.Name, c.Detail)
		}
		verdict := "held"
		if !res.Passed {
			verdict = "did NOT hold"
		}
		fmt.Fprintf(a.stdout, "\nscenario %s %s (%s)\n", name, verdict, res.Duration)
		if len(res.Simulate) > 0 {
			fmt.Fprintf(a.stdout, "replay its decisions: hotpair %s\n", strings.Join(res.Simulate, " "))
		}
	}
	if !res.Passed {
		return 1
	}
	return 0
}

func writeAddrFile(a *app, path string, addr sandbox.Addresses) {
	if path == "" {
		return
	}
	b, _ := json.MarshalIndent(addr, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		fmt.Fprintln(a.stderr, "hotpair sandbox: --addr-file:", err)
	}
}
