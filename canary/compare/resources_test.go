package compare

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

func TestMannWhitney(t *testing.T) {
	// 5 against 5, fully separated: U = 0; the normal approximation with
	// continuity correction gives p = 0.0122 (the exact test 0.0079).
	if p := mannWhitneyP([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}); math.Abs(p-0.01219) > 1e-4 {
		t.Fatalf("separated: p %v, want 0.0122", p)
	}
	if p := mannWhitneyP([]float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10}); p < 0.5 {
		t.Fatalf("interleaved: p %v, want large", p)
	}
	if p := mannWhitneyP([]float64{2, 2, 2}, []float64{2, 2, 2}); p != 1 {
		t.Fatalf("all tied: p %v, want 1", p)
	}
}

// sample is one instance's health window with the given figures.
func sample(stage contract.Stage, side contract.Side, inst string, i int, events int64, cpu float64, rss int64, lagMs int64) contract.HealthSample {
	s := contract.HealthSample{V: 1, Service: stage, Side: side, Role: contract.RoleLive, Instance: inst,
		WindowStart: t0.Add(time.Duration(i) * 5 * time.Second), WindowEnd: t0.Add(time.Duration(i+1) * 5 * time.Second),
		Events: events, Resources: &contract.InstanceResources{CPUSeconds: cpu, RSSBytes: rss}}
	for range events {
		s.LagMs.Observe(lagMs)
	}
	return s
}

// costs are an instance's figures per window: events, CPU seconds, RSS MiB, lag ms.
type costs struct {
	events int64
	cpu    float64
	rssMiB int64
	lagMs  int64
}

// resourceEngine feeds 8 windows of 2 instances per pipeline.
func resourceEngine(live, dark costs) *Engine {
	e := NewEngine(DefaultRules())
	e.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
	for i := range 8 {
		j := 1 + float64(i%3-1)*0.02 // ±2% between windows
		for n := range 2 {
			inst := fmt.Sprintf("i-%d", n)
			for _, side := range contract.Sides() {
				e.ObserveHealth(Live(side), sample(contract.StageAggregator, side, inst, i, live.events, live.cpu*j, live.rssMiB<<20, live.lagMs), t0)
			}
			e.ObserveHealth(Dark("cand"), sample(contract.StageAggregator, contract.Primary, inst, i, dark.events, dark.cpu*j, dark.rssMiB<<20, dark.lagMs), t0)
		}
	}
	return e
}

func TestResources(t *testing.T) {
	base := costs{events: 5000, cpu: 0.5, rssMiB: 200, lagMs: 20}
	tests := []struct {
		name   string
		dark   costs
		want   Verdict
		metric string
	}{
		{"same costs", base, Pass, ""},
		{"10% more CPU is within the allowance", costs{5000, 0.55, 200, 20}, Pass, ""},
		{"twice the CPU per event", costs{5000, 1.0, 200, 20}, Regression, "cpu_seconds_per_1k_events"},
		{"twice the memory", costs{5000, 0.5, 400, 20}, Regression, "rss_bytes"},
		{"lags more", costs{5000, 0.5, 200, 2000}, Regression, "event_lag_p99_seconds"},
		{"a quarter of the rate", costs{1250, 0.5, 200, 20}, RateMismatch, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := resourceEngine(base, tt.dark)
			rr := e.resources(e.targets["cand"])
			if rr.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s; reasons %v", rr.Verdict, tt.want, rr.Reasons)
			}
			if tt.metric != "" {
				reason := strings.Join(rr.Reasons, "\n")
				if !strings.Contains(reason, "aggregator "+tt.metric+": dark ") || !strings.Contains(reason, ", live ") {
					t.Fatalf("reason does not give both figures of %s: %s", tt.metric, reason)
				}
			}
		})
	}
	// A costlier candidate fails its target even with equal outputs.
	e := resourceEngine(base, costs{5000, 1.0, 200, 20})
	for i := range 60 {
		for _, src := range []Source{Live(contract.Primary), Live(contract.Standby), Dark("cand")} {
			write(t, e, src, fmt.Sprintf("c-%02d", i), goodRow(), t0)
		}
	}
	e.Round(t0.Add(5 * time.Second))
	rep := e.Report(t0.Add(5 * time.Second))
	if rep.Verdict != Regression || !strings.Contains(strings.Join(rep.Targets[0].Reasons, "\n"), "resources: aggregator cpu_seconds_per_1k_events: dark 0.2000 CPU-s/1k ev, live 0.1000") {
		t.Fatalf("verdict %s %v", rep.Verdict, rep.Targets[0].Reasons)
	}
}

func TestResourcesNoiseSpread(t *testing.T) {
	// The standby needs 60% more CPU than the primary for the same work: a
	// candidate 60% above the primary is within the live sides' own spread.
	e := NewEngine(DefaultRules())
	e.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
	for i := range 8 {
		for n := range 2 {
			inst := fmt.Sprintf("i-%d", n)
			e.ObserveHealth(Live(contract.Primary), sample(contract.StageAggregator, contract.Primary, inst, i, 5000, 0.5, 100<<20, 10), t0)
			e.ObserveHealth(Live(contract.Standby), sample(contract.StageAggregator, contract.Standby, inst, i, 5000, 0.8, 100<<20, 10), t0)
			e.ObserveHealth(Dark("cand"), sample(contract.StageAggregator, contract.Primary, inst, i, 5000, 0.8, 100<<20, 10), t0)
		}
	}
	if rr := e.resources(e.targets["cand"]); rr.Verdict != Pass {
		t.Fatalf("within the noise: %s %v", rr.Verdict, rr.Reasons)
	}
	// Too few windows: no judgement.
	e = NewEngine(DefaultRules())
	e.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
	e.ObserveHealth(Dark("cand"), sample(contract.StageAggregator, contract.Primary, "i", 0, 5000, 5, 100<<20, 10), t0)
	if rr := e.resources(e.targets["cand"]); rr.Verdict != InsufficientData {
		t.Fatalf("one window: %s", rr.Verdict)
	}
}
