package compare

import (
	"fmt"
	"time"
)

// Rules are the comparison's alignment, thresholds and minimum data. YAML
// keys are those of the comparator config's top level (docs/dark.md).
type Rules struct {
	// Interval is how often a comparison round runs. Default 5s.
	Interval time.Duration `yaml:"interval" json:"interval"`
	// Settle: a campaign's latest value of an output is compared once it has
	// been unchanged this long on both pipelines (no update in flight).
	// Default 2s: about a fifth of the aggregator window.
	Settle time.Duration `yaml:"settle" json:"settle"`
	// MaxSkew: the two values compared must have been written (updated_at)
	// at most this far apart, so both pipelines applied the same spend
	// window. Default 5s: half the aggregator window, which separates the
	// same window written a little later from the next one.
	MaxSkew time.Duration `yaml:"max_skew" json:"max_skew"`
	// Hold: a difference dark vs live is counted this long after it is
	// found. A budget row with reason gap for its campaign meanwhile (a
	// crashed dispatcher replica's partitions taken over a session timeout
	// later; a dispatcher that restarted) withdraws it when its window
	// began before the row: the dark aggregator closed that window without
	// the copies the gap withheld. 0 counts every difference at once.
	// Default 20s: above a replica's takeover (the dispatcher's
	// group_session_timeout 6s + gap_after 3s + the catch-up).
	Hold time.Duration `yaml:"hold" json:"hold"`
	// Horizon is how far back the verdict looks: points and health samples
	// older than this no longer count. Default 10m.
	Horizon time.Duration `yaml:"horizon" json:"horizon"`
	// Stale: no new comparison of a target for this long makes its verdict
	// "insufficient data" (a dead dark target never passes). Default 1m.
	Stale time.Duration `yaml:"stale" json:"stale"`

	// PacingRateAbs and BidMultiplierRel say when two values of a campaign
	// differ at all (outdiff tolerances). Defaults 0.01 and 0.01.
	PacingRateAbs    float64 `yaml:"pacing_rate_abs" json:"pacing_rate_abs"`
	BidMultiplierRel float64 `yaml:"bid_multiplier_rel" json:"bid_multiplier_rel"`
	// Relative and Absolute are Diffy's thresholds on how often a field
	// differs: a field regresses when raw − noise > Absolute and
	// (raw − noise) / raw > Relative. Defaults 0.20 and 0.03. Budget-status
	// fields are exact instead: any difference the noise does not have on
	// the same campaign in the same round is a regression.
	Relative float64 `yaml:"relative" json:"relative"`
	Absolute float64 `yaml:"absolute" json:"absolute"`
	// MinPoints is how many compared (campaign, update) points each output
	// needs, and MinCampaigns how many distinct campaigns a target needs,
	// before a verdict. Defaults 50 (as Kayenta) and 10.
	MinPoints    int `yaml:"min_points" json:"min_points"`
	MinCampaigns int `yaml:"min_campaigns" json:"min_campaigns"`

	Resources ResourceRules `yaml:"resources" json:"resources"`
}

// ResourceRules judge dark instances' resources against live ones.
type ResourceRules struct {
	// RateTolerance: a dark instance's median input events/s must be within
	// this fraction of a live instance's, or the resources are not judged
	// ("rate mismatch"). Default 0.10.
	RateTolerance float64 `yaml:"rate_tolerance" json:"rate_tolerance"`
	// Confidence of the Mann-Whitney U test (two-sided). Default 0.98.
	Confidence float64 `yaml:"confidence" json:"confidence"`
	// MinSamples is how many instance windows each of dark and live needs.
	// Default 6.
	MinSamples int `yaml:"min_samples" json:"min_samples"`
	// CPUIncrease, MemoryIncrease and LagIncrease are how much higher the
	// dark median may be than the live one, beyond the primary/standby
	// spread. Defaults 0.25 each. LagSlack is added to the lag limit
	// (default 100ms), DeadLetterRateAbs to the dead-letter rate's (0.001).
	CPUIncrease       float64       `yaml:"cpu_increase" json:"cpu_increase"`
	MemoryIncrease    float64       `yaml:"memory_increase" json:"memory_increase"`
	LagIncrease       float64       `yaml:"lag_increase" json:"lag_increase"`
	LagSlack          time.Duration `yaml:"lag_slack" json:"lag_slack"`
	DeadLetterRateAbs float64       `yaml:"dead_letter_rate_abs" json:"dead_letter_rate_abs"`
}

// silence is how long a dark target may write no output while its source
// side writes before it counts as stalled, and the differences held wait
// for it to write again (targetState.release): twice max_skew, an
// aggregator window when max_skew is half a window as recommended. A
// stall must show before a difference found as the target stopped is
// released: at most silence + interval after its last output, against
// settle + hold at least.
func (r Rules) silence() time.Duration { return 2 * r.MaxSkew }

// DefaultRules returns the defaults above.
func DefaultRules() Rules {
	return Rules{
		Interval: 5 * time.Second, Settle: 2 * time.Second, MaxSkew: 5 * time.Second, Hold: 20 * time.Second,
		Horizon: 10 * time.Minute, Stale: time.Minute,
		PacingRateAbs: 0.01, BidMultiplierRel: 0.01, Relative: 0.20, Absolute: 0.03,
		MinPoints: 50, MinCampaigns: 10,
		Resources: ResourceRules{RateTolerance: 0.10, Confidence: 0.98, MinSamples: 6,
			CPUIncrease: 0.25, MemoryIncrease: 0.25, LagIncrease: 0.25, LagSlack: 100 * time.Millisecond, DeadLetterRateAbs: 0.001},
	}
}

// Validate checks every key; an error names it and the fix.
func (r Rules) Validate() error {
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"interval", r.Interval}, {"settle", r.Settle}, {"max_skew", r.MaxSkew}, {"horizon", r.Horizon}, {"stale", r.Stale}} {
		if d.v <= 0 {
			return fmt.Errorf("%w: %s must be above 0 (e.g. %s), got %s", ErrConfig, d.key, defaultOf(d.key), d.v)
		}
	}
	if r.Hold < 0 || r.Hold >= r.Horizon {
		return fmt.Errorf("%w: hold must be at least 0 and under the horizon (e.g. 20s; 0 counts a difference at once), got %s with horizon %s",
			ErrConfig, r.Hold, r.Horizon)
	}
	if r.Horizon < 2*r.Interval || r.Stale < r.Interval {
		return fmt.Errorf("%w: horizon must be at least twice the interval and stale at least the interval (horizon %s, stale %s, interval %s)",
			ErrConfig, r.Horizon, r.Stale, r.Interval)
	}
	for _, f := range []struct {
		key    string
		v, max float64
	}{
		{"pacing_rate_abs", r.PacingRateAbs, 1}, {"bid_multiplier_rel", r.BidMultiplierRel, 1},
		{"relative", r.Relative, 1}, {"absolute", r.Absolute, 1},
		{"resources.rate_tolerance", r.Resources.RateTolerance, 1},
		{"resources.cpu_increase", r.Resources.CPUIncrease, 100}, {"resources.memory_increase", r.Resources.MemoryIncrease, 100},
		{"resources.lag_increase", r.Resources.LagIncrease, 100}, {"resources.dead_letter_rate_abs", r.Resources.DeadLetterRateAbs, 1},
	} {
		if !(f.v >= 0 && f.v <= f.max) {
			return fmt.Errorf("%w: %s must be in [0, %g] (e.g. %s), got %g", ErrConfig, f.key, f.max, defaultOf(f.key), f.v)
		}
	}
	switch {
	case !(r.Resources.Confidence >= 0.5 && r.Resources.Confidence < 1):
		return fmt.Errorf("%w: resources.confidence must be in [0.5, 1) (e.g. 0.98), got %g", ErrConfig, r.Resources.Confidence)
	case r.MinPoints < 1 || r.MinCampaigns < 1:
		return fmt.Errorf("%w: min_points and min_campaigns must be at least 1 (e.g. 50 and 10), got %d and %d", ErrConfig, r.MinPoints, r.MinCampaigns)
	case r.Resources.MinSamples < 3:
		return fmt.Errorf("%w: resources.min_samples must be at least 3 (e.g. 6), got %d", ErrConfig, r.Resources.MinSamples)
	case r.Resources.LagSlack < 0:
		return fmt.Errorf("%w: resources.lag_slack must not be negative (e.g. 100ms), got %s", ErrConfig, r.Resources.LagSlack)
	}
	return nil
}

func defaultOf(key string) string {
	return map[string]string{
		"interval": "5s", "settle": "2s", "max_skew": "5s", "horizon": "10m", "stale": "1m",
		"pacing_rate_abs": "0.01", "bid_multiplier_rel": "0.01", "relative": "0.2", "absolute": "0.03",
		"resources.rate_tolerance": "0.1", "resources.cpu_increase": "0.25", "resources.memory_increase": "0.25",
		"resources.lag_increase": "0.25", "resources.dead_letter_rate_abs": "0.001",
	}[key]
}
