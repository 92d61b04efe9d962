package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
)

// A dispatcher that starts, or gets live partitions in a rebalance, resumes
// each at its group's committed offset. The records after that offset may
// have been copied already, by this process before it crashed or by the
// replica that had the partition: its offsets are committed every few
// seconds, not per copy. Copied again, they would count twice in the dark
// aggregator, and every campaign they touch would spend more on dark than
// on live for the rest of its day, where the comparator can no longer
// judge its status, pacing or bids. So, before it copies the first record
// of a partition it was just given, the dispatcher reads back from each
// target the copies made of that partition from there on (every copy
// carries contract.HeaderDarkSource) and sends only what is not there.

// resumeMargin is how far before a resumed partition's first record the
// target is read back: the live records' timestamps are the ads servers'
// clocks, a copy's the dispatcher's when it sent it (never before its live
// record was written, unless those clocks are more than the margin apart).
const resumeMargin = time.Minute

// resumeTimeout bounds the read of one target. When it is exceeded, or the
// read fails (the target is away, Read is not granted), the copy goes on
// at least once, as before, and the log says so.
const resumeTimeout = 20 * time.Second

// resumePoint is the first record of a live partition the consumer got
// after the partition was assigned to it.
type resumePoint struct {
	offset int64
	ts     time.Time
}

// copyKey is one copy of a live record of a partition.
type copyKey struct {
	offset int64
	k      int
}

// onTarget is what a target already has of one live partition from its
// resume point on; last is the highest offset in it.
type onTarget struct {
	have map[copyKey]struct{}
	last int64
}

// resume reads back the copies the target holds of the live partitions in
// points, from their resume points on, so that already skips them. The
// events consumer waits for it before it copies any record of those
// partitions; apart from it, only that consumer touches s.copied.
func (s *sender) resume(ctx context.Context, side contract.Side, points map[int32]resumePoint) {
	if s.feed != nil || len(points) == 0 {
		return // a constant target's copies are repeated anyway
	}
	var since time.Time
	for _, p := range points {
		if since.IsZero() || p.ts.Before(since) {
			since = p.ts
		}
	}
	since = since.Add(-resumeMargin)
	ctx, cancel := context.WithTimeout(ctx, resumeTimeout)
	defer cancel()
	found := 0
	err := s.readBack(ctx, since, func(src contract.DarkSource) {
		p, ok := points[src.Partition]
		if src.Side != side || !ok || src.Offset < p.offset {
			return
		}
		t := s.copied[src.Partition]
		if t == nil {
			t = &onTarget{have: map[copyKey]struct{}{}}
			s.copied[src.Partition] = t
		}
		if _, dup := t.have[copyKey{src.Offset, src.K}]; !dup {
			found++
		}
		t.have[copyKey{src.Offset, src.K}] = struct{}{}
		t.last = max(t.last, src.Offset)
	})
	switch {
	case errors.Is(err, kafka.ErrNoTopic):
		// Nothing was ever copied to it.
	case err != nil:
		s.resumeFailed.Inc()
		s.log.Warn("dispatch: could not read back what the target already has of the resumed live partitions: "+
			"what it has of them may be copied twice (grant Read on its ad-events: TargetKafkaACLs)",
			"partitions", len(points), "err", err)
	case found > 0:
		s.log.Info("dispatch: resumed live partitions the target already has copies of: those are not sent again",
			"partitions", len(points), "copies", found)
	}
}

// readBack hands the source of every copy on the target's ad-events with a
// timestamp at or after since to fn.
func (s *sender) readBack(ctx context.Context, since time.Time, fn func(contract.DarkSource)) error {
	cl, err := kafka.NewClient(s.cluster, "hotpair-dark-dispatch-resume")
	if err != nil {
		return err
	}
	defer cl.Close()
	return kafka.ReadRange(ctx, cl, s.topics.events, since, func(r *kgo.Record) bool {
		for _, h := range r.Headers {
			if h.Key != contract.HeaderDarkSource {
				continue
			}
			if src, err := contract.ParseDarkSource(h.Value); err == nil {
				fn(src)
			}
		}
		return true
	})
}

// already reports whether the target has copy k of the live record r from
// before the partition was resumed, and forgets the partition's copies once
// the consumer is past the last of them.
func (s *sender) already(r *kgo.Record, k int) bool {
	t := s.copied[r.Partition]
	if t == nil {
		return false
	}
	if r.Offset > t.last {
		delete(s.copied, r.Partition)
		return false
	}
	if _, ok := t.have[copyKey{r.Offset, k}]; ok {
		s.skipped.Inc()
		return true
	}
	return false
}
