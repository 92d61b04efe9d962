package pipeline

import (
	"fmt"
	"math"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/statestore"
)

// BidderConfig tunes the bid multiplier controller.
type BidderConfig struct {
	// MinMultiplier and MaxMultiplier bound the multiplier (default 0.5, 2.0).
	MinMultiplier float64 `yaml:"min_multiplier"`
	MaxMultiplier float64 `yaml:"max_multiplier"`
	// Gain is how fast the multiplier moves: per hour of event time, it
	// changes by Gain × the relative pacing gap (default 2: a campaign 10%
	// behind plan for an hour bids 0.2 higher).
	Gain float64 `yaml:"gain"`
	// MaxStep bounds the change of one update (default 0.1).
	MaxStep float64 `yaml:"max_step"`
}

// DefaultBidderConfig returns the defaults.
func DefaultBidderConfig() BidderConfig {
	return BidderConfig{MinMultiplier: 0.5, MaxMultiplier: 2.0, Gain: 2, MaxStep: 0.1}
}

// Validate checks the config; errors name the YAML key.
func (c BidderConfig) Validate() error {
	switch {
	case !(c.MinMultiplier > 0):
		return fmt.Errorf("bidder.min_multiplier must be above 0, got %v", c.MinMultiplier)
	case !(c.MaxMultiplier >= c.MinMultiplier) || c.MaxMultiplier > contract.MaxMultiplier:
		return fmt.Errorf("bidder.max_multiplier must be in [min_multiplier, %d], got %v", contract.MaxMultiplier, c.MaxMultiplier)
	case !(c.MinMultiplier <= 1 && c.MaxMultiplier >= 1):
		return fmt.Errorf("bidder: [min_multiplier, max_multiplier] must contain 1, got [%v, %v]", c.MinMultiplier, c.MaxMultiplier)
	case !(c.Gain > 0):
		return fmt.Errorf("bidder.gain must be above 0, got %v", c.Gain)
	case !(c.MaxStep > 0):
		return fmt.Errorf("bidder.max_step must be above 0, got %v", c.MaxStep)
	}
	return nil
}

// bidInput is what the bidder knows when it updates a campaign.
type bidInput struct {
	DailyMicros  int64 // 0: no daily limit
	SpentToday   int64
	TargetMicros int64 // even-pacing target spend so far today
	NowMs        int64 // event time of the update
	// Observed is set when the update follows a spend window; only those
	// move the integrator, so that wall-clock updates (a budget change, a new
	// day) leave both sides' multipliers identical.
	Observed bool
}

// maxBidDt caps the time one update integrates over, so a campaign that was
// silent for hours does not jump on its first event.
const maxBidDt = 15 * 60 * 1000

// bid is the bid multiplier controller, an integrator on the pacing gap:
//
//	gap = (target so far − spent today) / max(target so far, 1% of daily)
//	m  += Gain × gap × hours since the last update   (at most ±MaxStep)
//	m   = clamp(m, MinMultiplier, MaxMultiplier)
//
// A campaign behind plan bids up until it catches up; one ahead of plan bids
// down. The integrator removes the steady gap a proportional rule would leave.
// Without a daily budget the multiplier is 1.
func bid(cfg BidderConfig, st statestore.Bidder, in bidInput) statestore.Bidder {
	if in.DailyMicros <= 0 {
		return statestore.Bidder{Multiplier: 1, LastMs: in.NowMs}
	}
	if st.Multiplier == 0 {
		st.Multiplier = 1
	}
	if !in.Observed {
		st.Multiplier = clamp(st.Multiplier, cfg.MinMultiplier, cfg.MaxMultiplier)
		return st
	}
	var dt int64
	if st.LastMs != 0 {
		dt = min(max(in.NowMs-st.LastMs, 0), maxBidDt)
	}
	st.LastMs = max(st.LastMs, in.NowMs)
	ref := math.Max(float64(in.TargetMicros), float64(in.DailyMicros)/100)
	gap := float64(in.TargetMicros-in.SpentToday) / ref
	step := clamp(cfg.Gain*gap*float64(dt)/3.6e6, -cfg.MaxStep, cfg.MaxStep)
	st.Multiplier = clamp(st.Multiplier+step, cfg.MinMultiplier, cfg.MaxMultiplier)
	return st
}
