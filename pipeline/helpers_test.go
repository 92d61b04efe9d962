package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/statestore"
)

// testLogger logs to stderr when HOTPAIR_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("HOTPAIR_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testOptions are pipeline options with short windows for tests.
func testOptions(brokers []string, side contract.Side) Options {
	return Options{
		Brokers: brokers, Side: side, Instance: "test-" + side.String(),
		Partitions: 4, Replication: 1, CreateTopics: true,
		Storage: statestore.Config{Backend: statestore.BackendMemory},
		Window:  time.Second, Lateness: 2 * time.Second,
		SampleInterval: time.Second, WakeInterval: 50 * time.Millisecond,
		Logger: testLogger(),
	}
}

// startPipeline runs a pipeline until the test ends (or stop is called).
func startPipeline(t testing.TB, o Options) (p *Pipeline, stop func()) {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("pipeline %s: %v", o.Side, err)
			}
		case <-time.After(60 * time.Second):
			t.Errorf("pipeline %s did not stop within 60s", o.Side)
		}
	}
	t.Cleanup(stop)
	return p, stop
}

// waitReady waits until every pipeline runs all its stages with their
// state recovered (Ready has no change feed: it is looked at every 20 ms),
// at most a minute.
func waitReady(t *testing.T, ps ...*Pipeline) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for _, p := range ps {
		for !p.Ready() {
			select {
			case <-tick.C:
			case <-deadline:
				t.Fatalf("pipeline %s not ready within a minute", p.opts.Side)
			}
		}
	}
}

// runToStop runs a pipeline with options o that must stop at start by
// itself, and returns why (the test fails if it is still running after 30 s).
func runToStop(t *testing.T, o Options) error {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = p.Run(ctx)
	if ctx.Err() != nil {
		t.Fatalf("Run: still running after 30s (%v), want it to stop at start", err)
	}
	return err
}

// workload is a set of campaigns with budgets and the ad events sent to them.
type workload struct {
	budgets []contract.Budget
	events  []contract.AdEvent
	truth   map[string]int64 // campaign -> total price of its events
}

func newWorkload(campaigns, events int, seed uint64) *workload {
	rng := rand.New(rand.NewPCG(seed, 7))
	zones := []string{"UTC", "America/New_York", "Asia/Kolkata", "Europe/Berlin"}
	w := &workload{truth: make(map[string]int64)}
	for i := range campaigns {
		c := fmt.Sprintf("camp-%03d", i)
		if i == campaigns-1 {
			continue // the last campaign has no budget row
		}
		daily := int64(1_000_000_000)
		if i%5 == 0 {
			daily = 2_000_000 // these cap within the test
		}
		w.budgets = append(w.budgets, contract.Budget{V: 1, Campaign: c, Advertiser: fmt.Sprintf("adv-%d", i%3),
			DailyMicros: daily, LifetimeMicros: 10 * daily, Timezone: zones[i%len(zones)]})
	}
	now := time.Now()
	for i := range events {
		n := rng.IntN(campaigns)
		c := fmt.Sprintf("camp-%03d", n)
		ev := contract.AdEvent{V: 1, ID: fmt.Sprintf("ev-%d-%d", seed, i), Type: contract.EventImpression, Campaign: c,
			Advertiser: fmt.Sprintf("adv-%d", n%3), PriceMicros: int64(1000 + rng.IntN(5000)),
			TS: now.Add(-time.Duration(rng.IntN(300)) * time.Millisecond).UTC()}
		if i%10 == 0 {
			ev.Type = contract.EventClick
		}
		w.events = append(w.events, ev)
		w.truth[c] += ev.PriceMicros
	}
	return w
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ingest writes the budgets, then the events, to every cluster of in.
func (w *workload) writeBudgets(t *testing.T, in *Ingester) {
	for _, b := range w.budgets {
		in.Write("budgets", []byte(b.Campaign), mustJSON(t, b), nil, time.Now())
	}
}

func (w *workload) writeEvents(t testing.TB, in *Ingester) {
	for _, e := range w.events {
		in.Write("ad-events", []byte(e.Campaign), mustJSON(t, e), nil, time.Now())
	}
}

// statuses returns the current budget status of every campaign of a cluster.
func statuses(t *testing.T, brokers []string) map[string]contract.BudgetStatus {
	t.Helper()
	return statusesOf(t, kafkatest.Latest(t, brokers, "budget-status"))
}

func statusesOf(t *testing.T, latest map[string][]byte) map[string]contract.BudgetStatus {
	t.Helper()
	out := make(map[string]contract.BudgetStatus)
	for k, v := range latest {
		s, err := contract.DecodeBudgetStatus(v)
		if err != nil {
			t.Fatalf("budget-status %s: %v", k, err)
		}
		out[k] = s
	}
	return out
}

// waitStatuses waits until cond holds on the budget statuses of a cluster,
// checked at every record that arrives, and fails after timeout with what
// cond last said was missing.
func waitStatuses(t *testing.T, brokers []string, timeout time.Duration, cond func(map[string]contract.BudgetStatus) string) {
	t.Helper()
	kafkatest.Follow(t, brokers, "budget-status").Until(t, timeout, func(recs []*kgo.Record) string {
		return cond(statusesOf(t, kafkatest.LatestOf(recs)))
	})
}

// budgetsApplied holds once n campaigns have a status.
func budgetsApplied(n int) func(map[string]contract.BudgetStatus) string {
	return func(st map[string]contract.BudgetStatus) string {
		if len(st) < n {
			return fmt.Sprintf("%d of %d budgets applied", len(st), n)
		}
		return ""
	}
}

// spentIs holds once every campaign's lifetime spend equals truth.
func spentIs(truth map[string]int64) func(map[string]contract.BudgetStatus) string {
	return func(st map[string]contract.BudgetStatus) string {
		for c, want := range truth {
			if got := st[c].SpentLifetimeMicros; got != want {
				return fmt.Sprintf("campaign %s: spent_lifetime %d, want %d (%d campaigns reported)", c, got, want, len(st))
			}
		}
		return ""
	}
}

// primaryWithBudgets returns an ingester of one primary cluster (closed at
// cleanup) that has written the budgets of a workload of campaigns, once
// the pipeline on brokers has applied them all.
func primaryWithBudgets(t *testing.T, brokers []string, campaigns int, seed uint64) (*Ingester, *workload) {
	t.Helper()
	in, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(context.Background()) })
	w := newWorkload(campaigns, 0, seed)
	w.writeBudgets(t, in)
	waitStatuses(t, brokers, 60*time.Second, budgetsApplied(len(w.budgets)))
	return in, w
}
