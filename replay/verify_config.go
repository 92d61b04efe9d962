package replay

import (
	"fmt"
	"time"

	"github.com/hotpair/hotpair/internal/yamlconf"
)

// Thresholds say how far a candidate may be from the baseline before verify
// calls it a regression. Outputs are compared per key; performance as
// ratios against the baseline, plus an absolute slack each, because short
// CI runs on shared machines are noisy.
type Thresholds struct {
	// PacingRateAbs is the largest |candidate − baseline| pacing rate (0..1)
	// per campaign. Default 0.05.
	PacingRateAbs float64 `yaml:"pacing_rate_abs"`
	// BidMultiplierRel is the largest relative difference of a campaign's bid
	// multiplier. Default 0.05 (5%).
	BidMultiplierRel float64 `yaml:"bid_multiplier_rel"`
	// ThroughputDrop is how much lower the candidate's throughput may be, as
	// a fraction of the baseline's. Default 0.2.
	ThroughputDrop float64 `yaml:"throughput_drop"`
	// LagP99Increase and LagP99Slack bound every stage's event-lag p99:
	// candidate <= baseline × (1 + increase) + slack. Defaults 0.5 and 250ms.
	LagP99Increase float64       `yaml:"lag_p99_increase"`
	LagP99Slack    time.Duration `yaml:"lag_p99_slack"`
	// CPUIncrease and CPUSlackSeconds bound the CPU seconds used while the
	// recording played and drained. Defaults 0.5 and 2s.
	CPUIncrease     float64 `yaml:"cpu_increase"`
	CPUSlackSeconds float64 `yaml:"cpu_slack_seconds"`
	// MemoryIncrease and MemorySlackMiB bound the peak resident memory.
	// Defaults 0.5 and 64 MiB.
	MemoryIncrease float64 `yaml:"memory_increase"`
	MemorySlackMiB float64 `yaml:"memory_slack_mib"`
}

// DefaultThresholds returns the defaults above.
func DefaultThresholds() Thresholds {
	return Thresholds{
		PacingRateAbs: 0.05, BidMultiplierRel: 0.05, ThroughputDrop: 0.2,
		LagP99Increase: 0.5, LagP99Slack: 250 * time.Millisecond,
		CPUIncrease: 0.5, CPUSlackSeconds: 2, MemoryIncrease: 0.5, MemorySlackMiB: 64,
	}
}

// VerifyConfig is the YAML file of `hotpair replay verify --config`: the
// thresholds, and how long to wait for the pipelines.
type VerifyConfig struct {
	Thresholds Thresholds `yaml:"thresholds"`
	// Settle is how long the output topics must stay unchanged, once both
	// pipelines drained, before outputs are compared. Default 2s (or the
	// pipeline's window + lateness + idle_close + 3s for a build that does
	// not report its open windows).
	Settle time.Duration `yaml:"settle"`
	// Timeout bounds the whole verification. Default 10m.
	Timeout time.Duration `yaml:"timeout"`
}

// LoadVerifyConfig reads a verify config over the defaults and validates it.
func LoadVerifyConfig(path string) (VerifyConfig, error) {
	c := VerifyConfig{Thresholds: DefaultThresholds()}
	if err := yamlconf.Load(path, &c); err != nil {
		return VerifyConfig{}, err
	}
	if err := c.Validate(); err != nil {
		return VerifyConfig{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Validate checks every key; errors name the key and the fix.
func (c VerifyConfig) Validate() error {
	if c.Settle < 0 {
		return fmt.Errorf("settle must not be negative, got %s", c.Settle)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout must not be negative, got %s", c.Timeout)
	}
	return c.Thresholds.Validate()
}

// Validate checks the thresholds; errors name the YAML key.
func (t Thresholds) Validate() error {
	for _, f := range []struct {
		key    string
		v, max float64
	}{
		{"pacing_rate_abs", t.PacingRateAbs, 1},
		{"bid_multiplier_rel", t.BidMultiplierRel, 0},
		{"throughput_drop", t.ThroughputDrop, 1},
		{"lag_p99_increase", t.LagP99Increase, 0},
		{"cpu_increase", t.CPUIncrease, 0},
		{"cpu_slack_seconds", t.CPUSlackSeconds, 0},
		{"memory_increase", t.MemoryIncrease, 0},
		{"memory_slack_mib", t.MemorySlackMiB, 0},
	} {
		if f.v < 0 || (f.max > 0 && f.v > f.max) || f.v != f.v {
			if f.max > 0 {
				return fmt.Errorf("thresholds.%s must be in [0, %g], got %g", f.key, f.max, f.v)
			}
			return fmt.Errorf("thresholds.%s must not be negative, got %g", f.key, f.v)
		}
	}
	if t.LagP99Slack < 0 {
		return fmt.Errorf("thresholds.lag_p99_slack must not be negative, got %s", t.LagP99Slack)
	}
	return nil
}
