// Package kafka is the Kafka client plumbing shared by every component: one
// fresh sarama config per goka processor, view and emitter (goka's global
// config is shallow and shared, which races and mixes clusters), the franz-go
// partitioner that agrees with goka's, and topic creation.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SaramaConfig returns a new sarama config for goka against brokers of
// Kafka 2.8 or later (kfake included): oldest offsets for new groups (goka's
// default, newest, skips what was written before a group first joined), 1 ms
// producer flushes (goka's 100 ms adds 100 ms to every hop), the default
// session timeout with heartbeats at a third of it, and a metrics registry
// of its own.
func SaramaConfig(clientID string) *sarama.Config {
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
	return c
}

func setSessionTimeout(c *sarama.Config, d time.Duration) {
	c.Consumer.Group.Session.Timeout = d
	c.Consumer.Group.Heartbeat.Interval = d / 3
}

// Builders holds goka builders that each create a new sarama config per
// client, so that no two clients (and never two clusters) share one.
type Builders struct {
	ClientID    string
	Replication int // replication factor of topics goka creates (1 on kfake)
	Partitions  int // partitions of topics goka creates
	// SessionTimeout of the processors' consumer groups (default
	// DefaultSessionTimeout).
	SessionTimeout time.Duration
}

func (b Builders) cfg() *sarama.Config {
	c := SaramaConfig(b.ClientID)
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
		goka.WithProducerBuilder(NewGokaProducer),
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

// EmitterOptions returns the goka options that give an emitter its own configs.
func (b Builders) EmitterOptions() []goka.EmitterOption {
	return []goka.EmitterOption{
		goka.WithEmitterClientID(b.ClientID),
		goka.WithEmitterProducerBuilder(func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
			return goka.ProducerBuilderWithConfig(b.cfg())(brokers, clientID, hasher)
		}),
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

// GokaPartitioner is the franz-go partitioner that puts a key on the same
// partition as goka's (sarama's fnv-1a hash). Every franz-go producer of a
// topic that goka reads must use it, or goka tables end up on the wrong partitions.
func GokaPartitioner() kgo.Opt {
	return kgo.RecordPartitioner(kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a)))
}

func fnv32a(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

// PartitionFor returns the partition goka assigns key among n partitions.
func PartitionFor(key string, n int32) int32 {
	p := int32(fnv32a([]byte(key))) % n
	if p < 0 {
		p = -p
	}
	return p
}

// ErrPartitionMismatch is returned by EnsureTopics when a topic exists with
// another partition count than asked for.
var ErrPartitionMismatch = errors.New("kafka: partition count mismatch")

// TopicSpec is one topic to create.
type TopicSpec struct {
	Name      string
	Compacted bool
	// Config holds more topic settings to create it with (e.g. Retention).
	Config map[string]string
}

// EnsureTopics creates the topics that do not exist yet, with partitions and
// replication, compacted where asked. Existing topics are left alone; a
// partition count that differs from the requested one is an error, because
// goka joins need co-partitioned topics.
func EnsureTopics(ctx context.Context, brokers []string, partitions int32, replication int16, specs ...TopicSpec) error {
	cl, err := NewClient(brokers, "")
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, s := range specs {
		cfg := map[string]*string{}
		for k, v := range s.Config {
			cfg[k] = &v
		}
		if s.Compacted {
			compact := "compact"
			cfg["cleanup.policy"] = &compact
		}
		resp, err := adm.CreateTopic(ctx, partitions, replication, cfg, s.Name)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			err = checkPartitions(ctx, adm, s.Name, partitions)
		}
		if err != nil {
			return fmt.Errorf("kafka: creating topic %s: %w", s.Name, err)
		}
	}
	return nil
}

func checkPartitions(ctx context.Context, adm *kadm.Client, topic string, want int32) error {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return err
	}
	got := int32(len(td[topic].Partitions))
	if got != want {
		return fmt.Errorf("%w: topic exists with %d partitions, want %d (all pipeline topics must be co-partitioned)", ErrPartitionMismatch, got, want)
	}
	return nil
}

// TopicPartitions returns the partition count of topic.
func TopicPartitions(ctx context.Context, cl *kgo.Client, topic string) (int32, error) {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	t, ok := td[topic]
	if !ok || t.Err != nil {
		return 0, fmt.Errorf("kafka: topic %s not found", topic)
	}
	return int32(len(t.Partitions)), nil
}
