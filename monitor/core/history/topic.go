package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/monitor/core"
)

// ErrNoTopic is returned by ReadTopic when the health topic does not exist.
var ErrNoTopic = errors.New("history: topic not found")

// TopicOptions says which history to read from one cluster.
type TopicOptions struct {
	Brokers []string
	// KafkaAuth is the cluster's TLS and SASL (nil: plaintext).
	KafkaAuth *contract.KafkaAuth
	// Side is the side whose cluster Brokers address; samples that claim
	// another side are counted in TopicStats.WrongSide and skipped.
	Side contract.Side
	// Topic is the health topic (default "hotpair-health").
	Topic string
	// Since: records with a timestamp before it are not read (zero: from
	// the start of the topic).
	Since time.Time
	// ClientID identifies the reader to the brokers (default "hotpair-simulate").
	ClientID string
}

// TopicStats counts what ReadTopic read.
type TopicStats struct {
	Records   int // records read
	Bad       int // records that are not valid samples (skipped)
	WrongSide int // samples of the other side (skipped)
}

// ReadTopic reads the health topic of one cluster from Since up to the end
// offsets it finds when it starts, and returns the samples with the record
// timestamp as receive time. ctx bounds the whole read.
func ReadTopic(ctx context.Context, o TopicOptions) ([]core.Record, TopicStats, error) {
	var st TopicStats
	if o.Topic == "" {
		o.Topic = contract.TopicsWithPrefix("").Health
	}
	if o.ClientID == "" {
		o.ClientID = "hotpair-simulate"
	}
	cl, err := kafka.NewClient(kafka.Cluster{Name: o.Side.String(), Brokers: o.Brokers, Auth: o.KafkaAuth}, o.ClientID)
	if err != nil {
		return nil, st, fmt.Errorf("history: %s: %w", o.Side, err)
	}
	defer cl.Close()
	var out []core.Record
	err = kafka.ReadRange(ctx, cl, o.Topic, o.Since, func(r *kgo.Record) bool {
		st.Records++
		s, err := contract.DecodeHealthSample(r.Value)
		switch {
		case err != nil:
			st.Bad++
		case s.Side != o.Side:
			st.WrongSide++
		default:
			out = append(out, core.Record{Sample: s, ReceivedAt: r.Timestamp.UTC()})
		}
		return true
	})
	if errors.Is(err, kafka.ErrNoTopic) {
		return nil, st, fmt.Errorf("%w: %q on the %s brokers %v", ErrNoTopic, o.Topic, o.Side, o.Brokers)
	}
	if err != nil {
		return nil, st, fmt.Errorf("history: %s: %w", o.Side, err)
	}
	return out, st, nil
}
