package selector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sideView consumes one cluster's output tables into one table.
type sideView struct {
	side        contract.Side
	cluster     kafka.Cluster
	kopts       []kgo.Opt
	topics      [contract.NumServices + 1]string // output topic per service
	keys        *keyIndex
	tab         table
	lag         *lagTracker
	m           *viewsMetrics
	log         *slog.Logger
	lagInterval time.Duration
	now         func() time.Time
}

// run consumes until ctx is done. Only building the client can fail.
func (sv *sideView) run(ctx context.Context) error {
	opts := append([]kgo.Opt{
		kgo.ConsumeTopics(sv.topics[contract.ServiceBudget], sv.topics[contract.ServicePacer], sv.topics[contract.ServiceBidder]),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(time.Second),
	}, sv.kopts...)
	cl, err := kafka.NewClient(sv.cluster, "hotpair-views-"+sv.side.String(), opts...)
	if err != nil {
		return fmt.Errorf("selector: views of %s: %w", sv.side, err)
	}
	defer cl.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { sv.measureLoop(ctx, kadm.NewClient(cl)) })
	sv.log.Info("views: consuming", "brokers", sv.cluster.Brokers, "security", sv.cluster.Auth, "topics", sv.topics[1:])
	var errs kafka.ErrorLog
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(topic string, p int32, err error) {
			sv.m.fetchErrors[sv.side].Inc()
			if svc := sv.serviceOf(topic); svc != 0 {
				sv.lag.topicFailed(svc, err) // e.g. Read refused on this topic
			} else {
				sv.lag.failed(err)
			}
			errs.Note(sv.log, "views: fetch error", topic, p, err)
		})
		fs.EachPartition(sv.applyPartition)
	}
}

func (sv *sideView) serviceOf(topic string) contract.Service {
	for _, svc := range contract.Services() {
		if sv.topics[svc] == topic {
			return svc
		}
	}
	return 0
}

// applyPartition applies one partition's fetched records, in order.
func (sv *sideView) applyPartition(p kgo.FetchTopicPartition) {
	svc := sv.serviceOf(p.Topic)
	if svc == 0 || len(p.Records) == 0 {
		return
	}
	for _, r := range p.Records {
		if reason := sv.apply(svc, r.Key, r.Value); reason != "" {
			sv.m.badRecords.WithLabelValues(sv.side.String(), p.Topic, string(reason)).Inc()
			sv.log.Debug("views: bad record skipped", "topic", p.Topic, "partition", p.Partition, "offset", r.Offset, "reason", reason)
		}
	}
	last := p.Records[len(p.Records)-1]
	sv.m.records[sv.side][svc].Add(float64(len(p.Records)))
	sv.lag.consumed(svc, p.Partition, last.Offset+1, p.HighWatermark, len(p.Records), last.Timestamp, sv.now())
}

// apply stores one record of svc's table: the latest value of a campaign,
// or, for an empty value (a tombstone), no value. A bad record changes
// nothing and returns its reason.
func (sv *sideView) apply(svc contract.Service, key, value []byte) contract.Reason {
	if len(value) == 0 {
		if i, ok := sv.keys.lookup(string(key)); ok {
			sv.tab.update(i, func(e entry) entry { e.has &^= ServiceSet(0).Add(svc); return e })
		}
		return ""
	}
	campaign, p, reason := decodeValue(svc, value)
	if reason != "" {
		return reason
	}
	if campaign != string(key) {
		return contract.ReasonKeyMismatch
	}
	sv.tab.update(sv.keys.intern(key), p.applyTo)
	return ""
}

// value is one decoded record of a service's table.
type value struct {
	svc    contract.Service
	status BudgetState
	day    int32
	num    float64 // rate or multiplier
	at     int64   // updated_at, Unix ns
}

func (v value) applyTo(e entry) entry {
	switch v.svc {
	case contract.ServiceBudget:
		e.status, e.day, e.statusAt = v.status, v.day, v.at
	case contract.ServicePacer:
		e.rate, e.pacingAt = v.num, v.at
	case contract.ServiceBidder:
		e.multiplier, e.multAt = v.num, v.at
	}
	e.has = e.has.Add(v.svc)
	return e
}

// decodeValue decodes a record value of svc's table with the pipeline's
// strict decoders.
func decodeValue(svc contract.Service, b []byte) (campaign string, v value, reason contract.Reason) {
	v.svc = svc
	switch svc {
	case contract.ServiceBudget:
		s, err := contract.DecodeBudgetStatus(b)
		if err != nil {
			return "", v, contract.ReasonOf(err)
		}
		day, _ := time.Parse(time.DateOnly, s.Day) // the decoder validated it
		v.status, v.day, v.at = budgetStateOf(s.Status), dayNumber(day), s.UpdatedAt.UnixNano()
		return s.Campaign, v, ""
	case contract.ServicePacer:
		p, err := contract.DecodePacing(b)
		if err != nil {
			return "", v, contract.ReasonOf(err)
		}
		v.num, v.at = p.Rate, p.UpdatedAt.UnixNano()
		return p.Campaign, v, ""
	case contract.ServiceBidder:
		m, err := contract.DecodeBidMultiplier(b)
		if err != nil {
			return "", v, contract.ReasonOf(err)
		}
		v.num, v.at = m.Multiplier, m.UpdatedAt.UnixNano()
		return m.Campaign, v, ""
	}
	return "", v, contract.ReasonInvalidEnum
}

// measureLoop measures the end offsets of the side's topics every
// lagInterval, for the lag report.
func (sv *sideView) measureLoop(ctx context.Context, adm *kadm.Client) {
	t := time.NewTicker(sv.lagInterval)
	defer t.Stop()
	for {
		sv.measure(ctx, adm)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (sv *sideView) measure(ctx context.Context, adm *kadm.Client) {
	ctx, cancel := context.WithTimeout(ctx, max(sv.lagInterval, 2*time.Second))
	defer cancel()
	topics := sv.topics[1:]
	starts, ends, err := listOffsets(ctx, adm, topics...)
	if errors.Is(err, kerr.TopicAuthorizationFailed) {
		// kadm fails the whole listing when one topic is refused: list
		// them one by one, so that the others are still measured and the
		// refused one is reported as such.
		starts, ends, err = listEach(ctx, adm, topics)
	}
	if err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			sv.lag.failed(err)
			sv.log.Debug("views: measuring end offsets failed", "err", err)
		}
		return
	}
	// Per-partition errors (e.g. a topic that does not exist yet) are
	// reported per topic by the tracker.
	sv.lag.measured(sv.serviceOf, starts, ends, sv.now())
}

// listOffsets lists the start and end offsets of topics.
func listOffsets(ctx context.Context, adm *kadm.Client, topics ...string) (starts, ends kadm.ListedOffsets, err error) {
	if starts, err = adm.ListStartOffsets(ctx, topics...); err != nil {
		return nil, nil, err
	}
	if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil {
		return nil, nil, err
	}
	return starts, ends, nil
}

// listEach is listOffsets topic by topic; a topic the user may not
// describe gets its error as its only end offset, as kadm reports a topic
// that does not exist.
func listEach(ctx context.Context, adm *kadm.Client, topics []string) (starts, ends kadm.ListedOffsets, err error) {
	starts, ends = kadm.ListedOffsets{}, kadm.ListedOffsets{}
	for _, topic := range topics {
		s, e, err := listOffsets(ctx, adm, topic)
		switch {
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			ends[topic] = map[int32]kadm.ListedOffset{-1: {Topic: topic, Partition: -1, Err: err}}
		case err != nil:
			return nil, nil, err
		default:
			maps.Copy(starts, s)
			maps.Copy(ends, e)
		}
	}
	return starts, ends, nil
}
