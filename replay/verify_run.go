package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// perfSample is one scrape of a pipeline during the play.
type perfSample struct {
	at     time.Time
	events float64 // aggregator input records so far
	rss    float64
}

// sampleInterval is how often verify scrapes the pipelines while the
// recording plays and drains: the resolution of the drain time.
const sampleInterval = 100 * time.Millisecond

// play plays the recording into both pipelines' ad-events topics in
// lockstep, then waits until both aggregators consumed every record.
func (v *Verifier) play(ctx context.Context, sides []*verifySide) error {
	for _, s := range sides {
		m, err := scrapeMetrics(ctx, s.proc.httpAddr)
		if err != nil {
			return fmt.Errorf("replay: verify: %s /metrics: %w", s.name, err)
		}
		s.cpuAtPlay = m.sum(metricCPU, nil)
	}
	po := PlayerOptions{Recording: v.o.Recording, QPS: v.o.QPS, Percent: v.o.Percent, Unpaced: v.o.Unpaced,
		Filter: v.o.Filter, Logger: v.log}
	if !v.o.KeepEventTime {
		po.SetTimeField = "ts"
	}
	for _, s := range sides {
		po.Targets = append(po.Targets, Target{Brokers: s.cluster.Brokers, KafkaAuth: s.cluster.Auth, Topic: v.topics.AdEvents})
	}
	p, err := NewPlayer(po)
	if err != nil {
		return err
	}
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); v.sample(sctx, sides) }()
	playStart := time.Now()
	v.log.Info("replay verify: playing", "recording", v.o.Recording)
	err = p.Run(ctx)
	v.report.Play = p.Report()
	if err != nil {
		stopSampling()
		<-sampled
		return err
	}
	want := float64(v.report.Play.Released)
	err = poll(ctx, sides, sampleInterval, "for both pipelines to consume the recording", func() (bool, error) {
		for _, s := range sides {
			m, err := scrapeMetrics(ctx, s.proc.httpAddr)
			if err != nil || m.sum(metricStageEvents, map[string]string{"service": contract.StageAggregator.String()}) < want {
				return false, nil
			}
		}
		return true, nil
	})
	stopSampling()
	<-sampled
	if err != nil {
		return err
	}
	for _, s := range sides {
		s.perf.Events = v.report.Play.Released
		s.perf.DrainTime = drainTime(s.samples, want, playStart)
		if s.perf.DrainTime > 0 {
			s.perf.Throughput = want / s.perf.DrainTime.Seconds()
		}
	}
	v.log.Info("replay verify: both pipelines consumed the recording", "records", v.report.Play.Released)
	return nil
}

// sample scrapes both pipelines every sampleInterval until ctx ends; it is
// the only writer of the sides' samples until it returns.
func (v *Verifier) sample(ctx context.Context, sides []*verifySide) {
	t := time.NewTicker(sampleInterval)
	defer t.Stop()
	for {
		for _, s := range sides {
			if m, err := scrapeMetrics(ctx, s.proc.httpAddr); err == nil {
				s.samples = append(s.samples, perfSample{at: time.Now(),
					events: m.sum(metricStageEvents, map[string]string{"service": contract.StageAggregator.String()}),
					rss:    m.sum(metricRSS, nil)})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// drainTime returns how long after start the first sample saw want events
// (the last sample's time when none did: the final poll confirmed it).
func drainTime(samples []perfSample, want float64, start time.Time) time.Duration {
	for _, s := range samples {
		if s.events >= want {
			return s.at.Sub(start)
		}
	}
	if len(samples) == 0 {
		return time.Since(start)
	}
	return samples[len(samples)-1].at.Sub(start) + sampleInterval
}

// settle waits until both pipelines drained — the aggregator has no open
// window (hotpair_stage_pending_wakeups) and every service consumed every
// spend event the aggregator emitted — and their spend and output topics
// stayed unchanged for the quiet time. A build without the pending-wakeups
// metric gets the long, blind quiet time instead.
func (v *Verifier) settle(ctx context.Context, sides []*verifySide) error {
	topics := append([]string{v.topics.Spend}, outputTopics(v.topics)...)
	last := make([]int64, len(sides))
	changed := time.Now()
	v.log.Info("replay verify: waiting for the outputs to settle")
	return poll(ctx, sides, 250*time.Millisecond, "for the outputs to settle", func() (bool, error) {
		quiet := v.quietDrained
		for i, s := range sides {
			m, err := scrapeMetrics(ctx, s.proc.httpAddr)
			if err != nil {
				return false, nil
			}
			drained, known := v.drained(m)
			if !drained {
				changed = time.Now() // the quiet time counts from the last moment not drained
				return false, nil
			}
			if !known {
				quiet = v.quietBlind
			}
			n, err := endOffsetTotal(ctx, s.adm, topics...)
			if err != nil {
				return false, nil
			}
			if n != last[i] {
				last[i], changed = n, time.Now()
			}
		}
		return time.Since(changed) >= quiet, nil
	})
}

// drained reports whether a pipeline has no open aggregation window and its
// services consumed all the spend its aggregator emitted; known is false when
// the pipeline does not expose its open windows.
func (v *Verifier) drained(m metricsSnapshot) (drained, known bool) {
	agg := map[string]string{"service": contract.StageAggregator.String()}
	spend := m.sum(metricStageOutputs, agg)
	for _, stage := range contract.Services() {
		if slices.Contains(v.pipeCfg.Stages, stage.String()) && m.sum(metricStageEvents, map[string]string{"service": stage.String()}) < spend {
			return false, true
		}
	}
	if m[metricPendingWakes] == nil {
		return true, false
	}
	return m.sum(metricPendingWakes, agg) == 0, true
}

// finalMetrics takes each pipeline's event-lag p99s, CPU and peak memory.
func (v *Verifier) finalMetrics(ctx context.Context, sides []*verifySide) error {
	for _, s := range sides {
		m, err := scrapeMetrics(ctx, s.proc.httpAddr)
		if err != nil {
			return fmt.Errorf("replay: verify: %s /metrics: %w", s.name, err)
		}
		s.perf.LagP99 = map[string]float64{}
		for _, stage := range m.labelValues(metricStageLag, "service") {
			if q := quantile(0.99, m.histogram(metricStageLag, map[string]string{"service": stage})); !math.IsNaN(q) {
				s.perf.LagP99[stage] = q
			}
		}
		s.perf.CPUSeconds = m.sum(metricCPU, nil) - s.cpuAtPlay
		s.perf.SpendEvents = int64(m.sum(metricStageOutputs, map[string]string{"service": contract.StageAggregator.String()}))
		s.perf.DeadLetters = int64(m.sum(metricDeadLetters, nil))
		if rss, ok := s.proc.peakRSS(); ok {
			s.perf.PeakRSS = rss
		} else {
			peak := m.sum(metricRSS, nil)
			for _, smp := range s.samples {
				peak = max(peak, smp.rss)
			}
			s.perf.PeakRSS = int64(peak)
		}
	}
	if base := sides[0]; v.report.Play.Released > 0 && base.perf.SpendEvents == 0 {
		return fmt.Errorf("replay: verify: the baseline emitted no spend from %d ad events (%d dead letters): "+
			"nothing to compare; check the recording with hotpair replay inspect and the log %s",
			v.report.Play.Released, base.perf.DeadLetters, base.proc.logPath)
	}
	return nil
}

// compare fills the report and returns ErrRegression on any difference.
func (v *Verifier) compare(base, cand *verifySide) error {
	r := &v.report
	r.BaselinePerf, r.CandidatePerf = base.perf, cand.perf
	r.BaselineKeys, r.CandidateKeys = keyCounts(base.out), keyCounts(cand.out)
	r.Diffs = compareOutputs(base.out, cand.out, v.o.Thresholds)
	for _, d := range r.Diffs {
		if !slices.Contains(r.DifferingKeys, d.Key) {
			r.DifferingKeys = append(r.DifferingKeys, d.Key)
		}
	}
	slices.Sort(r.DifferingKeys)
	r.PerfRegressions = comparePerf(base.perf, cand.perf, v.o.Thresholds)
	r.Passed = len(r.Diffs) == 0 && len(r.PerfRegressions) == 0
	if r.Passed {
		return nil
	}
	var errs []error
	if len(r.Diffs) > 0 {
		errs = append(errs, fmt.Errorf("%w: outputs differ for %d campaigns: %s", ErrRegression, len(r.DifferingKeys), keyList(r.DifferingKeys, 10)))
	}
	for _, p := range r.PerfRegressions {
		errs = append(errs, fmt.Errorf("%w: %s", ErrRegression, p.Detail))
	}
	return errors.Join(errs...)
}

func keyCounts(o outputs) map[string]int {
	return map[string]int{"budget-status": len(o.Status), "pacing": len(o.Pacing), "bid-multipliers": len(o.Bid)}
}

// keyList prints at most n keys, and how many more there are.
func keyList(keys []string, n int) string {
	if len(keys) <= n {
		return fmt.Sprint(keys)
	}
	return fmt.Sprintf("%v and %d more", keys[:n], len(keys)-n)
}
