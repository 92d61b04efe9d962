package decisions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
)

// Source is one cluster holding a copy of the record.
type Source struct {
	Side    string
	Brokers []string
	// KafkaAuth is the cluster's TLS and SASL (nil: plaintext).
	KafkaAuth *contract.KafkaAuth
}

// ReadOptions say which part of the record to read.
type ReadOptions struct {
	// Sources are the clusters to read (both sides' for a complete record:
	// each holds a copy; either alone may miss what was written while it
	// was down).
	Sources []Source
	// Topic is the record's topic (default Topic).
	Topic string
	// Filter selects entries. Since also bounds the read: an entry is
	// recorded after its decision, so records older than Since are skipped.
	Filter Filter
	// ClientID identifies the reader to the brokers (default "hotpair-history").
	ClientID string
}

// SourceStats is what was read from one source.
type SourceStats struct {
	Side    string `json:"side"`
	Records int    `json:"records"`
	Entries int    `json:"entries"` // good entries that passed the filter
	// Bad counts values that are not valid entries, UnknownVersion those of
	// a version this reader does not know: both are skipped.
	Bad            int   `json:"bad"`
	UnknownVersion int   `json:"unknown_version"`
	Err            error `json:"-"`
}

// untilSlack: a partition is read until a record stamped this long after
// Filter.Until (an entry may be recorded a while after its decision, when
// ZooKeeper or both clusters were away).
const untilSlack = time.Hour

// Read reads every source at once, each up to the end offsets it finds when
// it starts, and merges the copies (Merge). A source that cannot be read
// (its cluster is down, the topic is missing) is reported in its stats and
// does not stop the others; Read fails only when no source could be read.
// ctx bounds the read.
func Read(ctx context.Context, o ReadOptions) ([]Entry, []SourceStats, error) {
	if o.Topic == "" {
		o.Topic = Topic
	}
	if o.ClientID == "" {
		o.ClientID = "hotpair-history"
	}
	stats := make([]SourceStats, len(o.Sources))
	lists := make([][]Entry, len(o.Sources))
	var wg sync.WaitGroup
	for i, src := range o.Sources {
		wg.Go(func() { lists[i], stats[i] = readSource(ctx, o, src) })
	}
	wg.Wait()
	var errs []error
	for _, st := range stats {
		if st.Err != nil {
			errs = append(errs, st.Err)
		}
	}
	if len(errs) == len(o.Sources) {
		return nil, stats, errors.Join(errs...)
	}
	return Merge(lists...), stats, nil
}

func readSource(ctx context.Context, o ReadOptions, src Source) ([]Entry, SourceStats) {
	st := SourceStats{Side: src.Side}
	cl, err := kafka.NewClient(kafka.Cluster{Name: src.Side, Brokers: src.Brokers, Auth: src.KafkaAuth}, o.ClientID)
	if err != nil {
		st.Err = err
		return nil, st
	}
	defer cl.Close()
	var out []Entry
	until := o.Filter.Until
	err = kafka.ReadRange(ctx, cl, o.Topic, o.Filter.Since, func(r *kgo.Record) bool {
		st.Records++
		e, err := Decode(r.Value)
		switch {
		case errors.Is(err, ErrUnknownVersion):
			st.UnknownVersion++
		case err != nil:
			st.Bad++
		case o.Filter.Match(&e):
			st.Entries++
			out = append(out, e)
		}
		return until.IsZero() || !r.Timestamp.After(until.Add(untilSlack))
	})
	if err != nil {
		st.Err = fmt.Errorf("the %s copy (%v): %w", src.Side, src.Brokers, err)
	}
	return out, st
}
