package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/core/history"
	"github.com/hotpair/hotpair/monitor/decisions"
)

const simulateSynopsis = `monitor simulate [--source health|record] (--file PATH | --primary-brokers B --standby-brokers B [--since 6h] | --config FILE)
       [threshold flags] [--json]

Replays a recorded health history through the monitor's decision code with the
given thresholds and prints the switches it would have made. With --config, the
thresholds, clusters and topic prefix come from the monitor's config file and
any flag given overrides them.

--source record replays the verdicts of the decision record (hotpair-decisions,
kept 30 days) instead of the health samples: the rules are not run again, so
only --grace, --failover-after and --preferred may differ from what the monitor
used.`

// thresholdFlags are the threshold flags: the config key each sets (so that
// a rejected value names the flag) and how to copy it over a loaded config.
var thresholdFlags = map[string]struct {
	key  string
	copy func(dst, src *core.Config)
}{
	"window":           {"window", func(d, s *core.Config) { d.Window = s.Window }},
	"sample-interval":  {"rules.sample_interval", func(d, s *core.Config) { d.Rules.SampleInterval = s.Rules.SampleInterval }},
	"heartbeat-missed": {"rules.heartbeat_missed", func(d, s *core.Config) { d.Rules.HeartbeatMissed = s.Rules.HeartbeatMissed }},
	"partition-grace":  {"rules.partition_grace", func(d, s *core.Config) { d.Rules.PartitionGrace = s.Rules.PartitionGrace }},
	"rate-ratio":       {"rules.rate_ratio", func(d, s *core.Config) { d.Rules.RateRatio = s.Rules.RateRatio }},
	"rate-reference":   {"rules.rate_reference", func(d, s *core.Config) { d.Rules.RateReference = s.Rules.RateReference }},
	"lag-limit":        {"rules.lag_limit", func(d, s *core.Config) { d.Rules.LagLimit = s.Rules.LagLimit }},
	"catch-up-lag":     {"rules.catch_up_lag", func(d, s *core.Config) { d.Rules.CatchUpLag = s.Rules.CatchUpLag }},
	"preferred":        {"decision.preferred", func(d, s *core.Config) { d.Decision.Preferred = s.Decision.Preferred }},
	"failover-after":   {"decision.failover_after", func(d, s *core.Config) { d.Decision.FailoverAfter = s.Decision.FailoverAfter }},
	"grace":            {"decision.grace", func(d, s *core.Config) { d.Decision.Grace = s.Decision.Grace }},
	"stagger":          {"stagger.period", func(d, s *core.Config) { d.Stagger.Period = s.Stagger.Period }},
}

// runMonitorSimulate is "hotpair monitor simulate".
func runMonitorSimulate(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "monitor simulate", simulateSynopsis)
	sa := newSimulateArgs(fs)
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintln(a.stderr, "hotpair monitor simulate:", err)
		return 1
	}
	if err := sa.applyConfigFile(fs); err != nil {
		return fail(err)
	}
	if msg := sa.check(fs); msg != "" {
		return usageError(fs, a.stderr, "%s", msg)
	}
	if sa.source == sourceRecord {
		return runRecordReplay(ctx, a, sa)
	}
	recs, err := sa.history(ctx, a)
	if err != nil {
		return fail(err)
	}
	res, err := core.Simulate(sa.cfg, recs)
	if err != nil {
		return fail(err)
	}
	if sa.json {
		err = printSimulationJSON(a.stdout, sa.cfg, res)
	} else {
		err = printSimulation(a.stdout, sa.cfg, res)
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// simulateArgs are the parsed flags of "monitor simulate".
type simulateArgs struct {
	file, since, prefix, save, cfgPath string
	source                             string
	primary, standby                   listFlag
	kafka                              *kafka.Flags
	auth                               [2]*contract.KafkaAuth // per side, from --config or the flags
	timeout                            time.Duration
	json                               bool
	sinceT                             time.Time
	cfg                                core.Config
}

// newSimulateArgs registers the flags; straight-line flag wiring, one per line.
func newSimulateArgs(fs *flag.FlagSet) *simulateArgs {
	sa := &simulateArgs{cfg: core.DefaultConfig()}
	fs.StringVar(&sa.source, "source", sourceHealth, "what to replay: health (the samples: every threshold) or record (the decision record's verdicts: grace, failover_after, preferred)")
	fs.StringVar(&sa.file, "file", "", "JSON-lines history: one HealthSample per line, optionally with \"received_at\"; with --source record one record entry per line (- for stdin)")
	fs.Var(&sa.primary, "primary-brokers", "read the history from the hotpair-health (or hotpair-decisions) topic of the primary cluster (comma-separated brokers)")
	fs.Var(&sa.standby, "standby-brokers", "… and of the standby cluster")
	fs.StringVar(&sa.since, "since", "6h", "with brokers: read records from this long ago (a duration) or since this RFC 3339 time")
	fs.StringVar(&sa.prefix, "topic-prefix", "", "with brokers: prefix of the topic names")
	fs.DurationVar(&sa.timeout, "timeout", 2*time.Minute, "with brokers: give up reading after this long")
	fs.StringVar(&sa.save, "save", "", "with brokers: also write the history read to this JSON-lines file, for later replays")
	fs.BoolVar(&sa.json, "json", false, "print the result as JSON")
	fs.StringVar(&sa.cfgPath, "config", "", "take thresholds, clusters and topic prefix from this monitor config (flags override)")
	sa.kafka = kafka.AddFlags(fs)
	c := &sa.cfg
	fs.DurationVar(&c.Window, "window", c.Window, "evaluation window")
	fs.DurationVar(&c.Rules.SampleInterval, "sample-interval", c.Rules.SampleInterval, "the pipelines' health sample interval")
	fs.IntVar(&c.Rules.HeartbeatMissed, "heartbeat-missed", c.Rules.HeartbeatMissed, "no_heartbeat after this many sample intervals without a sample")
	fs.DurationVar(&c.Rules.PartitionGrace, "partition-grace", c.Rules.PartitionGrace, "partitions_uncovered after partitions stay unassigned this long")
	fs.Float64Var(&c.Rules.RateRatio, "rate-ratio", c.Rules.RateRatio, "input_rate_low below this fraction of the other side's QPS")
	fs.Float64Var(&c.Rules.RateReference, "rate-reference", c.Rules.RateReference, "… judged only when the other side has at least this QPS")
	fs.DurationVar(&c.Rules.LagLimit, "lag-limit", c.Rules.LagLimit, "lag_high above this merged p99 end-to-end event lag")
	fs.DurationVar(&c.Rules.CatchUpLag, "catch-up-lag", c.Rules.CatchUpLag, "a side whose p99 lag (or its aggregator's) is above this is catching up (0: off)")
	fs.StringVar(&c.Decision.Preferred, "preferred", c.Decision.Preferred, "the preferred side")
	fs.IntVar(&c.Decision.FailoverAfter, "failover-after", c.Decision.FailoverAfter, "switch after this many consecutive unhealthy windows")
	fs.DurationVar(&c.Decision.Grace, "grace", c.Decision.Grace, "return to the preferred side after it is healthy this long")
	fs.DurationVar(&c.Stagger.Period, "stagger", c.Stagger.Period, "staggered-deploy period (0: off)")
	return sa
}

// applyConfigFile takes thresholds, clusters and topic prefix from the
// monitor config named by --config; flags given on the command line win.
func (sa *simulateArgs) applyConfigFile(fs *flag.FlagSet) error {
	auth, err := sa.kafka.Load()
	if err != nil {
		return err
	}
	sa.auth = [2]*contract.KafkaAuth{auth, auth}
	if sa.cfgPath == "" {
		return nil
	}
	mc, err := monitor.LoadConfig(sa.cfgPath)
	if err != nil {
		return err
	}
	sa.cfg = withFlags(fs, mc.Config, &sa.cfg)
	if sa.file == "" && len(sa.primary) == 0 && len(sa.standby) == 0 {
		sa.primary, sa.standby = mc.Clusters.Primary.Brokers, mc.Clusters.Standby.Brokers
		if sa.auth, err = monitorClusterAuth(mc); err != nil {
			return err
		}
	}
	if !isSet(fs, "topic-prefix") {
		sa.prefix = mc.TopicPrefix
	}
	return nil
}

// check returns what is wrong with the arguments, "" if nothing.
func (sa *simulateArgs) check(fs *flag.FlagSet) string {
	brokers := len(sa.primary) > 0 || len(sa.standby) > 0
	record := sa.source == sourceRecord
	switch {
	case sa.source != sourceHealth && !record:
		return fmt.Sprintf("--source: %q is neither %s nor %s", sa.source, sourceHealth, sourceRecord)
	case record:
		if msg := checkRecordFlags(fs); msg != "" {
			return msg
		}
	}
	switch {
	case sa.file == "" && !brokers:
		return "give --file, or --primary-brokers and --standby-brokers, or --config"
	case sa.file != "" && (isSet(fs, "primary-brokers") || isSet(fs, "standby-brokers")):
		return "give --file or brokers, not both"
	case sa.file == "" && !record && (len(sa.primary) == 0 || len(sa.standby) == 0):
		return "give both --primary-brokers and --standby-brokers: a side without history would read as dead"
	case sa.file != "" && (sa.save != "" || isSet(fs, "since") || isSet(fs, "topic-prefix")):
		return "--since, --topic-prefix and --save apply to brokers only"
	}
	if err := sa.cfg.Validate(); err != nil {
		return flagNames(err)
	}
	t, err := decisions.ParseTime(sa.since, time.Now())
	if err != nil {
		return "--since: " + err.Error()
	}
	sa.sinceT = t
	return ""
}

// history reads the file, or both clusters' topics (and saves them if asked).
func (sa *simulateArgs) history(ctx context.Context, a *app) ([]core.Record, error) {
	if sa.file != "" {
		return readHistoryFile(sa.file)
	}
	ctx, cancel := context.WithTimeout(ctx, sa.timeout)
	defer cancel()
	recs, err := readHistoryTopics(ctx, a, sa, contract.TopicsWithPrefix(sa.prefix).Health)
	if err == nil && sa.save != "" {
		err = saveHistory(sa.save, recs)
	}
	return recs, err
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// withFlags returns base with the threshold flags given on the command line
// (whose values are in set) copied over it.
func withFlags(fs *flag.FlagSet, base core.Config, set *core.Config) core.Config {
	fs.Visit(func(f *flag.Flag) {
		if tf, ok := thresholdFlags[f.Name]; ok {
			tf.copy(&base, set)
		}
	})
	return base
}

// flagNames rewrites config keys in a validation error as the flags that set them.
func flagNames(err error) string {
	msg := err.Error()
	for flagName, tf := range thresholdFlags {
		msg = strings.ReplaceAll(msg, "monitor: "+tf.key+" ", "--"+flagName+" ")
	}
	return strings.ReplaceAll(msg, "\n", "; ")
}

func readHistoryFile(path string) ([]core.Record, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	recs, err := history.ReadJSONLines(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

func readHistoryTopics(ctx context.Context, a *app, sa *simulateArgs, topic string) ([]core.Record, error) {
	if err := sa.checkKafka(ctx); err != nil {
		return nil, err
	}
	var all []core.Record
	for i, c := range []struct {
		side    contract.Side
		brokers []string
	}{{contract.Primary, sa.primary}, {contract.Standby, sa.standby}} {
		recs, st, err := history.ReadTopic(ctx, history.TopicOptions{Brokers: c.brokers, KafkaAuth: sa.auth[i], Side: c.side, Topic: topic, Since: sa.sinceT})
		if err != nil {
			return nil, err
		}
		a.logger.Info("history read", "side", c.side, "topic", topic, "records", st.Records,
			"samples", len(recs), "bad", st.Bad, "wrong_side", st.WrongSide)
		all = append(all, recs...)
	}
	return all, nil
}

func saveHistory(path string, recs []core.Record) error {
	return saveFile(path, func(w io.Writer) error { return history.WriteJSONLines(w, recs) })
}

// saveFile creates path and writes it with write.
func saveFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func printSimulation(w io.Writer, cfg core.Config, res core.SimResult) error {
	c := res.Counters
	fmt.Fprintf(w, "replayed %d samples (%d duplicates, %d ignored) from %s to %s: %d windows of %s\n",
		c.Merged, c.Duplicates, c.Ignored, res.From.UTC().Format(time.RFC3339), res.To.UTC().Format(time.RFC3339), res.Windows, cfg.Window)
	r, d := cfg.Rules, cfg.Decision
	fmt.Fprintf(w, "thresholds: grace %s, failover_after %d, lag_limit %s, catch_up_lag %s, rate_ratio %g (reference %g ev/s), heartbeat %d × %s, partition_grace %s\n\n",
		d.Grace, d.FailoverAfter, r.LagLimit, r.CatchUpLag, r.RateRatio, r.RateReference, r.HeartbeatMissed, r.SampleInterval, r.PartitionGrace)
	return printSimulatedSwitches(w, res, nil)
}

// printSimulatedSwitches prints the switches and the counts per service;
// with recorded (the switches the monitor made, per service), those too.
func printSimulatedSwitches(w io.Writer, res core.SimResult, recorded map[string]int) error {
	if len(res.Switches) == 0 {
		fmt.Fprintln(w, "no switches")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tSERVICE\tSWITCH\tKIND\tREASON")
		for _, s := range res.Switches {
			fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%s\n", s.At.UTC().Format(time.RFC3339), s.Service, s.From, s.To, s.KindName, s.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	var sw, deg, unh, stg []string
	for _, svc := range contract.Services() {
		n := 0
		for _, s := range res.Switches {
			if s.Service == svc {
				n++
			}
		}
		sw = append(sw, fmt.Sprintf("%s %d", svc, n))
		deg = append(deg, fmt.Sprintf("%s %d", svc, res.DegradedWindows[svc]))
		stg = append(stg, fmt.Sprintf("%s %d", svc, res.StaggerWindows[svc]))
		for _, side := range contract.Sides() {
			unh = append(unh, fmt.Sprintf("%s/%s %d", svc, side, res.UnhealthyWindows[svc.String()+"/"+side.String()]))
		}
	}
	fmt.Fprintf(w, "switches: %s (%d in all)\n", strings.Join(sw, ", "), len(res.Switches))
	if recorded != nil {
		var rec []string
		n := 0
		for _, svc := range contract.Services() {
			rec = append(rec, fmt.Sprintf("%s %d", svc, recorded[svc.String()]))
			n += recorded[svc.String()]
		}
		fmt.Fprintf(w, "switches as recorded: %s (%d in all)\n", strings.Join(rec, ", "), n)
	}
	_, err := fmt.Fprintf(w, "unhealthy windows: %s\ndegraded windows: %s\nstagger-violation windows: %s\n",
		strings.Join(unh, ", "), strings.Join(deg, ", "), strings.Join(stg, ", "))
	return err
}

// simulationJSON is the --json output.
type simulationJSON struct {
	// Source is what was replayed: health (samples) or record (verdicts).
	Source           string                   `json:"source"`
	From             time.Time                `json:"from"`
	To               time.Time                `json:"to"`
	Window           string                   `json:"window"`
	Windows          int                      `json:"windows"`
	Samples          uint64                   `json:"samples"`
	Duplicates       uint64                   `json:"duplicates"`
	Ignored          uint64                   `json:"ignored"`
	Thresholds       map[string]any           `json:"thresholds"`
	Switches         []core.Switch            `json:"switches"`
	UnhealthyWindows map[string]int           `json:"unhealthy_windows"`
	DegradedWindows  map[contract.Service]int `json:"degraded_windows"`
	StaggerWindows   map[contract.Service]int `json:"stagger_windows"`
	// With --source record: the switches the monitor made over the same
	// windows, per service, and the thresholds it made them with.
	RecordedSwitches   map[string]int        `json:"recorded_switches,omitempty"`
	RecordedThresholds *decisions.Thresholds `json:"recorded_thresholds,omitempty"`
}

func printSimulationJSON(w io.Writer, cfg core.Config, res core.SimResult) error {
	return writeSimulationJSON(w, simulationJSONOf(cfg, res, sourceHealth))
}

func simulationJSONOf(cfg core.Config, res core.SimResult, source string) simulationJSON {
	out := simulationJSON{Source: source, From: res.From.UTC(), To: res.To.UTC(), Window: cfg.Window.String(), Windows: res.Windows,
		Samples: res.Counters.Merged, Duplicates: res.Counters.Duplicates, Ignored: res.Counters.Ignored,
		Thresholds: thresholds(cfg), Switches: res.Switches, UnhealthyWindows: res.UnhealthyWindows,
		DegradedWindows: res.DegradedWindows, StaggerWindows: res.StaggerWindows}
	if out.Switches == nil {
		out.Switches = []core.Switch{}
	}
	return out
}

func writeSimulationJSON(w io.Writer, out simulationJSON) error {
	if err := printJSON(w, out); err != nil {
		return errors.Join(errors.New("encoding the result"), err)
	}
	return nil
}

// thresholds lists the config by its YAML keys, durations as strings.
func thresholds(c core.Config) map[string]any {
	r, d := c.Rules, c.Decision
	return map[string]any{
		"window": c.Window.String(), "rules.sample_interval": r.SampleInterval.String(),
		"rules.heartbeat_missed": r.HeartbeatMissed, "rules.partition_grace": r.PartitionGrace.String(),
		"rules.rate_ratio": r.RateRatio, "rules.rate_reference": r.RateReference, "rules.lag_limit": r.LagLimit.String(),
		"rules.catch_up_lag": r.CatchUpLag.String(),
		"decision.preferred": d.Preferred, "decision.failover_after": d.FailoverAfter, "decision.grace": d.Grace.String(),
		"stagger.period": c.Stagger.Period.String(),
	}
}

// checkKafka stops at once when a cluster refuses the TLS or SASL settings.
func (sa *simulateArgs) checkKafka(ctx context.Context) error {
	for i, brokers := range [][]string{sa.primary, sa.standby} {
		if len(brokers) == 0 {
			continue
		}
		if err := kafka.CheckAuth(ctx, kafka.Cluster{Name: contract.Sides()[i].String(), Brokers: brokers, Auth: sa.auth[i]}); err != nil {
			return err
		}
	}
	return nil
}
