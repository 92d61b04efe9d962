package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// TestClosedClusterDoesNotPauseTheOtherSide streams ad events to both sides
// and closes the primary cluster mid-stream. The standby side must keep
// consuming with no gap over one second and end with exact outputs.
func TestClosedClusterDoesNotPauseTheOtherSide(t *testing.T) {
	primaryCluster := kafkatest.Cluster(t)
	primary, standby := primaryCluster.ListenAddrs(), kafkatest.Cluster(t).ListenAddrs()
	startPipeline(t, testOptions(primary, SidePrimary))
	reg := prometheus.NewRegistry()
	so := testOptions(standby, SideStandby)
	so.Registerer = reg
	startPipeline(t, so)
	in, err := NewIngester(IngestOptions{Clusters: map[string][]string{SidePrimary: primary, SideStandby: standby},
		DeliveryTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		in.Close(ctx) // the primary's in-flight records wait for a cluster that is gone
	}()

	w := newWorkload(20, 0, 4)
	w.writeBudgets(t, in)
	eventually(t, 60*time.Second, func() string {
		if len(statuses(t, standby)) < len(w.budgets) || len(statuses(t, primary)) < len(w.budgets) {
			return "budgets not yet applied"
		}
		return ""
	})

	// Watch the standby aggregator's event counter every 20ms.
	var maxGap atomic.Int64
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last, lastChange := -1.0, time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case now := <-tick.C:
				if v := aggregatorEvents(t, reg); v != last {
					last, lastChange = v, now
				} else if gap := now.Sub(lastChange); gap.Nanoseconds() > maxGap.Load() {
					maxGap.Store(gap.Nanoseconds())
				}
			}
		}
	}()

	// 10 s of traffic at ~400 events/s; the primary cluster dies after 3 s.
	for i := range 100 {
		b := newWorkload(20, 40, uint64(1000+i))
		b.writeEvents(t, in)
		for c, v := range b.truth {
			w.truth[c] += v
		}
		if i == 30 {
			primaryCluster.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stopWatch)
	<-watched
	if gap := time.Duration(maxGap.Load()); gap > time.Second {
		t.Errorf("standby aggregator paused for %s while the primary cluster was down (limit 1s)", gap)
	} else {
		t.Logf("longest pause of the standby aggregator: %s", gap)
	}
	eventually(t, 60*time.Second, func() string { return spentMatches(t, standby, w.truth) })
	if st := in.Stats(); st[SideStandby].Lost != 0 || st[SideStandby].Delivered != st[SideStandby].Written {
		t.Errorf("standby ingest: %+v", st[SideStandby])
	}
}

func aggregatorEvents(t *testing.T, g prometheus.Gatherer) float64 {
	v, _ := metricvalue.Get(g, "hotpair_stage_events_total", "service", StageAggregator)
	return v
}
