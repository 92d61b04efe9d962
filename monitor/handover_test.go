package monitor

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
)

// Two replicas; the leader crashes (Kill: its session is left to expire).
// The follower takes over within the session timeout plus one window,
// continues from the published hysteresis (same epoch, same side) and no
// reader ever sees a decision go back. A clean stop hands over at once.
func TestLeaderCrashHandsOverWithoutLosingTheDecision(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	p, s := startClusters(t)
	pf, _ := newFleet(t, p), newFleet(t, s)
	a := startReplica(t, testConfig("a", addr, paths, p, s))
	waitFor(t, &a.changes, 10*time.Second, "a to lead", a.IsLeader)
	b := startReplica(t, testConfig("b", addr, paths, p, s))
	w := watchSelection(t, testConn(t, addr, nil), paths, contract.ServiceBudget)
	w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)
	waitFor(t, &b.changes, 4*tWindow, "b to be ready", b.Ready)
	if b.IsLeader() {
		t.Fatal("both replicas lead")
	}

	pf.set(func(f *fleet) { f.stopped = true })
	failed := w.waitActive(t, contract.Standby, tHeartbeat+2*tWindow+5*time.Second)
	if got := b.metric(t, "hotpair_monitor_publications_total", "service", "budget"); got != 0 {
		t.Fatalf("the follower published %g selections", got)
	}
	// The follower mirrors the published decision.
	waitFor(t, &b.changes, 2*tWindow+time.Second, "b to mirror the failover", func() bool {
		return b.metric(t, "hotpair_service_active_side", "service", "budget", "side", "standby") == 1
	})

	killed := time.Now()
	a.Kill()
	waitFor(t, &b.changes, tSession+tWindow+5*time.Second, "b to lead", b.IsLeader)
	led := time.Since(killed)
	var next = failed
	waitFor(t, &w.changes, tSession+2*tWindow+5*time.Second, "b to publish", func() bool {
		if l := w.last(); l != nil && l.DecidedAt.After(killed) {
			next = *l
			return true
		}
		return false
	})
	published := time.Since(killed)
	t.Logf("after the leader crashed: follower led in %s, published in %s (session timeout %s, window %s)",
		led, published, tSession, tWindow)
	if limit := tSession + tWindow + 2*time.Second; published > limit {
		t.Fatalf("handover took %s, want within session timeout + window (%s)", published, limit)
	}
	if next.Active != contract.Standby || next.Epoch != failed.Epoch || !next.LastSwitch.Equal(failed.LastSwitch) {
		t.Fatalf("new leader published %s epoch %d (last switch %s); want the old leader's %s epoch %d (%s) continued",
			next.Active, next.Epoch, next.LastSwitch, failed.Active, failed.Epoch, failed.LastSwitch)
	}
	if got := b.metric(t, "hotpair_switches_total", "service", "budget"); got != 0 {
		t.Fatalf("the new leader counted %g switches; it only continued the old decision", got)
	}

	// A clean stop (cancelled context) closes the session: the next replica
	// leads at once instead of after the session timeout.
	c := startReplica(t, testConfig("c", addr, paths, p, s))
	waitFor(t, &c.changes, 4*tWindow, "c to be ready", c.Ready)
	stopped := time.Now()
	b.stop()
	waitFor(t, &c.changes, tSession, "c to lead after b stopped cleanly", c.IsLeader)
	t.Logf("after a clean stop: follower led in %s", time.Since(stopped))
	w.waitActive(t, contract.Standby, time.Second)
	// Let c decide a window as leader: what it publishes must not go back.
	evals := c.metric(t, "hotpair_monitor_evaluations_total")
	waitFor(t, &c.changes, 2*tWindow, "c to evaluate a window as leader", func() bool {
		return c.metric(t, "hotpair_monitor_evaluations_total") > evals
	})
	checkNeverReversed(t, w.all())
	for _, sel := range w.all() {
		if sel.Epoch >= failed.Epoch && sel.Active != contract.Standby {
			t.Fatalf("after the failover a reader saw %s at epoch %d", sel.Active, sel.Epoch)
		}
	}
}
