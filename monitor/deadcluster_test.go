package monitor

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// The primary's Kafka cluster dies: windows keep closing on time, the
// standby's samples keep arriving, and the primary is failed over within
// one window of its heartbeat timing out.
func TestDeadClusterDoesNotDelayEvaluation(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	p, s := startClusters(t)
	newFleet(t, p)
	newFleet(t, s)
	r := startReplica(t, testConfig("dead", addr, paths, p, s))
	w := watchSelection(t, testConn(t, addr, nil), paths, contract.ServiceBudget)
	w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)

	died := time.Now()
	p.kc.Close()
	evals := r.metric(t, "hotpair_monitor_evaluations_total")
	standbySamples := r.metric(t, "hotpair_monitor_samples_total", "side", "standby")
	sel := w.waitActive(t, contract.Standby, tHeartbeat+2*tWindow+5*time.Second)
	took := time.Since(died)
	t.Logf("failover published %s after the primary cluster died", took)
	if limit := tHeartbeat + tWindow + 1500*time.Millisecond; took > limit {
		t.Fatalf("failover took %s, want within %s", took, limit)
	}
	if !sel.Sides[contract.Standby].Healthy {
		t.Fatalf("standby judged unhealthy while its cluster is fine: %+v", sel.Sides[contract.Standby])
	}
	// Three more windows must close on time, one per window.
	start := time.Now()
	waitFor(t, &r.changes, 3*tWindow+1500*time.Millisecond, "three more windows", func() bool {
		return r.metric(t, "hotpair_monitor_evaluations_total") >= evals+3+1
	})
	t.Logf("3 more windows closed in %s while the primary cluster was dead", time.Since(start))
	if got := r.metric(t, "hotpair_monitor_samples_total", "side", "standby"); got <= standbySamples {
		t.Fatalf("standby samples stopped with the primary cluster: %g -> %g", standbySamples, got)
	}
	// The dead cluster did not hold up the decision record either: the
	// standby's copy has the failover, and the page lists it.
	waitFor(t, &r.changes, 5*time.Second, "the failover read back from the standby's copy", func() bool {
		sw := budgetSwitches(r)
		return len(sw) == 1 && sw[0].To == contract.Standby
	})
	es, _, err := decisions.Read(t.Context(), decisions.ReadOptions{Sources: []decisions.Source{{Side: s.side.String(), Brokers: s.brokers}},
		Filter: decisions.Filter{Service: contract.ServiceBudget, Kinds: []decisions.Kind{decisions.KindSwitch}}})
	if err != nil || len(es) != 2 || es[1].Cause != "failover" {
		t.Fatalf("the standby's copy of the record: %+v, %v", es, err)
	}
}
