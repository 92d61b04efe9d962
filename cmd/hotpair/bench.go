package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/hotpair/hotpair/pipeline/pipebench"
)

// benchSubcommands are the subcommands of "hotpair bench".
var benchSubcommands = []command{
	{"pipeline", "measure a side's pipeline end to end against bare goka and raw franz-go on an in-process cluster", runBenchPipeline},
}

func runBench(ctx context.Context, a *app, args []string) int {
	return runSubcommand(ctx, a, "bench", "docs/pipeline.md", benchSubcommands, args)
}

// runBenchPipeline is "hotpair bench pipeline": the measurement of
// BenchmarkEndToEnd, outside the test framework.
func runBenchPipeline(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "bench pipeline", "bench pipeline [--campaigns N] [--events N] [--event-rate R] [--partitions N] [--steady-load F] [--steady-for D] [--probes N] [--kafka-secure] [--floor] [--json]")
	campaigns := fs.Int("campaigns", 10_000, "campaigns the ad events are spread over")
	events := fs.Int("events", 200_000, "ad events in the backlog (at least --campaigns)")
	eventRate := fs.Float64("event-rate", 0, "ad events per second of event time in the workload (default: --events over two minutes); with --campaigns it sets how many windows, so SpendEvents, the pipeline pays per ad event")
	partitions := fs.Int("partitions", 8, "partitions of every topic")
	steady := fs.Float64("steady-load", 0.5, "rate of the steady phase after the backlog, as a fraction of the backlog throughput")
	steadyFor := fs.Duration("steady-for", 3*time.Second, "how long the steady phase lasts")
	probes := fs.Int("probes", 100, "single ad events sent one at a time at the end, for the idle latencies")
	secure := fs.Bool("kafka-secure", false, "run the in-process cluster with TLS and SASL/SCRAM, every client through them (what security costs)")
	floor := fs.Bool("floor", false, "also measure the record floor: the pipeline's Kafka records alone on goka, none of its work, against the same bare goka (the most the pipeline's ratio could reach on this workload)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the pipeline's backlog phase to this file")
	traceFile := fs.String("trace", "", "write an execution trace of the pipeline's backlog phase to this file")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	switch {
	case *campaigns < 1:
		return usageError(fs, a.stderr, "--campaigns must be at least 1")
	case *events < *campaigns:
		return usageError(fs, a.stderr, "--events must be at least --campaigns (%d)", *campaigns)
	case *eventRate != 0 && !(*eventRate >= 1 && *eventRate <= pipebench.MaxEventRate):
		return usageError(fs, a.stderr, "--event-rate must be between 1 and %d ad events per second of event time", pipebench.MaxEventRate)
	case *partitions < 1 || *partitions > 1000:
		return usageError(fs, a.stderr, "--partitions must be between 1 and 1000")
	case *probes < 1:
		return usageError(fs, a.stderr, "--probes must be at least 1")
	case *steady <= 0 || *steady > 1 || *steadyFor <= 0:
		return usageError(fs, a.stderr, "--steady-load must be in (0,1] and --steady-for positive")
	}
	cfg := pipebench.Config{Campaigns: *campaigns, Events: *events, EventRate: *eventRate, Partitions: int32(*partitions), Probes: *probes,
		SteadyLoad: *steady, SteadyFor: *steadyFor, Secure: *secure, Floor: *floor, Logger: a.logger}
	for _, f := range []struct {
		path string
		w    *io.Writer
	}{{*cpuProfile, &cfg.CPUProfile}, {*traceFile, &cfg.Trace}} {
		if f.path == "" {
			continue
		}
		file, err := os.Create(f.path)
		if err != nil {
			fmt.Fprintf(a.stderr, "hotpair bench pipeline: %v\n", err)
			return 1
		}
		defer file.Close()
		*f.w = file
	}
	if !*asJSON {
		fmt.Fprintf(a.stdout, "hotpair bench pipeline: %d ad events, %d campaigns, %d partitions, kfake in process\n",
			*events, *campaigns, *partitions)
	}
	res, err := pipebench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair bench pipeline: %v\n", err)
		return 1
	}
	if *asJSON {
		if err := printJSON(a.stdout, res); err != nil {
			fmt.Fprintf(a.stderr, "hotpair bench pipeline: %v\n", err)
			return 1
		}
		return 0
	}
	writeBenchText(a.stdout, res)
	return 0
}

func writeBenchText(w io.Writer, r pipebench.Result) {
	fmt.Fprintf(w, "event time: %.0f ad events per second; %d windows emitted (%.3f per ad event, %d by timer wake-ups) and applied; every campaign's lifetime spend is exact\n\n",
		r.EventRate, r.Windows, r.WindowsPerEvent, r.Wakeups)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "throughput\tevents/s\tevents/CPU-s\tallocs/event\tseconds\t")
	type row struct {
		name string
		r    pipebench.Rate
	}
	rows := []row{
		{"raw franz-go consumer", r.Raw},
		{"bare goka, count per key", r.Goka},
		{"bare goka, hotpair's client", r.GokaHotpair},
		{"pipeline: aggregator + budget", r.Pipeline},
	}
	ratios := []string{fmt.Sprintf("pipeline / bare goka\t%.2f\t\t\t\t", r.Ratio)}
	notes := []string{"(CPU seconds and allocations include the in-process Kafka broker.)"}
	if f := r.Floor; f != nil {
		rows = append(rows, row{"record floor: its records only", f.Rate})
		ratios = append(ratios, fmt.Sprintf("record floor / bare goka\t%.2f\t\t\t\t", f.Ratio),
			fmt.Sprintf("pipeline / record floor\t%.2f\t%.2f\t\t\t", r.Pipeline.EventsPerSec/f.EventsPerSec, r.Pipeline.EventsPerCPUSec/f.EventsPerCPUSec))
		notes = append(notes, fmt.Sprintf("(The record floor: two goka processors on hotpair's client doing only the aggregator's and "+
			"the budget enforcer's reads and writes, %d records passed between them.)", f.Passed))
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.1f\t%.2f\t\n", row.name, row.r.EventsPerSec, row.r.EventsPerCPUSec, row.r.AllocsPerEvent, row.r.Seconds)
	}
	for _, line := range ratios {
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, line := range notes {
		fmt.Fprintln(w, line)
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency p50 / p99, ms\tbacklog\tsteady %.0f ev/s\tstream end\tidle\t\n", r.SteadyRate)
	q := func(x pipebench.Quantiles) string {
		if x.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f / %.1f", x.P50Ms, x.P99Ms)
	}
	for _, row := range []struct {
		name                       string
		backlog, steady, end, idle pipebench.Quantiles
	}{
		{"ingest hop: ad event → aggregator", r.Backlog.IngestHop, r.Steady.IngestHop, r.StreamEnd.IngestHop, r.Idle.IngestHop},
		{"spend hop: aggregator → budget", r.Backlog.SpendHop, r.Steady.SpendHop, r.StreamEnd.SpendHop, r.Idle.SpendHop},
		{"status hop: budget → reader", r.Backlog.StatusHop, r.Steady.StatusHop, r.StreamEnd.StatusHop, r.Idle.StatusHop},
		{"window close → budget status", r.Backlog.CloseToStatus, r.Steady.CloseToStatus, r.StreamEnd.CloseToStatus, r.Idle.CloseToStatus},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", row.name, q(row.backlog), q(row.steady), q(row.end), q(row.idle))
	}
	tw.Flush()
}
