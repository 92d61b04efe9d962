package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/statestore"
)

// TestDuplicateSpendHasNoLag: a SpendEvent delivered twice (a redelivery
// after a restart or a rebalance, long due) changes no output, so the services' end-to-end lag counts it once; were
// the duplicate counted, every rebalance would make the side read as
// behind.
func TestDuplicateSpendHasNoLag(t *testing.T) {
	brokers := kafkatest.Cluster(t).ListenAddrs()
	o := testOptions(brokers, contract.Primary)
	o.Registerer = prometheus.NewRegistry()
	p, _ := startPipeline(t, o)
	g := p.opts.Registerer.(prometheus.Gatherer)
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	ev := contract.SpendEvent{V: contract.SchemaVersion, ID: contract.SpendID("camp-d", start), Campaign: "camp-d", Advertiser: "adv",
		SpendMicros: 5000, Events: 2, WindowStart: start, WindowEnd: start.Add(o.Window), DueAt: start.Add(o.Window + o.Lateness),
		EmittedAt: time.Now().UTC()}
	b, err := contract.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, brokers)
	budget := contract.StageBudget.String()
	health := kafkatest.Follow(t, brokers, contract.TopicsWithPrefix("").Health)
	for range 2 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: contract.TopicsWithPrefix("").Spend, Key: []byte("camp-d"), Value: b}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The budget enforcer's health samples count both, and one more sample
	// follows the one that counted the second: its callback has ended.
	health.Until(t, 30*time.Second, func(recs []*kgo.Record) string {
		var events int64
		after := 0
		for _, r := range recs {
			s, err := contract.DecodeHealthSample(r.Value)
			if err != nil || s.Service != contract.StageBudget {
				continue
			}
			if events >= 2 {
				after++
			}
			events += s.Events
		}
		if events < 2 || after == 0 {
			return fmt.Sprintf("the budget enforcer's samples count %d SpendEvents (%d samples after the second)", events, after)
		}
		return ""
	})
	if d, _ := metricvalue.Get(g, "hotpair_duplicates_total", "service", budget); d != 1 {
		t.Fatalf("hotpair_duplicates_total %v, want 1", d)
	}
	h, _ := metricvalue.Histogram(g, "hotpair_stage_event_lag_seconds", "service", budget)
	if n := h.GetSampleCount(); n != 1 {
		t.Fatalf("the lag histogram has %d observations, want 1: the duplicate counted", n)
	}
}

// TestDuplicateAdEventHasNoLag: the aggregator does not count a redelivered
// ad event (an offset it has applied, as after a restart or a rebalance) in
// its end-to-end lag either; only the new one counts.
func TestDuplicateAdEventHasNoLag(t *testing.T) {
	reg := prometheus.NewRegistry()
	tt, st := testStageWith(t, contract.StageAggregator, reg)
	ts := time.Now().Add(-time.Minute)
	// The campaign's state has applied every offset below 1: the tester's
	// first message (offset 0) is a redelivery, its second is new.
	tt.SetTableValue(goka.GroupTable(st.group), "c1", &statestore.Windows{NextOffset: 1})
	tt.Consume("ad-events", "c1", adEvent(t, "e0", "c1", 100, ts))
	tt.Consume("ad-events", "c1", adEvent(t, "e1", "c1", 100, ts))
	agg := contract.StageAggregator.String()
	if d, _ := metricvalue.Get(reg, "hotpair_duplicates_total", "service", agg); d != 1 {
		t.Fatalf("hotpair_duplicates_total %v, want 1", d)
	}
	h, _ := metricvalue.Histogram(reg, "hotpair_stage_event_lag_seconds", "service", agg)
	if n := h.GetSampleCount(); n != 1 {
		t.Fatalf("the lag histogram has %d observations, want 1: the duplicate counted", n)
	}
}
