package compare

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/canary/compare/comparetest"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// fastRules compare within moments: rounds every 100ms, values settled
// after 200ms, a missing value after 1.4s; 30 campaigns written twice give
// 60 points.
func fastRules() Rules {
	r := DefaultRules()
	r.Interval, r.Settle, r.MaxSkew, r.Horizon, r.Stale = 100*time.Millisecond, 200*time.Millisecond, 500*time.Millisecond, time.Minute, 30*time.Second
	return r
}

func startComparator(t *testing.T, p *comparetest.Pipelines) (*Comparator, *prometheus.Registry) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Rules = fastRules()
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Clusters.Primary.Brokers = p.Primary.ListenAddrs()
	cfg.Clusters.Standby.Brokers = p.Standby.ListenAddrs()
	cfg.Targets = []TargetConfig{{Name: p.Target, Source: "primary", KafkaCluster: contract.KafkaCluster{Brokers: p.Dark.ListenAddrs()}}}
	reg := prometheus.NewRegistry()
	return runComparator(t, Options{Config: cfg, Registerer: reg}), reg
}

// runComparator runs a comparator of o until the test ends.
func runComparator(t *testing.T, o Options) *Comparator {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return c
}

// settle waits until the report has compared want points of every output.
func settle(t *testing.T, c *Comparator, want int) Report {
	t.Helper()
	return settleOutputs(t, c, want, outputs, nil)
}

// settleOutputs waits until the report has compared want points of each of
// outs and also holds, when set.
func settleOutputs(t *testing.T, c *Comparator, want int, outs []string, also func(Report) bool) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.Until(ctx, func(r Report) bool {
		if len(r.Targets) == 0 {
			return false
		}
		for _, o := range outs {
			if r.Targets[0].Points[o] < want {
				return false
			}
		}
		return also == nil || also(r)
	})
	if err != nil {
		t.Fatalf("the comparator did not compare %d points of %v: %v; report %+v", want, outs, err, c.Report().Targets)
	}
	return c.Report()
}

// writeTwice samples n campaigns (their rows on the target's budgets) and
// writes two updates of them: the first before the comparator starts (its
// readers start at the horizon, so they find them), the second once the
// first was compared. It returns the report once it holds both and every
// sampled campaign.
func writeTwice(t *testing.T, p *comparetest.Pipelines, n int, change func(string, int, comparetest.Row) comparetest.Row, start func() *Comparator) (*Comparator, Report) {
	t.Helper()
	p.Sample(t, n)
	p.Write(t, n, change)
	c := start()
	settle(t, c, n)
	p.Write(t, n, func(pipeline string, i int, r comparetest.Row) comparetest.Row {
		r.Spent += 1000
		if change != nil {
			return change(pipeline, i, r)
		}
		return r
	})
	return c, settleOutputs(t, c, 2*n, outputs, func(r Report) bool { return r.Targets[0].Sampled == n })
}

func TestComparatorOnThreeClusters(t *testing.T) {
	t.Run("equal outputs pass", func(t *testing.T) {
		p := comparetest.Start(t, "cand")
		var reg *prometheus.Registry
		c, rep := writeTwice(t, p, 30, nil, func() (c *Comparator) { c, reg = startComparator(t, p); return c })
		if rep.Verdict != Pass {
			t.Fatalf("verdict %s, reasons %v", rep.Verdict, rep.Targets[0].Reasons)
		}
		if got := gaugeValue(t, reg, "hotpair_dark_verdict", "target", "cand", "verdict", "pass"); got != 1 {
			t.Fatalf("hotpair_dark_verdict{verdict=pass} = %v", got)
		}
		// The API answers the same report.
		resp, err := http.Get("http://" + c.HTTPAddr() + "/api/v1/dark")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var api Report
		if err := json.NewDecoder(resp.Body).Decode(&api); err != nil || api.Verdict != Pass || api.Targets[0].Campaigns != 30 {
			t.Fatalf("GET /api/v1/dark: %v %+v", err, api)
		}
		page, err := http.Get("http://" + c.HTTPAddr() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer page.Body.Close()
		html, _ := io.ReadAll(page.Body)
		if !strings.Contains(string(html), `id="dark-verdict">pass<`) || !strings.Contains(string(html), `id="dark-cand"`) {
			t.Fatalf("the page does not show the verdict:\n%s", html)
		}
	})
	t.Run("a changed rule on some campaigns regresses", func(t *testing.T) {
		p := comparetest.Start(t, "cand")
		_, rep := writeTwice(t, p, 30, func(pipeline string, i int, r comparetest.Row) comparetest.Row {
			if pipeline == "dark" && i%6 == 0 {
				r.Rate = 0.9
			}
			return r
		}, func() *Comparator { c, _ := startComparator(t, p); return c })
		if rep.Verdict != Regression {
			t.Fatalf("verdict %s, reasons %v", rep.Verdict, rep.Targets[0].Reasons)
		}
		reasons := strings.Join(rep.Targets[0].Reasons, "\n")
		for _, want := range []string{"pacing rate", "c-000 live 0.5 dark 0.9", "c-024 live 0.5 dark 0.9"} {
			if !strings.Contains(reasons, want) {
				t.Errorf("reasons do not name %q:\n%s", want, reasons)
			}
		}
	})
	t.Run("sampled campaigns missing on the dark target regress", func(t *testing.T) {
		p := comparetest.Start(t, "cand")
		p.Sample(t, 30)
		c, reg := startComparator(t, p)
		// Every pipeline writes a window every 300 ms, as live ones do; the
		// candidate writes nothing for c-000, c-010 and c-020. A value is
		// missing once the candidate has gone on writing the others for the
		// grace (900 ms here) past it.
		deadline := time.Now().Add(30 * time.Second)
		for spent := int64(5000); ; spent += 1000 {
			p.Write(t, 30, func(pipeline string, i int, r comparetest.Row) comparetest.Row {
				r.Spent = spent
				r.Skip = pipeline == "dark" && i%10 == 0
				return r
			})
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err := c.Until(ctx, func(r Report) bool { return r.Verdict == Regression })
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no regression within 30s: %+v", c.Report().Targets[0])
			}
		}
		tr := c.Report().Targets[0]
		reasons := strings.Join(tr.Reasons, "\n")
		for _, want := range []string{"budget-status status", "c-000 live active dark missing", "c-010 live active dark missing", "c-020 live active dark missing"} {
			if !strings.Contains(reasons, want) {
				t.Errorf("reasons do not name %q:\n%s", want, reasons)
			}
		}
		if tr.Sampled != 30 {
			t.Errorf("sampled %d, want 30", tr.Sampled)
		}
		if got := gaugeValue(t, reg, "hotpair_dark_missing_campaigns", "target", "cand", "output", "budget-status"); got != 3 {
			t.Errorf("hotpair_dark_missing_campaigns{output=budget-status} = %v, want 3", got)
		}
	})
}

// A candidate with equal outputs that needs twice the CPU per event fails
// on its health samples, with the figures side by side; the same costs pass.
func TestComparatorResourcesOnThreeClusters(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cpu     float64
		verdict Verdict
	}{{"same costs", 0.5, Pass}, {"twice the CPU", 1.0, Regression}} {
		t.Run(tt.name, func(t *testing.T) {
			p := comparetest.Start(t, "cand")
			live := comparetest.Cost{Events: 5000, CPU: 0.5, RSSMiB: 200, LagMs: 20}
			dark := live
			dark.CPU = tt.cpu
			p.WriteHealth(t, 8, 2, live, dark)
			var reg *prometheus.Registry
			c, _ := writeTwice(t, p, 30, nil, func() (c *Comparator) { c, reg = startComparator(t, p); return c })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.Until(ctx, func(r Report) bool { return r.Targets[0].Resources.Verdict != InsufficientData }); err != nil {
				t.Fatalf("the health samples were not judged: %v", c.Report().Targets[0].Resources)
			}
			rep := c.Report()
			if rep.Verdict != tt.verdict {
				t.Fatalf("verdict %s, want %s: %v", rep.Verdict, tt.verdict, rep.Targets[0].Reasons)
			}
			if tt.verdict == Regression {
				reasons := strings.Join(rep.Targets[0].Reasons, "\n")
				if !strings.Contains(reasons, "aggregator cpu_seconds_per_1k_events: dark 0.2000 CPU-s/1k ev, live 0.1000 CPU-s/1k ev") {
					t.Fatalf("reasons lack the figures side by side:\n%s", reasons)
				}
				if got := gaugeValue(t, reg, "hotpair_dark_resource_ratio", "target", "cand", "stage", "aggregator", "metric", "cpu_seconds_per_1k_events"); got < 1.9 || got > 2.1 {
					t.Fatalf("hotpair_dark_resource_ratio %v, want 2", got)
				}
			}
		})
	}
}

// gaugeValue is the value of the series name{labels} (name, value pairs).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	v, ok := metricvalue.Get(reg, name, labels...)
	if !ok {
		t.Fatalf("no %s%v", name, labels)
	}
	return v
}
