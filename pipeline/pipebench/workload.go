package pipebench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/statestore"
)

const (
	topicAdEvents = "ad-events"
	// span is the event time the backlog covers by default, window the
	// pipeline's window and lateness its allowed lateness (the defaults).
	span     = 2 * time.Minute
	window   = 10 * time.Second
	lateness = 5 * time.Second
	price    = 1000
)

// workload is the measurement's ad events, all of them in the past, on one
// event-time line at a fixed density (Config.EventRate, by default Events
// per two minutes):
//
//   - the backlog: Events events, campaigns round robin, written before the
//     pipeline starts;
//   - one event per partition for a campaign of its own (a "sentinel"),
//     newer than every backlog window's close, so that every window of the
//     backlog closes on its partition's clock as it would in a continuous
//     stream, not by the idle timeout;
//   - the steady phase: more events, written at a fixed rate while the
//     pipeline runs, continuing the line (so event time runs faster than
//     the wall clock and windows keep closing), then sentinels again.
//
// Per partition, event times only grow: no event is late and every window
// is emitted once.
type workload struct {
	campaigns, events int
	partitions        int32
	start             time.Time // the first event time
	step              float64   // event-time nanoseconds from one event to the next
	// windows is how many (campaign, window) pairs the backlog holds: the
	// SpendEvents the aggregator must emit for it.
	windows int
	// sentinels are the keys of the per-partition sentinel campaigns.
	sentinels []string
	// steady is how many events the steady phase writes.
	steady int
}

// maxSteadyRate bounds the steady phase's events per second (it runs at a
// fraction of the backlog's throughput), for where the line starts.
const maxSteadyRate = 1_000_000

// MaxEventRate is the largest Config.EventRate.
const MaxEventRate = maxSteadyRate

// gap is the event time from the last event before a sentinel to the
// sentinel: more than a window and its lateness.
const gap = window + lateness + 5*time.Second

// newWorkload lays events out at rate per second of event time. The line
// starts far enough back that the steady phase, at up to maxSteadyRate
// events per second for steadyFor, still ends in the past.
func newWorkload(campaigns, events int, partitions int32, rate float64, steadyFor time.Duration, now time.Time) *workload {
	step := float64(time.Second) / rate
	backlog := time.Duration(float64(events) * step)
	steady := time.Duration(steadyFor.Seconds() * maxSteadyRate * step)
	w := &workload{campaigns: campaigns, events: events, partitions: partitions, step: step,
		start: now.Add(-backlog - steady - 8*time.Minute)}
	w.windows = w.countWindows(0, events)
	for p := range partitions {
		w.sentinels = append(w.sentinels, keyOnPartition("sentinel", p, partitions))
	}
	return w
}

// countWindows counts the (campaign, window) pairs of events [from, to).
func (w *workload) countWindows(from, to int) int {
	seen := make(map[[2]int64]bool, min(to-from, 4*w.campaigns))
	for i := from; i < to; i++ {
		seen[[2]int64{int64(i % w.campaigns), statestore.WindowStartMs(w.ts(i).UnixMilli(), window.Milliseconds())}] = true
	}
	return len(seen)
}

// records is how many ad events the topic holds before the steady phase:
// the backlog and the sentinels.
func (w *workload) records() int { return w.events + int(w.partitions) }

// ts is the event time of event i: the backlog's are 0 to Events-1, the
// steady phase's follow; each sentinel adds a gap.
func (w *workload) ts(i int) time.Time {
	t := w.start.Add(time.Duration(float64(i) * w.step))
	if i >= w.events {
		t = t.Add(2 * gap)
	}
	return t
}

// sentinelTs is the event time of the sentinels after event i.
func (w *workload) sentinelTs(i int) time.Time { return w.ts(i - 1).Add(gap) }

func campaign(i int) string { return fmt.Sprintf("camp-%06d", i) }

// truth is every campaign's lifetime spend after the backlog and the
// steady phase.
func (w *workload) truth() map[string]int64 {
	out := make(map[string]int64, w.campaigns)
	for i := range w.events + w.steady {
		out[campaign(i%w.campaigns)] += price
	}
	return out
}

func adEvent(id, campaign string, ts time.Time) []byte {
	return fmt.Appendf(nil, `{"v":1,"id":%q,"type":"impression","campaign":%q,"advertiser":"adv","price_micros":%d,"ts":%q}`,
		id, campaign, price, ts.UTC().Format(time.RFC3339Nano))
}

// event is the record of event i.
func (w *workload) event(i int) *kgo.Record {
	c := campaign(i % w.campaigns)
	return &kgo.Record{Topic: topicAdEvents, Key: []byte(c), Value: adEvent("e"+strconv.Itoa(i), c, w.ts(i))}
}

// sentinel is partition p's sentinel after event i.
func (w *workload) sentinel(p int32, i int) *kgo.Record {
	c := w.sentinels[p]
	return &kgo.Record{Topic: topicAdEvents, Key: []byte(c), Value: adEvent(fmt.Sprintf("s%d-%d", i, p), c, w.sentinelTs(i))}
}

// produce writes the backlog, then the sentinels.
func (w *workload) produce(ctx context.Context, c kafka.Cluster) error {
	cl, err := kafka.NewProducer(c, "bench-workload",
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return fmt.Errorf("pipebench: producer: %w", err)
	}
	defer cl.Close()
	for i := range w.events {
		cl.Produce(ctx, w.event(i), nil)
	}
	for p := range w.partitions {
		cl.Produce(ctx, w.sentinel(p, w.events), nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("pipebench: writing the workload: %w", err)
	}
	return nil
}

// produceSteady writes the steady phase's events at rate per second for d,
// then the sentinels that close their windows, and returns how many events
// it wrote (sentinels included) and how many windows they hold. It calls
// settled a sixth of d in, and ending just before the sentinels.
func (w *workload) produceSteady(ctx context.Context, cl *kgo.Client, rate float64, d time.Duration, settled, ending func()) (records, windows int, err error) {
	const tick = 10 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	start, i := time.Now(), w.events
	for now := start; now.Sub(start) < d; now = <-t.C {
		if settled != nil && now.Sub(start) >= d/6 {
			settled()
			settled = nil
		}
		for due := w.events + int(rate*now.Sub(start).Seconds()); i < due; i++ {
			cl.Produce(ctx, w.event(i), nil)
		}
	}
	if settled != nil {
		settled()
	}
	ending()
	for p := range w.partitions {
		cl.Produce(ctx, w.sentinel(p, i), nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, 0, fmt.Errorf("pipebench: writing the steady phase: %w", err)
	}
	w.steady = i - w.events
	// The backlog's sentinels' windows close too: the steady events are newer.
	return w.steady + int(w.partitions), w.countWindows(w.events, i) + int(w.partitions), nil
}

// probe is the i-th idle probe: one ad event for a campaign of its own, in
// a window the partition's clock has long passed: it is late, so its own
// SpendEvent, and then its status, are emitted as soon as it arrives.
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
		st, err := contract.DecodeBudgetStatus(v)
		if err != nil {
			return fmt.Errorf("budget status of %s: %w", c, err)
		}
		if st.SpentLifetimeMicros != want {
			return fmt.Errorf("campaign %s: spent_lifetime_micros %d, want %d (spend not exact)", c, st.SpentLifetimeMicros, want)
		}
	}
	return nil
}
