package replay

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/hotpair/hotpair/canary/outdiff"
)

// OutputDiff is one campaign whose output differs between the builds.
type OutputDiff = outdiff.Diff

// compareOutputs compares the outputs of two builds key by key (outdiff,
// shared with the dark canary's comparator): budget status, day and spend
// must be equal; pacing rates within an absolute tolerance; bid multipliers
// within a relative one. A key present on one side only is a difference, and
// so is an output record that does not decode.
func compareOutputs(base, cand outputs, th Thresholds) []OutputDiff {
	diffs := append(slices.Clone(base.Bad), cand.Bad...)
	return append(diffs, outdiff.Compare(base.Outputs, cand.Outputs, th.tolerances())...)
}

// tolerances are the thresholds that say when two output values are equal.
func (t Thresholds) tolerances() outdiff.Tolerances {
	return outdiff.Tolerances{PacingRateAbs: t.PacingRateAbs, BidMultiplierRel: t.BidMultiplierRel}
}

// PerfStats are one pipeline's performance on the recording.
type PerfStats struct {
	// Events is how many ad events the aggregator consumed; DrainTime how
	// long from the first record played until it had consumed them all;
	// Throughput is Events / DrainTime.
	Events     int64         `json:"events"`
	DrainTime  time.Duration `json:"drain_ns"`
	Throughput float64       `json:"throughput"`
	// LagP99 is each stage's event-lag p99 (seconds) over the run, from its
	// hotpair_stage_event_lag_seconds histogram.
	LagP99 map[string]float64 `json:"lag_p99_seconds"`
	// CPUSeconds is the CPU the process used while the recording played and
	// drained (process_cpu_seconds_total).
	CPUSeconds float64 `json:"cpu_seconds"`
	// PeakRSS is the process's peak resident memory (VmHWM; else the largest
	// process_resident_memory_bytes seen).
	PeakRSS int64 `json:"peak_rss_bytes"`
	// SpendEvents is what the aggregator emitted; DeadLetters the bad
	// records all stages sent to the dead-letter topic.
	SpendEvents int64 `json:"spend_events"`
	DeadLetters int64 `json:"dead_letters"`
}

// PerfRegression is one performance figure of the candidate beyond its limit.
type PerfRegression struct {
	Metric    string  `json:"metric"`
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	Limit     float64 `json:"limit"`
	Detail    string  `json:"detail"`
}

// comparePerf checks the candidate's performance against the baseline's.
func comparePerf(base, cand PerfStats, th Thresholds) []PerfRegression {
	var out []PerfRegression
	if limit := base.Throughput * (1 - th.ThroughputDrop); cand.Throughput < limit {
		out = append(out, PerfRegression{"throughput", base.Throughput, cand.Throughput, limit,
			fmt.Sprintf("%.1f events/s, below %.0f%% of the baseline's %.1f", cand.Throughput, 100*(1-th.ThroughputDrop), base.Throughput)})
	}
	for _, stage := range slices.Sorted(maps.Keys(cand.LagP99)) {
		b, c := base.LagP99[stage], cand.LagP99[stage]
		if math.IsNaN(c) {
			continue
		}
		if math.IsNaN(b) {
			b = 0
		}
		if limit := b*(1+th.LagP99Increase) + th.LagP99Slack.Seconds(); c > limit {
			out = append(out, PerfRegression{"lag_p99_seconds/" + stage, b, c, limit,
				fmt.Sprintf("%s event-lag p99 %.3fs, above the limit %.3fs (baseline %.3fs)", stage, c, limit, b)})
		}
	}
	if cand.DeadLetters > base.DeadLetters {
		out = append(out, PerfRegression{"dead_letters", float64(base.DeadLetters), float64(cand.DeadLetters), float64(base.DeadLetters),
			fmt.Sprintf("%d records dead-lettered, the baseline %d", cand.DeadLetters, base.DeadLetters)})
	}
	if limit := base.CPUSeconds*(1+th.CPUIncrease) + th.CPUSlackSeconds; cand.CPUSeconds > limit {
		out = append(out, PerfRegression{"cpu_seconds", base.CPUSeconds, cand.CPUSeconds, limit,
			fmt.Sprintf("%.2f CPU seconds, above the limit %.2f (baseline %.2f)", cand.CPUSeconds, limit, base.CPUSeconds)})
	}
	if limit := float64(base.PeakRSS)*(1+th.MemoryIncrease) + th.MemorySlackMiB*(1<<20); float64(cand.PeakRSS) > limit {
		out = append(out, PerfRegression{"peak_rss_bytes", float64(base.PeakRSS), float64(cand.PeakRSS), limit,
			fmt.Sprintf("peak RSS %.1f MiB, above the limit %.1f MiB (baseline %.1f MiB)",
				float64(cand.PeakRSS)/(1<<20), limit/(1<<20), float64(base.PeakRSS)/(1<<20))})
	}
	return out
}
