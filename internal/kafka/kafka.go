// Package kafka is hotpair's one Kafka client layer: every daemon and tool
// builds its franz-go clients here (NewClient: brokers, client id, timeouts,
// TLS and SASL from the one security block, Security), checks at start that
// the brokers accept its credentials (CheckAuth), partitions like goka
// (GokaPartitioner) and creates topics. Package kgoka gives goka's sarama
// clients the same settings. This package links no goka and no sarama, so the
// read side can use it.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

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
// replication, compacted where asked. Existing topics are left alone (and
// need no Create permission); a partition count that differs from the
// requested one is an error, because goka joins need co-partitioned topics.
func EnsureTopics(ctx context.Context, c Cluster, partitions int32, replication int16, specs ...TopicSpec) error {
	// Lookups see a topic being created within 100 ms (kadm's are cached
	// for MetadataMinAge).
	cl, err := NewClient(c, "", kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	existing, err := describable(ctx, adm, specs)
	if err != nil {
		return err
	}
	for _, s := range specs {
		if td, ok := existing[s.Name]; ok {
			if len(td.Partitions) == 0 { // another process is creating it
				err = checkPartitions(ctx, adm, s.Name, partitions)
			} else {
				err = samePartitions(s.Name, td, partitions)
			}
			if err != nil {
				return err
			}
			continue
		}
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
		if errors.Is(err, kerr.TopicAlreadyExists) { // created meanwhile
			err = checkPartitions(ctx, adm, s.Name, partitions)
		}
		if err != nil {
			return fmt.Errorf("kafka: creating topic %s: %w", s.Name, err)
		}
	}
	return nil
}

// describable returns the topics of specs that exist and that the
// principal may describe. All are looked up at once, or one at a time when
// one is refused (kadm then fails the listing as a whole): a topic the
// principal may not describe is one to create, or to be refused creating,
// which says what to grant.
func describable(ctx context.Context, adm *kadm.Client, specs []TopicSpec) (kadm.TopicDetails, error) {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	listed, err := adm.ListTopics(ctx, names...)
	if errors.Is(err, kerr.TopicAuthorizationFailed) {
		listed = kadm.TopicDetails{}
		for _, name := range names {
			one, err := adm.ListTopics(ctx, name)
			switch {
			case errors.Is(err, kerr.TopicAuthorizationFailed):
			case err != nil:
				return nil, fmt.Errorf("kafka: looking up topic %s: %w", name, err)
			default:
				maps.Copy(listed, one)
			}
		}
	} else if err != nil {
		return nil, fmt.Errorf("kafka: looking up topics: %w", err)
	}
	out := kadm.TopicDetails{}
	for name, td := range listed {
		if td.Err == nil {
			out[name] = td
		}
	}
	return out, nil
}

// checkPartitions checks the partition count of a topic that exists,
// waiting up to topicCreationWait while it has none yet: another process
// (a second instance of the same pipeline) may be creating it.
func checkPartitions(ctx context.Context, adm *kadm.Client, topic string, want int32) error {
	deadline := time.Now().Add(topicCreationWait)
	for {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		if len(td[topic].Partitions) > 0 || time.Now().After(deadline) {
			return samePartitions(topic, td[topic], want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// topicCreationWait bounds how long a topic another process creates may
// show no partitions.
const topicCreationWait = 10 * time.Second

func samePartitions(topic string, td kadm.TopicDetail, want int32) error {
	if got := int32(len(td.Partitions)); got != want {
		return fmt.Errorf("%w: topic %s exists with %d partitions, want %d (all pipeline topics must be co-partitioned)", ErrPartitionMismatch, topic, got, want)
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
