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
)

// received is one decoded health sample and when it was read.
type received struct {
	sample contract.HealthSample
	at     time.Time
}

// tail reads one topic of one cluster from a point in time on and hands
// every record to take. Each cluster has its own client and goroutine, so
// a dead or slow cluster only ever delays its own records: evaluation runs
// on its own ticker regardless. Every replica reads every partition,
// without a consumer group.
type tail struct {
	side     contract.Side
	cluster  kafka.Cluster
	clientID string
	topic    string
	// what the topic holds, for the logs ("health samples", "decision record").
	what string
	// from: the first record read is the first one produced at or after it.
	from time.Time
	log  *slog.Logger
	// errs counts read errors; bad counts bad records by reason.
	errs prometheus.Counter
	bad  *prometheus.CounterVec
	now  func() time.Time
	// take handles one record read at `at`: it returns the reason the record
	// is bad ("" when good), and false when ctx ended while it waited.
	take func(ctx context.Context, r *kgo.Record, at time.Time) (bad string, ok bool)
	// opts are extra franz-go options (tests shorten timeouts).
	opts []kgo.Opt
}

func (c *tail) run(ctx context.Context) error {
	cl, err := kafka.NewClient(c.cluster, c.clientID, append([]kgo.Opt{
		kgo.ConsumeTopics(c.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(c.from.UnixMilli())),
		kgo.FetchMaxWait(time.Second),
		kgo.MetadataMaxAge(30 * time.Second),
	}, c.opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := kafka.CheckAuth(ctx, c.cluster); err != nil {
		return err // a wrong password or certificate stops the monitor at start
	}
	bad := newLimiter(10 * time.Second)
	errs := newLimiter(30 * time.Second)
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 1000)
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return
			}
			c.errs.Inc()
			if n, ok := errs.allow(); ok {
				c.log.Warn("reading "+c.what+" failed", "side", c.side, "topic", topic, "partition", p, "err", err, "suppressed", n)
			}
		})
		at := c.now()
		for _, r := range fs.Records() {
			reason, ok := c.take(ctx, r, at)
			if !ok {
				return nil
			}
			if reason != "" {
				c.bad.WithLabelValues(reason).Inc()
				if n, ok := bad.allow(); ok {
					c.log.Warn("bad record skipped: "+c.what, "side", c.side, "reason", reason,
						"key", string(r.Key), "partition", r.Partition, "offset", r.Offset, "suppressed", n)
				}
			}
		}
	}
	return nil
}

// healthTail reads hotpair-health of one cluster and hands every good
// sample to out. It starts at the records produced since the replica
// started (from): the first window then holds exactly the samples of its
// own time span. Older samples are not replayed: a window merges samples
// by receive time, so they would count as fresh heartbeats of a side that
// may have died since.
func (m *Monitor) healthTail(side contract.Side, cluster kafka.Cluster, from time.Time, out chan<- received) *tail {
	return &tail{side: side, cluster: cluster, clientID: "hotpair-monitor-" + side.String(),
		topic: contract.TopicsWithPrefix(m.cfg.TopicPrefix).Health, what: "health samples",
		from: from, log: m.log, errs: m.m.consumerErrors.WithLabelValues(side.String()), bad: m.m.badSamples.MustCurryWith(prometheus.Labels{"side": side.String()}),
		now: time.Now, opts: m.kopts,
		take: func(ctx context.Context, r *kgo.Record, at time.Time) (string, bool) {
			s, reason := decodeSample(side, r)
			if reason != "" {
				return reason, true
			}
			m.m.samples.WithLabelValues(side.String()).Inc()
			select {
			case out <- received{sample: s, at: at}:
				return "", true
			case <-ctx.Done():
				return "", false
			}
		}}
}

// decodeSample returns the sample or the reason it is bad.
func decodeSample(side contract.Side, r *kgo.Record) (contract.HealthSample, string) {
	s, err := contract.DecodeHealthSample(r.Value)
	if err != nil {
		if reason := string(contract.ReasonOf(err)); reason != "" {
			return s, reason
		}
		return s, "invalid"
	}
	if s.Side != side {
		// A sample read on one side's cluster speaks for that side only.
		return s, "wrong_side"
	}
	return s, ""
}

// limiter lets one event through per period and counts the others.
type limiter struct {
	mu         sync.Mutex
	period     time.Duration
	last       time.Time
	suppressed int
}

func newLimiter(period time.Duration) *limiter { return &limiter{period: period} }

// allow reports whether to log now, and how many were suppressed since.
func (l *limiter) allow() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.period {
		l.suppressed++
		return 0, false
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return n, true
}
