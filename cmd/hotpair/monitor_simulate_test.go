package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/core/history"
)

var simT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// flappingRecords is 40 minutes of every service on both sides, 2 instances
// each, samples every 10 s; the primary's lag is 90 s in every even minute
// from 10m to 18m (5 times).
func flappingRecords() []core.Record {
	var recs []core.Record
	for ws := simT0; ws.Before(simT0.Add(40 * time.Minute)); ws = ws.Add(10 * time.Second) {
		m := int(ws.Sub(simT0) / time.Minute)
		for _, svc := range contract.Services() {
			for _, side := range contract.Sides() {
				lag := int64(40)
				if side == contract.Primary && m >= 10 && m < 20 && m%2 == 0 {
					lag = 90_000
				}
				for i, inst := range []string{"a", "b"} {
					s := contract.HealthSample{V: 1, Service: svc.Stage(), Side: side, Role: contract.RoleLive, Instance: inst, Build: "b1",
						Partitions: []int32{int32(i)}, TopicPartitions: 2, WindowStart: ws, WindowEnd: ws.Add(10 * time.Second),
						Events: 500, LagMsMax: lag}
					for range 500 {
						s.LagMs.Observe(lag)
					}
					recs = append(recs, core.Record{Sample: s, ReceivedAt: s.WindowEnd})
				}
			}
		}
	}
	return recs
}

func writeHistory(t *testing.T, recs []core.Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := history.WriteJSONLines(f, recs); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func simulate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	code := runMonitorSimulate(context.Background(), a, args)
	return code, out.String(), errb.String()
}

type simOut struct {
	Windows    int            `json:"windows"`
	Samples    int            `json:"samples"`
	Thresholds map[string]any `json:"thresholds"`
	Switches   []struct {
		Service, From, To, Kind, Reason string
		At                              time.Time
	} `json:"switches"`
}

func decodeSim(t *testing.T, s string) simOut {
	t.Helper()
	var o simOut
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		t.Fatalf("%v in\n%s", err, s)
	}
	return o
}

func TestMonitorSimulateFile(t *testing.T) {
	path := writeHistory(t, flappingRecords())

	code, out, errs := simulate(t, "--file", path, "--window", "1m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"replayed 2880 samples (0 duplicates, 0 ignored) from 2026-11-30T12:00:00Z to 2026-11-30T12:40:00Z: 40 windows of 1m0s",
		"2026-11-30T12:11:00Z  budget   primary → standby  failover  failover primary → standby: primary unhealthy for 1 window(s): lag_high: p99 90000 ms > limit 60000 ms",
		"2026-11-30T12:29:00Z  bidder   standby → primary  return    return standby → primary",
		"switches: budget 2, pacer 2, bidder 2 (6 in all)",
		"unhealthy windows: budget/primary 5, budget/standby 0,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// what if: no grace period flip-flops on every broken minute
	code, out, errs = simulate(t, "--file", path, "--window", "1m", "--grace", "0s", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	o := decodeSim(t, out)
	if len(o.Switches) != 5*2*3 || o.Windows != 40 || o.Samples != 2880 || o.Thresholds["decision.grace"] != "0s" {
		t.Fatalf("grace 0: %d switches, %d windows, thresholds %v", len(o.Switches), o.Windows, o.Thresholds)
	}
	// a 3-minute lag limit sees nothing wrong
	code, out, _ = simulate(t, "--file", path, "--window", "1m", "--lag-limit", "3m", "--json")
	if o := decodeSim(t, out); code != 0 || len(o.Switches) != 0 {
		t.Fatalf("lag limit 3m: exit %d, %d switches", code, len(o.Switches))
	}
}

// The topics of both clusters give the same answer as the file, and --save
// writes a history that replays to it too.
func TestMonitorSimulateTopics(t *testing.T) {
	recs := flappingRecords()
	topic := contract.TopicsWithPrefix("t-").Health
	var brokers [2][]string
	for i, side := range contract.Sides() {
		c := kafkatest.Cluster(t)
		brokers[i] = c.ListenAddrs()
		if err := kafka.EnsureTopics(context.Background(), kafka.Cluster{Brokers: brokers[i]}, 2, 1, kafka.TopicSpec{Name: topic}); err != nil {
			t.Fatal(err)
		}
		var krecs []*kgo.Record
		for _, r := range recs {
			if r.Sample.Side == side {
				b, _ := contract.Encode(r.Sample)
				krecs = append(krecs, &kgo.Record{Topic: topic, Key: []byte(r.Sample.Key()), Value: b, Timestamp: r.ReceivedAt})
			}
		}
		if err := kafkatest.Client(t, brokers[i]).ProduceSync(context.Background(), krecs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	_, fromFile, _ := simulate(t, "--file", writeHistory(t, recs), "--window", "1m", "--json")
	saved := filepath.Join(t.TempDir(), "saved.jsonl")
	code, fromTopics, errs := simulate(t, "--primary-brokers", strings.Join(brokers[0], ","), "--standby-brokers", strings.Join(brokers[1], ","),
		"--topic-prefix", "t-", "--since", simT0.Add(-time.Minute).Format(time.RFC3339), "--window", "1m", "--json", "--save", saved, "--timeout", "30s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if a, b := decodeSim(t, fromFile), decodeSim(t, fromTopics); len(a.Switches) != 6 || !sameSwitches(a, b) {
		t.Fatalf("file and topics differ:\n%s\n%s", fromFile, fromTopics)
	}
	_, fromSaved, _ := simulate(t, "--file", saved, "--window", "1m", "--json")
	if !sameSwitches(decodeSim(t, fromFile), decodeSim(t, fromSaved)) {
		t.Fatalf("saved history replays differently:\n%s", fromSaved)
	}

	// --config: clusters, topic prefix and thresholds from the monitor's
	// config (here grace 0s), through the real command line; flags override.
	cfgPath := filepath.Join(t.TempDir(), "monitor.yml")
	yml := fmt.Sprintf("zk:\n  servers: [\"127.0.0.1:2181\"]\nclusters:\n  primary:\n    brokers: [%q]\n  standby:\n    brokers: [%q]\n"+
		"topic_prefix: t-\nwindow: 1m\ndecision:\n  grace: 0s\n", brokers[0][0], brokers[1][0])
	if err := os.WriteFile(cfgPath, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	since := simT0.Add(-time.Minute).Format(time.RFC3339)
	var out, errb bytes.Buffer
	if code := run([]string{"monitor", "simulate", "--config", cfgPath, "--since", since, "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if o := decodeSim(t, out.String()); len(o.Switches) != 5*2*3 || o.Thresholds["decision.grace"] != "0s" || o.Thresholds["window"] != "1m0s" {
		t.Fatalf("--config: %d switches, thresholds %v", len(o.Switches), o.Thresholds)
	}
	out.Reset()
	if code := run([]string{"monitor", "simulate", "--config", cfgPath, "--since", since, "--grace", "10m", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !sameSwitches(decodeSim(t, fromFile), decodeSim(t, out.String())) {
		t.Fatalf("--config --grace 10m differs from the defaults:\n%s", out.String())
	}
}

func sameSwitches(a, b simOut) bool {
	if len(a.Switches) != len(b.Switches) {
		return false
	}
	for i := range a.Switches {
		x, y := a.Switches[i], b.Switches[i]
		if x.Service != y.Service || !x.At.Equal(y.At) || x.To != y.To || x.Reason != y.Reason {
			return false
		}
	}
	return true
}

func TestMonitorSimulateBadUsage(t *testing.T) {
	path := writeHistory(t, flappingRecords()[:4])
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no source", nil, "give --file, or --primary-brokers and --standby-brokers"},
		{"both sources", []string{"--file", path, "--primary-brokers", "x:9092", "--standby-brokers", "y:9092"}, "not both"},
		{"one cluster", []string{"--primary-brokers", "x:9092"}, "give both --primary-brokers and --standby-brokers"},
		{"since with a file", []string{"--file", path, "--since", "1h"}, "apply to brokers only"},
		{"bad since", []string{"--primary-brokers", "x:9092", "--standby-brokers", "y:9092", "--since", "last week"}, "--since: \"last week\" is neither"},
		{"rate ratio out of range", []string{"--file", path, "--rate-ratio", "1.5"}, "--rate-ratio must be in (0,1] (e.g. 0.5), got 1.5"},
		{"failover after 0", []string{"--file", path, "--failover-after", "0"}, "--failover-after must be at least 1"},
		{"bad duration", []string{"--file", path, "--grace", "ten"}, "invalid value \"ten\" for flag -grace"},
		{"stray argument", []string{"--file", path, "extra"}, "unexpected argument \"extra\""},
		{"unknown flag", []string{"--file", path, "--graze", "1m"}, "flag provided but not defined: -graze"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := simulate(t, tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "usage: hotpair monitor simulate") {
				t.Fatalf("exit %d, stderr:\n%s\nwant %q", code, errs, tc.want)
			}
		})
	}
}

func TestMonitorSimulateThroughRun(t *testing.T) {
	path := writeHistory(t, flappingRecords())
	var out, errb bytes.Buffer
	if code := run([]string{"monitor", "simulate", "--file", path, "--window", "1m"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "switches: budget 2, pacer 2, bidder 2 (6 in all)") {
		t.Fatalf("output:\n%s", out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"monitor", "simulate", "-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "-lag-limit duration") {
		t.Fatalf("-h: exit %d\n%s", code, errb.String())
	}
}

func TestMonitorSimulateFailures(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"v\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"empty history", empty, "history has no live samples"},
		{"bad line", bad, "bad.jsonl: history: bad line 1"},
		{"missing file", filepath.Join(t.TempDir(), "nope"), "no such file"},
		{"bad monitor config", "", "clusters.primary.brokers is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--file", tc.path}
			if tc.path == "" {
				cfg := filepath.Join(t.TempDir(), "monitor.yml")
				if err := os.WriteFile(cfg, []byte("zk:\n  servers: [\"127.0.0.1:2181\"]\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				args = []string{"--config", cfg}
			}
			code, _, errs := simulate(t, args...)
			if code != 1 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d: %s", code, errs)
			}
		})
	}
}
