package contract

import (
	"testing"
	"time"
)

// TestDocumentsMatchGolden holds the znode documents to the bytes readers
// in other languages parse: a change of the wire format fails here.
func TestDocumentsMatchGolden(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC)
	since := at.Add(-10 * time.Minute)
	ov := &Override{V: ZNodeVersion, Side: Standby, Until: at.Add(30 * time.Minute), Reason: "suspect build <v2> & more", By: "oncall"}
	docs := map[string]any{
		"selection": Selection{V: ZNodeVersion, Service: ServiceBudget, Active: Standby, Preferred: Primary, Epoch: 12,
			DecidedAt: at, Reason: "failover: primary unhealthy", LastSwitch: at.Add(-time.Minute),
			Sides: map[Side]SideState{
				Primary: {Reasons: []string{"lag_high: p99 75000 ms > limit 60000 ms"}, QPS: 12.5, LagP99Ms: 75000,
					AggregatorLagP99Ms: 20, CatchingUp: "75 s behind", Build: "v2", BuildSince: &since, RollingFrom: "v1", UnhealthyWindows: 2},
				Standby: {Healthy: true, Reasons: []string{}, HealthySince: &since, QPS: 12.25, LagP99Ms: 200, Build: "v1"},
			},
			Override: ov, StaggerViolation: "both sides took a new build within 1h"},
		"selection-minimal": Selection{V: ZNodeVersion, Service: ServicePacer, Active: Primary, DecidedAt: at},
		"override":          *ov,
	}
	for name, doc := range docs {
		got, err := Encode(doc)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "znode-"+name, got)
	}
}
