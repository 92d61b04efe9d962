package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/pipeline"
)

// ErrNoTopic is returned by ReadTopic when the health topic does not exist.
var ErrNoTopic = errors.New("history: topic not found")

// TopicOptions says which history to read from one cluster.
type TopicOptions struct {
	Brokers []string
	// Side is the side whose cluster Brokers address; samples that claim
	// another side are counted in TopicStats.WrongSide and skipped.
	Side string
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
		o.Topic = pipeline.TopicsWithPrefix("").Health
	}
	if o.ClientID == "" {
		o.ClientID = "hotpair-simulate"
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.Brokers...), kgo.ClientID(o.ClientID))
	if err != nil {
		return nil, st, fmt.Errorf("history: %s: %w", o.Side, err)
	}
	defer cl.Close()
	from, end, err := bounds(ctx, kadm.NewClient(cl), o)
	if err != nil {
		return nil, st, err
	}
	if len(from) == 0 {
		return nil, st, nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: from})
	var out []core.Record
	for len(end) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, st, fmt.Errorf("history: %s: reading %s: %w", o.Side, o.Topic, err)
		}
		for _, fe := range fs.Errors() {
			return nil, st, fmt.Errorf("history: %s: reading %s/%d: %w", o.Side, fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			if r.Offset+1 >= end[r.Partition] {
				delete(end, r.Partition)
			}
			st.Records++
			s, err := pipeline.DecodeHealthSample(r.Value)
			switch {
			case err != nil:
				st.Bad++
			case s.Side != o.Side:
				st.WrongSide++
			default:
				out = append(out, core.Record{Sample: s, ReceivedAt: r.Timestamp.UTC()})
			}
		})
	}
	return out, st, nil
}

// bounds returns, per partition with something to read, the offset to start
// at and the end offset (exclusive) to stop at.
func bounds(ctx context.Context, adm *kadm.Client, o TopicOptions) (map[int32]kgo.Offset, map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, o.Topic)
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, nil, fmt.Errorf("%w: %q on the %s brokers %v", ErrNoTopic, o.Topic, o.Side, o.Brokers)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("history: %s: listing offsets of %s: %w", o.Side, o.Topic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, o.Topic)
	if !o.Since.IsZero() && err == nil {
		starts, err = adm.ListOffsetsAfterMilli(ctx, o.Since.UnixMilli(), o.Topic)
	}
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("history: %s: listing offsets of %s: %w", o.Side, o.Topic, err)
	}
	from, end := map[int32]kgo.Offset{}, map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := starts.Lookup(o.Topic, e.Partition)
		if !ok || s.Offset < 0 || s.Offset >= e.Offset {
			return
		}
		from[e.Partition] = kgo.NewOffset().At(s.Offset)
		end[e.Partition] = e.Offset
	})
	return from, end, nil
}
