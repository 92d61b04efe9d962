package core

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// BenchmarkEvaluation measures one evaluation window of 3 services × 2
// sides × 200 instances (12 samples each per 2-minute window: 14,400
// samples): observing every sample, then Tick (verdicts, decisions, stagger).
// The baseline, measured in the same iterations, is the least any merge must
// do: one pass over the samples adding events and lag histograms. Metrics:
//
//	window-us    observe + tick, per window
//	tick-us      Tick alone
//	baseline-us  the bare merge pass
//	x-baseline   window-us / baseline-us
func BenchmarkEvaluation(b *testing.B) {
	cfg := DefaultConfig()
	const instances, partitions = 200, 400
	var samples []contract.HealthSample
	for _, svc := range contract.Services() {
		for _, side := range contract.Sides() {
			f := healthyFleet(svc.Stage(), side)
			f.instances, f.partitions, f.qps = instances, partitions, 20_000
			for ws := t0; ws.Before(t0.Add(cfg.Window)); ws = ws.Add(cfg.Rules.SampleInterval) {
				samples = append(samples, f.samples(ws, ws.Add(cfg.Rules.SampleInterval))...)
			}
		}
	}
	e, err := NewEngine(cfg, t0)
	if err != nil {
		b.Fatal(err)
	}
	var window, tick, base time.Duration
	var sink int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		shift := time.Duration(i) * cfg.Window
		start := time.Now()
		var events int64
		var lag contract.LagHistogram
		for j := range samples {
			events += samples[j].Events
			lag.Merge(&samples[j].LagMs)
		}
		sink += events + lag.Total()
		t1 := time.Now()
		for j := range samples {
			s := &samples[j]
			if i > 0 {
				s.WindowStart, s.WindowEnd = s.WindowStart.Add(cfg.Window), s.WindowEnd.Add(cfg.Window)
			}
			e.Observe(s, s.WindowEnd.Add(-time.Millisecond))
		}
		t2 := time.Now()
		if _, err := e.Tick(t0.Add(shift+cfg.Window), nil); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		base += t1.Sub(start)
		window += t3.Sub(t1)
		tick += t3.Sub(t2)
	}
	if c := e.Counters(); c.Merged != uint64(b.N*len(samples)) {
		b.Fatalf("merged %d of %d samples", c.Merged, b.N*len(samples))
	}
	n := float64(b.N)
	b.ReportMetric(float64(window.Microseconds())/n, "window-us")
	b.ReportMetric(float64(tick.Microseconds())/n, "tick-us")
	b.ReportMetric(float64(base.Microseconds())/n, "baseline-us")
	b.ReportMetric(float64(window)/float64(base), "x-baseline")
	if sink == 0 {
		b.Fatal("baseline optimised away")
	}
}
