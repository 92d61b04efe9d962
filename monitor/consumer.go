package monitor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/pipeline"
)

// received is one decoded health sample and when it was read.
type received struct {
	sample pipeline.HealthSample
	at     time.Time
}

// consumer reads hotpair-health of one cluster and hands every good sample
// to out. Each cluster has its own client and goroutine, so a dead or slow
// cluster only ever delays its own samples: evaluation runs on its own
// ticker regardless.
//
// Every replica reads every partition, without a consumer group, starting
// at the records produced since the replica started (from): the first
// window then holds exactly the samples of its own time span. Older samples
// are not replayed: a window merges samples by receive time, so they would
// count as fresh heartbeats of a side that may have died since.
type consumer struct {
	side    string
	brokers []string
	topic   string
	log     *slog.Logger
	m       *metrics
	out     chan<- received
	now     func() time.Time
	from    time.Time
	// opts are extra franz-go options (tests shorten timeouts).
	opts []kgo.Opt
}

func (c *consumer) run(ctx context.Context) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.ClientID("hotpair-monitor-" + c.side),
		kgo.ConsumeTopics(c.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(c.from.UnixMilli())),
		kgo.FetchMaxWait(time.Second),
		kgo.MetadataMaxAge(30 * time.Second),
	}, c.opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	bad := newLimiter(10 * time.Second)
	errs := newLimiter(30 * time.Second)
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 1000)
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return
			}
			c.m.consumerErrors.WithLabelValues(c.side).Inc()
			if n, ok := errs.allow(); ok {
				c.log.Warn("reading health samples failed", "side", c.side, "topic", topic, "partition", p, "err", err, "suppressed", n)
			}
		})
		at := c.now()
		for _, r := range fs.Records() {
			s, reason := c.decode(r)
			if reason != "" {
				c.m.badSamples.WithLabelValues(c.side, reason).Inc()
				if n, ok := bad.allow(); ok {
					c.log.Warn("bad health sample skipped", "side", c.side, "reason", reason,
						"key", string(r.Key), "partition", r.Partition, "offset", r.Offset, "suppressed", n)
				}
				continue
			}
			c.m.samples.WithLabelValues(c.side).Inc()
			select {
			case c.out <- received{sample: s, at: at}:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

// decode returns the sample or the reason it is bad.
func (c *consumer) decode(r *kgo.Record) (pipeline.HealthSample, string) {
	s, err := pipeline.DecodeHealthSample(r.Value)
	if err != nil {
		if reason := string(pipeline.ReasonOf(err)); reason != "" {
			return s, reason
		}
		return s, "invalid"
	}
	if s.Side != c.side {
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
