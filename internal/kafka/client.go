package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// RequestTimeoutOverhead is added to every request's own timeout: how long
// a broker may take to answer before the client gives up on the request.
const RequestTimeoutOverhead = 5 * time.Second

// Cluster is one Kafka cluster as hotpair's clients reach it: its seed
// brokers and its loaded security settings. Two clusters (the two sides, a
// dark canary's) share nothing, so every client is built for one Cluster.
type Cluster struct {
	// Name names the cluster in errors and logs ("primary", "standby"...).
	Name    string
	Brokers []string
	// Auth is the cluster's TLS and SASL (nil: plaintext without SASL).
	Auth *contract.KafkaAuth
}

// String names the cluster and its brokers, without secrets.
func (c Cluster) String() string {
	name := c.Name
	if name == "" {
		name = "kafka"
	}
	return fmt.Sprintf("%s cluster %v (%s)", name, c.Brokers, c.Auth)
}

// NewClient returns a franz-go client of the cluster that identifies itself
// as clientID, with opts (consumer or producer settings) added. It is the one
// constructor of hotpair's franz-go clients: brokers, client id, timeouts,
// TLS and SASL are set here once, for every daemon and tool.
func NewClient(c Cluster, clientID string, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.RequestTimeoutOverhead(RequestTimeoutOverhead)}
	if clientID != "" {
		base = append(base, kgo.ClientID(clientID))
	}
	if err := c.Auth.Validate(); err != nil {
		return nil, fmt.Errorf("kafka: %s: %w", c, err)
	}
	if tc := tlsOf(c.Auth); tc != nil {
		base = append(base, kgo.DialTLSConfig(tc))
	}
	if m := mechanismOf(c.Auth); m != nil {
		base = append(base, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: client %s of the %s: %w", clientID, c, err)
	}
	return cl, nil
}

// NewProducer returns a client of the cluster that produces records to
// topics goka reads: keys go to goka's partitions (GokaPartitioner).
func NewProducer(c Cluster, clientID string, opts ...kgo.Opt) (*kgo.Client, error) {
	return NewClient(c, clientID, append([]kgo.Opt{GokaPartitioner()}, opts...)...)
}

// DeliverWithin are the options of a producer whose records wait up to d
// for their cluster — for a missing topic too, which the daemon that owns
// it may be creating at this moment (a pipeline started together with the
// ingester) — and fail after that. Without them franz-go fails a record
// whose topic its metadata does not know after four tries, in a second or
// two, however long its delivery timeout.
func DeliverWithin(d time.Duration) []kgo.Opt {
	return []kgo.Opt{kgo.RecordDeliveryTimeout(d), kgo.UnknownTopicRetries(-1)}
}

// NotAuthorized reports whether err is a cluster refusing the client's
// principal an operation: an ACL is missing (the daemon's KafkaACLs say
// which). An idempotent producer on a broker older than Kafka 3.0 without
// IdempotentWrite on the cluster gets ClusterAuthorizationFailed.
func NotAuthorized(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		errors.Is(err, kerr.GroupAuthorizationFailed)
}

// ErrNoTopic is returned by ReadRange when the topic does not exist.
var ErrNoTopic = errors.New("kafka: topic not found")

// ReadRange reads topic from the first record with a timestamp at or after
// since (zero: from the start) up to the end offsets it finds when it
// starts, handing each record to fn in partition order. A partition stops
// early once fn returns false for one of its records. ctx bounds the read.
func ReadRange(ctx context.Context, cl *kgo.Client, topic string, since time.Time, fn func(*kgo.Record) bool) error {
	from, end, err := readBounds(ctx, kadm.NewClient(cl), topic, since)
	if err != nil || len(from) == 0 {
		return err
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: keys(from)})
	for len(end) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("kafka: reading %s: %w", topic, err)
		}
		for _, fe := range fs.Errors() {
			return fmt.Errorf("kafka: reading %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			stop, ok := end[r.Partition]
			if !ok || r.Offset >= stop {
				return
			}
			if more := fn(r); !more || r.Offset+1 >= stop {
				delete(end, r.Partition)
			}
		})
	}
	return nil
}

func keys(m map[int32]kgo.Offset) []int32 {
	out := make([]int32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	return out
}

// readBounds returns, per partition with something to read, the offset to
// start at and the end offset (exclusive) to stop at.
func readBounds(ctx context.Context, adm *kadm.Client, topic string, since time.Time) (map[int32]kgo.Offset, map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoTopic, topic)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: listing offsets of %s: %w", topic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if !since.IsZero() && err == nil {
		starts, err = adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), topic)
	}
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: listing offsets of %s: %w", topic, err)
	}
	from, end := map[int32]kgo.Offset{}, map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := starts.Lookup(topic, e.Partition)
		if !ok || s.Offset < 0 || s.Offset >= e.Offset {
			return
		}
		from[e.Partition] = kgo.NewOffset().At(s.Offset)
		end[e.Partition] = e.Offset
	})
	return from, end, nil
}

// Retention is the retention.ms topic setting of d.
func Retention(d time.Duration) map[string]string {
	return map[string]string{"cleanup.policy": "delete", "retention.ms": strconv.FormatInt(d.Milliseconds(), 10)}
}

// SettingChange is a topic setting EnsureTopicConfig found different from
// the one asked for and set.
type SettingChange struct {
	Key, Was, Now string
}

// EnsureTopicConfig sets the topic's settings that differ from want and
// returns what it changed. A topic created by EnsureTopics with the same
// settings needs no change.
func EnsureTopicConfig(ctx context.Context, cl *kgo.Client, topic string, want map[string]string) ([]SettingChange, error) {
	adm := kadm.NewClient(cl)
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("kafka: describing %s: %w", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: describing %s: %w", topic, err)
	}
	have := map[string]string{}
	for _, c := range rc.Configs {
		have[c.Key] = c.MaybeValue()
	}
	var changes []SettingChange
	var alter []kadm.AlterConfig
	for k, v := range want {
		if have[k] != v {
			changes = append(changes, SettingChange{Key: k, Was: have[k], Now: v})
			alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		}
	}
	if len(alter) == 0 {
		return nil, nil
	}
	resp, err := adm.AlterTopicConfigs(ctx, alter, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resp.On(topic, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: setting %v on %s: %w", changes, topic, err)
	}
	return changes, nil
}

// Load reads what the cluster's security block names (see
// contract.KafkaSecurity.Load) and returns the cluster clients are built for;
// an error names the key under prefix (e.g. "clusters.primary.") and the fix.
func Load(c contract.KafkaCluster, name, prefix string) (Cluster, error) {
	auth, err := c.Kafka.Load(prefix, nil)
	if err != nil {
		return Cluster{}, err
	}
	return Cluster{Name: name, Brokers: c.Brokers, Auth: auth}, nil
}

// LoadSides loads the two live sides' cluster blocks, primary first, each
// named after its side, the keys of errors under clusters.<side>.
func LoadSides(primary, standby contract.KafkaCluster) ([2]Cluster, error) {
	var out [2]Cluster
	for i, cl := range []contract.KafkaCluster{primary, standby} {
		side := contract.Sides()[i].String()
		k, err := Load(cl, side, "clusters."+side+".")
		if err != nil {
			return out, err
		}
		out[i] = k
	}
	return out, nil
}
