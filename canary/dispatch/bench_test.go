package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor"
)

// BenchmarkDispatchVsRawCopy copies the same live ad-events (benchN
// records, 500 campaigns) to a dark cluster with a raw franz-go
// consume→produce loop (a consumer group, the goka partitioner, nothing
// else) and with the dispatcher at multiplier 1 (every campaign: sampling,
// metrics, the per-target buffer), three times each, interleaved, and
// reports the medians and their ratio. The cost to the live side is the
// throughput of a live consumer reading the same topic alone, next to a raw
// copy and next to the dispatcher (medians of three), as ratios of the
// alone figure. Everything shares this machine's cores, kfake included.
//
//	go test -run '^$' -bench DispatchVsRawCopy -benchtime 1x ./canary/dispatch
func BenchmarkDispatchVsRawCopy(b *testing.B) {
	const benchN, rounds = 200_000, 3
	for b.Loop() {
		live := kafkatest.Cluster(b).ListenAddrs()
		createTopics(b, live, "")
		fillLive(b, live, benchN)
		rawDark, dark := kafkatest.Cluster(b).ListenAddrs(), kafkatest.Cluster(b).ListenAddrs()

		var raw, disp, alone, withRaw, withDisp []float64
		var dropped float64
		for i := range rounds {
			raw = append(raw, rawCopy(b, live, rawDark, benchN))
			r, d := dispatchCopy(b, live, dark, fmt.Sprintf("cand%d", i), benchN)
			disp, dropped = append(disp, r), dropped+d
		}
		for i := range rounds {
			alone = append(alone, liveRead(b, live, benchN))
			var x float64
			parallel(func() { rawCopy(b, live, rawDark, benchN) }, func() { x = liveRead(b, live, benchN) })
			withRaw = append(withRaw, x)
			parallel(func() { dispatchCopy(b, live, dark, fmt.Sprintf("next%d", i), benchN) }, func() { x = liveRead(b, live, benchN) })
			withDisp = append(withDisp, x)
		}
		b.ReportMetric(median(raw), "raw_copy_rec/s")
		b.ReportMetric(median(disp), "dispatch_rec/s")
		b.ReportMetric(median(disp)/median(raw), "dispatch/raw")
		b.ReportMetric(dropped, "dispatch_dropped")
		b.ReportMetric(median(alone), "live_alone_rec/s")
		b.ReportMetric(median(withRaw)/median(alone), "live_next_to_raw/alone")
		b.ReportMetric(median(withDisp)/median(alone), "live_next_to_dispatch/alone")
		b.ReportMetric(median(withDisp)/median(withRaw), "live_next_to_dispatch/next_to_raw")
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func parallel(fs ...func()) {
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(f)
	}
	wg.Wait()
}

// fillLive writes n ad events over 500 campaigns to the live cluster.
func fillLive(b *testing.B, brokers []string, n int) {
	cl := kafkatest.Client(b, brokers, kgo.ProducerLinger(5*time.Millisecond))
	ts := time.Now().UTC()
	var wg sync.WaitGroup
	for i := range n {
		c := fmt.Sprintf("camp-%03d", i%500)
		v, _ := contract.Encode(contract.AdEvent{V: 1, ID: fmt.Sprintf("ev-%d", i), Type: contract.EventImpression,
			Campaign: c, Advertiser: "adv", PriceMicros: 1000, TS: ts})
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Topic: "ad-events", Key: []byte(c), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
}

// liveRead stands for a live pipeline's consumer: it reads n records of
// ad-events from the start in a group of its own and returns records/s.
func liveRead(b *testing.B, brokers []string, n int) float64 {
	start := time.Now()
	cl := kafkatest.Client(b, brokers, kgo.ConsumerGroup(fmt.Sprintf("live-%d", time.Now().UnixNano())),
		kgo.ConsumeTopics("ad-events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < n; {
		got += cl.PollFetches(context.Background()).NumRecords()
	}
	return float64(n) / time.Since(start).Seconds()
}

// rawCopy is the baseline: consume → produce with franz-go alone.
func rawCopy(b *testing.B, live, dark []string, n int) float64 {
	prefix := contract.DarkPrefix(fmt.Sprintf("raw%d", time.Now().UnixNano()))
	createTopics(b, dark, prefix)
	start := time.Now()
	in := kafkatest.Client(b, live, kgo.ConsumerGroup(fmt.Sprintf("raw-%d", time.Now().UnixNano())),
		kgo.ConsumeTopics("ad-events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	out := kafkatest.Client(b, dark, kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(n/4)) // the dispatcher's buffer below
	topic := prefix + "ad-events"
	var wg sync.WaitGroup
	for got := 0; got < n; {
		fs := in.PollFetches(context.Background())
		fs.EachRecord(func(r *kgo.Record) {
			got++
			wg.Add(1)
			out.Produce(context.Background(), &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp},
				func(_ *kgo.Record, err error) {
					if err != nil {
						b.Error(err)
					}
					wg.Done()
				})
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// dispatchCopy runs a dispatcher with one identical target at multiplier 1
// and returns the copies the target acknowledged per second, and how many
// were dropped because the target's buffer was full (the dispatcher never
// waits for a target: with a buffer too small for the burst, the surplus is
// dropped, not delivered late). The buffer here holds a quarter of the burst.
func dispatchCopy(b *testing.B, live, dark []string, name string, n int) (float64, float64) {
	createTopics(b, dark, contract.DarkPrefix(name))
	addr := zktest.Addr(b)
	paths := contract.NewPaths(fmt.Sprintf("/dispatch-bench/%d", time.Now().UnixNano()))
	conn := zktest.Conn(b, addr, nil)
	d := contract.DarkTarget{V: 1, Name: name, Source: contract.Primary, Strategy: contract.DarkIdentical, Multiplier: 1,
		Brokers: dark, Prefix: contract.DarkPrefix(name), Enabled: true, UpdatedAt: time.Now().UTC()}
	if err := zkutil.EnsurePath(conn, paths.Root, zkutil.OpenACL()); err != nil {
		b.Fatal(err)
	}
	if err := dispatch.SetTarget(conn, paths, monitor.ACLPolicy{}, d); err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	start := time.Now()
	disp, err := dispatch.New(dispatch.Config{ZK: []string{addr}, ZKRoot: paths.Root, Side: contract.Primary,
		LiveBrokers: live, Start: dispatch.StartOldest, Group: fmt.Sprintf("disp-%d", time.Now().UnixNano()), Buffer: n / 4},
		dispatch.WithRegisterer(reg))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- disp.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for metric(reg, "hotpair_dark_dispatch_records_total", "target", name, "topic", "ad-events")+
		metric(reg, "hotpair_dark_dispatch_dropped_total", "target", name, "reason", "buffer_full") < float64(n) {
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start).Seconds()
	sent := metric(reg, "hotpair_dark_dispatch_records_total", "target", name, "topic", "ad-events")
	return sent / took, float64(n) - sent
}
