package statestore

// BudgetRow is the campaign's row of the budgets table, as a service keeps it
// in its own state (the services consume budgets as a stream, so a budget
// change takes effect at once instead of waiting for the next spend).
type BudgetRow struct {
	Advertiser     string `json:"advertiser"`
	DailyMicros    int64  `json:"daily_micros"`
	LifetimeMicros int64  `json:"lifetime_micros"`
	Timezone       string `json:"timezone"`
}

// Pacer is the pacer's controller state of one campaign.
type Pacer struct {
	// Rate is the last throttle rate emitted, in [0,1].
	Rate float64 `json:"rate"`
	// DemandPerSec estimates the campaign's spend per second at rate 1
	// (micros/s), smoothed over windows.
	DemandPerSec float64 `json:"demand_per_sec"`
}

// Bidder is the bidder's controller state of one campaign.
type Bidder struct {
	Multiplier float64 `json:"multiplier"`
	// LastMs is the event time (unix ms) of the last update.
	LastMs int64 `json:"last"`
}

// Campaign is the state of one campaign in the budget enforcer, the pacer or
// the bidder: its ledger, its budget row and the service's own part.
type Campaign struct {
	Ledger Ledger     `json:"ledger"`
	Budget *BudgetRow `json:"budget,omitempty"`
	// Status is the budget enforcer's last status.
	Status string  `json:"status,omitempty"`
	Pacer  *Pacer  `json:"pacer,omitempty"`
	Bidder *Bidder `json:"bidder,omitempty"`
	// NextDayMs is the campaign's next local midnight (unix ms): the wake-up
	// that starts a new day even when the campaign gets no spend.
	NextDayMs int64 `json:"next_day"`
}

// WakeAtMs is the next local midnight.
func (c *Campaign) WakeAtMs() int64 { return c.NextDayMs }

// Codecs of the state types.
type (
	WindowsCodec  = Codec[Windows, *Windows]
	CampaignCodec = Codec[Campaign, *Campaign]
)
