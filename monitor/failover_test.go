package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
)

// A side whose samples stop is failed over within one evaluation window of
// the heartbeat rule firing; it comes back only after it has been healthy
// for the whole grace period. The switch is published before it is
// reported, counted, logged with its evidence and listed on the page.
func TestFailoverWhenSamplesStopAndReturnAfterGrace(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	p, s := startClusters(t)
	pf, sf := newFleet(t, p), newFleet(t, s)
	r := startReplica(t, testConfig("m1", addr, paths, p, s))
	w := watchSelection(t, testConn(t, addr, nil), paths, contract.ServiceBudget)

	first := w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)
	if first.Epoch != 1 || !first.Sides[contract.Primary].Healthy || !first.Sides[contract.Standby].Healthy {
		t.Fatalf("first selection: %+v; want primary, epoch 1, both sides healthy", first)
	}
	waitFor(t, &r.changes, 5*time.Second, "readiness", r.Ready)
	if !r.IsLeader() {
		t.Fatal("the only replica does not lead")
	}

	stopped := time.Now()
	pf.set(func(f *fleet) { f.stopped = true })
	failed := w.waitActive(t, contract.Standby, tHeartbeat+tWindow+5*time.Second)
	took := time.Since(stopped)
	t.Logf("failover published %s after the samples stopped (heartbeat %s + window %s)", took, tHeartbeat, tWindow)
	if limit := tHeartbeat + tWindow + 1500*time.Millisecond; took > limit {
		t.Fatalf("failover took %s, want within heartbeat+window (%s)", took, limit)
	}
	ps := failed.Sides[contract.Primary]
	if ps.Healthy || len(ps.Reasons) == 0 || !strings.HasPrefix(ps.Reasons[0], "no_heartbeat") {
		t.Fatalf("primary in the failover selection: %+v; want unhealthy with no_heartbeat", ps)
	}
	if failed.Epoch != 2 || failed.LastSwitch.IsZero() || !strings.Contains(failed.Reason, "no_heartbeat") {
		t.Fatalf("failover selection: epoch %d, last switch %s, reason %q", failed.Epoch, failed.LastSwitch, failed.Reason)
	}
	// The switch is counted once the write returned, which may be just
	// after a watcher saw it.
	waitFor(t, &r.changes, 5*time.Second, "the failover to be counted", func() bool {
		return r.metric(t, "hotpair_switches_total", "service", "budget", "side", "standby", "reason", "failover") == 1
	})
	if got := r.metric(t, "hotpair_service_active_side", "service", "budget", "side", "standby"); got != 1 {
		t.Fatalf("hotpair_service_active_side{budget,standby} = %g, want 1", got)
	}

	checkOnCallPage(t, r, contract.Standby.String(), "no_heartbeat")

	// The primary comes back; it must stay out for the grace period.
	resumed := time.Now()
	pf.set(func(f *fleet) { f.stopped = false })
	back := w.waitActive(t, contract.Primary, tGrace+4*tWindow+5*time.Second)
	took = time.Since(resumed)
	t.Logf("returned to primary %s after its samples resumed (grace %s)", took, tGrace)
	if took < tGrace {
		t.Fatalf("returned after %s, before the grace period %s", took, tGrace)
	}
	if back.Epoch != 3 {
		t.Fatalf("return selection epoch %d, want 3", back.Epoch)
	}
	checkNeverReversed(t, w.all())
	waitFor(t, &r.changes, 5*time.Second, "the return to be counted", func() bool {
		return r.metric(t, "hotpair_switches_total", "service", "budget", "side", "primary", "reason", "return") == 1
	})
	_ = sf
}
