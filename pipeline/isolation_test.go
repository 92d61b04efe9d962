package pipeline

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// TestClosedClusterDoesNotStopTheOtherSide streams ad events to both sides
// and closes the primary cluster for good mid-stream. Every event the
// standby side ends up with was consumed with the primary gone: it must end
// exact, with nothing lost on its side. How long the standby pauses, if at
// all, is a timing figure: BenchmarkOtherSideWhileAClusterIsDown measures it.
func TestClosedClusterDoesNotStopTheOtherSide(t *testing.T) {
	primaryCluster := kafkatest.Cluster(t)
	primary, standby := primaryCluster.ListenAddrs(), kafkatest.Cluster(t).ListenAddrs()
	pp, _ := startPipeline(t, testOptions(primary, contract.Primary))
	sp, _ := startPipeline(t, testOptions(standby, contract.Standby))
	in := dualIngester(t, primary, standby)
	// Both sides run before anything is written: the ingester's short
	// delivery timeout (for the cluster closed below) must not run out
	// while a loaded machine starts them.
	waitReady(t, pp, sp)

	w := newWorkload(20, 0, 4)
	w.writeBudgets(t, in)
	for _, b := range [][]string{primary, standby} {
		waitStatuses(t, b, 60*time.Second, func(st map[string]contract.BudgetStatus) string {
			if missing := budgetsApplied(len(w.budgets))(st); missing != "" {
				return fmt.Sprintf("%s; ingester %+v", missing, in.Stats())
			}
			return ""
		})
	}
	for i := range 100 {
		b := newWorkload(20, 40, uint64(1000+i))
		b.writeEvents(t, in)
		for c, v := range b.truth {
			w.truth[c] += v
		}
		if i == 30 {
			primaryCluster.Close()
		}
	}
	waitStatuses(t, standby, 60*time.Second, spentIs(w.truth))
	if st := in.Stats(); st[contract.Standby].Lost != 0 || st[contract.Standby].Delivered != st[contract.Standby].Written {
		t.Errorf("standby ingest: %+v", st[contract.Standby])
	}
}

// BenchmarkOtherSideWhileAClusterIsDown streams ~400 ad events/s to both
// sides' aggregators, closes the primary cluster half-way, and reports the
// longest pause of the standby aggregator (no event counted for that long,
// sampled every 10 ms) after the close against the longest pause before it,
// with both clusters up, in the same run.
//
//	go test -run '^$' -bench OtherSide -benchtime 1x ./pipeline
func BenchmarkOtherSideWhileAClusterIsDown(b *testing.B) {
	const phase = 3 * time.Second
	var before, after time.Duration
	for b.Loop() {
		primaryCluster := kafkatest.Cluster(b)
		primary, standby := primaryCluster.ListenAddrs(), kafkatest.Cluster(b).ListenAddrs()
		po, so := testOptions(primary, contract.Primary), testOptions(standby, contract.Standby)
		po.Stages, so.Stages = []contract.Stage{contract.StageAggregator}, []contract.Stage{contract.StageAggregator}
		reg := prometheus.NewRegistry()
		so.Registerer = reg
		startPipeline(b, po)
		startPipeline(b, so)
		in := dualIngester(b, primary, standby)
		events := func() float64 {
			v, _ := metricvalue.Get(reg, "hotpair_stage_events_total", "service", contract.StageAggregator.String())
			return v
		}
		send := func(d time.Duration) {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
				newWorkload(20, 40, uint64(time.Now().UnixNano())).writeEvents(b, in)
			}
		}
		// Warm up until the standby consumes, then measure both phases.
		for events() == 0 {
			send(100 * time.Millisecond)
		}
		gaps := watchGaps(events)
		send(phase)
		before = gaps.reset()
		primaryCluster.Close()
		send(phase)
		after = gaps.stop()
	}
	b.ReportMetric(float64(before.Milliseconds()), "max-pause-ms-both-up")
	b.ReportMetric(float64(after.Milliseconds()), "max-pause-ms-primary-down")
	b.ReportMetric(after.Seconds()/max(before.Seconds(), 0.01), "down/up")
}

// gapWatcher samples a counter every 10 ms and keeps the longest time it
// did not move.
type gapWatcher struct {
	longest atomic.Int64
	restart atomic.Bool
	done    chan struct{}
	stopped chan struct{}
}

func watchGaps(counter func() float64) *gapWatcher {
	g := &gapWatcher{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(g.stopped)
		last, lastChange := counter(), time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-g.done:
				return
			case now := <-tick.C:
				if g.restart.Swap(false) {
					lastChange = now
				}
				if v := counter(); v != last {
					last, lastChange = v, now
				} else if gap := now.Sub(lastChange); gap.Nanoseconds() > g.longest.Load() {
					g.longest.Store(gap.Nanoseconds())
				}
			}
		}
	}()
	return g
}

// reset returns the longest gap so far and starts over.
func (g *gapWatcher) reset() time.Duration {
	g.restart.Store(true)
	return time.Duration(g.longest.Swap(0))
}

func (g *gapWatcher) stop() time.Duration {
	close(g.done)
	<-g.stopped
	return time.Duration(g.longest.Load())
}

// dualIngester writes to both clusters, closed at cleanup (the primary's
// in-flight records may wait for a cluster that is gone).
func dualIngester(tb testing.TB, primary, standby []string) *Ingester {
	tb.Helper()
	in, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: primary, contract.Standby: standby},
		DeliveryTimeout: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		in.Close(ctx)
	})
	return in
}
