package pipeline

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/hotpair/hotpair/internal/kafkatest"
)

// TestTwoSidesProduceIdenticalOutputs dual-writes the same budgets and ad
// events to two kfake clusters, each with its own pipeline, and checks that
// both sides end with exact spend and identical outputs on every topic.
func TestTwoSidesProduceIdenticalOutputs(t *testing.T) {
	primary, standby := kafkatest.Cluster(t).ListenAddrs(), kafkatest.Cluster(t).ListenAddrs()
	startPipeline(t, testOptions(primary, SidePrimary))
	startPipeline(t, testOptions(standby, SideStandby))
	in, err := NewIngester(IngestOptions{Clusters: map[string][]string{SidePrimary: primary, SideStandby: standby}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())

	w := newWorkload(20, 3000, 1)
	w.writeBudgets(t, in)
	for _, b := range [][]string{primary, standby} {
		waitStatuses(t, b, 90*time.Second, budgetsApplied(len(w.budgets)))
	}
	w.writeEvents(t, in)
	for _, b := range [][]string{primary, standby} {
		waitStatuses(t, b, 60*time.Second, spentIs(w.truth))
	}

	// Spend: the same SpendEvents (all but emitted_at) on both sides.
	spendOf := func(brokers []string) map[string]SpendEvent {
		out := make(map[string]SpendEvent)
		for _, r := range kafkatest.UpToEnd(t, brokers, "spend") {
			e, err := DecodeSpendEvent(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			e.EmittedAt = time.Time{}
			if old, dup := out[e.ID]; dup && old != e {
				t.Fatalf("spend id %s emitted twice with different content", e.ID)
			}
			out[e.ID] = e
		}
		return out
	}
	ps, ss := spendOf(primary), spendOf(standby)
	if !maps.Equal(ps, ss) {
		t.Fatalf("spend differs between sides: %d vs %d events", len(ps), len(ss))
	}
	// Service outputs: identical latest values but for updated_at.
	for _, topic := range []string{"budget-status", "pacing", "bid-multipliers"} {
		p, s := withoutUpdatedAt(t, kafkatest.Latest(t, primary, topic)), withoutUpdatedAt(t, kafkatest.Latest(t, standby, topic))
		if len(p) != 20 {
			t.Errorf("%s: %d campaigns on primary, want 20", topic, len(p))
		}
		for k, v := range p {
			if s[k] != v {
				t.Errorf("%s %s differs:\nprimary %s\nstandby %s", topic, k, v, s[k])
			}
		}
	}
	// Budget rules: the small daily budgets are capped, the campaign without
	// a budget row is reported as such.
	st := statuses(t, primary)
	for _, b := range w.budgets {
		want := StatusActive
		if w.truth[b.Campaign] >= b.DailyMicros {
			want = StatusDailyCapped
		}
		if got := st[b.Campaign].Status; got != want {
			t.Errorf("%s spent %d of daily %d: status %s, want %s", b.Campaign, w.truth[b.Campaign], b.DailyMicros, got, want)
		}
	}
	if got := st["camp-019"].Status; got != StatusNoBudget {
		t.Errorf("campaign without budget: status %s, want %s", got, StatusNoBudget)
	}
}

func withoutUpdatedAt(t *testing.T, in map[string][]byte) map[string]string {
	t.Helper()
	out := make(map[string]string)
	for k, v := range in {
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "updated_at")
		b, _ := json.Marshal(m)
		out[k] = string(b)
	}
	return out
}
