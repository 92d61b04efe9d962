package contract

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The wire structs use pointers so that a missing field can be told from a
// zero value. AdEvent and SpendEvent, decoded for every record on the hot
// path, are scanned without reflection instead (jsonscan.go), to the same
// rules.

var adEventFields = []wireField{
	{"v", kindInt}, {"id", kindString}, {"type", kindString}, {"campaign", kindString},
	{"advertiser", kindString}, {"price_micros", kindInt}, {"ts", kindString},
}

var eventTypes = []string{EventImpression, EventClick}

// DecodeAdEvent decodes and validates an AdEvent. Errors are *DecodeError.
func DecodeAdEvent(b []byte) (AdEvent, error) {
	var t [7]token
	if err := scanRecord(b, adEventFields, t[:]); err != nil {
		return AdEvent{}, err
	}
	var f fields
	f.versionOK(t[0].int64())
	var e AdEvent
	e.V = SchemaVersion
	s, ok := t[1].str()
	e.ID = f.idOK("id", s, ok, false)
	s, ok = t[2].str()
	e.Type = f.oneOfOK("type", s, ok, eventTypes...)
	s, ok = t[3].str()
	e.Campaign = f.idOK("campaign", s, ok, true)
	s, ok = t[4].str()
	e.Advertiser = f.idOK("advertiser", s, ok, false)
	n, ok := t[5].int64()
	e.PriceMicros = f.nonNegativeOK("price_micros", n, ok)
	s, ok = t[6].str()
	e.TS = f.timeOK("ts", s, ok)
	return e, f.result()
}

var spendEventFields = []wireField{
	{"v", kindInt}, {"id", kindString}, {"campaign", kindString}, {"advertiser", kindString},
	{"spend_micros", kindInt}, {"events", kindInt}, {"window_start", kindString},
	{"window_end", kindString}, {"due_at", kindString}, {"emitted_at", kindString},
}

// DecodeSpendEvent decodes and validates a SpendEvent, including that its id
// is the deterministic id of its campaign and window.
func DecodeSpendEvent(b []byte) (SpendEvent, error) {
	var t [10]token
	if err := scanRecord(b, spendEventFields, t[:]); err != nil {
		return SpendEvent{}, err
	}
	var f fields
	f.versionOK(t[0].int64())
	var e SpendEvent
	e.V = SchemaVersion
	s, ok := t[1].str()
	e.ID = f.strOK("id", s, ok)
	s, ok = t[2].str()
	e.Campaign = f.idOK("campaign", s, ok, true)
	s, ok = t[3].str()
	e.Advertiser = f.idOK("advertiser", s, ok, false)
	n, ok := t[4].int64()
	e.SpendMicros = f.nonNegativeOK("spend_micros", n, ok)
	n, ok = t[5].int64()
	e.Events = f.nonNegativeOK("events", n, ok)
	s, ok = t[6].str()
	e.WindowStart = f.timeOK("window_start", s, ok)
	s, ok = t[7].str()
	e.WindowEnd = f.timeOK("window_end", s, ok)
	s, ok = t[8].str()
	e.DueAt = f.optionalTimeOK("due_at", s, ok)
	s, ok = t[9].str()
	e.EmittedAt = f.timeOK("emitted_at", s, ok)
	if f.err == nil && !e.WindowEnd.After(e.WindowStart) {
		f.fail(ReasonInvalidWindow, "window_end", "%s is not after window_start %s",
			e.WindowEnd.Format(time.RFC3339Nano), e.WindowStart.Format(time.RFC3339Nano))
	}
	if f.err == nil && !e.DueAt.IsZero() && e.DueAt.Before(e.WindowStart) {
		f.fail(ReasonInvalidWindow, "due_at", "%s is before window_start %s",
			e.DueAt.Format(time.RFC3339Nano), e.WindowStart.Format(time.RFC3339Nano))
	}
	if f.err == nil && !validSpendID(e.ID, e.Campaign, e.WindowStart) {
		f.fail(ReasonInvalidSpendID, "id", "%q is neither %q nor %q", e.ID,
			SpendID(e.Campaign, e.WindowStart), LateSpendID(e.Campaign, e.WindowStart, "<event id>"))
	}
	return e, f.result()
}

func validSpendID(id, campaign string, start time.Time) bool {
	base := campaign + "/" + strconv.FormatInt(start.UnixMilli(), 10)
	rest, ok := strings.CutPrefix(id, base)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	ev, ok := strings.CutPrefix(rest, "/late/")
	return ok && ev != "" && len(ev) <= 128
}

type budgetWire struct {
	V              *int    `json:"v"`
	Campaign       *string `json:"campaign"`
	Advertiser     *string `json:"advertiser"`
	DailyMicros    *int64  `json:"daily_micros"`
	LifetimeMicros *int64  `json:"lifetime_micros"`
	Timezone       *string `json:"timezone"`
}

// DecodeBudget decodes and validates a Budget row, including its time zone.
func DecodeBudget(b []byte) (Budget, error) {
	var w budgetWire
	if err := decodeObject(b, &w); err != nil {
		return Budget{}, err
	}
	var f fields
	f.version(w.V)
	e := Budget{
		V:              SchemaVersion,
		Campaign:       f.id("campaign", w.Campaign, true),
		Advertiser:     f.id("advertiser", w.Advertiser, false),
		DailyMicros:    f.nonNegative("daily_micros", w.DailyMicros),
		LifetimeMicros: f.nonNegative("lifetime_micros", w.LifetimeMicros),
		Timezone:       f.str("timezone", w.Timezone),
	}
	if f.err == nil {
		if _, err := LoadZone(e.Timezone); err != nil {
			f.fail(ReasonInvalidTimezone, "timezone", "%q: %v", e.Timezone, err)
		}
	}
	return e, f.result()
}

type budgetStatusWire struct {
	V                   *int    `json:"v"`
	Campaign            *string `json:"campaign"`
	Status              *string `json:"status"`
	Day                 *string `json:"day"`
	SpentTodayMicros    *int64  `json:"spent_today_micros"`
	SpentLifetimeMicros *int64  `json:"spent_lifetime_micros"`
	LastWindowStart     *string `json:"last_window_start"`
	UpdatedAt           *string `json:"updated_at"`
}

// DecodeBudgetStatus decodes and validates a BudgetStatus.
func DecodeBudgetStatus(b []byte) (BudgetStatus, error) {
	var w budgetStatusWire
	if err := decodeObject(b, &w); err != nil {
		return BudgetStatus{}, err
	}
	var f fields
	f.version(w.V)
	e := BudgetStatus{
		V:                   SchemaVersion,
		Campaign:            f.id("campaign", w.Campaign, true),
		Status:              f.oneOf("status", w.Status, StatusActive, StatusDailyCapped, StatusLifetimeCapped, StatusNoBudget),
		Day:                 f.str("day", w.Day),
		SpentTodayMicros:    f.nonNegative("spent_today_micros", w.SpentTodayMicros),
		SpentLifetimeMicros: f.nonNegative("spent_lifetime_micros", w.SpentLifetimeMicros),
		LastWindowStart:     f.optionalTime("last_window_start", w.LastWindowStart),
		UpdatedAt:           f.time("updated_at", w.UpdatedAt),
	}
	if f.err == nil {
		if _, err := time.Parse(time.DateOnly, e.Day); err != nil {
			f.fail(ReasonInvalidTimestamp, "day", "%q is not a YYYY-MM-DD date", e.Day)
		}
	}
	return e, f.result()
}

type pacingWire struct {
	V               *int     `json:"v"`
	Campaign        *string  `json:"campaign"`
	Rate            *float64 `json:"rate"`
	TargetMicros    *int64   `json:"target_micros"`
	ActualMicros    *int64   `json:"actual_micros"`
	LastWindowStart *string  `json:"last_window_start"`
	UpdatedAt       *string  `json:"updated_at"`
}

// DecodePacing decodes and validates a Pacing record; rate must be in [0,1].
func DecodePacing(b []byte) (Pacing, error) {
	var w pacingWire
	if err := decodeObject(b, &w); err != nil {
		return Pacing{}, err
	}
	var f fields
	f.version(w.V)
	e := Pacing{
		V:               SchemaVersion,
		Campaign:        f.id("campaign", w.Campaign, true),
		Rate:            f.unit("rate", w.Rate, 0, 1),
		TargetMicros:    f.nonNegative("target_micros", w.TargetMicros),
		ActualMicros:    f.nonNegative("actual_micros", w.ActualMicros),
		LastWindowStart: f.optionalTime("last_window_start", w.LastWindowStart),
		UpdatedAt:       f.time("updated_at", w.UpdatedAt),
	}
	return e, f.result()
}

type bidMultiplierWire struct {
	V               *int     `json:"v"`
	Campaign        *string  `json:"campaign"`
	Multiplier      *float64 `json:"multiplier"`
	LastWindowStart *string  `json:"last_window_start"`
	UpdatedAt       *string  `json:"updated_at"`
}

// MaxMultiplier bounds what a decoder accepts as a bid multiplier; the
// bidder's own configured bounds are narrower.
const MaxMultiplier = 100

// DecodeBidMultiplier decodes and validates a BidMultiplier.
func DecodeBidMultiplier(b []byte) (BidMultiplier, error) {
	var w bidMultiplierWire
	if err := decodeObject(b, &w); err != nil {
		return BidMultiplier{}, err
	}
	var f fields
	f.version(w.V)
	e := BidMultiplier{
		V:               SchemaVersion,
		Campaign:        f.id("campaign", w.Campaign, true),
		Multiplier:      f.unit("multiplier", w.Multiplier, 0, MaxMultiplier),
		LastWindowStart: f.optionalTime("last_window_start", w.LastWindowStart),
		UpdatedAt:       f.time("updated_at", w.UpdatedAt),
	}
	return e, f.result()
}

type healthSampleWire struct {
	V               *int          `json:"v"`
	Service         *string       `json:"service"`
	Side            *string       `json:"side"`
	Role            *string       `json:"role"`
	Instance        *string       `json:"instance"`
	Build           *string       `json:"build"`
	Partitions      *[]int32      `json:"partitions"`
	TopicPartitions *int32        `json:"topic_partitions"`
	WindowStart     *string       `json:"window_start"`
	WindowEnd       *string       `json:"window_end"`
	Events          *int64        `json:"events"`
	LagMs           *LagHistogram `json:"lag_ms"`
	LagMsMax        *int64        `json:"lag_ms_max"`
	// Optional in v=1: samples of an older build have neither.
	DeadLetters *int64                 `json:"dead_letters"`
	Resources   *instanceResourcesWire `json:"resources"`
}

type instanceResourcesWire struct {
	CPUSeconds     *float64 `json:"cpu_seconds"`
	RSSBytes       *int64   `json:"rss_bytes"`
	Goroutines     *int64   `json:"goroutines"`
	GCPauseSeconds *float64 `json:"gc_pause_seconds"`
}

// DecodeHealthSample decodes and validates a HealthSample.
func DecodeHealthSample(b []byte) (HealthSample, error) {
	var w healthSampleWire
	if err := decodeObject(b, &w); err != nil {
		return HealthSample{}, err
	}
	var f fields
	f.version(w.V)
	s := HealthSample{
		V:           SchemaVersion,
		Service:     parsed(ParseStage, f.oneOf("service", w.Service, StageNames()...)),
		Side:        parsed(ParseSide, f.oneOf("side", w.Side, SideNames()...)),
		Role:        parsed(ParseRole, f.oneOf("role", w.Role, RoleLive.String(), RoleDark.String())),
		Instance:    f.id("instance", w.Instance, true),
		Build:       f.str("build", w.Build),
		WindowStart: f.time("window_start", w.WindowStart),
		WindowEnd:   f.time("window_end", w.WindowEnd),
		Events:      f.nonNegative("events", w.Events),
		LagMsMax:    f.nonNegative("lag_ms_max", w.LagMsMax),
	}
	if f.present("partitions", w.Partitions == nil) {
		s.Partitions = *w.Partitions
	}
	if f.present("topic_partitions", w.TopicPartitions == nil) {
		s.TopicPartitions = *w.TopicPartitions
		for _, p := range s.Partitions {
			if p < 0 || p >= s.TopicPartitions {
				f.fail(ReasonOutOfRange, "partitions", "partition %d is outside [0, %d)", p, s.TopicPartitions)
				break
			}
		}
	}
	if f.present("lag_ms", w.LagMs == nil) {
		s.LagMs = *w.LagMs
	}
	if w.DeadLetters != nil {
		s.DeadLetters = f.nonNegative("dead_letters", w.DeadLetters)
	}
	if w.Resources != nil {
		s.Resources = f.resources(w.Resources)
	}
	if f.err == nil && !s.WindowEnd.After(s.WindowStart) {
		f.fail(ReasonInvalidWindow, "window_end", "not after window_start")
	}
	return s, f.result()
}

// resources validates a sample's resources object: when it is there, all of
// its figures are (one build writes them together), none negative.
func (f *fields) resources(w *instanceResourcesWire) *InstanceResources {
	r := &InstanceResources{
		CPUSeconds:     f.unit("resources.cpu_seconds", w.CPUSeconds, 0, math.MaxFloat64),
		RSSBytes:       f.nonNegative("resources.rss_bytes", w.RSSBytes),
		Goroutines:     int(f.nonNegative("resources.goroutines", w.Goroutines)),
		GCPauseSeconds: f.unit("resources.gc_pause_seconds", w.GCPauseSeconds, 0, math.MaxFloat64),
	}
	if f.err != nil {
		return nil
	}
	return r
}

// parsed returns the value of a name oneOf has checked (unset after an
// earlier failure).
func parsed[E ~uint8](parse func(string) (E, error), name string) E {
	v, _ := parse(name)
	return v
}
