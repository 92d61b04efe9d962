package selector

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// cluster is one side's kfake cluster and a goka-compatible producer.
type cluster struct {
	t      testing.TB
	c      *kfake.Cluster
	cl     *kgo.Client
	topics contract.Topics
}

func newCluster(t testing.TB, prefix string) *cluster {
	t.Helper()
	c := kafkatest.Cluster(t)
	cl := withOutputTopics(t, kafka.Cluster{Brokers: c.ListenAddrs()}, prefix)
	cl.c = c
	return cl
}

// withOutputTopics creates the output topics on the cluster k reaches (as
// the pipelines would) and returns a producer of it.
func withOutputTopics(t testing.TB, k kafka.Cluster, prefix string) *cluster {
	t.Helper()
	topics := contract.TopicsWithPrefix(prefix)
	err := kafka.EnsureTopics(t.Context(), k, 3, 1,
		kafka.TopicSpec{Name: topics.BudgetStatus, Compacted: true},
		kafka.TopicSpec{Name: topics.Pacing, Compacted: true},
		kafka.TopicSpec{Name: topics.BidMultipliers, Compacted: true})
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, cl: kafkatest.ClientOf(t, k), topics: topics}
}

func (c *cluster) produce(topic, key string, v any) {
	c.t.Helper()
	var b []byte
	if v != nil {
		var err error
		if b, err = contract.Encode(v); err != nil {
			c.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: b}).FirstErr(); err != nil {
		c.t.Fatalf("producing to %s: %v", topic, err)
	}
}

func (c *cluster) produceRaw(topic, key, value string) {
	c.t.Helper()
	if err := c.cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
		c.t.Fatal(err)
	}
}

var testNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func (c *cluster) status(campaign, status string) {
	c.produce(c.topics.BudgetStatus, campaign, contract.BudgetStatus{V: 1, Campaign: campaign, Status: status,
		Day: "2026-03-14", SpentTodayMicros: 1, SpentLifetimeMicros: 2, UpdatedAt: testNow})
}

func (c *cluster) pacing(campaign string, rate float64) {
	c.produce(c.topics.Pacing, campaign, contract.Pacing{V: 1, Campaign: campaign, Rate: rate, UpdatedAt: testNow})
}

func (c *cluster) multiplier(campaign string, m float64) {
	c.produce(c.topics.BidMultipliers, campaign, contract.BidMultiplier{V: 1, Campaign: campaign, Multiplier: m, UpdatedAt: testNow})
}

// runViews starts views of the two clusters, stopped at cleanup.
func runViews(t testing.TB, primary, standby *cluster, prefix string) (*Views, *prometheus.Registry) {
	t.Helper()
	return startViews(t, WithCluster(contract.Primary, primary.c.ListenAddrs()...), WithCluster(contract.Standby, standby.c.ListenAddrs()...),
		WithTopicPrefix(prefix))
}

// startViews starts views configured by opts and the tests' short
// intervals, stopped at cleanup.
func startViews(t testing.TB, opts ...ViewsOption) (*Views, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	v, err := NewViews(append([]ViewsOption{WithLagInterval(100 * time.Millisecond),
		WithKafkaOptions(contract.Primary, kgo.FetchMaxWait(200*time.Millisecond)),
		WithKafkaOptions(contract.Standby, kgo.FetchMaxWait(200*time.Millisecond)),
		WithRegisterer(reg), WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Views.Run: %v", err)
		}
	})
	return v, reg
}

// writeOutputs writes campaign c1's three values, different on each side.
func writeOutputs(p, s *cluster) {
	p.status("c1", contract.StatusActive)
	s.status("c1", contract.StatusDailyCapped)
	p.pacing("c1", 0.5)
	s.pacing("c1", 0.7)
	p.multiplier("c1", 1.25)
	s.multiplier("c1", 1.5)
}

// checkOutputs checks that each side answers the values writeOutputs wrote
// to it.
func checkOutputs(t testing.TB, v *Views) {
	t.Helper()
	for _, c := range []struct {
		svc  contract.Service
		side contract.Side
		want func(Answer) bool
	}{
		{contract.ServiceBudget, contract.Primary, func(a Answer) bool { return a.Status == StateActive }},
		{contract.ServiceBudget, contract.Standby, func(a Answer) bool { return a.Status == StateDailyCapped }},
		{contract.ServicePacer, contract.Primary, func(a Answer) bool { return a.Rate == 0.5 }},
		{contract.ServicePacer, contract.Standby, func(a Answer) bool { return a.Rate == 0.7 }},
		{contract.ServiceBidder, contract.Primary, func(a Answer) bool { return a.Multiplier == 1.25 }},
		{contract.ServiceBidder, contract.Standby, func(a Answer) bool { return a.Multiplier == 1.5 }},
	} {
		a := v.Get(c.svc, "c1", c.side)
		if !a.Found || a.From != c.side || a.Fallback() || !c.want(a) || !a.UpdatedAt.Equal(testNow) {
			t.Errorf("Get(%s, c1, %s) = %+v", c.svc, c.side, a)
		}
	}
}

func TestViewsAnswerFromBothClusters(t *testing.T) {
	const prefix = "t1."
	p, s := newCluster(t, prefix), newCluster(t, prefix)
	writeOutputs(p, s) // before the views start: they must read from the start
	v, reg := runViews(t, p, s, prefix)
	waitUntil(t, &v.changes, 15*time.Second, "both sides caught up", func() bool { return v.CaughtUp(contract.Primary) && v.CaughtUp(contract.Standby) })

	checkOutputs(t, v)
	if a := v.Get(contract.ServiceBudget, "c1", contract.Primary); !a.Day.Equal(time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("budget day = %v", a.Day)
	}

	// Continuously updated, and a key only one side has seen falls back.
	p.pacing("c1", 0.25)
	s.pacing("c2", 0.9)
	waitUntil(t, &v.changes, 10*time.Second, "the update arrives", func() bool { return v.Get(contract.ServicePacer, "c1", contract.Primary).Rate == 0.25 })
	waitUntil(t, &v.changes, 10*time.Second, "c2 arrives", func() bool { return v.Get(contract.ServicePacer, "c2", contract.Standby).Found })
	a := v.Get(contract.ServicePacer, "c2", contract.Primary)
	if !a.Found || a.From != contract.Standby || !a.Fallback() || a.Rate != 0.9 {
		t.Fatalf("Get(pacer, c2, primary) = %+v, want 0.9 from standby as a fallback", a)
	}
	if got := metricValue(t, reg, "hotpair_view_fallbacks_total", "service", "pacer", "side", "primary"); got != 1 {
		t.Errorf("fallbacks{pacer,primary} = %v, want 1", got)
	}
	if a := v.Get(contract.ServiceBidder, "nobody", contract.Primary); a.Found {
		t.Errorf("Get of an unknown campaign = %+v", a)
	}

	// Bad records change nothing and are counted; a tombstone removes the value.
	p.produceRaw(p.topics.Pacing, "c1", `{"v":1,"campaign":"c1","rate":`)
	p.produceRaw(p.topics.Pacing, "c1", `{"v":1,"campaign":"c1","rate":7,"target_micros":0,"actual_micros":0,"updated_at":"2026-03-14T00:00:00Z"}`)
	p.produce(p.topics.Pacing, "c1", contract.Pacing{V: 1, Campaign: "other", Rate: 0.1, UpdatedAt: testNow})
	p.produce(p.topics.BidMultipliers, "c1", nil)
	waitUntil(t, &v.changes, 10*time.Second, "the tombstone arrives", func() bool { return v.Get(contract.ServiceBidder, "c1", contract.Primary).Fallback() })
	waitUntil(t, &v.changes, 10*time.Second, "the bad records are counted", func() bool {
		return metricValue(t, reg, "hotpair_view_bad_records_total", "side", "primary", "reason", "invalid_json") == 1 &&
			metricValue(t, reg, "hotpair_view_bad_records_total", "side", "primary", "reason", "out_of_range") == 1 &&
			metricValue(t, reg, "hotpair_view_bad_records_total", "side", "primary", "reason", "key_mismatch") == 1
	})
	if a := v.Get(contract.ServicePacer, "c1", contract.Primary); a.Rate != 0.25 || a.From != contract.Primary {
		t.Errorf("after bad records: %+v, want the last good 0.25 from primary", a)
	}
	if a := v.Get(contract.ServiceBidder, "c1", contract.Primary); a.From != contract.Standby || a.Multiplier != 1.5 {
		t.Errorf("after the tombstone: %+v, want standby's 1.5 as a fallback", a)
	}

	waitUntil(t, &v.changes, 10*time.Second, "the lag report catches up", func() bool {
		for _, l := range v.Lag() {
			if !l.CaughtUp || !l.CaughtUpOnce || l.RecordsBehind != 0 || l.Error != "" {
				return false
			}
		}
		return true
	})
	lag := v.Lag()
	if len(lag) != 6 {
		t.Fatalf("lag has %d entries, want 6 (2 sides x 3 topics): %+v", len(lag), lag)
	}
	for _, l := range lag {
		if l.Partitions != 3 || l.Records == 0 || l.EndOffsetsAt.IsZero() {
			t.Errorf("lag entry %+v", l)
		}
	}
	if got := metricValue(t, reg, "hotpair_view_caught_up_once", "side", "standby", "topic", "t1.pacing"); got != 1 {
		t.Errorf("caught_up_once{standby,pacing} = %v", got)
	}
}

func TestViewsOfALiveClusterKeepAnsweringWhenTheOtherDies(t *testing.T) {
	const prefix = ""
	p, s := newCluster(t, prefix), newCluster(t, prefix)
	for _, c := range []*cluster{p, s} {
		c.status("c1", contract.StatusActive)
		c.pacing("c1", 0.5)
		c.multiplier("c1", 2)
	}
	v, reg := runViews(t, p, s, prefix)
	waitUntil(t, &v.changes, 15*time.Second, "both sides caught up", func() bool { return v.CaughtUp(contract.Primary) && v.CaughtUp(contract.Standby) })
	own := staticSource{newDefaultSnapshot(contract.Primary)}
	r, err := NewRetriever(v, own, WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}

	p.c.Close() // the primary cluster dies
	start := time.Now()
	s.pacing("c1", 0.75)
	s.status("c9", contract.StatusActive)
	s.pacing("c9", 0.3)
	s.multiplier("c9", 1.1)
	waitUntil(t, &v.changes, 10*time.Second, "standby's updates arrive", func() bool {
		return v.Get(contract.ServicePacer, "c1", contract.Standby).Rate == 0.75 && v.Get(contract.ServiceBidder, "c9", contract.Standby).Found
	})
	t.Logf("standby's updates arrived %s after the primary cluster died", time.Since(start))

	// The dead side's last values still answer (fail static), and what it
	// never saw falls back to the live side and says so.
	if a := v.Get(contract.ServicePacer, "c1", contract.Primary); a.From != contract.Primary || a.Rate != 0.5 {
		t.Errorf("Get(pacer, c1, primary) = %+v, want primary's last 0.5", a)
	}
	for _, svc := range contract.Services() {
		if a := v.Get(svc, "c9", contract.Primary); !a.Fallback() || a.From != contract.Standby {
			t.Errorf("Get(%s, c9, primary) = %+v, want a fallback to standby", svc, a)
		}
	}
	res := r.Retrieve("1.p3.p3.p3", []string{"c1", "c9"})
	if res.OwnSnapshot || len(res.Serve) != 2 || res.Fallbacks != 3 {
		t.Fatalf("Retrieve = %+v, want both served and c9's 3 values as fallbacks", res)
	}
	if c9 := res.Serve[1]; c9.Fallback != ServiceSet(0).Add(contract.ServiceBudget).Add(contract.ServicePacer).Add(contract.ServiceBidder) || c9.Rate != 0.3 || c9.Multiplier != 1.1 {
		t.Errorf("c9 = %+v", c9)
	}

	// The lag report shows the dead cluster: its end offsets stop being
	// measured, while the standby's still are (the dead primary must not
	// slow it down): a standby measurement under 1 s old is seen while the
	// primary's is over 2 s old.
	waitUntil(t, &v.changes, 15*time.Second, "the dead side's measurement falls behind, not the live side's", func() bool {
		return metricValue(t, reg, "hotpair_view_end_offsets_age_seconds", "side", "primary") > 2 &&
			metricValue(t, reg, "hotpair_view_end_offsets_age_seconds", "side", "standby") < 1
	})
	for _, l := range r.Lag() {
		if l.Side == "standby" && (!l.CaughtUpOnce || l.Error != "") {
			t.Errorf("standby lag %+v", l)
		}
		if l.Side == "primary" && (l.Error == "" || l.CaughtUp || l.TimeBehind < time.Second) {
			t.Errorf("primary lag %+v: want an error, not caught up, and time behind growing", l)
		}
		if l.Side == "standby" && l.TimeBehind != 0 {
			t.Errorf("standby lag %+v: want no time behind", l)
		}
	}
}

type staticSource struct{ s *Snapshot }

func (s staticSource) Snapshot() *Snapshot { return s.s }
