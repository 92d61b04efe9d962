package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/core/history"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// What "monitor simulate" replays.
const (
	sourceHealth = "health" // the health samples: windows, rules and decisions all run again
	sourceRecord = "record" // the decision record's verdicts: only the decisions run again
)

// recordFlags are the threshold flags a replay of recorded verdicts honours:
// the decision state machine's. The others are the rules', which only the
// health samples can run again.
var recordFlags = []string{"grace", "failover-after", "preferred"}

// checkRecordFlags returns what is wrong with the flags of a record replay.
func checkRecordFlags(fs *flag.FlagSet) string {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		if _, ok := thresholdFlags[f.Name]; ok && !slices.Contains(recordFlags, f.Name) {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return strings.Join(bad, ", ") + ": with --source record the verdicts are the record's and the rules do not run again; " +
			"only --grace, --failover-after and --preferred can change (replay the health samples, --source health, to change a rule's threshold)"
	}
	return ""
}

// runRecordReplay is "monitor simulate --source record": it re-decides the
// recorded windows with the given decision thresholds and prints the
// switches next to those the monitor made.
func runRecordReplay(ctx context.Context, a *app, sa *simulateArgs) int {
	fail := func(err error) int {
		fmt.Fprintln(a.stderr, "hotpair monitor simulate:", err)
		return 1
	}
	entries, err := sa.record(ctx, a)
	if err != nil {
		return fail(err)
	}
	windows, skipped := history.RecordedWindows(entries)
	if skipped > 0 {
		a.logger.Warn("recorded windows skipped: their selection cannot be continued from", "windows", skipped)
	}
	res, err := core.ReplayVerdicts(sa.cfg.Decision, windows)
	if errors.Is(err, core.ErrEmptyHistory) {
		return fail(errors.New("the record holds no window in this range: nothing to replay"))
	}
	if err != nil {
		return fail(err)
	}
	recorded, th := recordedSwitches(entries, res.From, res.To), recordedThresholds(entries)
	if sa.json {
		out := simulationJSONOf(sa.cfg, res, sourceRecord)
		out.RecordedSwitches, out.RecordedThresholds = recorded, th
		err = writeSimulationJSON(a.stdout, out)
	} else {
		err = printRecordReplay(a.stdout, sa.cfg.Decision, th, res, recorded)
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// record reads the decision record from the file or the clusters given
// (one copy is enough; both are merged), and saves it if asked.
func (sa *simulateArgs) record(ctx context.Context, a *app) ([]decisions.Entry, error) {
	if sa.file != "" {
		var r io.Reader = os.Stdin
		if sa.file != "-" {
			f, err := os.Open(sa.file)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			r = f
		}
		entries, st, err := history.ReadRecordJSONLines(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sa.file, err)
		}
		a.logger.Info("decision record read", "file", sa.file, "lines", st.Lines, "entries", len(entries),
			"bad", st.Bad, "unknown_version", st.UnknownVersion)
		return entries, nil
	}
	ctx, cancel := context.WithTimeout(ctx, sa.timeout)
	defer cancel()
	if err := sa.checkKafka(ctx); err != nil {
		return nil, err
	}
	var sources []decisions.Source
	for _, c := range []decisions.Source{{Side: contract.Primary.String(), Brokers: sa.primary, KafkaAuth: sa.auth[0]},
		{Side: contract.Standby.String(), Brokers: sa.standby, KafkaAuth: sa.auth[1]}} {
		if len(c.Brokers) > 0 {
			sources = append(sources, c)
		}
	}
	entries, stats, err := decisions.Read(ctx, decisions.ReadOptions{Sources: sources, Topic: sa.prefix + decisions.Topic,
		Filter: decisions.Filter{Since: sa.sinceT}, ClientID: "hotpair-simulate"})
	for _, st := range stats {
		if st.Err != nil {
			a.logger.Warn("a copy of the decision record could not be read", "side", st.Side, "err", st.Err)
			continue
		}
		a.logger.Info("decision record read", "side", st.Side, "records", st.Records, "entries", st.Entries,
			"bad", st.Bad, "unknown_version", st.UnknownVersion)
	}
	if err != nil {
		return nil, err
	}
	if sa.save != "" {
		err = saveFile(sa.save, func(w io.Writer) error { return history.WriteRecordJSONLines(w, entries) })
	}
	return entries, err
}

// recordedSwitches counts, per service, the switches the monitor recorded
// after from and up to to: the ones the replay re-decides.
func recordedSwitches(entries []decisions.Entry, from, to time.Time) map[string]int {
	out := map[string]int{}
	for _, e := range entries {
		if e.Kind == decisions.KindSwitch && e.Cause != "initial" && e.At.After(from) && !e.At.After(to) {
			out[e.Service.String()]++
		}
	}
	return out
}

// recordedThresholds are the decision thresholds of the last recorded
// window (nil without one).
func recordedThresholds(entries []decisions.Entry) *decisions.Thresholds {
	for i := len(entries) - 1; i >= 0; i-- {
		if w := entries[i].Window; w != nil {
			th := w.Decision
			return &th
		}
	}
	return nil
}

func printRecordReplay(w io.Writer, d core.DecisionConfig, th *decisions.Thresholds, res core.SimResult, recorded map[string]int) error {
	fmt.Fprintf(w, "replayed the recorded verdicts of %d windows from %s to %s (the rules were not run again; the replay starts from the state recorded at %s)\n",
		res.Windows, res.From.UTC().Format(time.RFC3339), res.To.UTC().Format(time.RFC3339), res.From.UTC().Format(time.RFC3339))
	if th != nil {
		fmt.Fprintf(w, "recorded with: grace %s, failover_after %d, preferred %s\n", th.Grace, th.FailoverAfter, th.Preferred)
	}
	fmt.Fprintf(w, "replayed with: grace %s, failover_after %d, preferred %s\n\n", d.Grace, d.FailoverAfter, d.Preferred)
	return printSimulatedSwitches(w, res, recorded)
}
