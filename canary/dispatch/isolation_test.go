package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/pipeline"
	"github.com/hotpair/hotpair/statestore"
)

// startLive runs the live side's pipeline (aggregator and budget enforcer)
// on the live cluster until the test ends.
func startLive(t *testing.T, brokers []string) {
	t.Helper()
	p, err := pipeline.New(pipeline.Options{
		Brokers: brokers, Side: contract.Primary, Instance: "live-test",
		Stages:     []contract.Stage{contract.StageAggregator, contract.StageBudget},
		Partitions: 4, Replication: 1, CreateTopics: true,
		Storage: statestore.Config{Backend: statestore.BackendMemory},
		Window:  time.Second, Lateness: 2 * time.Second,
		SampleInterval: time.Second, WakeInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("live pipeline: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("the live pipeline did not stop within 60s")
		}
	})
}

// liveSpent waits until the live budget enforcer reports every campaign's
// lifetime spend as truth.
func liveSpent(t *testing.T, brokers []string, truth map[string]int64) {
	t.Helper()
	kafkatest.Follow(t, brokers, "budget-status").Until(t, 90*time.Second, func(recs []*kgo.Record) string {
		latest := kafkatest.LatestOf(recs)
		for c, want := range truth {
			st, err := contract.DecodeBudgetStatus(latest[c])
			if err != nil || st.SpentLifetimeMicros != want {
				return fmt.Sprintf("campaign %s: spent %d, want %d (%d reported)", c, st.SpentLifetimeMicros, want, len(latest))
			}
		}
		return ""
	})
}

// TestDeadTargetCostsLiveNothing runs the live pipeline and a dispatcher
// feeding two dark targets, and closes one target's cluster for good early
// in the stream. The live side's spend ends exact; the other target
// receives exactly its sample; the dead one's copies are dropped and
// counted, never waited for.
func TestDeadTargetCostsLiveNothing(t *testing.T) {
	e := newEnv(t)
	startLive(t, e.live)
	deadCluster := kafkatest.Cluster(t)
	createTopics(t, deadCluster.ListenAddrs(), contract.DarkPrefix("dead"))
	good := darkCluster(t, "good")
	e.set(doc("dead", contract.DarkIdentical, 1, deadCluster.ListenAddrs()))
	e.set(doc("good", contract.DarkIdentical, 0.5, good))
	w := newWorkload(40, 5)
	w.budgets(t, e.live)
	d, reg := e.start(func(c *dispatch.Config) { c.Buffer = 500; c.DeliveryTimeout = 2 * time.Second })
	waitPlan(t, d, "dead", 10*time.Second, sending(1))
	waitPlan(t, d, "good", 10*time.Second, sending(0.5))

	truth := map[string]int64{}
	var want []string
	for round := range 20 {
		if round == 2 {
			deadCluster.Close()
		}
		ids := w.events(t, e.live)
		want = append(want, expectEvents(ids, 0.5)...)
		for c, evs := range ids {
			for i := range evs {
				truth[c] += 1000 + int64(i)
			}
		}
	}
	slices.Sort(want)
	liveSpent(t, e.live, truth)
	tp := contract.TopicsWithPrefix(contract.DarkPrefix("good"))
	waitFor(t, kafkatest.Follow(t, good, tp.AdEvents), want, gotEvents)
	total := float64(20 * len(w.campaigns) * w.perCamp)
	waitMetric(t, d, reg, total, "hotpair_dark_dispatch_consumed_total", "topic", "ad-events")
	until(t, d, 30*time.Second, func() string {
		if metric(reg, "hotpair_dark_dispatch_dropped_total", "target", "dead", "reason", "buffer_full")+
			metric(reg, "hotpair_dark_dispatch_dropped_total", "target", "dead", "reason", "delivery_failed") == 0 {
			return "the dead target's copies were neither dropped nor counted"
		}
		return ""
	})
	if v := metric(reg, "hotpair_dark_dispatch_dropped_total", "target", "good", "reason", "buffer_full"); v != 0 {
		t.Fatalf("the good target dropped %v copies", v)
	}
}

// ZooKeeper down: no document can be read, so every target is paused
// (zk_unavailable) and gets nothing; when it is back, the copy resumes.
func TestZooKeeperDownPausesEveryTarget(t *testing.T) {
	srv := zktest.Start(t)
	t.Setenv(zktest.EnvAddr, srv.Addr())
	e := newEnv(t)
	dark := darkCluster(t, "cand")
	tp := contract.TopicsWithPrefix(contract.DarkPrefix("cand"))
	e.set(doc("cand", contract.DarkIdentical, 0.5, dark))
	w := newWorkload(50, 2)
	d, reg := e.start(func(c *dispatch.Config) { c.ZKSessionTimeout = 30 * time.Second })
	waitPlan(t, d, "cand", 10*time.Second, sending(0.5))

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	waitPlan(t, d, "cand", 30*time.Second, func(p dispatch.Plan, ok bool) bool { return ok && p.Paused == dispatch.ReasonZKUnavailable })
	if v := metric(reg, "hotpair_dark_dispatch_paused", "target", "cand", "reason", "zk_unavailable"); v != 1 {
		t.Fatalf("paused{zk_unavailable} = %v", v)
	}
	w.events(t, e.live)
	waitMetric(t, d, reg, float64(len(w.campaigns)*w.perCamp), "hotpair_dark_dispatch_consumed_total", "topic", "ad-events")
	if got := kafkatest.UpToEnd(t, dark, tp.AdEvents); len(got) != 0 {
		t.Fatalf("%d events sent while ZooKeeper was down", len(got))
	}
}
