package selector

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// The retriever may start before the pipelines have created their output
// topics: the views must pick them up once they exist, and say meanwhile
// that they are not there.
func TestViewsStartedBeforeTheTopicsExist(t *testing.T) {
	pc, sc := kafkatest.Cluster(t), kafkatest.Cluster(t)
	p := &cluster{t: t, c: pc, cl: kafkatest.Client(t, pc.ListenAddrs()), topics: contract.TopicsWithPrefix("")}
	s := &cluster{t: t, c: sc, cl: kafkatest.Client(t, sc.ListenAddrs()), topics: contract.TopicsWithPrefix("")}
	v, _ := runViews(t, p, s, "")
	waitUntil(t, &v.changes, 10*time.Second, "the missing topics are reported", func() bool {
		for _, l := range v.Lag() {
			if l.Error == "" || l.CaughtUpOnce {
				return false
			}
		}
		return true
	})
	for _, c := range []*cluster{p, s} {
		if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: c.c.ListenAddrs()}, 3, 1,
			kafka.TopicSpec{Name: "budget-status", Compacted: true}, kafka.TopicSpec{Name: "pacing", Compacted: true}, kafka.TopicSpec{Name: "bid-multipliers", Compacted: true}); err != nil {
			t.Fatal(err)
		}
		c.pacing("c1", 0.5)
	}
	waitUntil(t, &v.changes, 20*time.Second, "values arrive on both sides", func() bool {
		return v.Get(contract.ServicePacer, "c1", contract.Primary).From == contract.Primary && v.Get(contract.ServicePacer, "c1", contract.Standby).From == contract.Standby
	})
	waitUntil(t, &v.changes, 10*time.Second, "both sides report caught up", func() bool { return v.CaughtUp(contract.Primary) && v.CaughtUp(contract.Standby) })
}
