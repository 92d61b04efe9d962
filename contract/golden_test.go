package contract

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hotpair/hotpair/internal/goldentest"
)

// TestRecordsMatchGolden holds every record type to the bytes on the
// topics: a change of the wire format fails here.
func TestRecordsMatchGolden(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC)
	start := at.Truncate(10 * time.Second)
	var lag LagHistogram
	for _, ms := range []int64{0, 3, 40, 900, 70_000, 4_000_000} {
		lag.Observe(ms)
	}
	records := map[string]any{
		"ad-event": AdEvent{V: 1, ID: "ev-1", Type: EventClick, Campaign: "c-7", Advertiser: "adv<&>", PriceMicros: 1_250_000, TS: at},
		"spend-event": SpendEvent{V: 1, ID: SpendID("c-7", start), Campaign: "c-7", Advertiser: "adv-1", SpendMicros: 42,
			Events: 3, WindowStart: start, WindowEnd: start.Add(10 * time.Second), DueAt: start.Add(15 * time.Second), EmittedAt: at},
		"spend-event-no-due": SpendEvent{V: 1, ID: LateSpendID("c-7", start, "ev-9"), Campaign: "c-7", Advertiser: "adv-1",
			SpendMicros: 1, Events: 1, WindowStart: start, WindowEnd: start.Add(10 * time.Second), EmittedAt: at},
		"budget": Budget{V: 1, Campaign: "c-7", Advertiser: "adv-1", DailyMicros: 5_000_000, LifetimeMicros: 90_000_000, Timezone: "Europe/Berlin"},
		"budget-status": BudgetStatus{V: 1, Campaign: "c-7", Status: StatusDailyCapped, Day: "2026-03-14",
			SpentTodayMicros: 5_000_001, SpentLifetimeMicros: 70_000_000, LastWindowStart: start.Add(-10 * time.Second), UpdatedAt: at},
		"pacing":         Pacing{V: 1, Campaign: "c-7", Rate: 0.000000125, TargetMicros: 100, ActualMicros: 90, LastWindowStart: start, UpdatedAt: at},
		"bid-multiplier": BidMultiplier{V: 1, Campaign: "c-7", Multiplier: 1.75, UpdatedAt: at},
		"health-sample": HealthSample{V: 1, Service: StageBudget, Side: Standby, Role: RoleLive, Instance: "i-1", Build: "v2",
			Partitions: []int32{0, 2}, TopicPartitions: 4, WindowStart: start, WindowEnd: start.Add(10 * time.Second),
			Events: 1234, LagMs: lag, LagMsMax: 4_000_000},
		"health-sample-resources": HealthSample{V: 1, Service: StagePacer, Side: Primary, Role: RoleDark, Instance: "i-2", Build: "v3",
			Partitions: []int32{1}, TopicPartitions: 4, WindowStart: start, WindowEnd: start.Add(10 * time.Second),
			Events: 10, LagMs: lag, LagMsMax: 4_000_000, DeadLetters: 2,
			Resources: &InstanceResources{CPUSeconds: 0.125, RSSBytes: 52_428_800, Goroutines: 48, GCPauseSeconds: 0.000375}},
		"registration": Registration{V: 1, Side: Primary, Role: RoleDark, Stage: StageAggregator, Instance: "host-1",
			Build: "v3", StartedAt: at},
	}
	for name, rec := range records {
		got, err := Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name, got)
	}
}

// checkGolden compares got with testdata/golden/<name>.json.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", "golden", name+".json"), got)
}

// TestHealthSampleResourcesRoundTrip: the optional dead letters and
// resources survive encode and decode; a sample without them decodes with
// none (an older build's).
func TestHealthSampleResourcesRoundTrip(t *testing.T) {
	start := time.Date(2026, 3, 14, 9, 26, 50, 0, time.UTC)
	s := HealthSample{V: 1, Service: StageBidder, Side: Primary, Role: RoleLive, Instance: "i-1", Build: "b",
		Partitions: []int32{0}, TopicPartitions: 1, WindowStart: start, WindowEnd: start.Add(time.Second),
		DeadLetters: 3, Resources: &InstanceResources{CPUSeconds: 0.5, RSSBytes: 1 << 20, Goroutines: 9, GCPauseSeconds: 1e-5}}
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHealthSample(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.DeadLetters != 3 || got.Resources == nil || *got.Resources != *s.Resources {
		t.Fatalf("round trip: dead letters %d, resources %+v; want 3, %+v", got.DeadLetters, got.Resources, *s.Resources)
	}
	s.DeadLetters, s.Resources = 0, nil
	b, _ = Encode(s)
	if got, err = DecodeHealthSample(b); err != nil || got.Resources != nil || got.DeadLetters != 0 {
		t.Fatalf("older sample: %+v, %v", got, err)
	}
}
