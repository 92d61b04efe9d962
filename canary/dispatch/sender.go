package dispatch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
)

// sender writes one dark target's copies with a producer of its own. It
// never blocks its caller: the producer holds at most Config.Buffer records
// (TryProduce), and what a slow or dead target cannot take is dropped and
// counted, so no target holds up the live consumer or another target.
type sender struct {
	name   string
	key    string // what, when it changes, needs a new sender
	side   contract.Side
	topics darkTopics
	// cluster is the target's, for reading back what it has (resume).
	cluster kafka.Cluster
	// cl writes only topics with the target's prefix (kafka.TopicGuard).
	cl  *kafka.GuardedProducer
	log *slog.Logger

	inFlight                atomic.Int64
	sampledRate             ewma // ad events the sampling chose for the target
	sentEvents, sentBudgets prometheus.Counter
	dropped                 *prometheus.CounterVec // reason
	buffered                prometheus.Gauge
	refusals                kafka.ErrorLog // used by delivered only

	// copied is what the target already has of resumed live partitions;
	// the events consumer alone touches it (resume, already).
	copied                map[int32]*onTarget
	skipped, resumeFailed prometheus.Counter

	feed   *constantFeed // constant targets only
	cancel context.CancelFunc
	done   chan struct{}
}

// senderKey is what identifies a target's sender: its brokers, and for a
// constant target its rate (its pacer runs at one rate). Any other change of
// the document (multiplier, enabled, until) keeps the sender.
func senderKey(d contract.DarkTarget) string {
	k := strings.Join(d.Brokers, ",")
	if d.Strategy == contract.DarkConstant {
		k += "|constant " + strconv.FormatFloat(d.Rate, 'g', -1, 64)
	}
	return k
}

func newSender(d contract.DarkTarget, c Config, m *metrics, log *slog.Logger) (*sender, error) {
	cluster := kafka.Cluster{Name: "dark " + d.Name, Brokers: d.Brokers, Auth: c.TargetAuth}
	cl, err := kafka.NewProducer(cluster, "hotpair-dark-dispatch", append(kafka.DeliverWithin(c.DeliveryTimeout),
		kgo.MaxBufferedRecords(c.Buffer), kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	guard, err := kafka.NewTopicGuard(d.Prefix, nil) // refusals are counted as drops
	if err != nil {
		cl.Close()
		return nil, err
	}
	s := &sender{
		name: d.Name, key: senderKey(d), side: c.Side, topics: topicsOf(d.Prefix), cluster: cluster,
		cl: kafka.Guard(cl, guard), log: log.With("target", d.Name), copied: map[int32]*onTarget{},
		skipped: m.resumeSkipped.WithLabelValues(d.Name), resumeFailed: m.resumeFailed.WithLabelValues(d.Name),
		sentEvents:  m.records.WithLabelValues(d.Name, "ad-events"),
		sentBudgets: m.records.WithLabelValues(d.Name, "budgets"),
		dropped:     m.dropped.MustCurryWith(prometheus.Labels{"target": d.Name}),
		buffered:    m.buffered.WithLabelValues(d.Name),
		done:        make(chan struct{}),
	}
	for _, r := range []string{dropBufferFull, dropDeliveryFailed, dropNotAuthorized, dropUndecodable, dropCloneID, dropOverRate, dropTopicRefused} {
		s.dropped.WithLabelValues(r) // every reason shows, at 0
	}
	return s, nil
}

// produce hands r to the target's producer without waiting. No context
// cancels it: a copy is delivered, or dropped after the delivery timeout,
// or when the sender closes (which first flushes for a few seconds).
func (s *sender) produce(r *kgo.Record) {
	s.inFlight.Add(1)
	s.cl.TryProduce(context.Background(), r, s.delivered)
}

// delivered is the producer's promise: it runs on the client's goroutine.
func (s *sender) delivered(r *kgo.Record, err error) {
	s.inFlight.Add(-1)
	switch {
	case errors.Is(err, kgo.ErrMaxBuffered):
		s.dropped.WithLabelValues(dropBufferFull).Inc()
	case errors.Is(err, kafka.ErrTopicRefused):
		s.dropped.WithLabelValues(dropTopicRefused).Inc()
		s.log.Error("refused a copy to a topic outside the target's prefix; it was not sent", "topic", r.Topic, "err", err)
	case kafka.NotAuthorized(err):
		s.dropped.WithLabelValues(dropNotAuthorized).Inc()
		s.refusals.Note(s.log, "dispatch: the target's cluster refused a copy: grant the ACLs of dispatch.TargetKafkaACLs",
			r.Topic, r.Partition, err)
	case err != nil:
		s.dropped.WithLabelValues(dropDeliveryFailed).Inc()
	case r.Topic == s.topics.events:
		s.sentEvents.Inc()
	default:
		s.sentBudgets.Inc()
	}
}

// drop counts a copy that could not be made.
func (s *sender) drop(err error) {
	if errors.Is(err, ErrCloneID) {
		s.dropped.WithLabelValues(dropCloneID).Inc()
		return
	}
	s.dropped.WithLabelValues(dropUndecodable).Inc()
}

// event sends copy k of a live ad event (through the constant feed for a
// constant target).
func (s *sender) event(r *kgo.Record, k int) {
	s.sampledRate.n.Add(1)
	if s.already(r, k) {
		return
	}
	c, err := copyEvent(r, k, s.topics.events, contract.DarkSource{Side: s.side, Partition: r.Partition, Offset: r.Offset, K: k})
	if err != nil {
		s.drop(err)
		return
	}
	if s.feed != nil {
		if !s.feed.push(detach(c)) {
			s.dropped.WithLabelValues(dropOverRate).Inc()
		}
		return
	}
	s.produce(c)
}

// budget sends copy k of a budgets row, sent for reason.
func (s *sender) budget(key, value []byte, k int, reason contract.DarkRowReason) {
	c, err := copyBudget(key, value, k, s.topics.budgets, reason)
	if err != nil {
		s.drop(err)
		return
	}
	s.produce(c)
}

// close stops a constant feed, gives what is buffered until ctx ends to
// reach the target, and closes the producer.
func (s *sender) close(ctx context.Context) {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	_ = s.cl.Flush(ctx)
	s.cl.Close()
}

// updateBuffered shows what waits for the target.
func (s *sender) updateBuffered() {
	n := s.inFlight.Load()
	if s.feed != nil {
		n += int64(s.feed.len())
	}
	s.buffered.Set(float64(n))
}

// detach copies what a record kept for long (a constant target's queue and
// repeats) points into: a fetched record's key, value and headers share the
// memory of its whole fetched batch.
func detach(r *kgo.Record) *kgo.Record {
	c := *r
	c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
	c.Headers = make([]kgo.RecordHeader, len(r.Headers))
	for i, h := range r.Headers {
		c.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: bytes.Clone(h.Value)}
	}
	return &c
}
