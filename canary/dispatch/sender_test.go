package dispatch

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// A target's sender writes only topics with the target's prefix: a copy
// to a live topic is refused unsent by the producer's guard and counted as
// a drop, whatever asked for it.
func TestSenderRefusesALiveTopic(t *testing.T) {
	brokers := kafkatest.Cluster(t).ListenAddrs()
	if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: brokers}, 1, 1, kafka.TopicSpec{Name: "ad-events"}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d := contract.DarkTarget{Name: "t", Prefix: contract.DarkPrefix("t"), Brokers: brokers, Strategy: contract.DarkRelative}
	s, err := newSender(d, Config{Buffer: 10, DeliveryTimeout: 5 * time.Second}, newMetrics(reg), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.produce(&kgo.Record{Topic: "ad-events", Key: []byte("c1"), Value: []byte("{}")})
	if v, _ := metricvalue.Get(reg, "hotpair_dark_dispatch_dropped_total", "reason", dropTopicRefused); v != 1 {
		t.Fatalf("%v copies counted as refused, want 1", v)
	}
	if err := s.cl.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := kafkatest.UpToEnd(t, brokers, "ad-events"); len(got) != 0 {
		t.Fatalf("%d records reached the live topic", len(got))
	}
	s.cl.Close()
}

// A copy of a live record older than the delivery timeout is delivered: a
// dispatcher that comes back after a while copies a backlog of such
// records. franz-go counts a record's delivery timeout from its timestamp,
// and a copy kept its live record's, so every copy of that backlog was
// dropped as a delivery failure at once (the dark copy lacked it).
func TestSenderDeliversCopiesOfOldRecords(t *testing.T) {
	brokers := kafkatest.Cluster(t).ListenAddrs()
	topic := contract.TopicsWithPrefix(contract.DarkPrefix("t")).AdEvents
	if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: brokers}, 1, 1, kafka.TopicSpec{Name: topic}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d := contract.DarkTarget{Name: "t", Prefix: contract.DarkPrefix("t"), Brokers: brokers, Strategy: contract.DarkRelative}
	s, err := newSender(d, Config{Buffer: 100, DeliveryTimeout: time.Second}, newMetrics(reg), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	hourOld := time.Now().Add(-time.Hour)
	for i := range 10 {
		live := &kgo.Record{Topic: "ad-events", Key: []byte("c1"), Value: []byte(`{"v":1}`), Timestamp: hourOld, Offset: int64(i)}
		s.event(live, 0)
	}
	s.close(t.Context())
	dropped, _ := metricvalue.Get(reg, "hotpair_dark_dispatch_dropped_total", "reason", dropDeliveryFailed)
	sent, _ := metricvalue.Get(reg, "hotpair_dark_dispatch_records_total", "topic", "ad-events")
	got := kafkatest.UpToEnd(t, brokers, topic)
	if dropped != 0 || sent != 10 || len(got) != 10 {
		t.Fatalf("copies of hour-old records: %v dropped as delivery failures, %v counted sent, %d on the target; want 0, 10, 10", dropped, sent, len(got))
	}
}
