package pipeline_test

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
	"github.com/hotpair/hotpair/pipeline"
	"github.com/hotpair/hotpair/pipeline/pipebench"
	"github.com/hotpair/hotpair/statestore"
)

// Run the benchmarks once each; they measure fixed workloads:
//
//	go test -run XXX -bench . -benchtime 1x ./pipeline
//
// `hotpair bench pipeline` runs the same end-to-end measurement.

// BenchmarkEndToEnd measures events per second through the aggregator and
// the budget enforcer on one kfake cluster (memory storage), from the first
// ad event consumed to the budget enforcer having applied the last window,
// against a bare goka processor that only counts events per key
// ("goka-events/s", the framework's own ceiling; "ratio" = pipeline / goka)
// and a raw franz-go consumer, on the same records in the same run; and the
// latencies while the backlog drains, under a steady load at half that
// throughput, at the end of that stream, and idle (see pipebench.Result).
func BenchmarkEndToEnd(b *testing.B) {
	forWorkloads(b, func(b *testing.B, cfg pipebench.Config) {
		r, err := pipebench.Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.Raw.EventsPerSec, "raw-events/s")
		b.ReportMetric(r.Goka.EventsPerSec, "goka-events/s")
		b.ReportMetric(r.GokaHotpair.EventsPerSec, "goka-hotpair-client-events/s")
		b.ReportMetric(r.Pipeline.EventsPerSec, "pipeline-events/s")
		b.ReportMetric(r.Pipeline.EventsPerCPUSec, "pipeline-events/cpu-s")
		b.ReportMetric(r.Ratio, "ratio")
		b.ReportMetric(r.Backlog.SpendHop.P99Ms, "backlog-spend-hop-p99-ms")
		b.ReportMetric(r.Backlog.CloseToStatus.P99Ms, "backlog-close-status-p99-ms")
		b.ReportMetric(r.Steady.IngestHop.P99Ms, "steady-ingest-hop-p99-ms")
		b.ReportMetric(r.Steady.SpendHop.P99Ms, "steady-spend-hop-p99-ms")
		b.ReportMetric(r.Steady.StatusHop.P99Ms, "steady-status-hop-p99-ms")
		b.ReportMetric(r.Steady.CloseToStatus.P50Ms, "steady-close-status-p50-ms")
		b.ReportMetric(r.Steady.CloseToStatus.P99Ms, "steady-close-status-p99-ms")
		b.ReportMetric(r.StreamEnd.SpendHop.P99Ms, "stream-end-spend-hop-p99-ms")
		b.ReportMetric(r.StreamEnd.CloseToStatus.P99Ms, "stream-end-close-status-p99-ms")
		b.ReportMetric(r.Idle.IngestHop.P99Ms, "idle-ingest-hop-p99-ms")
		b.ReportMetric(r.Idle.SpendHop.P99Ms, "idle-spend-hop-p99-ms")
		b.ReportMetric(r.Idle.StatusHop.P99Ms, "idle-status-hop-p99-ms")
		b.ReportMetric(r.Idle.CloseToStatus.P99Ms, "idle-close-status-p99-ms")
	})
}

// forWorkloads runs bench once per iteration on each workload of the
// end-to-end benchmarks: 200k ad events over 1k and over 10k campaigns.
func forWorkloads(b *testing.B, bench func(b *testing.B, cfg pipebench.Config)) {
	for _, campaigns := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("campaigns=%d", campaigns), func(b *testing.B) {
			for range b.N {
				bench(b, pipebench.Config{Campaigns: campaigns, Events: 200_000})
			}
		})
	}
}

// BenchmarkRecovery measures how long a budget enforcer takes to recover a
// table of 100k campaigns from its changelog (memory storage: nothing on
// disk), against a raw franz-go consumer reading the same changelog.
func BenchmarkRecovery(b *testing.B) {
	const campaigns = 100_000
	for range b.N {
		brokers := kafkatest.Cluster(b).ListenAddrs()
		o := pipeline.Options{Brokers: brokers, Side: contract.Primary, Stages: []contract.Stage{contract.StageBudget},
			Partitions: 8, Replication: 1, CreateTopics: true, Storage: statestore.Config{Backend: statestore.BackendMemory},
			Registerer: prometheus.NewRegistry()}
		p, err := pipeline.New(o)
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
		for v, _ := metricvalue.Get(o.Registerer.(prometheus.Gatherer), "hotpair_stage_outputs_total", "service", contract.StageBudget.String()); v < campaigns; v, _ = metricvalue.Get(o.Registerer.(prometheus.Gatherer), "hotpair_stage_outputs_total", "service", contract.StageBudget.String()) {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		<-done

		raw, err := pipebench.ReadTopic(context.Background(), brokers, nil, "hotpair-budget-table", campaigns)
		if err != nil {
			b.Fatal(err)
		}
		o.Registerer = prometheus.NewRegistry()
		p2, err := pipeline.New(o)
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

// BenchmarkTakeover measures how long a budget enforcer takes to take over
// the partitions of another instance that stopped, holding 100k campaigns
// of state: from the group's new assignment (the rebalance) to the
// partitions' state recovered and the stage processing again, with goka's
// hot standby (every instance keeps every partition current) and without it
// (the changelog of the partitions is replayed). Memory storage; the
// leaving instance stops cleanly, so the rebalance starts at once (a crash
// waits for the session timeout first: see the scale-out test).
func BenchmarkTakeover(b *testing.B) {
	for _, hot := range []bool{true, false} {
		b.Run(fmt.Sprintf("hot_standby=%v", hot), func(b *testing.B) {
			for range b.N {
				rebalance, takeover := takeover(b, hot)
				b.ReportMetric(rebalance.Seconds(), "rebalance-s")
				b.ReportMetric(takeover.Seconds(), "takeover-s")
			}
		})
	}
}

func takeover(b *testing.B, hot bool) (rebalance, takeover time.Duration) {
	const campaigns = 200_000 // 100k on each instance's two partitions
	brokers := kafkatest.Cluster(b).ListenAddrs()
	start := func(instance string) (*pipeline.Pipeline, prometheus.Gatherer, context.CancelFunc, chan error) {
		reg := prometheus.NewRegistry()
		p, err := pipeline.New(pipeline.Options{Brokers: brokers, Side: contract.Primary, Instance: instance,
			Stages: []contract.Stage{contract.StageBudget}, Partitions: 4, Replication: 1, CreateTopics: true,
			Storage: statestore.Config{Backend: statestore.BackendMemory}, HotStandby: hot, Registerer: reg})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		return p, reg, cancel, done
	}
	partitions := func(g prometheus.Gatherer) float64 {
		v, _ := metricvalue.Get(g, "hotpair_stage_partitions", "service", contract.StageBudget.String())
		return v
	}
	outputs := func(g prometheus.Gatherer) float64 {
		v, _ := metricvalue.Get(g, "hotpair_stage_outputs_total", "service", contract.StageBudget.String())
		return v
	}
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(5 * time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				b.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	_, regA, stopA, doneA := start("a")
	pB, regB, stopB, doneB := start("b")
	defer func() { stopB(); <-doneB }()
	waitFor("both instances assigned", func() bool { return partitions(regA) == 2 && partitions(regB) == 2 })
	cl := kafkatest.Client(b, brokers, kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	for i := range campaigns {
		c := fmt.Sprintf("camp-%06d", i)
		v := fmt.Sprintf(`{"v":1,"campaign":%q,"advertiser":"adv","daily_micros":1000000,"lifetime_micros":0,"timezone":"UTC"}`, c)
		cl.Produce(context.Background(), &kgo.Record{Topic: "budgets", Key: []byte(c), Value: []byte(v)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	waitFor("the state of every campaign", func() bool { return outputs(regA)+outputs(regB) >= campaigns })
	if hot {
		time.Sleep(time.Second) // the standby catches up on the last changelog writes
	}
	stopped := time.Now()
	stopA()
	<-doneA
	waitFor("the takeover's assignment", func() bool { return partitions(regB) == 4 })
	assigned := time.Now()
	waitFor("the taken-over state recovered", pB.Ready)
	return assigned.Sub(stopped), time.Since(assigned)
}

// BenchmarkRecordFloor measures what the pipeline's Kafka records alone
// cost on goka, against bare goka in the same run (see pipebench.Floor):
// "ratio" is the most the pipeline's own ratio could reach on the same
// workload without a change in the records it reads and writes.
func BenchmarkRecordFloor(b *testing.B) { benchFloor(b, false) }

// BenchmarkRecordFloorFused measures the same for a design with the
// aggregator and the budget enforcer in one processor (nothing read back):
// what fewer records per ad event would buy.
func BenchmarkRecordFloorFused(b *testing.B) { benchFloor(b, true) }

func benchFloor(b *testing.B, fused bool) {
	forWorkloads(b, func(b *testing.B, cfg pipebench.Config) {
		r, err := pipebench.Floor(context.Background(), cfg, fused)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.Goka.EventsPerSec, "goka-events/s")
		b.ReportMetric(r.Goka.EventsPerCPUSec, "goka-events/cpu-s")
		b.ReportMetric(r.Floor.EventsPerSec, "floor-events/s")
		b.ReportMetric(r.Floor.EventsPerCPUSec, "floor-events/cpu-s")
		b.ReportMetric(float64(r.Floor.Passed)/float64(r.Events), "records-passed-per-event")
		b.ReportMetric(r.Floor.Ratio, "ratio")
	})
}
