package decisions

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/goldentest"
)

// TestEntriesMatchGolden holds the decision record's entries to the bytes
// on hotpair-decisions: a change of the wire format fails here.
func TestEntriesMatchGolden(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC)
	on := true
	sel := contract.Selection{V: 1, Service: contract.ServiceBudget, Active: contract.Standby, Preferred: contract.Primary, Epoch: 3, DecidedAt: at,
		Reason: "failover", Sides: map[contract.Side]contract.SideState{contract.Primary: {Reasons: []string{"input_rate_low: 0 < 0.5 × 10"}},
			contract.Standby: {Healthy: true, Reasons: []string{}}}}
	entries := map[string]Entry{
		"switch": {ID: SwitchID(contract.ServiceBudget, 3), Kind: KindSwitch, Service: contract.ServiceBudget, At: at, Epoch: 3, From: contract.Primary, To: contract.Standby,
			Cause: "failover", Detail: "budget: primary -> standby", Selection: sel, RecordedBy: "m-1", RecordedAt: at},
		"window": {ID: WindowID(contract.ServiceBudget, 3, at), Kind: KindWindow, Service: contract.ServiceBudget, At: at, Epoch: 3, On: &on, Detail: "window",
			Selection: sel, Window: &Window{Start: at.Add(-time.Minute), End: at, Verdicts: map[contract.Side]Verdict{
				contract.Primary: {Reasons: []string{"no_heartbeat"}, QPS: 0, Samples: 0},
				contract.Standby: {Healthy: true, Reasons: []string{}, QPS: 9.5, LagP99Ms: 20, LagMaxMs: 30, AggregatorLagP99Ms: 5,
					Samples: 6, Instances: 2, TopicPartitions: 4, Build: "v1"}},
				Decision: Thresholds{Preferred: "primary", FailoverAfter: 1, Grace: "10m0s"}},
			RecordedBy: "m-1", RecordedAt: at},
	}
	for name, e := range entries {
		got, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		goldentest.Check(t, filepath.Join("testdata", name+".golden.json"), got)
	}
}
