package contract

import (
	"strconv"
	"strings"
	"time"
)

// SchemaVersion is the only value of "v" this build reads and writes.
const SchemaVersion = 1

// Event types of an AdEvent.
const (
	EventImpression = "impression"
	EventClick      = "click"
)

// Budget statuses of a BudgetStatus.
const (
	StatusActive         = "active"
	StatusDailyCapped    = "daily_capped"
	StatusLifetimeCapped = "lifetime_capped"
	// StatusNoBudget is reported for a campaign that spends but has no row in
	// the budgets table: it is never capped by accident, and the read side can
	// tell it apart from an active campaign with a budget.
	StatusNoBudget = "no_budget"
)

// AdEvent is one billable ad event, the input of the aggregator (topic
// ad-events, key = campaign id).
type AdEvent struct {
	V           int       `json:"v"`
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	Campaign    string    `json:"campaign"`
	Advertiser  string    `json:"advertiser"`
	PriceMicros int64     `json:"price_micros"`
	TS          time.Time `json:"ts"`
}

// SpendEvent is the spend of one campaign in one aggregation window (topic
// spend). Its ID is deterministic, so both sides emit the same events.
type SpendEvent struct {
	V           int       `json:"v"`
	ID          string    `json:"id"`
	Campaign    string    `json:"campaign"`
	Advertiser  string    `json:"advertiser"`
	SpendMicros int64     `json:"spend_micros"`
	Events      int64     `json:"events"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	// DueAt is the moment the SpendEvent could first have been right, the
	// origin of a service's end-to-end event lag: window_end + the
	// aggregator's allowed lateness for a window (it cannot close earlier),
	// the ad event's own ts for a late SpendEvent (it is emitted the moment
	// that event arrives, so its lag is how late that one event is). It is
	// deterministic, so both sides write the same value. Optional in v=1: a
	// reader without it ignores it; a service receiving a SpendEvent without
	// it uses window_end + its own configured lateness (see DueAtOr).
	DueAt     time.Time `json:"due_at,omitzero"`
	EmittedAt time.Time `json:"emitted_at"`
}

// Budget is a campaign's budget row (compacted topic budgets). A zero
// DailyMicros or LifetimeMicros means "no limit" for that dimension.
type Budget struct {
	V              int    `json:"v"`
	Campaign       string `json:"campaign"`
	Advertiser     string `json:"advertiser"`
	DailyMicros    int64  `json:"daily_micros"`
	LifetimeMicros int64  `json:"lifetime_micros"`
	Timezone       string `json:"timezone"`
}

// BudgetStatus is the budget enforcer's output (compacted topic budget-status).
type BudgetStatus struct {
	V                   int    `json:"v"`
	Campaign            string `json:"campaign"`
	Status              string `json:"status"`
	Day                 string `json:"day"`
	SpentTodayMicros    int64  `json:"spent_today_micros"`
	SpentLifetimeMicros int64  `json:"spent_lifetime_micros"`
	// LastWindowStart is the start of the newest spend window the service
	// has applied to the campaign (the window_start of its newest regular
	// SpendEvent; a late one leaves it), zero before any. Both sides write
	// the same value once they applied the same windows, whenever they
	// write it, so a comparison of two pipelines' outputs (the dark
	// canary) pairs values of the same window by it. Optional in v=1.
	LastWindowStart time.Time `json:"last_window_start,omitzero"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// Pacing is the pacer's output (compacted topic pacing): the fraction of
// eligible traffic the campaign should take, in [0,1].
type Pacing struct {
	V            int     `json:"v"`
	Campaign     string  `json:"campaign"`
	Rate         float64 `json:"rate"`
	TargetMicros int64   `json:"target_micros"`
	ActualMicros int64   `json:"actual_micros"`
	// LastWindowStart: as BudgetStatus's.
	LastWindowStart time.Time `json:"last_window_start,omitzero"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// BidMultiplier is the bidder's output (compacted topic bid-multipliers).
type BidMultiplier struct {
	V          int     `json:"v"`
	Campaign   string  `json:"campaign"`
	Multiplier float64 `json:"multiplier"`
	// LastWindowStart: as BudgetStatus's.
	LastWindowStart time.Time `json:"last_window_start,omitzero"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// HealthSample is what every stage instance reports every sample interval to
// hotpair-health on its own cluster (key service/side/instance).
type HealthSample struct {
	V        int    `json:"v"`
	Service  Stage  `json:"service"`
	Side     Side   `json:"side"`
	Role     Role   `json:"role"`
	Instance string `json:"instance"`
	Build    string `json:"build"`
	// Partitions are the input partitions assigned to this instance at the
	// end of the window; TopicPartitions is the input topic's partition count,
	// so a monitor can tell when the union of all instances leaves some uncovered.
	Partitions      []int32      `json:"partitions"`
	TopicPartitions int32        `json:"topic_partitions"`
	WindowStart     time.Time    `json:"window_start"`
	WindowEnd       time.Time    `json:"window_end"`
	Events          int64        `json:"events"`
	LagMs           LagHistogram `json:"lag_ms"`
	LagMsMax        int64        `json:"lag_ms_max"`
	// DeadLetters counts the records this instance dead-lettered in the window.
	DeadLetters int64 `json:"dead_letters,omitempty"`
	// Resources is what the instance's process used in the window (nil from
	// an older build), so a dark instance can be judged against live ones.
	Resources *InstanceResources `json:"resources,omitempty"`
}

// InstanceResources is one process's use of the machine over one health
// window. Every stage of a process reports the same figures.
type InstanceResources struct {
	// CPUSeconds is the process's user+system CPU time spent in the window.
	CPUSeconds float64 `json:"cpu_seconds"`
	// RSSBytes is the resident memory at the window's end.
	RSSBytes int64 `json:"rss_bytes"`
	// Goroutines is the number of goroutines at the window's end.
	Goroutines int `json:"goroutines"`
	// GCPauseSeconds is the total stop-the-world GC pause in the window.
	GCPauseSeconds float64 `json:"gc_pause_seconds"`
}

// Key returns the record key of the sample: service/side/instance.
func (s *HealthSample) Key() string {
	return s.Service.String() + "/" + s.Side.String() + "/" + s.Instance
}

// SpendID returns the deterministic id of the regular window of campaign
// starting at start: "campaign/window_start_ms".
func SpendID(campaign string, start time.Time) string {
	return campaign + "/" + strconv.FormatInt(start.UnixMilli(), 10)
}

// LateSpendID returns the id of the SpendEvent that carries one ad event that
// arrived after its window had been emitted: "campaign/window_start_ms/late/event_id".
// It is deterministic, so a late event counted on both sides has one id.
func LateSpendID(campaign string, start time.Time, eventID string) string {
	return SpendID(campaign, start) + "/late/" + eventID
}

// DueAtOr returns DueAt, or for a SpendEvent written without it (an older
// aggregator) window_end + lateness: the same moment for a window, and for a
// late SpendEvent a lower bound of how late its ad event is (by less than one
// window).
func (e *SpendEvent) DueAtOr(lateness time.Duration) time.Time {
	if !e.DueAt.IsZero() {
		return e.DueAt
	}
	return e.WindowEnd.Add(lateness)
}

// IsLate reports whether the SpendEvent carries a single late ad event: its
// id is campaign/window_start_ms/late/event_id (campaign ids have no slash).
func (e *SpendEvent) IsLate() bool {
	rest, ok := strings.CutPrefix(e.ID, e.Campaign+"/")
	if !ok {
		return false
	}
	i := strings.IndexByte(rest, '/')
	return i >= 0 && strings.HasPrefix(rest[i:], "/late/")
}
