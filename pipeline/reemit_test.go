package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/statestore"
)

// TestAggregatorReemitsWhatADeadRunLeftUnwritten: a process killed between
// a window close's two writes can leave the aggregator's state durable (the
// window closed) and the window's SpendEvent unwritten. The state is set up
// that way on the changelog — a window of camp-x closed and emitted by a run
// that no longer exists, and no SpendEvent for it — then a pipeline starts
// and camp-x gets one more ad event: the new run emits the window again, and
// the budget enforcer's spend holds both, once each. Later events of camp-x
// re-emit nothing more.
func TestAggregatorReemitsWhatADeadRunLeftUnwritten(t *testing.T) {
	brokers := kafkatest.Cluster(t).ListenAddrs()
	o := testOptions(brokers, contract.Primary)
	o.Registerer = prometheus.NewRegistry()

	// The aggregator's changelog as the dead run left it.
	table := "hotpair-" + contract.StageAggregator.String() + "-table"
	adm := kadm.NewClient(kafkatest.Client(t, brokers))
	if _, err := adm.CreateTopic(context.Background(), o.Partitions, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, table); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	start := now.Add(-20 * time.Second).Truncate(time.Second)
	lost := statestore.Emitted{StartMs: start.UnixMilli(), Advertiser: "adv", Micros: 123_456, Events: 4,
		DueMs: start.Add(o.Window + o.Lateness).UnixMilli()}
	state := &statestore.Windows{SizeMs: o.Window.Milliseconds(), LatenessMs: o.Lateness.Milliseconds(),
		ClosedThroughMs: start.Add(o.Window).UnixMilli(), Emitted: []statestore.Emitted{lost}, EmittedBy: 42}
	b, err := new(statestore.WindowsCodec).Encode(state)
	if err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, brokers)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: table, Key: []byte("camp-x"), Value: b}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	p, _ := startPipeline(t, o)
	in, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	in.Write("budgets", []byte("camp-x"), mustJSON(t, contract.Budget{V: 1, Campaign: "camp-x", Advertiser: "adv",
		DailyMicros: 1e12, LifetimeMicros: 1e13, Timezone: "UTC"}), nil, time.Now())
	truth := map[string]int64{"camp-x": lost.Micros}
	for i, price := range []int64{1000, 2000, 3000} {
		ev := contract.AdEvent{V: 1, ID: "ev-" + string(rune('a'+i)), Type: contract.EventImpression, Campaign: "camp-x",
			Advertiser: "adv", PriceMicros: price, TS: time.Now().UTC()}
		in.Write("ad-events", []byte("camp-x"), mustJSON(t, ev), nil, time.Now())
		truth["camp-x"] += price
		waitStatuses(t, brokers, 30*time.Second, spentIs(map[string]int64{"camp-x": truth["camp-x"]}))
	}
	g := p.opts.Registerer.(prometheus.Gatherer)
	if n, _ := metricvalue.Get(g, "hotpair_reemitted_total", "service", contract.StageAggregator.String()); n != 1 {
		t.Fatalf("hotpair_reemitted_total %v, want 1: the dead run's window once, nothing of this run's", n)
	}
}

// TestDuplicateSpendHasNoLag: a SpendEvent delivered twice (a redelivery,
// or an aggregator's re-emission after a restart or a rebalance, long due)
// changes no output, so the services' end-to-end lag counts it once; were
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
