package monitor

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/zktest"
)

// N good samples make exactly N aggregation steps, however many windows
// close and selections get published afterwards: the monitor's output never
// comes back as its input. Bad samples are counted by reason, skipped, and
// never stop the consumer.
func TestSamplesAreAggregatedOnceAndBadOnesSkipped(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	p, s := startClusters(t)
	r := startReplica(t, testConfig("steps", addr, paths, p, s))
	// The consumers start at the time the replica started: wait until both
	// are reading before producing.
	waitFor(t, &r.changes, 4*tWindow+5*time.Second, "a first window", func() bool { return r.metric(t, "hotpair_monitor_evaluations_total") >= 1 })

	topic := contract.TopicsWithPrefix("").Health
	now := time.Now()
	var onP, onS []*kgo.Record
	for i := range 20 {
		at := now.Add(time.Duration(i) * tSampleInterval)
		onP = append(onP, record(sample(contract.StageBudget, contract.Primary, "i0", "b1", at, 10, 5)))
		onS = append(onS, record(sample(contract.StageBudget, contract.Standby, "i0", "b1", at, 10, 5)))
	}
	wrongSide := sample(contract.StagePacer, contract.Standby, "x", "b1", now, 1, 1)
	bad := []*kgo.Record{
		{Topic: topic, Key: []byte("junk"), Value: []byte("{not json")},
		{Topic: topic, Key: []byte("v2"), Value: []byte(`{"v":2}`)},
		record(wrongSide), // on the primary cluster
	}
	pc, sc := kafkatest.Client(t, p.brokers), kafkatest.Client(t, s.brokers)
	if err := pc.ProduceSync(t.Context(), append(bad, onP...)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := sc.ProduceSync(t.Context(), onS...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &r.changes, 10*time.Second, "40 aggregation steps", func() bool { return r.Status().Replica.Steps >= 40 })
	evals := r.metric(t, "hotpair_monitor_evaluations_total")
	waitFor(t, &r.changes, 3*tWindow+time.Second, "two more windows", func() bool {
		return r.metric(t, "hotpair_monitor_evaluations_total") >= evals+2
	})
	if got := r.Status().Replica.Steps; got != 40 {
		t.Fatalf("40 samples made %d aggregation steps", got)
	}
	if got := r.metric(t, "hotpair_monitor_aggregation_steps_total"); got != 40 {
		t.Fatalf("hotpair_monitor_aggregation_steps_total = %g, want 40", got)
	}
	for reason, want := range map[string]float64{"invalid_json": 1, "unsupported_version": 1, "wrong_side": 1} {
		if got := r.metric(t, "hotpair_monitor_bad_samples_total", "side", "primary", "reason", reason); got != want {
			t.Errorf("bad samples {primary, %s} = %g, want %g", reason, got, want)
		}
	}
	if got := r.metric(t, "hotpair_monitor_samples_total", "side", "primary"); got != 20 {
		t.Errorf("good samples read on primary = %g, want 20", got)
	}
}
