package selector

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
)

// A view that has fetched one partition to its end is not caught up until
// the topic's end offsets were measured: another partition, not fetched yet,
// may hold records the view has not applied.
func TestViewIsNotCaughtUpBeforeItKnowsEveryPartition(t *testing.T) {
	var topics [contract.NumServices + 1]string
	for _, svc := range contract.Services() {
		topics[svc] = "t." + svc.String()
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l := newLagTracker(topics, now, &changes.Feed{})
	budget := func() ViewLag { return l.report(contract.Primary, now)[0] }

	l.consumed(contract.ServiceBudget, 0, 5, 5, 5, now, now) // partition 0 fetched to its end
	if b := budget(); b.CaughtUp || b.CaughtUpOnce {
		t.Fatalf("caught up from one fetched partition before any measurement: %+v", b)
	}

	// The measurement finds three partitions, partition 1 with 4 records.
	ends := kadm.ListedOffsets{}
	starts := kadm.ListedOffsets{}
	for _, svc := range contract.Services() {
		ends[topics[svc]] = map[int32]kadm.ListedOffset{}
		starts[topics[svc]] = map[int32]kadm.ListedOffset{}
		for p := range int32(3) {
			end := int64(0)
			if svc == contract.ServiceBudget && p == 0 {
				end = 5
			}
			if svc == contract.ServiceBudget && p == 1 {
				end = 4
			}
			ends[topics[svc]][p] = kadm.ListedOffset{Topic: topics[svc], Partition: p, Offset: end}
			starts[topics[svc]][p] = kadm.ListedOffset{Topic: topics[svc], Partition: p}
		}
	}
	serviceOf := func(topic string) contract.Service {
		for _, svc := range contract.Services() {
			if topics[svc] == topic {
				return svc
			}
		}
		return 0
	}
	l.measured(serviceOf, starts, ends, now)
	if b := budget(); b.CaughtUp || b.CaughtUpOnce || b.RecordsBehind != 4 || b.Partitions != 3 {
		t.Fatalf("after the measurement: %+v, want 4 records behind on 3 partitions, not caught up", b)
	}
	l.consumed(contract.ServiceBudget, 1, 4, 4, 4, now, now)
	if b := budget(); !b.CaughtUp || !b.CaughtUpOnce || b.RecordsBehind != 0 {
		t.Fatalf("after fetching partition 1 to its end: %+v, want caught up", b)
	}
	if p := l.report(contract.Primary, now)[1]; !p.CaughtUp {
		t.Fatalf("an empty measured topic is caught up: %+v", p)
	}
}
