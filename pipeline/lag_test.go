package pipeline

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// TestServiceLagIsEndToEnd delays every ad event by D before it reaches the
// cluster (the ingester holds each record D past the time it was written, as
// a slow link or a backed-up upstream would). The aggregator keeps up, but
// its windows close on its partitions' event time, so every SpendEvent
// reaches the services D late, although each one was emitted moments ago.
// The health samples of every stage must show a lag of at least D: the
// services' lag is measured from the moment a SpendEvent could first have
// been right (window_end + lateness), not from when it was emitted.
func TestServiceLagIsEndToEnd(t *testing.T) {
	// D lies between two bucket bounds of the lag histogram (5 s, 10 s), so
	// "every lag above 5 s" can be read off the samples exactly.
	const delay = 5500 * time.Millisecond
	brokers := kafkatest.Cluster(t).ListenAddrs()
	startPipeline(t, testOptions(brokers, contract.Primary))
	in, w := primaryWithBudgets(t, brokers, 10, 9)

	if err := in.SetDelay(contract.Primary, delay); err != nil {
		t.Fatal(err)
	}
	// 4 s of traffic, ~200 events/s, each stamped with the time it is
	// written: windows close on event time only while later events follow.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range 40 {
		b := newWorkload(10, 20, uint64(100+i))
		b.writeEvents(t, in)
		for c, v := range b.truth {
			w.truth[c] += v
		}
		<-tick.C
	}
	// The last delayed events reach the cluster D after this; samples that
	// end before then cover only windows closed on event time (after it,
	// idle partitions close their last windows by the wall clock).
	cutoff := time.Now().Add(delay)
	waitStatuses(t, brokers, 60*time.Second, spentIs(w.truth))

	merged := map[contract.Stage]*contract.HealthSample{}
	for _, r := range kafkatest.UpToEnd(t, brokers, "hotpair-health") {
		s, err := contract.DecodeHealthSample(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if s.Events == 0 || s.WindowEnd.After(cutoff) {
			continue
		}
		m := merged[s.Service]
		if m == nil {
			m = &contract.HealthSample{Service: s.Service}
			merged[s.Service] = m
		}
		m.LagMs.Merge(&s.LagMs)
		m.LagMsMax = max(m.LagMsMax, s.LagMsMax)
		m.Events += s.Events
	}
	for _, stage := range contract.Stages() {
		m := merged[stage]
		if m == nil || m.LagMs.Total() == 0 {
			t.Fatalf("%s wrote no health sample with lags before the cutoff", stage)
		}
		var under int64
		for i, bound := range contract.LagBounds {
			if bound < delay.Milliseconds() {
				under += m.LagMs.Counts[i]
			}
		}
		t.Logf("%s: %d lags, p50 ≤ %d ms, p99 ≤ %d ms, max %d ms", stage, m.LagMs.Total(),
			m.LagMs.Quantile(0.5), m.LagMs.Quantile(0.99), m.LagMsMax)
		if under > 0 || m.LagMsMax < delay.Milliseconds() {
			t.Errorf("%s: %d of %d lags at or under 5 s, max %d ms: events delayed %s before the aggregator must show a lag of at least that",
				stage, under, m.LagMs.Total(), m.LagMsMax, delay)
		}
	}
}
