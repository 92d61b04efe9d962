package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
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
