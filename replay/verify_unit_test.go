package replay

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const metricsText = `# TYPE hotpair_stage_event_lag_seconds histogram
hotpair_stage_event_lag_seconds_bucket{role="live",service="aggregator",side="primary",le="0.01"} 50
hotpair_stage_event_lag_seconds_bucket{role="live",service="aggregator",side="primary",le="0.1"} 90
hotpair_stage_event_lag_seconds_bucket{role="live",service="aggregator",side="primary",le="1"} 100
hotpair_stage_event_lag_seconds_bucket{role="live",service="aggregator",side="primary",le="+Inf"} 100
hotpair_stage_event_lag_seconds_sum{role="live",service="aggregator",side="primary"} 3
hotpair_stage_event_lag_seconds_count{role="live",service="aggregator",side="primary"} 100
hotpair_stage_event_lag_seconds_bucket{role="live",service="budget",side="primary",le="0.01"} 0
hotpair_stage_event_lag_seconds_bucket{role="live",service="budget",side="primary",le="0.1"} 0
hotpair_stage_event_lag_seconds_bucket{role="live",service="budget",side="primary",le="1"} 0
hotpair_stage_event_lag_seconds_bucket{role="live",service="budget",side="primary",le="+Inf"} 10
hotpair_stage_event_lag_seconds_sum{role="live",service="budget",side="primary"} 100
hotpair_stage_event_lag_seconds_count{role="live",service="budget",side="primary"} 10
# TYPE hotpair_stage_events_total counter
hotpair_stage_events_total{role="live",service="aggregator",side="primary"} 100
hotpair_stage_events_total{role="live",service="budget",side="primary"} 7
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.5
`

func parseMetrics(t *testing.T, text string) metricsSnapshot {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

func TestMetricsSumAndLagQuantile(t *testing.T) {
	m := parseMetrics(t, metricsText)
	if got := m.sum(metricStageEvents, map[string]string{"service": "aggregator"}); got != 100 {
		t.Errorf("aggregator events %v, want 100", got)
	}
	if got := m.sum(metricStageEvents, nil); got != 107 {
		t.Errorf("all events %v, want 107", got)
	}
	if got := m.sum(metricCPU, nil); got != 1.5 {
		t.Errorf("cpu %v", got)
	}
	// 99th of 100 samples: the 9th of the 10 in (0.1, 1].
	if got := quantile(0.99, m.histogram(metricStageLag, map[string]string{"service": "aggregator"})); math.Abs(got-0.91) > 1e-9 {
		t.Errorf("aggregator p99 %v, want 0.91", got)
	}
	if got := quantile(0.5, m.histogram(metricStageLag, map[string]string{"service": "aggregator"})); got != 0.01 {
		t.Errorf("aggregator p50 %v, want 0.01", got)
	}
	// Everything past the last bound: the last bound is all we can say.
	if got := quantile(0.99, m.histogram(metricStageLag, map[string]string{"service": "budget"})); got != 1 {
		t.Errorf("budget p99 %v, want 1", got)
	}
	if got := quantile(0.99, m.histogram(metricStageLag, map[string]string{"service": "pacer"})); !math.IsNaN(got) {
		t.Errorf("p99 without samples %v, want NaN", got)
	}
	if got := m.labelValues(metricStageLag, "service"); strings.Join(got, ",") != "aggregator,budget" {
		t.Errorf("stages %v", got)
	}
}

func TestCompareOutputs(t *testing.T) {
	th := DefaultThresholds()
	st := func(status string, today int64) contract.BudgetStatus {
		return contract.BudgetStatus{Status: status, Day: "2026-11-30", SpentTodayMicros: today, SpentLifetimeMicros: today}
	}
	base := outputs{Outputs: outdiff.Outputs{
		Status: map[string]contract.BudgetStatus{"a": st("active", 5), "b": st("active", 5), "c": st("active", 5), "gone": st("active", 1)},
		Pacing: map[string]contract.Pacing{"a": {Rate: 0.5}, "b": {Rate: 0.5}},
		Bid:    map[string]contract.BidMultiplier{"a": {Multiplier: 1.0}, "b": {Multiplier: 1.0}},
	}}
	cand := outputs{Outputs: outdiff.Outputs{
		Status: map[string]contract.BudgetStatus{"a": st("active", 5), "b": st("daily_capped", 5), "c": st("active", 6), "new": st("active", 1)},
		Pacing: map[string]contract.Pacing{"a": {Rate: 0.54}, "b": {Rate: 0.56}},
		Bid:    map[string]contract.BidMultiplier{"a": {Multiplier: 1.04}, "b": {Multiplier: 0.9}},
	}}
	var got []string
	for _, d := range compareOutputs(base, cand, th) {
		got = append(got, d.Output+"/"+d.Key+"/"+d.Field+":"+d.Baseline+">"+d.Candidate)
	}
	want := []string{
		"budget-status/b/status:active>daily_capped",
		"budget-status/c/spent_today_micros:5>6",
		"budget-status/c/spent_lifetime_micros:5>6",
		"budget-status/gone/key:present>missing",
		"budget-status/new/key:missing>present",
		"pacing/b/rate:0.5>0.56",
		"bid-multipliers/b/multiplier:1>0.9",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("diffs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := compareOutputs(base, base, th); len(d) != 0 {
		t.Fatalf("a build differs from itself: %+v", d)
	}
}

func TestComparePerf(t *testing.T) {
	th := DefaultThresholds() // throughput -20%; lag ×1.5 + 250ms; CPU ×1.5 + 2s; RSS ×1.5 + 64 MiB
	base := PerfStats{Throughput: 1000, LagP99: map[string]float64{"aggregator": 0.1, "budget": 0.2}, CPUSeconds: 10, PeakRSS: 100 << 20}
	tests := []struct {
		name string
		cand PerfStats
		want string
	}{
		{"same", base, ""},
		{"within every limit", PerfStats{Throughput: 801, LagP99: map[string]float64{"aggregator": 0.39, "budget": 0.54}, CPUSeconds: 16.9, PeakRSS: 213 << 20}, ""},
		{"slower", PerfStats{Throughput: 799, LagP99: base.LagP99, CPUSeconds: 10, PeakRSS: 100 << 20}, "throughput"},
		{"lagging stage", PerfStats{Throughput: 1000, LagP99: map[string]float64{"aggregator": 0.1, "budget": 0.56}, CPUSeconds: 10, PeakRSS: 100 << 20}, "lag_p99_seconds/budget"},
		{"more CPU", PerfStats{Throughput: 1000, LagP99: base.LagP99, CPUSeconds: 17.1, PeakRSS: 100 << 20}, "cpu_seconds"},
		{"more memory", PerfStats{Throughput: 1000, LagP99: base.LagP99, CPUSeconds: 10, PeakRSS: 215 << 20}, "peak_rss_bytes"},
		{"more dead letters", PerfStats{Throughput: 1000, LagP99: base.LagP99, CPUSeconds: 10, PeakRSS: 100 << 20, DeadLetters: 1}, "dead_letters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range comparePerf(base, tt.cand, th) {
				got = append(got, r.Metric)
			}
			if strings.Join(got, ",") != tt.want {
				t.Fatalf("regressions %v, want %q", got, tt.want)
			}
		})
	}
}

func TestVerifyConfig(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good.yml")
	os.WriteFile(good, []byte("thresholds:\n  pacing_rate_abs: 0.1\n  lag_p99_slack: 1s\nsettle: 20s\n"), 0o644)
	c, err := LoadVerifyConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.Thresholds.PacingRateAbs != 0.1 || c.Thresholds.LagP99Slack != time.Second || c.Settle != 20*time.Second ||
		c.Thresholds.BidMultiplierRel != DefaultThresholds().BidMultiplierRel {
		t.Fatalf("config %+v", c)
	}
	// One file per rejected case; the error names the key.
	for file, key := range map[string]string{
		"bad-unknown-key.yml":        "thresholds.pacing_rate",
		"bad-pacing-over-one.yml":    "thresholds.pacing_rate_abs",
		"bad-negative-cpu.yml":       "thresholds.cpu_increase",
		"bad-throughput-drop.yml":    "thresholds.throughput_drop",
		"bad-negative-settle.yml":    "settle",
		"bad-duration-no-unit.yml":   `key timeout (line 1): "600" is not a duration`,
		"bad-negative-lag-slack.yml": "thresholds.lag_p99_slack",
	} {
		_, err := LoadVerifyConfig(filepath.Join("testdata", file))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: got %v, want an error naming %s", file, err, key)
		}
	}
}

func TestNewVerifierRejects(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hotpair")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	notExec := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(notExec, nil, 0o644)
	for name, o := range map[string]VerifyOptions{
		"no recording":        {Baseline: bin, Candidate: bin},
		"no candidate":        {Recording: "r.hpr", Baseline: bin},
		"not executable":      {Recording: "r.hpr", Baseline: bin, Candidate: notExec},
		"missing binary":      {Recording: "r.hpr", Baseline: bin, Candidate: bin + "-nope"},
		"two paces":           {Recording: "r.hpr", Baseline: bin, Candidate: bin, QPS: 10, Unpaced: true},
		"bad threshold":       {Recording: "r.hpr", Baseline: bin, Candidate: bin, Thresholds: Thresholds{PacingRateAbs: 2}},
		"bad pipeline config": {Recording: "r.hpr", Baseline: bin, Candidate: bin, PipelineConfig: filepath.Join("testdata", "bad-unknown-key.yml")},
	} {
		if _, err := NewVerifier(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, _, err := loadBudgets(filepath.Join("testdata", "bad-budgets.jsonl")); err == nil || !strings.Contains(err.Error(), ":2:") ||
		contract.ReasonOf(err) != contract.ReasonNegativeAmount {
		t.Errorf("bad budgets: %v, want a negative_amount error naming line 2", err)
	}
}
