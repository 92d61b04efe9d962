package dispatch

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
)

// maxID is the longest campaign or event id the contract accepts.
const maxID = 128

// darkTopics are the topics a copy is written to on a target.
type darkTopics struct{ events, budgets string }

func topicsOf(prefix string) darkTopics {
	t := contract.TopicsWithPrefix(prefix)
	return darkTopics{events: t.AdEvents, budgets: t.Budgets}
}

// copyEvent returns copy k of a live ad-events record for topic: copy 0 is
// the record's bytes unchanged (a record live dead-letters, the dark
// pipeline dead-letters too); clone k ≥ 1 carries campaign and event id
// DarkCloneID(…, k), keyed by the clone's campaign as the pipelines expect.
//
// A copy's timestamp is when it is sent, not the live record's: franz-go
// counts the delivery timeout from a record's timestamp, so every copy of a
// record older than the timeout — the backlog of a dispatcher that comes
// back after a while, or of a takeover — failed at once, and the dark copy
// lacked it. (The ad event's own ts, which the pipelines read, is in its
// bytes, unchanged.)
func copyEvent(r *kgo.Record, k int, topic string, src contract.DarkSource) (*kgo.Record, error) {
	h := withSource(r.Headers, src)
	if k == 0 {
		return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: h}, nil
	}
	e, err := contract.DecodeAdEvent(r.Value)
	if err != nil {
		return nil, err
	}
	e.Campaign, e.ID = contract.DarkCloneID(e.Campaign, k), contract.DarkCloneID(e.ID, k)
	return encodeEvent(e, topic, h)
}

// withSource is the live record's headers and the copy's source (a new
// slice: the live one points into the fetched batch).
func withSource(live []kgo.RecordHeader, src contract.DarkSource) []kgo.RecordHeader {
	h := make([]kgo.RecordHeader, len(live), len(live)+1)
	copy(h, live)
	return append(h, kgo.RecordHeader{Key: contract.HeaderDarkSource, Value: contract.AppendDarkSource(nil, src)})
}

// withoutSource is headers without the copy's source: a constant target's
// repeat is a new event, not a copy of the live record.
func withoutSource(headers []kgo.RecordHeader) []kgo.RecordHeader {
	var h []kgo.RecordHeader
	for _, x := range headers {
		if x.Key != contract.HeaderDarkSource {
			h = append(h, x)
		}
	}
	return h
}

// repeatEvent is a constant target's repeat of a copy already sent: clone
// generation gen of it (campaign DarkCloneID(original, k + gen ×
// repeatStride), so repeats never meet the multiplier's clones 0..16), with
// a fresh event id (suffix ~r<seq>) and ts now, so the dark aggregator
// counts it as a new, timely event.
func repeatEvent(r *kgo.Record, gen int, seq uint64, now time.Time) (*kgo.Record, error) {
	e, err := contract.DecodeAdEvent(r.Value)
	if err != nil {
		return nil, err
	}
	base, k := contract.DarkCampaignOf(e.Campaign)
	e.Campaign = contract.DarkCloneID(base, k+gen*repeatStride)
	e.ID = e.ID + "~r" + strconv.FormatUint(seq, 10)
	e.TS = now.UTC()
	return encodeEvent(e, r.Topic, withoutSource(r.Headers))
}

// repeatStride separates the clone numbers of a constant target's repeat
// generations from the multiplier's clones.
const repeatStride = contract.MaxDarkMultiplier + 1

// encodeEvent is the record of a derived ad event (a clone, a repeat),
// stamped when it is sent, as every copy is (copyEvent).
func encodeEvent(e contract.AdEvent, topic string, h []kgo.RecordHeader) (*kgo.Record, error) {
	if len(e.Campaign) > maxID || len(e.ID) > maxID {
		return nil, fmt.Errorf("%w: campaign %q, event %q", ErrCloneID, e.Campaign, e.ID)
	}
	b, err := contract.Encode(e)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: topic, Key: []byte(e.Campaign), Value: b, Headers: h}, nil
}

// copyBudget returns copy k of a budgets row (key and value as read from
// the live table; a nil value is a tombstone) for topic: copy 0 unchanged,
// clone k ≥ 1 the same row for campaign DarkCloneID(campaign, k).
func copyBudget(key, value []byte, k int, topic string, reason contract.DarkRowReason) (*kgo.Record, error) {
	h := []kgo.RecordHeader{{Key: contract.HeaderDarkRow, Value: []byte(reason)}}
	if k == 0 {
		return &kgo.Record{Topic: topic, Key: key, Value: value, Headers: h}, nil
	}
	clone := contract.DarkCloneID(string(key), k)
	if len(clone) > maxID {
		return nil, fmt.Errorf("%w: campaign %q", ErrCloneID, clone)
	}
	if value == nil {
		return &kgo.Record{Topic: topic, Key: []byte(clone), Headers: h}, nil
	}
	b, err := contract.DecodeBudget(value)
	if err != nil {
		return nil, err
	}
	b.Campaign = contract.DarkCloneID(b.Campaign, k)
	v, err := contract.Encode(b)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: topic, Key: []byte(clone), Value: v, Headers: h}, nil
}
