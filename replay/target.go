package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
)

// Target is one place a player writes to: a topic on a cluster.
type Target struct {
	Brokers []string
	Topic   string
	// KafkaAuth is the cluster's TLS and SASL (nil: plaintext).
	KafkaAuth *contract.KafkaAuth
}

// ParseTarget parses "host:port[,host:port]/topic".
func ParseTarget(s string) (Target, error) {
	brokers, topic, ok := strings.Cut(s, "/")
	if !ok || brokers == "" || topic == "" || strings.Contains(topic, "/") {
		return Target{}, fmt.Errorf("%w: %q: want HOST:PORT[,HOST:PORT]/TOPIC", ErrBadTarget, s)
	}
	var t Target
	for b := range strings.SplitSeq(brokers, ",") {
		if b = strings.TrimSpace(b); !strings.Contains(b, ":") {
			return Target{}, fmt.Errorf("%w: %q: broker %q has no port", ErrBadTarget, s, b)
		}
		t.Brokers = append(t.Brokers, b)
	}
	t.Topic = topic
	return t, nil
}

func (t Target) String() string { return strings.Join(t.Brokers, ",") + "/" + t.Topic }

// Partitioning says how a player picks a record's partition in a target.
type Partitioning int

const (
	// PartitionByKey puts a keyed record where goka expects its key (the fnv-1a
	// hash of kafka.GokaPartitioner / kafka.PartitionFor), whatever the target's
	// partition count; a record without key goes to its recorded partition
	// modulo the count, so every target gets the same layout. The default.
	PartitionByKey Partitioning = 1 + iota
	// PartitionPreserve writes every record to its recorded partition; the
	// target needs at least as many partitions as the source had.
	PartitionPreserve
)

func (p Partitioning) String() string {
	switch p {
	case PartitionByKey:
		return "key"
	case PartitionPreserve:
		return "preserve"
	}
	return "unset"
}

// partitioner returns the kgo partitioner for p.
func (p Partitioning) partitioner() kgo.Partitioner {
	return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
		return func(r *kgo.Record, n int) int {
			if p == PartitionPreserve {
				return int(r.Partition)
			}
			if r.Key == nil {
				return int(r.Partition) % n
			}
			return int(kafka.PartitionFor(string(r.Key), int32(n)))
		}
	})
}

// sink is one target's producer and its delivery accounting. Produce is
// called by the player's loop only; the callback runs on the client's goroutines.
type sink struct {
	target   Target
	client   *kgo.Client
	start    time.Time
	inFlight int64 // the client's buffer limit: Produce blocks at it

	// this target's metric children, resolved once
	sent, failed, backpressure prometheus.Counter

	mu          sync.Mutex
	acked       int64
	errors      int64
	firstErrors []string
	ackSeconds  []int64 // acknowledged records per second since start
	waited      time.Duration
	waits       int64
}

func newSink(ctx context.Context, t Target, o *PlayerOptions, sourcePartitions int32, m *playerMetrics) (*sink, error) {
	opts := append([]kgo.Opt{
		kgo.RecordPartitioner(o.Partitioning.partitioner()),
		kgo.MaxBufferedRecords(o.MaxInFlight),
		kgo.ProducerLinger(time.Millisecond),
		kgo.UnknownTopicRetries(3),
	}, o.ClientOpts...)
	c := kafka.Cluster{Name: t.String(), Brokers: t.Brokers, Auth: t.KafkaAuth}
	if err := kafka.CheckAuth(ctx, c); err != nil {
		return nil, fmt.Errorf("replay: target %s: %w", t, err)
	}
	cl, err := kafka.NewClient(c, "hotpair-replay-play", opts...)
	if err != nil {
		return nil, fmt.Errorf("replay: target %s: %w", t, err)
	}
	n, err := kafka.TopicPartitions(ctx, cl, t.Topic)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("%w: target %s: %v", ErrNoTopic, t, err)
	}
	if o.Partitioning == PartitionPreserve && sourcePartitions > n {
		cl.Close()
		return nil, fmt.Errorf("replay: target %s has %d partitions, the recording came from %d: --partitioning preserve needs at least as many",
			t, n, sourcePartitions)
	}
	name := t.String()
	return &sink{target: t, client: cl, inFlight: int64(o.MaxInFlight), sent: m.sent.WithLabelValues(name),
		failed: m.errors.WithLabelValues(name), backpressure: m.backpressure.WithLabelValues(name)}, nil
}

// produce hands r to the client. While the client's buffer is full (the
// target is behind) it blocks; it then reports that it waited, and how long.
func (s *sink) produce(ctx context.Context, r *kgo.Record) bool {
	if s.client.BufferedProduceRecords() < s.inFlight {
		s.client.Produce(ctx, r, s.delivered)
		return false
	}
	t0 := time.Now()
	s.client.Produce(ctx, r, s.delivered)
	waited := time.Since(t0)
	s.mu.Lock()
	s.waited += waited
	s.waits++
	s.mu.Unlock()
	s.backpressure.Add(waited.Seconds())
	return true
}

const maxKeptErrors = 5

func (s *sink) delivered(r *kgo.Record, err error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errors++
		if len(s.firstErrors) < maxKeptErrors {
			s.firstErrors = append(s.firstErrors, errorText(err))
		}
		s.failed.Inc()
		return
	}
	s.acked++
	if !s.start.IsZero() {
		sec := int(now.Sub(s.start) / time.Second)
		for len(s.ackSeconds) <= sec {
			s.ackSeconds = append(s.ackSeconds, 0)
		}
		s.ackSeconds[sec]++
	}
	s.sent.Inc()
}

func errorText(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message + ": " + ke.Description
	}
	return err.Error()
}

// setStart sets the origin of the per-second accounting.
func (s *sink) setStart(t time.Time) {
	s.mu.Lock()
	s.start = t
	s.mu.Unlock()
}

// flush waits until every record handed over was acknowledged or failed.
func (s *sink) flush(ctx context.Context) error { return s.client.Flush(ctx) }

func (s *sink) close() { s.client.Close() }
