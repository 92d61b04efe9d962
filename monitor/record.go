package monitor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// Bounds of the record's producers, one per cluster.
const (
	// recordBuffer is how many entries a cluster's producer holds while the
	// cluster is slow or away; past it new entries are lost for that
	// cluster only (counted, reason buffer_full). A day of entries at the
	// default window is about 2,200.
	recordBuffer = 10_000
	// recordDeliveryTimeout is how long an entry may wait for its cluster
	// (reason delivery_failed after it).
	recordDeliveryTimeout = time.Hour
	// recordFlushTimeout bounds the flush when the replica stops.
	recordFlushTimeout = 2 * time.Second
)

// recorder appends entries to the decision record: the topic
// <prefix>hotpair-decisions on both clusters, through one producer per
// cluster with a bounded buffer, so a dead cluster never blocks the other
// cluster's writes or the monitor. Appending never blocks: it is
// best-effort and comes after the decision is persisted in ZooKeeper (the
// publisher calls it once a write succeeded). Each cluster's goroutine
// creates the topic (retention record.retention) or sets its retention,
// retrying until it can; entries wait in the producer meanwhile.
type recorder struct {
	id    string
	topic string
	cfg   RecordConfig
	log   *slog.Logger
	m     *metrics
	retry time.Duration
	sinks []*recordSink
}

type recordSink struct {
	side    contract.Side
	cluster kafka.Cluster
	cl      *kgo.Client
}

func newRecorder(m *Monitor, retry time.Duration) (*recorder, error) {
	r := &recorder{id: m.id, topic: m.recordTopic(), cfg: m.cfg.Record, log: m.log, m: m.m, retry: retry}
	for i, cl := range m.clusters {
		side := contract.Sides()[i]
		c, err := kafka.NewClient(cl, "hotpair-monitor-record-"+side.String(), append(append(kafka.DeliverWithin(recordDeliveryTimeout),
			kgo.MaxBufferedRecords(recordBuffer),
			kgo.MetadataMaxAge(30*time.Second),
		), m.kopts...)...)
		if err != nil {
			r.close()
			return nil, err
		}
		r.sinks = append(r.sinks, &recordSink{side: side, cluster: cl, cl: c})
	}
	return r, nil
}

func (m *Monitor) recordTopic() string { return m.cfg.recordTopic() }

// run sets the topic up on every cluster, then waits for ctx to end and
// flushes (bounded) and closes the producers.
func (r *recorder) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range r.sinks {
		wg.Go(func() { r.setUp(ctx, s) })
	}
	wg.Wait()
	<-ctx.Done()
	fctx, cancel := context.WithTimeout(context.Background(), recordFlushTimeout)
	defer cancel()
	for _, s := range r.sinks {
		_ = s.cl.Flush(fctx)
	}
	r.close()
}

func (r *recorder) close() {
	for _, s := range r.sinks {
		s.cl.Close()
	}
}

// setUp creates the topic on one cluster, or sets its retention when it
// exists with another, retrying (with backoff) until it succeeds or ctx ends.
func (r *recorder) setUp(ctx context.Context, s *recordSink) {
	want := kafka.Retention(r.cfg.Retention)
	wait := r.retry
	for ctx.Err() == nil {
		err := kafka.EnsureTopics(ctx, s.cluster, 1, r.cfg.Replication, kafka.TopicSpec{Name: r.topic, Config: want})
		if errors.Is(err, kafka.ErrPartitionMismatch) {
			err = nil // any partition count will do: entries are keyed by service
		}
		var changed []kafka.SettingChange
		if err == nil {
			changed, err = kafka.EnsureTopicConfig(ctx, s.cl, r.topic, want)
		}
		if err == nil {
			for _, c := range changed {
				r.log.Warn("the decision record's topic had another setting; set to the configured one (record.retention)",
					"side", s.side, "topic", r.topic, "key", c.Key, "was", c.Was, "now", c.Now)
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("setting up the decision record's topic failed; retrying (entries wait in the producer meanwhile)",
			"side", s.side, "topic", r.topic, "replication", r.cfg.Replication, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// append records entries on both clusters without blocking. An entry that
// a cluster's producer cannot take (buffer full, client closed) or that
// fails to arrive within recordDeliveryTimeout is counted, and lost for
// that cluster only: the other copy keeps it.
func (r *recorder) append(entries []decisions.Entry) {
	now := time.Now().UTC()
	for _, e := range entries {
		e.RecordedBy, e.RecordedAt = r.id, now
		b, err := decisions.Encode(e)
		if err != nil {
			r.log.Error("encoding a decision entry failed", "id", e.ID, "err", err)
			continue
		}
		r.m.decisionsRecorded.WithLabelValues(e.Service.String(), e.Label()).Inc()
		for _, s := range r.sinks {
			rec := &kgo.Record{Topic: r.topic, Key: []byte(e.Service.String()), Value: b, Timestamp: now}
			s.cl.TryProduce(context.Background(), rec, func(_ *kgo.Record, err error) {
				switch {
				case err == nil:
					r.m.recordWrites.WithLabelValues(s.side.String()).Inc()
				case errors.Is(err, kgo.ErrMaxBuffered):
					r.m.recordWriteErrors.WithLabelValues(s.side.String(), "buffer_full").Inc()
				default:
					r.m.recordWriteErrors.WithLabelValues(s.side.String(), "delivery_failed").Inc()
					r.log.Warn("a decision entry did not reach a cluster; the other cluster's copy keeps it",
						"side", s.side, "id", e.ID, "err", err)
				}
			})
		}
	}
}

// recordTail reads the decision record of one cluster into the replica's
// history, from history.retention ago on: every replica, leader or not,
// shows the same history, and a restarted one finds it again.
func (m *Monitor) recordTail(side contract.Side, cluster kafka.Cluster, from time.Time) *tail {
	return &tail{side: side, cluster: cluster, clientID: "hotpair-monitor-record-reader-" + side.String(),
		topic: m.recordTopic(), what: "decision record", from: from, log: m.log,
		errs: m.m.recordReadErrors.WithLabelValues(side.String()), bad: m.m.recordBad.MustCurryWith(prometheus.Labels{"side": side.String()}),
		now: time.Now, opts: m.kopts,
		take: func(_ context.Context, r *kgo.Record, _ time.Time) (string, bool) {
			e, err := decisions.Decode(r.Value)
			switch {
			case errors.Is(err, decisions.ErrUnknownVersion):
				return "unknown_version", true
			case err != nil:
				return "invalid", true
			}
			m.m.recordReads.WithLabelValues(side.String()).Inc()
			if m.hist.add(e) {
				m.changes.Notify()
			}
			return "", true
		}}
}
