package contract

// The reflection-based decoders that the hand-written AdEvent and SpendEvent
// decoders replaced, kept as the reference the fuzz tests compare them with.

type adEventWire struct {
	V           *int    `json:"v"`
	ID          *string `json:"id"`
	Type        *string `json:"type"`
	Campaign    *string `json:"campaign"`
	Advertiser  *string `json:"advertiser"`
	PriceMicros *int64  `json:"price_micros"`
	TS          *string `json:"ts"`
}

func refDecodeAdEvent(b []byte) (AdEvent, error) {
	var w adEventWire
	if err := decodeObject(b, &w); err != nil {
		return AdEvent{}, err
	}
	var f fields
	f.version(w.V)
	e := AdEvent{
		V:           SchemaVersion,
		ID:          f.id("id", w.ID, false),
		Type:        f.oneOf("type", w.Type, EventImpression, EventClick),
		Campaign:    f.id("campaign", w.Campaign, true),
		Advertiser:  f.id("advertiser", w.Advertiser, false),
		PriceMicros: f.nonNegative("price_micros", w.PriceMicros),
		TS:          f.time("ts", w.TS),
	}
	return e, f.result()
}

type spendEventWire struct {
	V           *int    `json:"v"`
	ID          *string `json:"id"`
	Campaign    *string `json:"campaign"`
	Advertiser  *string `json:"advertiser"`
	SpendMicros *int64  `json:"spend_micros"`
	Events      *int64  `json:"events"`
	WindowStart *string `json:"window_start"`
	WindowEnd   *string `json:"window_end"`
	DueAt       *string `json:"due_at"`
	EmittedAt   *string `json:"emitted_at"`
}

func refDecodeSpendEvent(b []byte) (SpendEvent, error) {
	var w spendEventWire
	if err := decodeObject(b, &w); err != nil {
		return SpendEvent{}, err
	}
	var f fields
	f.version(w.V)
	e := SpendEvent{
		V:           SchemaVersion,
		ID:          f.str("id", w.ID),
		Campaign:    f.id("campaign", w.Campaign, true),
		Advertiser:  f.id("advertiser", w.Advertiser, false),
		SpendMicros: f.nonNegative("spend_micros", w.SpendMicros),
		Events:      f.nonNegative("events", w.Events),
		WindowStart: f.time("window_start", w.WindowStart),
		WindowEnd:   f.time("window_end", w.WindowEnd),
		DueAt:       f.optionalTime("due_at", w.DueAt),
		EmittedAt:   f.time("emitted_at", w.EmittedAt),
	}
	if f.err == nil && !e.WindowEnd.After(e.WindowStart) {
		f.fail(ReasonInvalidWindow, "window_end", "not after window_start")
	}
	if f.err == nil && !e.DueAt.IsZero() && e.DueAt.Before(e.WindowStart) {
		f.fail(ReasonInvalidWindow, "due_at", "before window_start")
	}
	if f.err == nil && !validSpendID(e.ID, e.Campaign, e.WindowStart) {
		f.fail(ReasonInvalidSpendID, "id", "%q", e.ID)
	}
	return e, f.result()
}
