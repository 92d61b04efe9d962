package replay

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/internal/kafka"
)

// benchRecords are ad-event-like records: 1000 campaigns, ~190-byte values.
func benchRecords(n int) []*Record {
	out := make([]*Record, n)
	ts := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		c := fmt.Sprintf("camp-%d", i%1000)
		out[i] = &Record{
			Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
			Key:       []byte(c),
			Value: fmt.Appendf(nil, `{"v":1,"id":"ev-%09d","type":"impression","campaign":%q,"advertiser":"adv-%d","price_micros":%d,"ts":%q}`,
				i, c, i%97, 1000+i%5000, ts.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano)),
			Offset: int64(i),
		}
	}
	return out
}

func benchFile(b *testing.B, recs []*Record) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.hpr")
	w, err := Create(path, Meta{Topic: "ad-events", Partitions: 8, RecordedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		w.Write(r)
	}
	if err := w.Close(""); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchTopic starts a kfake cluster with topic "in"; close it at the end of
// the iteration (kfake keeps every record in memory).
func benchTopic(b *testing.B, partitions int32) ([]string, func()) {
	b.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		b.Fatal(err)
	}
	brokers := c.ListenAddrs()
	if err := kafka.EnsureTopics(b.Context(), kafka.Cluster{Brokers: brokers}, partitions, 1, kafka.TopicSpec{Name: "in"}); err != nil {
		b.Fatal(err)
	}
	return brokers, c.Close
}

// rawProduce is the baseline: a franz-go producer with the player's client
// settings (goka partitioning, 1 ms linger, 10k buffered records) writing
// the same records from memory as fast as it can.
func rawProduce(b *testing.B, brokers []string, recs []*Record) time.Duration {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kafka.GokaPartitioner(),
		kgo.MaxBufferedRecords(10000), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	for _, r := range recs {
		cl.Produce(b.Context(), &kgo.Record{Topic: "in", Key: r.Key, Value: r.Value, Timestamp: time.Now()}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkMaxRate plays 200k records unpaced into one kfake target and,
// in the same iteration, produces the same records with a raw franz-go
// producer into another: player rec/s, raw rec/s and their ratio.
func BenchmarkMaxRate(b *testing.B) {
	const n = 200_000
	recs := benchRecords(n)
	path := benchFile(b, recs)
	var playTotal, rawTotal time.Duration
	for b.Loop() {
		brokers, closeCluster := benchTopic(b, 8)
		p, err := NewPlayer(PlayerOptions{Recording: path, Targets: []Target{{Brokers: brokers, Topic: "in"}}, Unpaced: true})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := p.Run(b.Context()); err != nil {
			b.Fatal(err)
		}
		playTotal += time.Since(start)
		if p.Report().Targets[0].Sent != n {
			b.Fatalf("sent %d of %d", p.Report().Targets[0].Sent, n)
		}
		closeCluster()
		brokers, closeCluster = benchTopic(b, 8)
		rawTotal += rawProduce(b, brokers, recs)
		closeCluster()
	}
	player := float64(n*b.N) / playTotal.Seconds()
	raw := float64(n*b.N) / rawTotal.Seconds()
	b.ReportMetric(player, "player-rec/s")
	b.ReportMetric(raw, "raw-rec/s")
	b.ReportMetric(player/raw, "player/raw")
}

// BenchmarkRatePrecision plays at 100/s and 10k/s for 5 s each, a
// recording retimed to 100/s at its recorded pace for 20 s, and unpaced for
// 4 s (looping over 100k records), and reports the achieved rate, its error
// against the target and the spread of the records the target acknowledged
// per whole second.
func BenchmarkRatePrecision(b *testing.B) {
	for _, c := range []struct {
		name    string
		qps     float64
		n       int
		retimed bool
	}{{"100", 100, 500, false}, {"10k", 10_000, 50_000, false}, {"retimed-100", 100, 2000, true}, {"max", 0, 100_000, false}} {
		b.Run(c.name, func(b *testing.B) {
			path := benchFile(b, benchRecords(c.n))
			if c.retimed {
				retimed := filepath.Join(b.TempDir(), "retimed.hpr")
				if _, err := Retime(RetimeOptions{Input: path, Output: retimed, QPS: c.qps}); err != nil {
					b.Fatal(err)
				}
				path = retimed
			}
			var rep Report
			for b.Loop() {
				brokers, closeCluster := benchTopic(b, 8)
				o := PlayerOptions{Recording: path, Targets: []Target{{Brokers: brokers, Topic: "in"}}, QPS: c.qps}
				switch {
				case c.retimed:
					o.QPS = 0 // the recorded pace
				case c.qps == 0:
					o.Unpaced, o.Loop, o.Duration = true, true, 4*time.Second
				}
				p, err := NewPlayer(o)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Run(b.Context()); err != nil {
					b.Fatal(err)
				}
				rep = p.Report()
				closeCluster()
			}
			b.ReportMetric(rep.AchievedRate, "achieved-rec/s")
			if c.qps > 0 {
				b.ReportMetric(100*(rep.AchievedRate-c.qps)/c.qps, "rate-error-%")
			}
			ack := rep.Targets[0].AckedPerSecond
			b.ReportMetric(100*ack.MaxDeviation, "max-second-dev-%")
			b.ReportMetric(100*ack.StdDev/max(ack.Mean, 1), "second-stddev-%")
			b.ReportMetric(float64(ack.Seconds), "whole-seconds")
		})
	}
}
