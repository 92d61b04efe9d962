package pipeline

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// TestSpendOfAFailedWriteIsEmittedByTheNextRun: the cluster rejects the
// aggregator's first write of SpendEvents, as a broker rejecting a batch
// would, so the aggregator's run fails with windows closed in its local
// store and their SpendEvents unwritten. The supervisor rebuilds it, and the
// new run must not trust that store: it recovers from the changelog, where
// those windows are still open (a state is written only after the outputs
// before it), closes them again and emits their SpendEvents. Every
// campaign's spend ends exact.
func TestSpendOfAFailedWriteIsEmittedByTheNextRun(t *testing.T) {
	kc := kafkatest.Cluster(t)
	brokers := kc.ListenAddrs()
	o := testOptions(brokers, contract.Primary)
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	startPipeline(t, o)
	in, _ := primaryWithBudgets(t, brokers, 10, 3)

	rejected := rejectFirstWrite(t, kc, contract.TopicsWithPrefix("").Spend)
	events := newWorkload(10, 300, 4)
	events.writeEvents(t, in)
	select {
	case <-rejected:
	case <-time.After(30 * time.Second):
		t.Fatal("the aggregator wrote no SpendEvent in 30 s")
	}
	waitStatuses(t, brokers, 60*time.Second, spentIs(events.truth))
	restarts := metricvalue.Sum(reg, "hotpair_stage_restarts_total", "service", "aggregator")
	if restarts < 1 {
		t.Fatalf("the aggregator restarted %v times; the rejected write should have failed its run", restarts)
	}
}

// rejectFirstWrite makes the cluster reject, with a non-retriable error, the
// first produce request that writes to topic; it returns a channel closed
// once it has.
func rejectFirstWrite(t *testing.T, kc *kfake.Cluster, topic string) <-chan struct{} {
	t.Helper()
	isTopic := kafkatest.WritesTo(t, kc, topic)
	done := make(chan struct{})
	var once sync.Once // kfake may run the control again before it is dropped
	kc.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		req := kr.(*kmsg.ProduceRequest)
		if !slices.ContainsFunc(req.Topics, isTopic) {
			kc.KeepControl()
			return nil, nil, false
		}
		kc.DropControl() // one request only
		once.Do(func() { close(done) })
		return kafkatest.Rejection(req, kerr.InvalidRecord), nil, true
	})
	return done
}
