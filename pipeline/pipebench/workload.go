package pipebench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/pipeline"
	"github.com/hotpair/hotpair/statestore"
)

const (
	topicAdEvents = "ad-events"
	// span is the event time the backlog covers, window the pipeline's
	// window and lateness its allowed lateness (the defaults).
	span     = 2 * time.Minute
	window   = 10 * time.Second
	lateness = 5 * time.Second
	price    = 1000
)

// workload is a backlog of ad events, event times spread evenly over two
// minutes that ended long enough ago for all their windows to be closable,
// campaigns round robin; then one event per partition, newer than every
// window's close, for a campaign of its own (a "sentinel"), so that every
// window of the backlog closes on its partition's clock as it would in a
// continuous stream, not by the idle timeout. Per partition, event times
// only grow: no event is late and every window is emitted once.
type workload struct {
	campaigns, events int
	partitions        int32
	start             time.Time // the first event time
	now               time.Time
	// windows is how many (campaign, window) pairs the backlog holds: the
	// SpendEvents the aggregator must emit.
	windows int
	// sentinels are the keys of the per-partition sentinel campaigns.
	sentinels []string
}

func newWorkload(campaigns, events int, partitions int32, now time.Time) *workload {
	w := &workload{campaigns: campaigns, events: events, partitions: partitions, now: now,
		start: now.Add(-span - window - lateness - 15*time.Second)}
	seen := make(map[[2]int64]bool, min(events, 4*campaigns))
	for i := range events {
		seen[[2]int64{int64(i % campaigns), statestore.WindowStartMs(w.ts(i).UnixMilli(), window.Milliseconds())}] = true
	}
	w.windows = len(seen)
	for p := range partitions {
		w.sentinels = append(w.sentinels, keyOnPartition("sentinel", p, partitions))
	}
	return w
}

// records is how many ad events the topic holds: the backlog and the sentinels.
func (w *workload) records() int { return w.events + int(w.partitions) }

func (w *workload) ts(i int) time.Time {
	return w.start.Add(time.Duration(i) * span / time.Duration(w.events))
}

func campaign(i int) string { return fmt.Sprintf("camp-%06d", i) }

// truth is every campaign's lifetime spend after the backlog.
func (w *workload) truth() map[string]int64 {
	out := make(map[string]int64, w.campaigns)
	for i := range w.events {
		out[campaign(i%w.campaigns)] += price
	}
	return out
}

func adEvent(id, campaign string, ts time.Time) []byte {
	return fmt.Appendf(nil, `{"v":1,"id":%q,"type":"impression","campaign":%q,"advertiser":"adv","price_micros":%d,"ts":%q}`,
		id, campaign, price, ts.UTC().Format(time.RFC3339Nano))
}

// produce writes the backlog, then the sentinels.
func (w *workload) produce(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kafka.GokaPartitioner(),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return fmt.Errorf("pipebench: producer: %w", err)
	}
	defer cl.Close()
	for i := range w.events {
		c := campaign(i % w.campaigns)
		cl.Produce(ctx, &kgo.Record{Topic: topicAdEvents, Key: []byte(c), Value: adEvent("e"+strconv.Itoa(i), c, w.ts(i))}, nil)
	}
	for i, c := range w.sentinels {
		cl.Produce(ctx, &kgo.Record{Topic: topicAdEvents, Key: []byte(c), Value: adEvent("s"+strconv.Itoa(i), c, w.now.Add(-time.Second))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("pipebench: writing the workload: %w", err)
	}
	return nil
}

// probe is the i-th idle probe: one ad event for a campaign of its own,
// in a window the partition's clock has long passed, so that its window
// closes — and its status is emitted — as soon as the aggregator has it.
func (w *workload) probe(i int) *kgo.Record {
	c := "probe-" + strconv.Itoa(i)
	return &kgo.Record{Topic: topicAdEvents, Key: []byte(c), Value: adEvent("p"+strconv.Itoa(i), c, w.start)}
}

// keyOnPartition returns a key prefix-N that goka puts on partition p.
func keyOnPartition(prefix string, p, partitions int32) string {
	for n := 0; ; n++ {
		k := prefix + "-" + strconv.Itoa(n)
		if kafka.PartitionFor(k, partitions) == p {
			return k
		}
	}
}

// checkSpend compares every campaign's lifetime spend in the latest budget
// statuses with truth.
func checkSpend(latest map[string][]byte, truth map[string]int64) error {
	for c, want := range truth {
		v, ok := latest[c]
		if !ok {
			return fmt.Errorf("campaign %s has no budget status", c)
		}
		st, err := pipeline.DecodeBudgetStatus(v)
		if err != nil {
			return fmt.Errorf("budget status of %s: %w", c, err)
		}
		if st.SpentLifetimeMicros != want {
			return fmt.Errorf("campaign %s: spent_lifetime_micros %d, want %d (spend not exact)", c, st.SpentLifetimeMicros, want)
		}
	}
	return nil
}
