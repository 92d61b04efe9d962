package pipeline

import (
	"fmt"
	"math"

	"github.com/hotpair/hotpair/statestore"
)

// PacerConfig tunes the even-pacing controller.
type PacerConfig struct {
	// MinRate is the lowest throttle rate short of the daily cap (default
	// 0.01): a campaign keeps a trickle of traffic, so the controller keeps
	// observing its demand.
	MinRate float64 `yaml:"min_rate"`
	// Smoothing is the weight of the newest window in the demand estimate
	// (exponential moving average, default 0.3).
	Smoothing float64 `yaml:"smoothing"`
	// MaxStep bounds how much one update may change the rate: by at most
	// this factor up or down (default 2).
	MaxStep float64 `yaml:"max_step"`
}

// DefaultPacerConfig returns the defaults.
func DefaultPacerConfig() PacerConfig {
	return PacerConfig{MinRate: 0.01, Smoothing: 0.3, MaxStep: 2}
}

// Validate checks the config; errors name the YAML key.
func (c PacerConfig) Validate() error {
	switch {
	case !(c.MinRate > 0 && c.MinRate < 1):
		return fmt.Errorf("pacer.min_rate must be in (0,1), got %v", c.MinRate)
	case !(c.Smoothing > 0 && c.Smoothing <= 1):
		return fmt.Errorf("pacer.smoothing must be in (0,1], got %v", c.Smoothing)
	case !(c.MaxStep > 1):
		return fmt.Errorf("pacer.max_step must be above 1, got %v", c.MaxStep)
	}
	return nil
}

// paceInput is what the pacer knows when it updates a campaign.
type paceInput struct {
	DailyMicros int64 // 0: no daily limit
	SpentToday  int64
	// WindowMicros and WindowSec describe the spend just observed (a
	// regular window); WindowSec is 0 when the update is not an observation
	// (a new day, a budget change, a late event).
	WindowMicros int64
	WindowSec    float64
	// DayFraction is the part of the campaign's day elapsed; RemainingSec
	// the seconds left in it.
	DayFraction  float64
	RemainingSec float64
}

// pace is the even-pacing controller. It spreads what is left of the daily
// budget evenly over what is left of the day:
//
//	demand   = smoothed spend per second the campaign would reach at rate 1,
//	           observed as window spend / (window length × rate in force)
//	required = (daily budget − spent today) / seconds left in the day
//	rate     = required / demand, at most ×MaxStep or ÷MaxStep the previous
//	           rate, clamped to [MinRate, 1]; 0 once the daily budget is spent.
//
// It is bounded (the rate stays in [0,1] and moves by a bounded factor per
// update) and self-correcting: spending ahead of plan shrinks what is left and
// so the rate; falling behind raises it. Without a daily budget the rate is 1,
// and the demand is observed all the same: a budget row that arrives after a
// campaign's first spend windows (a new campaign's row written late, a
// pipeline that reads both topics from a backlog in either order) paces from
// the demand seen, as if it had come first, instead of starting over.
// It returns the new state and the target spend so far (daily × day fraction).
func pace(cfg PacerConfig, st statestore.Pacer, in paceInput) (statestore.Pacer, int64) {
	if in.DailyMicros <= 0 {
		st.Rate = 1
		observeDemand(cfg, &st, in)
		return st, 0
	}
	target := int64(float64(in.DailyMicros) * in.DayFraction)
	if st.Rate == 0 && st.DemandPerSec == 0 {
		st.Rate = 1 // first sight of the campaign: observe it at full rate
	}
	observeDemand(cfg, &st, in)
	left := in.DailyMicros - in.SpentToday
	switch {
	case left <= 0:
		st.Rate = 0
		return st, target
	case st.DemandPerSec <= 0:
		st.Rate = 1
		return st, target
	}
	required := float64(left) / math.Max(in.RemainingSec, 1)
	rate := required / st.DemandPerSec
	prev := math.Max(st.Rate, cfg.MinRate)
	rate = clamp(rate, prev/cfg.MaxStep, prev*cfg.MaxStep)
	st.Rate = clamp(rate, cfg.MinRate, 1)
	return st, target
}

// observeDemand folds the window just observed, if any, into the demand:
// its spend per second at the rate in force.
func observeDemand(cfg PacerConfig, st *statestore.Pacer, in paceInput) {
	if in.WindowSec <= 0 {
		return
	}
	obs := float64(in.WindowMicros) / (in.WindowSec * math.Max(st.Rate, cfg.MinRate))
	if st.DemandPerSec == 0 {
		st.DemandPerSec = obs
	} else {
		st.DemandPerSec += cfg.Smoothing * (obs - st.DemandPerSec)
	}
}

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }
