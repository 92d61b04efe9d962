package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/replay"
)

func runHotpair(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestReplayBadUsage(t *testing.T) {
	rec := writeAdEvents(t, 3)
	for name, args := range map[string][]string{
		"no subcommand":          {"replay"},
		"unknown subcommand":     {"replay", "rewind"},
		"record without topic":   {"replay", "record", "--brokers", "127.0.0.1:1", "--duration", "1s", "-o", "x.hpr"},
		"record both modes":      {"replay", "record", "--brokers", "127.0.0.1:1", "--topic", "t", "--duration", "1s", "--since", "-1h", "-o", "x.hpr"},
		"record neither mode":    {"replay", "record", "--brokers", "127.0.0.1:1", "--topic", "t", "-o", "x.hpr"},
		"record bad since":       {"replay", "record", "--brokers", "127.0.0.1:1", "--topic", "t", "--since", "yesterday", "-o", "x.hpr"},
		"record bad where":       {"replay", "record", "--brokers", "127.0.0.1:1", "--topic", "t", "--duration", "1s", "--where", "advertiser", "-o", "x.hpr"},
		"inspect two files":      {"replay", "inspect", rec, rec},
		"retime without qps":     {"replay", "retime", rec, "-o", "out.hpr"},
		"retime onto itself":     {"replay", "retime", "--qps", "10", rec, "-o", rec},
		"play without target":    {"replay", "play", rec, "--qps", "10"},
		"play bad target":        {"replay", "play", rec, "--target", "127.0.0.1:1"},
		"play qps and percent":   {"replay", "play", rec, "--target", "127.0.0.1:1/t", "--qps", "10", "--percent", "50"},
		"play loop without stop": {"replay", "play", rec, "--target", "127.0.0.1:1/t", "--loop"},
		"play bad header":        {"replay", "play", rec, "--target", "127.0.0.1:1/t", "--header", "novalue"},
		"play bad timestamps":    {"replay", "play", rec, "--target", "127.0.0.1:1/t", "--timestamps", "kafka"},
		"verify without builds":  {"replay", "verify", "--recording", rec},
		"verify missing binary":  {"replay", "verify", "--recording", rec, "--baseline", "/nonexistent/hotpair", "--candidate", "/nonexistent/hotpair"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runHotpair(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "usage: hotpair replay") {
				t.Fatalf("no usage on stderr:\n%s", stderr)
			}
		})
	}
}

// writeAdEvents writes a recording of n ad events per campaign of three.
func writeAdEvents(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ads.hpr")
	w, err := replay.Create(path, replay.Meta{Topic: "ad-events", Partitions: 1, RecordedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 3 * n {
		c := fmt.Sprintf("camp-%d", i%3)
		v := fmt.Sprintf(`{"v":1,"id":"e%d","type":"click","campaign":%q,"advertiser":"adv-%d","price_micros":2000,"ts":%q}`,
			i, c, i%3, ts.Format(time.RFC3339Nano))
		if err := w.Write(&replay.Record{Timestamp: ts, Key: []byte(c), Value: []byte(v), Offset: int64(i)}); err != nil {
			t.Fatal(err)
		}
		ts = ts.Add(7 * time.Millisecond)
	}
	if err := w.Close(""); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayInspectRetimePlayCommands(t *testing.T) {
	rec := writeAdEvents(t, 100)
	code, out, stderr := runHotpair(t, "replay", "inspect", rec, "--json")
	if code != 0 {
		t.Fatalf("inspect exit %d: %s", code, stderr)
	}
	var in replay.Inspection
	if err := json.Unmarshal([]byte(out), &in); err != nil || in.Records != 300 || in.Keys.Distinct != 3 || !in.Complete {
		t.Fatalf("inspect --json: %v %+v", err, in)
	}

	retimed := filepath.Join(t.TempDir(), "retimed.hpr")
	if code, _, stderr := runHotpair(t, "replay", "retime", "--qps", "1000", rec, "-o", retimed); code != 0 {
		t.Fatalf("retime exit %d: %s", code, stderr)
	}
	code, out, _ = runHotpair(t, "replay", "inspect", retimed)
	if code != 0 || !strings.Contains(out, "retimed to 1000/s") || !strings.Contains(out, "mean 1000.00/s") || !strings.Contains(out, "camp-0=100") {
		t.Fatalf("inspect of the retimed file (exit %d):\n%s", code, out)
	}

	c := kafkatest.Cluster(t)
	brokers := c.ListenAddrs()
	if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: brokers}, 2, 1, kafka.TopicSpec{Name: "ad-events"}); err != nil {
		t.Fatal(err)
	}
	target := strings.Join(brokers, ",") + "/ad-events"
	code, out, stderr = runHotpair(t, "replay", "play", retimed, "--target", target, "--max", "--set-time-field", "ts",
		"--where", "advertiser=adv-1", "--header", "replay=ci", "--json")
	if code != 0 {
		t.Fatalf("play exit %d: %s\n%s", code, stderr, out)
	}
	var rep replay.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Released != 100 || rep.Filtered != 200 || rep.TimeFieldSet != 100 ||
		len(rep.Targets) != 1 || rep.Targets[0].Sent != 100 {
		t.Fatalf("play --json: %v %+v", err, rep)
	}
	got := kafkatest.ReadAll(t, brokers, "ad-events", 100, 10*time.Second)
	if len(got) != 100 {
		t.Fatalf("read %d played records, want 100", len(got))
	}
	for _, r := range got {
		if string(r.Key) != "camp-1" || len(r.Headers) != 1 || string(r.Headers[0].Value) != "ci" || bytes.Contains(r.Value, []byte("2026-01-02")) {
			t.Fatalf("played record %s %s %v: want camp-1, header replay=ci, ts set to the send time", r.Key, r.Value, r.Headers)
		}
	}
}

// The one-line CI gate: the same build as baseline and candidate passes,
// exits 0 and writes a JSON report.
func TestReplayVerifyCommandPassesTheSameBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two pipelines")
	}
	bin := testbin.Hotpair(t)
	dir := t.TempDir()
	rec := writeAdEvents(t, 10)
	pipeCfg := filepath.Join(dir, "pipeline.yml")
	os.WriteFile(pipeCfg, []byte("aggregator:\n  window: 1s\n  lateness: 500ms\n  idle_close: 500ms\n"), 0o644)
	budgets := filepath.Join(dir, "budgets.jsonl")
	os.WriteFile(budgets, []byte(`{"v":1,"campaign":"camp-0","advertiser":"adv-0","daily_micros":15000,"lifetime_micros":0,"timezone":"Europe/Berlin"}`+"\n"), 0o644)
	report := filepath.Join(dir, "verify.json")
	code, out, stderr := runHotpair(t, "replay", "verify", "--recording", rec, "--budgets", budgets, "--baseline", bin, "--candidate", bin,
		"--pipeline-config", pipeCfg, "--qps", "100", "--timeout", "3m", "--json-out", report)
	if code != 0 {
		t.Fatalf("verify exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "verify PASS") || !strings.Contains(out, "outputs: equal within tolerances") {
		t.Fatalf("summary:\n%s", out)
	}
	var rep replay.VerifyReport
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil || !rep.Passed || rep.Play.Released != 30 || rep.BaselineKeys["budget-status"] != 3 ||
		len(rep.Diffs) != 0 || rep.WorkDir != "" {
		t.Fatalf("report: %v\n%s", err, b)
	}
}

func TestReplayRecordCommandPastWindow(t *testing.T) {
	c := kafkatest.Cluster(t)
	brokers := c.ListenAddrs()
	if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: brokers}, 3, 1, kafka.TopicSpec{Name: "ad-events"}); err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, brokers)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 60 {
		r := &kgo.Record{Topic: "ad-events", Key: fmt.Appendf(nil, "camp-%d", i%4), Timestamp: base.Add(time.Duration(i) * time.Second),
			Value: fmt.Appendf(nil, `{"v":1,"advertiser":"adv-%d"}`, i%2)}
		if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "window.hpr")
	code, stdout, stderr := runHotpair(t, "replay", "record", "--brokers", strings.Join(brokers, ","), "--topic", "ad-events",
		"--from", base.Add(10*time.Second).Format(time.RFC3339), "--to", base.Add(40*time.Second).Format(time.RFC3339),
		"--where", "advertiser=adv-1", "-o", out, "--progress", "none")
	if code != 0 {
		t.Fatalf("record exit %d: %s", code, stderr)
	}
	// Seconds 10..39 hold 30 records, 15 of them from adv-1.
	if !strings.Contains(stdout, "recorded 15 records") || !strings.Contains(stdout, "stopped: window") {
		t.Fatalf("record output: %s", stdout)
	}
	in, err := replay.Inspect(out)
	if err != nil || in.Records != 15 || !in.Complete || len(in.Meta.Filters) != 1 || in.Meta.Since.IsZero() {
		t.Fatalf("inspect: %v %+v", err, in)
	}
}
