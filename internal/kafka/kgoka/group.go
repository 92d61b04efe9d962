package kgoka

import (
	"context"
	"time"

	"github.com/IBM/sarama"
)

// DefaultSessionTimeout is the consumer group session timeout of goka
// processors: how long the group waits for a silent member (a crashed
// process) before it moves its partitions. It is Kafka's default minimum
// (group.min.session.timeout.ms): shorter needs a broker configured for it.
const DefaultSessionTimeout = 6 * time.Second

// resumingGroup is a sarama consumer group whose Consume joins the group
// again at once when a session ends with a rebalance. goka's processor
// calls Consume in a loop but sleeps a fixed 5 s between sessions (DESIGN
// §8), so every rebalance — a member joining, leaving or crashing — stopped
// every partition of the group for 5 s more than the rebalance itself.
// Sessions that end quickly one after the other (a processing error that
// recurs) are spaced by a growing pause, as goka's sleep did.
type resumingGroup struct {
	sarama.ConsumerGroup
}

const (
	minSessionPause = 100 * time.Millisecond
	maxSessionPause = 5 * time.Second
	// healthySession is how long a session must last for the pause to reset.
	healthySession = 10 * time.Second
)

// Consume runs sessions until ctx ends or joining fails.
func (g resumingGroup) Consume(ctx context.Context, topics []string, handler sarama.ConsumerGroupHandler) error {
	var pause time.Duration
	for {
		started := time.Now()
		if err := g.ConsumerGroup.Consume(ctx, topics, handler); err != nil || ctx.Err() != nil {
			return err
		}
		if time.Since(started) >= healthySession {
			pause = 0
			continue
		}
		pause = max(minSessionPause, min(2*pause, maxSessionPause))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
	}
}
