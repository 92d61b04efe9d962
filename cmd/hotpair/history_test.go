package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// recordOf runs the decision core over a health history the way the
// leading monitor does, and returns what it appends to the decision
// record: every window's verdicts and every change, after each decision.
func recordOf(t *testing.T, recs []core.Record, cfg core.Config) []decisions.Entry {
	t.Helper()
	start := recs[0].At().Truncate(cfg.Window)
	e, err := core.NewEngine(cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	th := decisions.Thresholds{Preferred: cfg.Decision.Preferred, FailoverAfter: cfg.Decision.FailoverAfter, Grace: cfg.Decision.Grace.String()}
	prev := map[string]*contract.Selection{}
	var out []decisions.Entry
	next := 0
	for tick := start.Add(cfg.Window); !tick.After(recs[len(recs)-1].At()); tick = tick.Add(cfg.Window) {
		for ; next < len(recs) && !recs[next].At().After(tick); next++ {
			e.Observe(&recs[next].Sample, recs[next].At())
		}
		ev, err := e.Tick(tick, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ev.Decisions {
			sel := d.State.Selection()
			verdicts := map[contract.Side]decisions.Verdict{}
			for _, side := range contract.Sides() {
				v, _ := ev.Verdict(d.Service.Stage(), side)
				verdicts[side] = decisions.Verdict{Healthy: v.Healthy, Reasons: v.ReasonStrings(), CatchingUp: v.CatchingUp, QPS: v.Stats.QPS,
					LagP99Ms: v.Stats.LagP99Ms, AggregatorLagP99Ms: v.Stats.UpstreamLagP99Ms}
			}
			out = append(out, decisions.WindowEntry(sel, ev.WindowStart, ev.WindowEnd, verdicts, th))
			out = append(out, decisions.Changes(prev[d.Service.String()], sel, d.Kind.String())...)
			prev[d.Service.String()] = &sel
		}
	}
	for i := range out {
		out[i].RecordedBy, out[i].RecordedAt = "monitor-1", out[i].At.Add(time.Millisecond)
	}
	return out
}

// produceRecord writes entries to the record's topic of a new cluster,
// skipping those skip says the cluster missed, plus two bad values.
func produceRecord(t *testing.T, entries []decisions.Entry, skip func(decisions.Entry) bool) *kfake.Cluster {
	t.Helper()
	c := kafkatest.Cluster(t)
	if err := kafka.EnsureTopics(context.Background(), kafka.Cluster{Brokers: c.ListenAddrs()}, 1, 1, kafka.TopicSpec{Name: decisions.Topic}); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for _, e := range entries {
		if skip(e) {
			continue
		}
		b, _ := decisions.Encode(e)
		recs = append(recs, &kgo.Record{Topic: decisions.Topic, Key: []byte(e.Service.String()), Value: b, Timestamp: e.RecordedAt})
	}
	recs = append(recs, &kgo.Record{Topic: decisions.Topic, Value: []byte("{junk"), Timestamp: simT0},
		&kgo.Record{Topic: decisions.Topic, Value: []byte(`{"v":9,"id":"x"}`), Timestamp: simT0})
	if err := kafkatest.Client(t, c.ListenAddrs()).ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c
}

func hotpair(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// recordClusters records the flapping history on two clusters; the primary
// missed the failovers (it was down then).
func recordClusters(t *testing.T) (entries []decisions.Entry, primary, standby *kfake.Cluster) {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Window = time.Minute
	entries = recordOf(t, flappingRecords(), cfg)
	primary = produceRecord(t, entries, func(e decisions.Entry) bool { return e.Cause == "failover" })
	standby = produceRecord(t, entries, func(decisions.Entry) bool { return false })
	return entries, primary, standby
}

func TestHistoryCommand(t *testing.T) {
	_, p, s := recordClusters(t)
	pb, sb := strings.Join(p.ListenAddrs(), ","), strings.Join(s.ListenAddrs(), ",")
	since := simT0.Format(time.RFC3339)
	code, out, errs := hotpair(t, "history", "--brokers", pb, "--standby-brokers", sb, "--since", since, "--service", "budget")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"decisions of budget from 2026-11-30T12:00:00Z",
		"primary copy 2 entries (1 bad, 1 of an unknown version: skipped), standby copy 3 entries",
		"2026-11-30T12:11:00Z  budget  SWITCH primary → standby  failover  epoch 2  (recorded by monitor-1)",
		"    why:      failover primary → standby: primary unhealthy for 1 window(s): lag_high: p99 90000 ms > limit 60000 ms",
		"    primary:  UNHEALTHY  qps 100.0  lag p99 90000 ms  build b1 — lag_high: p99 90000 ms > limit 60000 ms",
		"2026-11-30T12:29:00Z  budget  SWITCH standby → primary  return  epoch 3",
		"budget: 2 switch(es) (1 failover, 1 return)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "SWITCH primary → standby"); n != 1 {
		t.Errorf("the failover shows %d times (both copies hold it):\n%s", n, out)
	}

	// --json: the entries, once each, as JSON lines; --windows adds the windows.
	code, out, _ = hotpair(t, "history", "--brokers", pb, "--standby-brokers", sb, "--since", since, "--json")
	if lines := strings.Count(out, "\n"); code != 0 || lines != 3*3 {
		t.Fatalf("--json: exit %d, %d lines:\n%s", code, lines, out)
	}
	code, out, _ = hotpair(t, "history", "--brokers", pb, "--since", since, "--windows", "--service", "pacer")
	if code != 0 || strings.Count(out, "  pacer   window  ") != 40 || !strings.Contains(out, "primary UNHEALTHY: lag_high") {
		t.Fatalf("--windows: exit %d\n%s", code, out)
	}

	// The primary cluster is gone: the standby's copy answers, with a warning.
	p.Close()
	code, out, errs = hotpair(t, "history", "--brokers", pb, "--standby-brokers", sb, "--since", since, "--timeout", "10s")
	if code != 0 || !strings.Contains(errs, "the primary copy") || !strings.Contains(out, "primary copy UNREADABLE") ||
		!strings.Contains(out, "budget: 2 switch(es)") {
		t.Fatalf("primary down: exit %d\nstderr %s\n%s", code, errs, out)
	}
	if code, _, errs = hotpair(t, "history", "--brokers", pb, "--since", since, "--timeout", "5s"); code != 1 || !strings.Contains(errs, "no copy") {
		t.Fatalf("only a dead cluster: exit %d: %s", code, errs)
	}
}

func TestHistoryBadUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no brokers", nil, "give --brokers"},
		{"bad service", []string{"--brokers", "x:9092", "--service", "ads"}, `--service: "ads" is not one of`},
		{"bad since", []string{"--brokers", "x:9092", "--since", "last night"}, `--since: "last night" is neither`},
		{"bad until", []string{"--brokers", "x:9092", "--until", "soon"}, `--until: "soon" is neither`},
		{"until before since", []string{"--brokers", "x:9092", "--since", "-1h", "--until", "-2h"}, "is before --since"},
		{"bad kind", []string{"--brokers", "x:9092", "--kind", "reboot"}, `--kind: "reboot" is not a kind`},
		{"stray argument", []string{"--brokers", "x:9092", "budget"}, `unexpected argument "budget"`},
		{"unknown flag", []string{"--brokers", "x:9092", "--servce", "budget"}, "flag provided but not defined: -servce"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := hotpair(t, append([]string{"history"}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "usage: hotpair history") {
				t.Fatalf("exit %d, stderr:\n%s\nwant %q", code, errs, tc.want)
			}
		})
	}
}

// The decision record's verdicts replayed with the recorded thresholds give
// the recorded switches; with another grace or failover_after, what those
// would have done (the same answer as replaying the health samples). Rule
// thresholds are refused: the verdicts do not run the rules again.
func TestMonitorSimulateRecord(t *testing.T) {
	_, p, s := recordClusters(t)
	since := simT0.Format(time.RFC3339)
	file := filepath.Join(t.TempDir(), "night.jsonl")
	code, out, errs := hotpair(t, "history", "--brokers", strings.Join(p.ListenAddrs(), ","), "--standby-brokers",
		strings.Join(s.ListenAddrs(), ","), "--since", since, "--windows", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if err := os.WriteFile(file, []byte(out+"{junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = simulate(t, "--source", "record", "--file", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"replayed the recorded verdicts of 117 windows from 2026-11-30T12:01:00Z to 2026-11-30T12:40:00Z (the rules were not run again",
		"recorded with: grace 10m0s, failover_after 1, preferred primary",
		"2026-11-30T12:11:00Z  budget   primary → standby  failover",
		"switches: budget 2, pacer 2, bidder 2 (6 in all)\nswitches as recorded: budget 2, pacer 2, bidder 2 (6 in all)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, fromSamples, _ := simulate(t, "--file", writeHistory(t, flappingRecords()), "--window", "1m", "--grace", "0s", "--json")
	code, out, errs = simulate(t, "--source", "record", "--file", file, "--grace", "0s", "--json")
	if o := decodeSim(t, out); code != 0 || len(o.Switches) != 5*2*3 || !sameSwitches(o, decodeSim(t, fromSamples)) {
		t.Fatalf("grace 0: exit %d %s\n%s", code, errs, out)
	}
	// From the clusters: one copy is enough.
	code, out, errs = simulate(t, "--source", "record", "--primary-brokers", strings.Join(s.ListenAddrs(), ","), "--since", since,
		"--failover-after", "2", "--json")
	if o := decodeSim(t, out); code != 0 || len(o.Switches) != 0 || !strings.Contains(out, `"recorded_switches"`) {
		t.Fatalf("failover_after 2 from the cluster: exit %d %s\n%s", code, errs, out)
	}
	code, _, errs = simulate(t, "--source", "record", "--file", file, "--lag-limit", "90s", "--window", "2m")
	if code != 2 || !strings.Contains(errs, "--lag-limit, --window: with --source record the verdicts are the record's") {
		t.Fatalf("a rule threshold: exit %d: %s", code, errs)
	}
	if code, _, errs = simulate(t, "--source", "samples", "--file", file); code != 2 || !strings.Contains(errs, `--source: "samples"`) {
		t.Fatalf("bad source: exit %d: %s", code, errs)
	}
}
