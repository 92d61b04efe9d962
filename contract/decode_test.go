package contract

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeReasons(t *testing.T) {
	ad := `{"v":1,"id":"e1","type":"click","campaign":"c1","advertiser":"a1","price_micros":10,"ts":"2026-11-30T10:00:00Z"}`
	spend := `{"v":1,"id":"c1/1796032800000","campaign":"c1","advertiser":"a1","spend_micros":5,"events":1,"window_start":"2026-11-30T10:00:00Z","window_end":"2026-11-30T10:00:10Z","emitted_at":"2026-11-30T10:00:16Z"}`
	budget := `{"v":1,"campaign":"c1","advertiser":"a1","daily_micros":100,"lifetime_micros":0,"timezone":"Europe/Berlin"}`
	status := `{"v":1,"campaign":"c1","status":"active","day":"2026-11-30","spent_today_micros":1,"spent_lifetime_micros":2,"updated_at":"2026-11-30T10:00:00Z"}`
	pacing := `{"v":1,"campaign":"c1","rate":0.5,"target_micros":1,"actual_micros":1,"updated_at":"2026-11-30T10:00:00Z"}`
	bidm := `{"v":1,"campaign":"c1","multiplier":1.5,"updated_at":"2026-11-30T10:00:00Z"}`
	hist := `{"le":[1,2,5,10,20,50,100,200,500,1000,2000,5000,10000,20000,30000,60000,120000,300000,600000,1800000],"counts":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,3]}`
	health := `{"v":1,"service":"pacer","side":"standby","role":"live","instance":"i1","build":"b","partitions":[0,3],"topic_partitions":4,"window_start":"2026-11-30T10:00:00Z","window_end":"2026-11-30T10:00:10Z","events":3,"lag_ms":` + hist + `,"lag_ms_max":2000000}`
	decoders := map[string]func([]byte) error{
		"ad":     func(b []byte) error { _, err := DecodeAdEvent(b); return err },
		"spend":  func(b []byte) error { _, err := DecodeSpendEvent(b); return err },
		"budget": func(b []byte) error { _, err := DecodeBudget(b); return err },
		"status": func(b []byte) error { _, err := DecodeBudgetStatus(b); return err },
		"pacing": func(b []byte) error { _, err := DecodePacing(b); return err },
		"bid":    func(b []byte) error { _, err := DecodeBidMultiplier(b); return err },
		"health": func(b []byte) error { _, err := DecodeHealthSample(b); return err },
	}
	r := strings.NewReplacer
	for _, tc := range []struct {
		name, decoder, value string
		want                 Reason
	}{
		{"good ad event", "ad", ad, ""},
		{"good spend event", "spend", spend, ""},
		{"good late spend event", "spend", r("1796032800000", "1796032800000/late/e7").Replace(spend), ""},
		{"good spend event with due_at", "spend", r(`"emitted_at"`, `"due_at":"2026-11-30T10:00:15Z","emitted_at"`).Replace(spend), ""},
		{"null due_at reads as absent", "spend", r(`"emitted_at"`, `"due_at":null,"emitted_at"`).Replace(spend), ""},
		{"due_at not a time", "spend", r(`"emitted_at"`, `"due_at":"soon","emitted_at"`).Replace(spend), ReasonInvalidTimestamp},
		{"due_at of the wrong type", "spend", r(`"emitted_at"`, `"due_at":15,"emitted_at"`).Replace(spend), ReasonWrongType},
		{"due_at before the window", "spend", r(`"emitted_at"`, `"due_at":"2026-11-30T09:59:59Z","emitted_at"`).Replace(spend), ReasonInvalidWindow},
		{"good budget", "budget", budget, ""},
		{"good status", "status", status, ""},
		{"status with last_window_start", "status", r(`"updated_at"`, `"last_window_start":"2026-11-30T09:59:50Z","updated_at"`).Replace(status), ""},
		{"last_window_start not a time", "status", r(`"updated_at"`, `"last_window_start":"now","updated_at"`).Replace(status), ReasonInvalidTimestamp},
		{"pacing last_window_start of the wrong type", "pacing", r(`"updated_at"`, `"last_window_start":1,"updated_at"`).Replace(pacing), ReasonWrongType},
		{"good pacing", "pacing", pacing, ""},
		{"good multiplier", "bid", bidm, ""},
		{"good health sample", "health", health, ""},
		{"health sample with resources", "health", r(`"lag_ms_max":2000000`, `"lag_ms_max":2000000,"dead_letters":2,"resources":{"cpu_seconds":0.25,"rss_bytes":1048576,"goroutines":40,"gc_pause_seconds":0.0001}`).Replace(health), ""},
		{"negative dead letters", "health", r(`"lag_ms_max":2000000`, `"lag_ms_max":2000000,"dead_letters":-1`).Replace(health), ReasonNegativeAmount},
		{"resources without rss", "health", r(`"lag_ms_max":2000000`, `"lag_ms_max":2000000,"resources":{"cpu_seconds":0.25,"goroutines":40,"gc_pause_seconds":0}`).Replace(health), ReasonMissingField},
		{"negative cpu seconds", "health", r(`"lag_ms_max":2000000`, `"lag_ms_max":2000000,"resources":{"cpu_seconds":-1,"rss_bytes":1,"goroutines":40,"gc_pause_seconds":0}`).Replace(health), ReasonOutOfRange},
		{"resources not an object", "health", r(`"lag_ms_max":2000000`, `"lag_ms_max":2000000,"resources":7`).Replace(health), ReasonWrongType},
		{"unknown fields are ignored", "ad", r(`"v":1,`, `"v":1,"new":{"x":[1]},`).Replace(ad), ""},
		{"empty", "ad", "", ReasonEmptyValue},
		{"too large", "ad", `{"x":"` + strings.Repeat("a", MaxValueBytes) + `"}`, ReasonValueTooLarge},
		{"invalid json", "spend", `{"v":1,,}`, ReasonInvalidJSON},
		{"not an object", "budget", `42`, ReasonNotObject},
		{"unknown version", "status", r(`"v":1`, `"v":3`).Replace(status), ReasonUnsupportedVersion},
		{"no version", "pacing", r(`"v":1,`, ``).Replace(pacing), ReasonMissingField},
		{"null field", "ad", r(`"campaign":"c1"`, `"campaign":null`).Replace(ad), ReasonMissingField},
		{"wrong type", "bid", r(`1.5`, `"1.5"`).Replace(bidm), ReasonWrongType},
		{"overflow", "ad", r(`"price_micros":10`, `"price_micros":99999999999999999999`).Replace(ad), ReasonWrongType},
		{"negative", "budget", r(`"daily_micros":100`, `"daily_micros":-100`).Replace(budget), ReasonNegativeAmount},
		{"bad enum", "status", r(`"active"`, `"paused"`).Replace(status), ReasonInvalidEnum},
		{"bad time", "spend", r(`"emitted_at":"2026-11-30T10:00:16Z"`, `"emitted_at":"2026-11-30 10:00:16"`).Replace(spend), ReasonInvalidTimestamp},
		{"time out of range", "ad", r(`2026-11-30T10:00:00Z`, `1999-12-31T23:59:59Z`).Replace(ad), ReasonTimestampRange},
		{"bad id", "ad", r(`"id":"e1"`, `"id":""`).Replace(ad), ReasonInvalidID},
		{"slash in campaign", "budget", r(`"campaign":"c1"`, `"campaign":"c/1"`).Replace(budget), ReasonInvalidID},
		{"spend id of another window", "spend", r(`"c1/1796032800000"`, `"c1/1796032810000"`).Replace(spend), ReasonInvalidSpendID},
		{"empty window", "spend", r(`"window_end":"2026-11-30T10:00:10Z"`, `"window_end":"2026-11-30T10:00:00Z"`).Replace(spend), ReasonInvalidWindow},
		{"unknown zone", "budget", r(`Europe/Berlin`, `Europe/Atlantis`).Replace(budget), ReasonInvalidTimezone},
		{"rate above 1", "pacing", r(`0.5`, `1.01`).Replace(pacing), ReasonOutOfRange},
		{"partition outside the topic", "health", r(`[0,3]`, `[0,4]`).Replace(health), ReasonOutOfRange},
		{"foreign histogram bounds", "health", r(`"le":[1,2,`, `"le":[3,2,`).Replace(health), ReasonWrongType},
		{"bad day", "status", r(`"day":"2026-11-30"`, `"day":"30/11/2026"`).Replace(status), ReasonInvalidTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := decoders[tc.decoder]([]byte(tc.value))
			if got := ReasonOf(err); got != tc.want || (tc.want != "") != (err != nil) {
				t.Fatalf("got %v (reason %q), want reason %q", err, got, tc.want)
			}
		})
	}
}

func TestEncodingIsDeterministic(t *testing.T) {
	e := SpendEvent{V: 1, ID: "c1/1000", Campaign: "c1", Advertiser: "a", SpendMicros: 5, Events: 1,
		WindowStart: time.UnixMilli(1000).In(time.FixedZone("x", 3600)), WindowEnd: time.UnixMilli(11000).UTC(), EmittedAt: time.UnixMilli(5).UTC()}
	e.WindowStart = e.WindowStart.UTC()
	b1, _ := Encode(e)
	b2, _ := Encode(e)
	if string(b1) != string(b2) || !strings.Contains(string(b1), `"window_start":"1970-01-01T00:00:01Z"`) {
		t.Fatalf("encoding: %s", b1)
	}
}

// A SpendEvent carries due_at when its aggregator wrote it; one without it
// (an older aggregator) reads as window_end + the reader's lateness, and
// encodes without the field, so v=1 readers of either age agree.
func TestSpendEventDueAt(t *testing.T) {
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	e := SpendEvent{V: 1, ID: SpendID("c1", start), Campaign: "c1", Advertiser: "a", SpendMicros: 5, Events: 1,
		WindowStart: start, WindowEnd: start.Add(10 * time.Second), EmittedAt: start.Add(16 * time.Second)}
	b, _ := Encode(e)
	if strings.Contains(string(b), "due_at") {
		t.Fatalf("a zero due_at is written: %s", b)
	}
	old, err := DecodeSpendEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := old.DueAtOr(5 * time.Second); !got.Equal(start.Add(15 * time.Second)) {
		t.Fatalf("without due_at: %s, want window_end + lateness", got)
	}
	e.DueAt = start.Add(3 * time.Second) // a late event's ts
	b, _ = Encode(e)
	got, err := DecodeSpendEvent(b)
	if err != nil || !got.DueAt.Equal(e.DueAt) || !got.DueAtOr(5*time.Second).Equal(e.DueAt) {
		t.Fatalf("round trip of %s: %+v, %v", b, got, err)
	}
}

// TestOutputsLastWindowStart: the outputs' last_window_start is optional
// (a build before it writes none, and a status before any spend window has
// none) and survives a round trip, so a comparison pairs values by it.
func TestOutputsLastWindowStart(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 7, 0, time.UTC)
	window := at.Truncate(10 * time.Second)
	for _, tc := range []struct {
		rec    any
		decode func([]byte) (time.Time, error)
	}{
		{BudgetStatus{V: 1, Campaign: "c1", Status: StatusActive, Day: "2026-11-30", UpdatedAt: at},
			func(b []byte) (time.Time, error) { s, err := DecodeBudgetStatus(b); return s.LastWindowStart, err }},
		{Pacing{V: 1, Campaign: "c1", Rate: 1, UpdatedAt: at},
			func(b []byte) (time.Time, error) { p, err := DecodePacing(b); return p.LastWindowStart, err }},
		{BidMultiplier{V: 1, Campaign: "c1", Multiplier: 1, UpdatedAt: at},
			func(b []byte) (time.Time, error) { m, err := DecodeBidMultiplier(b); return m.LastWindowStart, err }},
	} {
		b, _ := Encode(tc.rec)
		if strings.Contains(string(b), "last_window_start") {
			t.Fatalf("%T: a zero last_window_start is written: %s", tc.rec, b)
		}
		if got, err := tc.decode(b); err != nil || !got.IsZero() {
			t.Fatalf("%T without last_window_start: %v, %v", tc.rec, got, err)
		}
		with := strings.Replace(string(b), `"updated_at"`, `"last_window_start":"`+window.Format(time.RFC3339Nano)+`","updated_at"`, 1)
		if got, err := tc.decode([]byte(with)); err != nil || !got.Equal(window) {
			t.Fatalf("%T: %s decodes to %v, %v", tc.rec, with, got, err)
		}
	}
}

func TestLagHistogram(t *testing.T) {
	var h LagHistogram
	for _, ms := range []int64{-5, 0, 1, 3, 40, 40, 900, 61_000, 5_000_000} {
		h.Observe(ms)
	}
	if h.Total() != 9 {
		t.Fatalf("total %d", h.Total())
	}
	if q := h.Quantile(0.5); q != 50 {
		t.Fatalf("p50 %d, want 50 (the bucket of 40 ms)", q)
	}
	var o LagHistogram
	o.Observe(2)
	o.Merge(&h)
	if o.Total() != 10 || o.Counts[0] != 3 || o.Counts[1] != 1 {
		t.Fatalf("merge: %+v", o.Counts)
	}
	if q := h.Quantile(1); q < 1_800_000 {
		t.Fatalf("p100 %d: the unbounded bucket must not read as small", q)
	}
}
