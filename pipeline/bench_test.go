package pipeline

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/statestore"
)

// Run the benchmarks once each; they measure fixed workloads:
//
//	go test -run XXX -bench 'EndToEnd|Recovery' -benchtime 1x ./pipeline

const (
	benchEvents    = 200_000
	benchCampaigns = 10_000
)

// produceAdEvents writes n ad events for campaigns, with event times spread
// over the two minutes before now, and returns their bytes count.
func produceAdEvents(b *testing.B, brokers []string, n, campaigns int) {
	b.Helper()
	cl := kafkatest.Client(b, brokers, kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	ctx := context.Background()
	start := time.Now().Add(-2 * time.Minute)
	for i := range n {
		c := fmt.Sprintf("camp-%05d", i%campaigns)
		v := fmt.Sprintf(`{"v":1,"id":"e%d","type":"impression","campaign":%q,"advertiser":"adv","price_micros":1000,"ts":%q}`,
			i, c, start.Add(time.Duration(i)*(2*time.Minute)/time.Duration(n)).UTC().Format(time.RFC3339Nano))
		cl.Produce(ctx, &kgo.Record{Topic: "ad-events", Key: []byte(c), Value: []byte(v)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// rawConsume reads topic from the start to its end with one franz-go
// consumer and returns the records read and the time it took.
func rawConsume(b *testing.B, brokers []string, topic string, want int) time.Duration {
	b.Helper()
	cl := kafkatest.Client(b, brokers, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start, n := time.Now(), 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("raw consumer read %d of %d", n, want)
		}
		n += fs.NumRecords()
	}
	return time.Since(start)
}

func counter(g prometheus.Gatherer, name, service string) float64 {
	v, _ := metricvalue.Get(g, name, "service", service)
	return v
}

// BenchmarkEndToEnd measures events per second through the aggregator and
// the budget enforcer on one kfake cluster (memory storage), from the first
// ad event consumed to the budget enforcer having applied the last window.
// In the same run and on the same records it measures a raw franz-go
// consumer (the figure's baseline, "ratio" = pipeline / raw) and a bare goka
// processor that only counts events per key ("goka-events/s": the framework's
// own ceiling). Fewer campaigns mean more events per window and fewer
// SpendEvents per ad event.
func BenchmarkEndToEnd(b *testing.B) {
	for _, campaigns := range []int{1_000, benchCampaigns} {
		b.Run(fmt.Sprintf("campaigns=%d", campaigns), func(b *testing.B) {
			for range b.N {
				endToEnd(b, campaigns)
			}
		})
	}
}

func endToEnd(b *testing.B, campaigns int) {
	brokers := kafkatest.Cluster(b).ListenAddrs()
	if err := kafka.EnsureTopics(context.Background(), brokers, 8, 1, kafka.TopicSpec{Name: "ad-events"}); err != nil {
		b.Fatal(err)
	}
	produceAdEvents(b, brokers, benchEvents, campaigns)
	raw := rawConsume(b, brokers, "ad-events", benchEvents)
	bare := bareGoka(b, brokers)

	reg := prometheus.NewRegistry()
	o := Options{Brokers: brokers, Side: SidePrimary, Stages: []string{StageAggregator, StageBudget},
		Partitions: 8, Replication: 1, CreateTopics: true, Storage: statestore.Config{Backend: statestore.BackendMemory},
		Window: 10 * time.Second, Lateness: 0, IdleClose: 200 * time.Millisecond, WakeInterval: 20 * time.Millisecond,
		Registerer: reg}
	p, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for counter(reg, "hotpair_stage_events_total", StageAggregator) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	first := time.Now()
	// Every window of the two minutes is 10 s: 12 or 13 windows per campaign.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		agg := counter(reg, "hotpair_stage_events_total", StageAggregator)
		emitted := counter(reg, "hotpair_stage_outputs_total", StageAggregator)
		applied := counter(reg, "hotpair_stage_events_total", StageBudget)
		if agg == benchEvents && applied == emitted && emitted >= float64(12*campaigns) && p.stages[0].wake.Len() == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("pipeline: %v events, %v windows emitted, %v applied", agg, emitted, applied)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(first)
	cancel()
	<-done
	b.ReportMetric(benchEvents/raw.Seconds(), "raw-events/s")
	b.ReportMetric(benchEvents/bare.Seconds(), "goka-events/s")
	b.ReportMetric(benchEvents/took.Seconds(), "pipeline-events/s")
	b.ReportMetric(raw.Seconds()/took.Seconds(), "ratio")
}

// bareGoka runs a goka processor that counts ad events per key, with the
// same per-processor configs and storage backend as the pipeline, and
// returns how long it took from its first event to its last.
func bareGoka(b *testing.B, brokers []string) time.Duration {
	var n atomic.Int64
	var first atomic.Int64
	done := make(chan struct{})
	g := goka.DefineGroup("bare-count",
		goka.Input("ad-events", new(codec.Bytes), func(ctx goka.Context, _ any) {
			c, _ := ctx.Value().(int64)
			ctx.SetValue(c + 1)
			switch n.Add(1) {
			case 1:
				first.Store(time.Now().UnixNano())
			case benchEvents:
				close(done)
			}
		}),
		goka.Persist(new(codec.Int64)),
	)
	sb, err := statestore.Config{Backend: statestore.BackendMemory}.Builder(SidePrimary, "bare", "bare-count-table", nil)
	if err != nil {
		b.Fatal(err)
	}
	opts := append(kafka.Builders{ClientID: "bare", Replication: 1}.ProcessorOptions(), goka.WithStorageBuilder(sb))
	proc, err := goka.NewProcessor(brokers, g, opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = proc.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("bare goka processor counted %d of %d", n.Load(), benchEvents)
	}
	took := time.Since(time.Unix(0, first.Load()))
	cancel()
	<-stopped
	return took
}

// BenchmarkRecovery measures how long a budget enforcer takes to recover a
// table of 100k campaigns from its changelog (memory storage: nothing on
// disk), against a raw franz-go consumer reading the same changelog.
func BenchmarkRecovery(b *testing.B) {
	const campaigns = 100_000
	for range b.N {
		brokers := kafkatest.Cluster(b).ListenAddrs()
		o := Options{Brokers: brokers, Side: SidePrimary, Stages: []string{StageBudget},
			Partitions: 8, Replication: 1, CreateTopics: true, Storage: statestore.Config{Backend: statestore.BackendMemory},
			Registerer: prometheus.NewRegistry()}
		p, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		// One budget row per campaign fills the table with 100k states.
		cl := kafkatest.Client(b, brokers, kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
		for i := range campaigns {
			c := fmt.Sprintf("camp-%06d", i)
			v := fmt.Sprintf(`{"v":1,"campaign":%q,"advertiser":"adv","daily_micros":1000000,"lifetime_micros":0,"timezone":"UTC"}`, c)
			cl.Produce(context.Background(), &kgo.Record{Topic: "budgets", Key: []byte(c), Value: []byte(v)}, nil)
		}
		_ = cl.Flush(context.Background())
		for counter(o.Registerer.(prometheus.Gatherer), "hotpair_stage_outputs_total", StageBudget) < campaigns {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		<-done

		table := p.stages[0].tableTopic()
		raw := rawConsume(b, brokers, table, campaigns)

		o.Registerer = prometheus.NewRegistry()
		p2, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		go func() { done <- p2.Run(ctx) }()
		start := time.Now()
		for !p2.Ready() {
			time.Sleep(10 * time.Millisecond)
		}
		took := time.Since(start)
		cancel()
		<-done
		b.ReportMetric(took.Seconds(), "recovery-s")
		b.ReportMetric(raw.Seconds(), "raw-read-s")
		b.ReportMetric(took.Seconds()/raw.Seconds(), "ratio")
	}
}
