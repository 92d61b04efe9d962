package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrTopicRefused is returned (to a record's promise) when a TopicGuard
// refuses the record's topic; the record is not sent.
var ErrTopicRefused = errors.New("kafka: topic refused")

// TopicGuard keeps a producer to the topics that start with one prefix: a
// dark pipeline's (or a dark dispatcher's) records cannot reach a live topic
// whatever its code or configuration says, because every record passes the
// guard where it leaves the process. A nil *TopicGuard allows every topic.
type TopicGuard struct {
	prefix   string
	onRefuse func(topic string)
}

// NewTopicGuard returns a guard that allows only topics starting with
// prefix (which must not be empty). onRefuse, if not nil, is called with
// the topic of every refused record, e.g. to count it in a metric.
func NewTopicGuard(prefix string, onRefuse func(topic string)) (*TopicGuard, error) {
	if prefix == "" {
		return nil, errors.New("kafka: a topic guard needs a prefix")
	}
	return &TopicGuard{prefix: prefix, onRefuse: onRefuse}, nil
}

// Prefix returns the prefix the guard allows ("" for a nil guard).
func (g *TopicGuard) Prefix() string {
	if g == nil {
		return ""
	}
	return g.prefix
}

// Check returns nil when topic may be written, or an ErrTopicRefused that
// names the topic and the prefix (and reports the refusal to onRefuse).
func (g *TopicGuard) Check(topic string) error {
	if g == nil || strings.HasPrefix(topic, g.prefix) {
		return nil
	}
	if g.onRefuse != nil {
		g.onRefuse(topic)
	}
	return fmt.Errorf("%w: %q does not start with %q, the only prefix this producer writes", ErrTopicRefused, topic, g.prefix)
}

// GuardedProducer is a producing client whose every record passes a
// TopicGuard first: a refused record is never buffered, and its promise
// gets the guard's error. It is the producer of anything that must not
// write outside its prefix; with a nil guard it is the plain client.
type GuardedProducer struct {
	cl    *kgo.Client
	guard *TopicGuard
}

// Guard wraps cl so that every record it produces passes g (nil: all pass).
func Guard(cl *kgo.Client, g *TopicGuard) *GuardedProducer {
	return &GuardedProducer{cl: cl, guard: g}
}

// Produce is kgo.Client.Produce behind the guard.
func (p *GuardedProducer) Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	if p.pass(r, promise) {
		p.cl.Produce(ctx, r, promise)
	}
}

// TryProduce is kgo.Client.TryProduce behind the guard.
func (p *GuardedProducer) TryProduce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	if p.pass(r, promise) {
		p.cl.TryProduce(ctx, r, promise)
	}
}

// pass reports whether r may be sent; a refused record's promise gets the
// guard's error at once.
func (p *GuardedProducer) pass(r *kgo.Record, promise func(*kgo.Record, error)) bool {
	err := p.guard.Check(r.Topic)
	if err != nil && promise != nil {
		promise(r, err)
	}
	return err == nil
}

// ProduceSync is kgo.Client.ProduceSync behind the guard: refused records
// get the guard's error in the results and are not sent; the others are.
func (p *GuardedProducer) ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	out := make(kgo.ProduceResults, 0, len(rs))
	pass := make([]*kgo.Record, 0, len(rs))
	for _, r := range rs {
		if err := p.guard.Check(r.Topic); err != nil {
			out = append(out, kgo.ProduceResult{Record: r, Err: err})
			continue
		}
		pass = append(pass, r)
	}
	if len(pass) > 0 {
		out = append(out, p.cl.ProduceSync(ctx, pass...)...)
	}
	return out
}

// Flush waits for every buffered record (kgo.Client.Flush).
func (p *GuardedProducer) Flush(ctx context.Context) error { return p.cl.Flush(ctx) }

// Close closes the client.
func (p *GuardedProducer) Close() { p.cl.Close() }
