package pipeline

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// TestTwoSidesProduceIdenticalOutputs dual-writes the same budgets and ad
// events to two kfake clusters, each with its own pipeline, and checks that
// both sides end with exact spend and identical outputs on every topic.
func TestTwoSidesProduceIdenticalOutputs(t *testing.T) {
	primary, standby := kafkatest.Cluster(t).ListenAddrs(), kafkatest.Cluster(t).ListenAddrs()
	pp, _ := startPipeline(t, testOptions(primary, contract.Primary))
	startPipeline(t, testOptions(standby, contract.Standby))
	in, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: primary, contract.Standby: standby}})
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
	spendOf := func(brokers []string) map[string]contract.SpendEvent {
		out := make(map[string]contract.SpendEvent)
		for _, r := range kafkatest.UpToEnd(t, brokers, "spend") {
			e, err := contract.DecodeSpendEvent(r.Value)
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
		want := contract.StatusActive
		if w.truth[b.Campaign] >= b.DailyMicros {
			want = contract.StatusDailyCapped
		}
		if got := st[b.Campaign].Status; got != want {
			t.Errorf("%s spent %d of daily %d: status %s, want %s", b.Campaign, w.truth[b.Campaign], b.DailyMicros, got, want)
		}
	}
	if got := st["camp-019"].Status; got != contract.StatusNoBudget {
		t.Errorf("campaign without budget: status %s, want %s", got, contract.StatusNoBudget)
	}
	checkLatencyMetrics(t, pp.opts.Registerer.(prometheus.Gatherer))
}

// checkLatencyMetrics: every input record of a stage has its hop delay
// observed, and every applied SpendEvent its window's close-to-output
// latency, in every service; all of them short on an idle test cluster.
func checkLatencyMetrics(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	for _, stage := range contract.Stages() {
		events, _ := metricvalue.Get(g, "hotpair_stage_events_total", "service", stage.String())
		hop, ok := metricvalue.Histogram(g, "hotpair_stage_hop_lag_seconds", "service", stage.String())
		if !ok || float64(hop.GetSampleCount()) != events || events == 0 {
			t.Errorf("%s: %v hop delays observed for %v input records", stage, hop.GetSampleCount(), events)
		}
		if q := metricvalue.NativeOf(hop).Quantile(0.99); q > 10 {
			t.Errorf("%s: hop p99 %.3fs", stage, q)
		}
		if stage == contract.StageAggregator {
			continue
		}
		out, ok := metricvalue.Histogram(g, "hotpair_window_output_latency_seconds", "service", stage.String())
		dups, _ := metricvalue.Get(g, "hotpair_duplicates_total", "service", stage.String())
		if !ok || out.GetSampleCount() == 0 || float64(out.GetSampleCount()) != events-dups {
			t.Errorf("%s: %v output latencies observed for %v spend events (%v duplicates)", stage, out.GetSampleCount(), events, dups)
		}
		// A window closes on the partition clock, 2s lateness after its end,
		// and its output follows within the wake-up interval.
		if q := metricvalue.NativeOf(out).Quantile(0.99); q > 10 {
			t.Errorf("%s: window close to output p99 %.3fs", stage, q)
		}
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
