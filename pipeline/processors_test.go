package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/tester"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/statestore"
)

// testStage runs one stage's processor on goka's tester (no Kafka) and
// returns the tester with trackers of the stage's output and dead letters.
func testStage(t *testing.T, name contract.Stage) (*tester.Tester, *stage) {
	t.Helper()
	return testStageWith(t, name, nil)
}

// testStageWith is testStage with the pipeline's metrics registered in reg
// (nil: the default registerer).
func testStageWith(t *testing.T, name contract.Stage, reg prometheus.Registerer) (*tester.Tester, *stage) {
	t.Helper()
	p, err := New(Options{Brokers: []string{"tester:9092"}, Side: contract.Primary, Stages: []contract.Stage{name},
		Storage: statestore.Config{Backend: statestore.BackendMemory}, Window: 10 * time.Second, Lateness: 5 * time.Second,
		Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	st := p.stages[0]
	tt := tester.New(t)
	proc, err := goka.NewProcessor(nil, st.graph, goka.WithTester(tt), goka.WithNilHandling(goka.NilProcess))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = proc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return tt, st
}

func adEvent(t *testing.T, id, campaign string, price int64, ts time.Time) []byte {
	return mustJSON(t, contract.AdEvent{V: 1, ID: id, Type: contract.EventImpression, Campaign: campaign, Advertiser: "adv", PriceMicros: price, TS: ts.UTC()})
}

func drainSpend(t *testing.T, q *tester.QueueTracker) []contract.SpendEvent {
	t.Helper()
	var out []contract.SpendEvent
	for {
		_, v, ok := q.NextRaw()
		if !ok {
			return out
		}
		e, err := contract.DecodeSpendEvent(v)
		if err != nil {
			t.Fatalf("aggregator emitted a bad SpendEvent: %v", err)
		}
		out = append(out, e)
	}
}

func TestAggregatorWindows(t *testing.T) {
	tt, st := testStage(t, contract.StageAggregator)
	spend := tt.NewQueueTracker("spend")
	dlq := tt.NewQueueTracker("hotpair-dlq")
	loop := st.loopTopic()
	now := time.Now()
	w0 := now.Add(-time.Minute).Truncate(10 * time.Second) // a window that is already due
	w1 := now.Truncate(10 * time.Second)                   // the current window

	t.Run("events of one window sum into one SpendEvent when it closes", func(t *testing.T) {
		tt.Consume("ad-events", "c1", adEvent(t, "e1", "c1", 100, w0.Add(time.Second)))
		tt.Consume("ad-events", "c1", adEvent(t, "e2", "c1", 250, w0.Add(9*time.Second)))
		tt.Consume("ad-events", "c1", adEvent(t, "e3", "c1", 7, w1.Add(time.Second)))
		// w0 closes once the partition's event time passes its end plus the
		// lateness: with e3, which is in the current window.
		tt.Consume(loop, "c1", []byte("wake"))
		got := drainSpend(t, spend)
		if len(got) != 1 {
			t.Fatalf("got %d SpendEvents, want 1: %+v", len(got), got)
		}
		e := got[0]
		if e.ID != contract.SpendID("c1", w0) || e.SpendMicros != 350 || e.Events != 2 || !e.WindowEnd.Equal(w0.Add(10*time.Second)) {
			t.Fatalf("SpendEvent %+v", e)
		}
		// due_at: the window's end plus the lateness, when it could first close.
		if !e.DueAt.Equal(w0.Add(15 * time.Second)) {
			t.Fatalf("due_at %s, want window_end + lateness %s", e.DueAt, w0.Add(15*time.Second))
		}
	})
	t.Run("a late event is emitted on its own, never dropped", func(t *testing.T) {
		tt.Consume("ad-events", "c1", adEvent(t, "late-1", "c1", 40, w0.Add(5*time.Second)))
		got := drainSpend(t, spend)
		if len(got) != 1 || got[0].ID != contract.LateSpendID("c1", w0, "late-1") || got[0].SpendMicros != 40 || !got[0].IsLate() {
			t.Fatalf("late event: %+v", got)
		}
		// due_at of a late SpendEvent: its ad event's own time.
		if !got[0].DueAt.Equal(w0.Add(5 * time.Second)) {
			t.Fatalf("late due_at %s, want the ad event's ts %s", got[0].DueAt, w0.Add(5*time.Second))
		}
	})
	t.Run("a wake-up before the window closes emits nothing", func(t *testing.T) {
		tt.Consume(loop, "c1", []byte("wake"))
		if got := drainSpend(t, spend); len(got) != 0 {
			t.Fatalf("emitted %+v before the window closed", got)
		}
		w := tt.TableValue(goka.GroupTable(st.group), "c1").(*statestore.Windows)
		if len(w.Panes) != 1 || w.Panes[0].Micros != 7 || w.WakeAtMs() != w1.Add(15*time.Second).UnixMilli() {
			t.Fatalf("state %+v", w)
		}
	})
	t.Run("bad records go to the dead-letter topic and leave the state alone", func(t *testing.T) {
		before := tt.TableValue(goka.GroupTable(st.group), "c1").(*statestore.Windows)
		tt.Consume("ad-events", "c1", []byte(`{"v":1}`))
		tt.Consume("ad-events", "c1", adEvent(t, "e9", "c2", 5, now)) // key mismatch
		after := tt.TableValue(goka.GroupTable(st.group), "c1").(*statestore.Windows)
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Fatalf("state changed by bad records: %+v -> %+v", before, after)
		}
		var reasons []string
		for {
			h, _, _, ok := dlq.NextRawWithHeaders()
			if !ok {
				break
			}
			reasons = append(reasons, string(h["hotpair-reason"]))
		}
		if fmt.Sprint(reasons) != "[missing_field key_mismatch]" {
			t.Fatalf("dead letter reasons %v", reasons)
		}
	})
}

// TestLateIsDecidedByTheClock: whether an event is late depends only on the
// partition's clock when it arrives, not on whether a wake-up has emitted
// its window yet, so a side that closes windows later (slower wake-ups, a
// backlog) emits the same windows as one that keeps up.
func TestLateIsDecidedByTheClock(t *testing.T) {
	tt, st := testStage(t, contract.StageAggregator)
	spend := tt.NewQueueTracker("spend")
	w0 := time.Now().Add(-time.Hour).Truncate(10 * time.Second)
	tt.Consume("ad-events", "c7", adEvent(t, "a", "c7", 100, w0.Add(time.Second)))
	// Another campaign moves the partition's clock past w0's close; no
	// wake-up has reached c7 yet, so its pane is still open...
	tt.Consume("ad-events", "c8", adEvent(t, "b", "c8", 1, w0.Add(20*time.Second)))
	drainSpend(t, spend)
	// ...and an event of w0 arriving now is late all the same.
	tt.Consume("ad-events", "c7", adEvent(t, "c", "c7", 40, w0.Add(2*time.Second)))
	tt.Consume(st.loopTopic(), "c7", []byte("wake"))
	got := drainSpend(t, spend)
	if len(got) != 2 || got[0].ID != contract.LateSpendID("c7", w0, "c") || got[0].SpendMicros != 40 ||
		got[1].ID != contract.SpendID("c7", w0) || got[1].SpendMicros != 100 {
		t.Fatalf("want the late event on its own, then the window with the first event only: %+v", got)
	}
}

func decodeStatuses(t *testing.T, q *tester.QueueTracker) []contract.BudgetStatus {
	t.Helper()
	var out []contract.BudgetStatus
	for {
		_, v, ok := q.NextRaw()
		if !ok {
			return out
		}
		s, err := contract.DecodeBudgetStatus(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
}

func spendEvent(t *testing.T, campaign string, start time.Time, micros int64) []byte {
	return mustJSON(t, contract.SpendEvent{V: 1, ID: contract.SpendID(campaign, start), Campaign: campaign, Advertiser: "adv",
		SpendMicros: micros, Events: 1, WindowStart: start.UTC(), WindowEnd: start.Add(10 * time.Second).UTC(), EmittedAt: time.Now().UTC()})
}

func TestBudgetEnforcer(t *testing.T) {
	tt, st := testStage(t, contract.StageBudget)
	out := tt.NewQueueTracker("budget-status")
	start := time.Now().Truncate(10 * time.Second).Add(-time.Minute)
	last := func() contract.BudgetStatus {
		s := decodeStatuses(t, out)
		if len(s) == 0 {
			t.Fatal("no status emitted")
		}
		return s[len(s)-1]
	}

	tt.Consume("spend", "c1", spendEvent(t, "c1", start, 500))
	if s := last(); s.Status != contract.StatusNoBudget || s.SpentTodayMicros != 500 || !s.LastWindowStart.Equal(start) {
		t.Fatalf("without a budget row: %+v (last_window_start: want the window applied, %s)", s, start)
	}
	tt.Consume("budgets", "c1", mustJSON(t, contract.Budget{V: 1, Campaign: "c1", Advertiser: "adv", DailyMicros: 1000, LifetimeMicros: 5000, Timezone: "UTC"}))
	if s := last(); s.Status != contract.StatusActive {
		t.Fatalf("after the budget arrived: %+v", s)
	}
	tt.Consume("spend", "c1", spendEvent(t, "c1", start.Add(10*time.Second), 500))
	if s := last(); s.Status != contract.StatusDailyCapped || s.SpentTodayMicros != 1000 || !s.LastWindowStart.Equal(start.Add(10*time.Second)) {
		t.Fatalf("at the daily budget: %+v", s)
	}
	// The same SpendEvent again (a replay, a restart) changes nothing.
	tt.Consume("spend", "c1", spendEvent(t, "c1", start.Add(10*time.Second), 500))
	if s := decodeStatuses(t, out); len(s) != 0 {
		t.Fatalf("a duplicate SpendEvent produced output %+v", s)
	}
	// A raised budget lifts the cap at once.
	tt.Consume("budgets", "c1", mustJSON(t, contract.Budget{V: 1, Campaign: "c1", Advertiser: "adv", DailyMicros: 3000, LifetimeMicros: 5000, Timezone: "UTC"}))
	// A budget row applies no spend window: the status follows the same one.
	if s := last(); s.Status != contract.StatusActive || !s.LastWindowStart.Equal(start.Add(10*time.Second)) {
		t.Fatalf("after raising the budget: %+v", s)
	}
	// The campaign's midnight: a wake-up on a new day resets the day's spend.
	c := tt.TableValue(goka.GroupTable(st.group), "c1").(*statestore.Campaign)
	c.Ledger.Day, c.Ledger.SpentToday = "2001-01-01", 3000
	tt.SetTableValue(goka.GroupTable(st.group), "c1", c)
	tt.Consume(st.loopTopic(), "c1", []byte("wake"))
	s := last()
	if s.Status != contract.StatusActive || s.SpentTodayMicros != 0 || s.Day != time.Now().UTC().Format(time.DateOnly) || s.SpentLifetimeMicros != 1000 {
		t.Fatalf("after midnight: %+v", s)
	}
	// Lifetime cap wins over the daily state.
	tt.Consume("spend", "c1", spendEvent(t, "c1", start.Add(20*time.Second), 4000))
	if s := last(); s.Status != contract.StatusLifetimeCapped || s.SpentLifetimeMicros != 5000 {
		t.Fatalf("at the lifetime budget: %+v", s)
	}
	// Deleting the budget row reports the campaign as without budget.
	tt.Consume("budgets", "c1", nil)
	if s := last(); s.Status != contract.StatusNoBudget {
		t.Fatalf("after the budget row was deleted: %+v", s)
	}
}

func TestBudgetDayFollowsCampaignTimezone(t *testing.T) {
	tt, _ := testStage(t, contract.StageBudget)
	out := tt.NewQueueTracker("budget-status")
	tt.Consume("budgets", "c1", mustJSON(t, contract.Budget{V: 1, Campaign: "c1", Advertiser: "adv", DailyMicros: 1000, Timezone: "Asia/Kolkata"}))
	// 20:00 UTC on March 1 is 01:30 on March 2 in Kolkata (UTC+5:30).
	ws := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	tt.Consume("spend", "c1", spendEvent(t, "c1", ws, 10))
	s := decodeStatuses(t, out)
	if got := s[len(s)-1]; got.Day < "2026-03-02" {
		t.Fatalf("day %s: a window at 20:00 UTC belongs to March 2 in Kolkata", got.Day)
	}
}

// middayZone returns a fixed-offset zone where it is now between 08:00 and
// 16:00, so that a test of a campaign's day does not depend on the hour it runs.
func middayZone(now time.Time) string {
	for off := -12; off <= 12; off++ {
		if h := now.UTC().Add(time.Duration(off) * time.Hour).Hour(); h >= 8 && h < 16 {
			if off > 0 {
				return fmt.Sprintf("Etc/GMT-%d", off) // POSIX sign: Etc/GMT-5 is UTC+5
			}
			return fmt.Sprintf("Etc/GMT+%d", -off)
		}
	}
	return "UTC"
}

func TestPacerAndBidderOutputs(t *testing.T) {
	const daily = 86_400_000 // 1000 micros per second at an even pace
	for _, name := range []contract.Stage{contract.StagePacer, contract.StageBidder} {
		t.Run(name.String(), func(t *testing.T) {
			tt, _ := testStage(t, name)
			topic := map[contract.Stage]string{contract.StagePacer: "pacing", contract.StageBidder: "bid-multipliers"}[name]
			out := tt.NewQueueTracker(topic)
			now := time.Now()
			zone := middayZone(now)
			tt.Consume("budgets", "c1", mustJSON(t, contract.Budget{V: 1, Campaign: "c1", Advertiser: "adv", DailyMicros: daily, Timezone: zone}))
			// A campaign ahead of plan that keeps spending at 3x its even
			// pace: the pacer must throttle it, the bidder must bid it down;
			// both stay within their bounds.
			start := now.Truncate(10 * time.Second).Add(-10 * time.Minute)
			loc, _ := contract.LoadZone(zone)
			ahead := int64(daily*dayOf(start, loc).fraction(start)) + daily/20
			for i := range 60 {
				micros := int64(3 * 10 * 1000)
				if i == 0 {
					micros += ahead
				}
				tt.Consume("spend", "c1", spendEvent(t, "c1", start.Add(time.Duration(i)*10*time.Second), micros))
			}
			var lastRate, lastMult float64
			var lastWindow time.Time
			for {
				_, v, ok := out.NextRaw()
				if !ok {
					break
				}
				if name == contract.StagePacer {
					p, err := contract.DecodePacing(v)
					if err != nil {
						t.Fatal(err)
					}
					lastRate, lastWindow = p.Rate, p.LastWindowStart
				} else {
					b, err := contract.DecodeBidMultiplier(v)
					if err != nil {
						t.Fatal(err)
					}
					lastMult, lastWindow = b.Multiplier, b.LastWindowStart
				}
			}
			if want := start.Add(59 * 10 * time.Second).UTC(); !lastWindow.Equal(want) {
				t.Fatalf("last_window_start %s, want the newest window applied, %s", lastWindow, want)
			}
			if name == contract.StagePacer && !(lastRate >= 0.01 && lastRate < 0.5) {
				t.Fatalf("rate %v: a campaign ahead of plan at 3x its pace must be throttled, not below min_rate", lastRate)
			}
			if name == contract.StageBidder && !(lastMult >= 0.5 && lastMult < 1) {
				t.Fatalf("multiplier %v: a campaign ahead of plan must bid down, not below 0.5", lastMult)
			}
		})
	}
}
