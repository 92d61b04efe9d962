package monitor

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// hotpair status shows, per side, the input rate, the end-to-end lag p99 and
// how far behind the aggregator is, as rounded durations, and says when a
// side is catching up or the service is degraded.
func TestStatusTextShowsLag(t *testing.T) {
	now := time.Now().UTC()
	st := Status{Now: now, Root: "/hotpair", Services: []ServiceStatus{{Service: contract.ServiceBudget, Selection: &contract.Selection{
		V: 1, Service: contract.ServiceBudget, Active: contract.Primary, Preferred: contract.Primary, Epoch: 1, DecidedAt: now, Degraded: true,
		Reason: "both sides behind, staying on primary (degraded): primary: lag_high: p99 90000 ms > limit 60000 ms; standby catching up: lag p99 6000 ms > catch_up_lag 5000 ms",
		Sides: map[contract.Side]contract.SideState{
			contract.Primary: {Healthy: false, Reasons: []string{"lag_high: p99 90000 ms > limit 60000 ms"}, QPS: 7.7,
				LagP99Ms: 90_000, AggregatorLagP99Ms: 88_400, CatchingUp: "lag p99 90000 ms > catch_up_lag 5000 ms"},
			contract.Standby: {Healthy: true, QPS: 7.7, LagP99Ms: 6000, AggregatorLagP99Ms: 5800,
				CatchingUp: "lag p99 6000 ms > catch_up_lag 5000 ms"},
		}}}}}
	var b bytes.Buffer
	if err := WriteStatusText(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	for _, want := range []string{
		"BAD lag_high", "ok 8/s, behind 6s",
		"primary:  UNHEALTHY  qps 7.7  lag p99 1m30s  aggregator behind 1m28s",
		"standby:  healthy    qps 7.7  lag p99 6s  aggregator behind 5.8s",
		"standby:  healthy    qps 7.7  lag p99 6s  aggregator behind 5.8s\n            catching up: lag p99 6000 ms > catch_up_lag 5000 ms (the grace clock starts once it keeps up)",
		"DEGRADED: no side can take over (both unhealthy, or both behind)",
		"why:      both sides behind, staying on primary (degraded)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q", want)
		}
	}
}
