// Package kgoka runs goka on hotpair's Kafka layer: one fresh sarama config
// per goka processor, view and emitter (goka's global config is shallow and
// shared, which races and mixes clusters) carrying the cluster's TLS and SASL
// settings, hotpair's franz-go producer, and consumer groups that rejoin at
// once after a rebalance.
package kgoka

import (
	"errors"
	"hash"
	"time"

	"github.com/IBM/sarama"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/lovoo/goka"
)

// SaramaConfig returns a new sarama config for goka against brokers of
// Kafka 2.8 or later (kfake included): oldest offsets for new groups (goka's
// default, newest, skips what was written before a group first joined), 1 ms
// producer flushes (goka's 100 ms adds 100 ms to every hop), the default
// session timeout with heartbeats at a third of it, and a metrics registry
// of its own, and the cluster's TLS and SASL (auth nil: plaintext).
func SaramaConfig(clientID string, auth *contract.KafkaAuth) *sarama.Config {
	c := goka.DefaultConfig()
	c.ClientID = clientID
	c.Version = sarama.V2_8_0_0
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Producer.Flush.Frequency = time.Millisecond
	c.Producer.Compression = sarama.CompressionNone
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Metadata.Retry.Backoff = 250 * time.Millisecond
	c.Net.DialTimeout = 5 * time.Second
	setSessionTimeout(c, DefaultSessionTimeout)
	setSecurity(c, auth)
	return c
}

func setSessionTimeout(c *sarama.Config, d time.Duration) {
	c.Consumer.Group.Session.Timeout = d
	c.Consumer.Group.Heartbeat.Interval = d / 3
}

// Builders holds goka builders that each create a new sarama config per
// client, so that no two clients (and never two clusters) share one.
type Builders struct {
	ClientID string
	// Auth is the cluster's TLS and SASL (nil: plaintext without SASL).
	Auth        *contract.KafkaAuth
	Replication int // replication factor of topics goka creates (1 on kfake)
	Partitions  int // partitions of topics goka creates
	// SessionTimeout of the processors' consumer groups (default
	// DefaultSessionTimeout).
	SessionTimeout time.Duration
	// Stopping, closed when the processors are asked to stop, bounds the
	// wait for their pending writes to ProducerCloseTimeout (nil: no bound
	// but ProducerDeliveryTimeout).
	Stopping <-chan struct{}
	// Guard, if set, refuses every record to a topic without its prefix in
	// the producers these builders make (a dark pipeline's).
	Guard *kafka.TopicGuard
}

func (b Builders) cfg() *sarama.Config {
	c := SaramaConfig(b.ClientID, b.Auth)
	if b.SessionTimeout > 0 {
		setSessionTimeout(c, b.SessionTimeout)
	}
	return c
}

// ProcessorOptions returns the goka options that give a processor its own
// configs, hotpair's producer, and a consumer group that rejoins at once
// after a rebalance.
func (b Builders) ProcessorOptions() []goka.ProcessorOption {
	return []goka.ProcessorOption{
		goka.WithClientID(b.ClientID),
		goka.WithProducerBuilder(b.producerBuilder(true)),
		goka.WithConsumerGroupBuilder(func(brokers []string, group, clientID string) (sarama.ConsumerGroup, error) {
			g, err := goka.ConsumerGroupBuilderWithConfig(b.cfg())(brokers, group, clientID)
			if err != nil {
				return nil, err
			}
			return resumingGroup{g}, nil
		}),
		goka.WithConsumerSaramaBuilder(func(brokers []string, clientID string) (sarama.Consumer, error) {
			return goka.SaramaConsumerBuilderWithConfig(b.cfg())(brokers, clientID)
		}),
		goka.WithTopicManagerBuilder(b.TopicManagerBuilder()),
	}
}

// ViewOptions returns the goka options that give a view its own configs.
func (b Builders) ViewOptions() []goka.ViewOption {
	return []goka.ViewOption{
		goka.WithViewClientID(b.ClientID),
		goka.WithViewConsumerSaramaBuilder(func(brokers []string, clientID string) (sarama.Consumer, error) {
			return goka.SaramaConsumerBuilderWithConfig(b.cfg())(brokers, clientID)
		}),
		goka.WithViewTopicManagerBuilder(b.TopicManagerBuilder()),
	}
}

// EmitterOptions returns the goka options that give an emitter its own
// configs (and, with a Guard, hotpair's guarded producer).
func (b Builders) EmitterOptions() []goka.EmitterOption {
	pb := b.producerBuilder(false)
	if b.Guard == nil {
		pb = func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
			return goka.ProducerBuilderWithConfig(b.cfg())(brokers, clientID, hasher)
		}
	}
	return []goka.EmitterOption{
		goka.WithEmitterClientID(b.ClientID),
		goka.WithEmitterProducerBuilder(pb),
		goka.WithEmitterTopicManagerBuilder(b.TopicManagerBuilder()),
	}
}

// TopicManagerBuilder builds topic managers with the configured replication.
func (b Builders) TopicManagerBuilder() goka.TopicManagerBuilder {
	return func(brokers []string) (goka.TopicManager, error) {
		tm := goka.NewTopicManagerConfig()
		tm.Table.Replication = max(b.Replication, 1)
		tm.Stream.Replication = max(b.Replication, 1)
		tm.CreateTopicTimeout = 10 * time.Second
		return goka.NewTopicManager(brokers, b.cfg(), tm)
	}
}

// NotAuthorized is kafka.NotAuthorized for the errors of goka's sarama
// clients as well: the cluster refused the principal an operation.
func NotAuthorized(err error) bool {
	return errors.Is(err, sarama.ErrTopicAuthorizationFailed) || errors.Is(err, sarama.ErrClusterAuthorizationFailed) ||
		errors.Is(err, sarama.ErrGroupAuthorizationFailed) || kafka.NotAuthorized(err)
}
