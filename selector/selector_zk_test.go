package selector

import (
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkserver"
	"github.com/hotpair/hotpair/internal/zktest"
)

// waitChange waits until the snapshot with tag from has been replaced.
func waitChange(t testing.TB, from *Snapshot, timeout time.Duration) {
	t.Helper()
	select {
	case <-from.Changed():
	case <-time.After(timeout):
		t.Fatalf("the snapshot (tag %s) did not change within %s", from.TagString(), timeout)
	}
}

func TestDefaultBeforeFirstRead(t *testing.T) {
	// Nothing listens on this port: the selector never gets a session.
	port, err := zkserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	clock := newManualClock()
	sel, reg := newTestSelector(t, "127.0.0.1:"+itoa(port), "/hotpair", WithDefaultSide(contract.Standby), withClock(clock.Now))
	clock.advance(300 * time.Millisecond)
	snap := sel.Snapshot()
	for _, svc := range contract.Services() {
		if got := sel.Active(svc); got != contract.Standby {
			t.Errorf("Active(%s) = %s before any read, want the default standby", svc, got)
		}
		if !snap.IsDefault(svc) {
			t.Errorf("IsDefault(%s) = false before any read", svc)
		}
		if _, ok := snap.Epoch(svc); ok {
			t.Errorf("Epoch(%s) reported before any read", svc)
		}
		if v := metricValue(t, reg, "hotpair_selector_default", "service", svc.String()); v != 1 {
			t.Errorf("hotpair_selector_default{%s} = %v, want 1", svc, v)
		}
		if age := metricValue(t, reg, "hotpair_selector_snapshot_age_seconds", "service", svc.String()); age != 0.3 {
			t.Errorf("age of a never-read snapshot = %vs 300ms after the start, want 0.3: it counts from the start", age)
		}
	}
	if sel.Ready() {
		t.Error("Ready() before any read")
	}
	if got := snap.TagString(); got != "1.s.s.s" {
		t.Errorf("tag = %q, want 1.s.s.s (standby by default everywhere)", got)
	}
	if got := sel.ActiveByName("no-such-service"); got != contract.Standby {
		t.Errorf("ActiveByName(unknown) = %s, want the default", got)
	}
}

func TestWatcherFollowsTheMonitorsWrites(t *testing.T) {
	addr, root := zktest.Addr(t), testRoot(t)
	w := newZKWriter(t, addr, root)
	w.set(contract.ServiceBudget, contract.Standby, 4)
	w.set(contract.ServicePacer, contract.Primary, 2)
	// bidder has no selection yet: it stays on the default side.

	sel, reg := newTestSelector(t, addr, root)
	waitUntil(t, &sel.changes, 10*time.Second, "budget and pacer are read", func() bool {
		s := sel.Snapshot()
		return !s.IsDefault(contract.ServiceBudget) && !s.IsDefault(contract.ServicePacer)
	})
	snap := sel.Snapshot()
	if sel.Active(contract.ServiceBudget) != contract.Standby || sel.Active(contract.ServicePacer) != contract.Primary || sel.Active(contract.ServiceBidder) != contract.Primary {
		t.Fatalf("sides = %s/%s/%s, want standby/primary/primary(default)", sel.Active(contract.ServiceBudget), sel.Active(contract.ServicePacer), sel.Active(contract.ServiceBidder))
	}
	if !snap.IsDefault(contract.ServiceBidder) || sel.Ready() {
		t.Fatal("bidder has no znode: it must answer the default and the selector must not be ready")
	}
	if got := snap.TagString(); got != "1.s4.p2.p" {
		t.Fatalf("tag = %q, want 1.s4.p2.p", got)
	}
	if doc := snap.Selection(contract.ServiceBudget); doc == nil || doc.Reason != "test sets standby" {
		t.Fatalf("the budget document is not kept: %+v", doc)
	}

	// The monitor switches budget back to primary and decides bidder.
	w.set(contract.ServiceBudget, contract.Primary, 5)
	waitChange(t, snap, 5*time.Second)
	w.set(contract.ServiceBidder, contract.Standby, 1)
	waitUntil(t, &sel.changes, 5*time.Second, "bidder is read", func() bool { return sel.Active(contract.ServiceBidder) == contract.Standby })
	if got := sel.Active(contract.ServiceBudget); got != contract.Primary {
		t.Fatalf("Active(budget) = %s after the switch, want primary", got)
	}
	if !sel.Ready() {
		t.Fatal("not Ready after every service was read")
	}
	if got := sel.Snapshot().TagString(); got != "1.p5.p2.s1" {
		t.Fatalf("tag = %q, want 1.p5.p2.s1", got)
	}
	for _, c := range []struct {
		name, label, value string
		want               float64
	}{
		{"hotpair_selector_switches_total", "service", "budget", 2}, // default primary -> standby -> primary
		{"hotpair_selector_switches_total", "service", "bidder", 1},
		{"hotpair_selector_epoch", "service", "budget", 5},
		{"hotpair_selector_default", "service", "bidder", 0},
		{"hotpair_selector_snapshot_age_seconds", "service", "budget", 0},
		{"hotpair_selector_zk_connected", "", "", 1},
	} {
		if got := metricValue(t, reg, c.name, c.label, c.value); got != c.want {
			t.Errorf("%s{%s=%s} = %v, want %v", c.name, c.label, c.value, got, c.want)
		}
	}
	if got := metricValue(t, reg, "hotpair_selector_active", "service", "budget", "side", "primary"); got != 1 {
		t.Errorf("hotpair_selector_active{budget,primary} = %v, want 1", got)
	}
}

func TestWatcherIgnoresMalformedAndDeletedZnodes(t *testing.T) {
	addr, root := zktest.Addr(t), testRoot(t)
	w := newZKWriter(t, addr, root)
	w.set(contract.ServicePacer, contract.Standby, 7)
	clock := newManualClock()
	sel, reg := newTestSelector(t, addr, root, WithServices(contract.ServicePacer), withClock(clock.Now))
	waitUntil(t, &sel.changes, 10*time.Second, "pacer is read", func() bool { return sel.Active(contract.ServicePacer) == contract.Standby })

	rejected := func(reason string) float64 {
		return metricValue(t, reg, "hotpair_selector_znode_rejected_total", "service", "pacer", "reason", reason)
	}
	for i, bad := range []string{
		`{"v":1,"service":"pacer","active":"prim`, // truncated JSON
		`{"v":1,"service":"pacer","active":"nowhere","epoch":8}`,
		`{"v":1,"service":"budget","active":"primary","epoch":8}`, // another service's document
		``,
	} {
		w.setRaw(contract.ServicePacer, []byte(bad))
		waitUntil(t, &sel.changes, 5*time.Second, "the bad write is counted", func() bool { return rejected("malformed") == float64(i+1) })
		if got := sel.Active(contract.ServicePacer); got != contract.Standby {
			t.Fatalf("after %q: Active = %s, want the last good standby", bad, got)
		}
		if e, _ := sel.Snapshot().Epoch(contract.ServicePacer); e != 7 {
			t.Fatalf("after %q: epoch = %d, want 7", bad, e)
		}
	}
	clock.advance(50 * time.Millisecond)
	if age := metricValue(t, reg, "hotpair_selector_snapshot_age_seconds", "service", "pacer"); age != 0.05 {
		t.Errorf("age = %v 50ms after the znode went malformed, want 0.05: the snapshot no longer matches ZooKeeper", age)
	}

	w.remove(contract.ServicePacer)
	waitUntil(t, &sel.changes, 5*time.Second, "the deletion is counted", func() bool { return rejected("deleted") == 1 })
	if got := sel.Active(contract.ServicePacer); got != contract.Standby || sel.Snapshot().IsDefault(contract.ServicePacer) {
		t.Fatalf("after deletion: Active = %s (default %v), want the last good standby", got, sel.Snapshot().IsDefault(contract.ServicePacer))
	}

	// A new valid selection is followed again.
	w.set(contract.ServicePacer, contract.Primary, 9)
	waitUntil(t, &sel.changes, 5*time.Second, "the re-created znode is read", func() bool { return sel.Active(contract.ServicePacer) == contract.Primary })
	if age := metricValue(t, reg, "hotpair_selector_snapshot_age_seconds", "service", "pacer"); age != 0 {
		t.Errorf("age = %v after a valid read, want 0", age)
	}
	if got := rejected("malformed"); got != 4 {
		t.Errorf("malformed = %v, want 4 (re-reads must not count again)", got)
	}
}

// TestFailStaticThroughZooKeeperOutage stops ZooKeeper; the outage lasts 30
// s on the selector's clock.
func TestFailStaticThroughZooKeeperOutage(t *testing.T) {
	t.Parallel()
	srv := zktest.Start(t)
	root := "/hotpair"
	w := newZKWriter(t, srv.Addr(), root)
	w.set(contract.ServiceBudget, contract.Standby, 3)
	w.set(contract.ServicePacer, contract.Standby, 3)
	w.set(contract.ServiceBidder, contract.Primary, 1)
	clock := newManualClock()
	sel, reg := newTestSelector(t, srv.Addr(), root, withClock(clock.Now))
	waitUntil(t, &sel.changes, 10*time.Second, "every selection is read", sel.Ready)
	want := sel.Snapshot().TagString()
	w.conn.Close()

	// A reader checks every millisecond that the answer never changes.
	stop, wrong := make(chan struct{}), make(chan string, 1)
	go func() {
		for {
			select {
			case <-stop:
				close(wrong)
				return
			case <-time.After(time.Millisecond):
			}
			if sel.Active(contract.ServiceBudget) != contract.Standby || sel.Active(contract.ServicePacer) != contract.Standby || sel.Active(contract.ServiceBidder) != contract.Primary {
				wrong <- sel.Snapshot().TagString()
				close(wrong)
				return
			}
		}
	}()

	srv.Kill()
	waitUntil(t, &sel.changes, 20*time.Second, "the session is lost", func() bool {
		return metricValue(t, reg, "hotpair_selector_zk_connected") == 0
	})
	clock.advance(time.Second)
	age1 := metricValue(t, reg, "hotpair_selector_snapshot_age_seconds", "service", "budget")
	clock.advance(29 * time.Second)
	age2 := metricValue(t, reg, "hotpair_selector_snapshot_age_seconds", "service", "budget")
	if age1 != 1 || age2 != 30 {
		t.Errorf("age during the outage: %.1fs after 1s, %.1fs after 30s; want it to grow with the outage", age1, age2)
	}
	if got := sel.Snapshot().TagString(); got != want {
		t.Errorf("tag during the outage = %s, want the last good %s", got, want)
	}
	if st, _ := sel.Status(clock.Now()); st.ZKConnected || st.Services[0].Fresh || st.Services[0].AgeSeconds != 30 {
		t.Errorf("status during the outage claims a fresh connection: %+v", st)
	}

	if err := srv.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, &sel.changes, 30*time.Second, "the snapshot is fresh again", func() bool {
		return metricValue(t, reg, "hotpair_selector_zk_connected") == 1 &&
			metricValue(t, reg, "hotpair_selector_snapshot_age_seconds", "service", "budget") == 0
	})
	close(stop)
	if tag, bad := <-wrong; bad {
		t.Fatalf("Active changed during the outage: tag %s, want %s", tag, want)
	}
	// And changes are followed again.
	w = newZKWriter(t, srv.Addr(), root)
	w.set(contract.ServiceBudget, contract.Primary, 4)
	waitUntil(t, &sel.changes, 10*time.Second, "the change after the outage is read", func() bool { return sel.Active(contract.ServiceBudget) == contract.Primary })
}

// ZooKeeper comes back empty (an ensemble rebuilt after losing its disks):
// it refuses the selector's old connection for good. The selector keeps its
// snapshot, starts a new session (after twice its session timeout), and
// follows what is written on the rebuilt ensemble, even an epoch lower than
// the one it held (ZooKeeper is authoritative).
func TestFollowsAZooKeeperThatLostItsData(t *testing.T) {
	t.Parallel()
	srv := zktest.Start(t)
	root := "/hotpair"
	w := newZKWriter(t, srv.Addr(), root)
	for _, svc := range contract.Services() {
		w.set(svc, contract.Standby, 7)
	}
	sel, reg := newTestSelector(t, srv.Addr(), root, WithSessionTimeout(2*time.Second))
	waitUntil(t, &sel.changes, 10*time.Second, "every selection is read", sel.Ready)

	srv.Kill()
	if err := srv.RestartEmpty(t.Context()); err != nil {
		t.Fatal(err)
	}
	if sel.Active(contract.ServiceBudget) != contract.Standby {
		t.Fatal("the snapshot changed when ZooKeeper lost its data")
	}
	w = newZKWriter(t, srv.Addr(), root)
	w.set(contract.ServiceBudget, contract.Primary, 1)
	waitUntil(t, &sel.changes, 40*time.Second, "the rebuilt ensemble's selection is read", func() bool {
		return sel.Active(contract.ServiceBudget) == contract.Primary &&
			metricValue(t, reg, "hotpair_selector_snapshot_age_seconds", "service", "budget") == 0
	})
	if e, ok := sel.Snapshot().Epoch(contract.ServiceBudget); !ok || e != 1 {
		t.Fatalf("epoch after the wipe = %d (%v), want 1", e, ok)
	}
}

// TestWatchesComeBackAfterSessionExpiry partitions the selector from
// ZooKeeper for longer than its session timeout, so that the server expires
// the session, and changes the selection meanwhile.
func TestWatchesComeBackAfterSessionExpiry(t *testing.T) {
	t.Parallel()
	addr, root := zktest.Addr(t), testRoot(t)
	w := newZKWriter(t, addr, root)
	w.set(contract.ServiceBudget, contract.Primary, 1)
	w.set(contract.ServiceBidder, contract.Primary, 1)
	proxy := startProxy(t, addr)
	sel, reg := newTestSelector(t, proxy.Addr(), root, WithSessionTimeout(2*time.Second), WithServices(contract.ServiceBudget, contract.ServiceBidder))
	waitUntil(t, &sel.changes, 10*time.Second, "the selections are read", sel.Ready)

	proxy.Cut()
	waitUntil(t, &sel.changes, 10*time.Second, "the session is lost", func() bool {
		return metricValue(t, reg, "hotpair_selector_zk_connected") == 0
	})
	w.set(contract.ServiceBudget, contract.Standby, 2) // made while the selector cannot see it
	// Real time must pass here: only the server's clock expires the session
	// (after the 2 s timeout), and nothing tells a partitioned client.
	time.Sleep(5 * time.Second)
	if got := sel.Active(contract.ServiceBudget); got != contract.Primary {
		t.Fatalf("Active(budget) = %s while partitioned, want the last good primary", got)
	}
	proxy.Restore()

	waitUntil(t, &sel.changes, 20*time.Second, "the change made meanwhile is seen", func() bool { return sel.Active(contract.ServiceBudget) == contract.Standby })
	if n := metricValue(t, reg, "hotpair_selector_zk_session_expirations_total"); n < 1 {
		t.Fatalf("expirations = %v: the session did not really expire, so this test proves nothing", n)
	}
	// The watches of the new session work: a later change arrives too.
	w.set(contract.ServiceBidder, contract.Standby, 2)
	waitUntil(t, &sel.changes, 5*time.Second, "a change after the expiry is seen", func() bool { return sel.Active(contract.ServiceBidder) == contract.Standby })
	w.set(contract.ServiceBudget, contract.Primary, 3)
	waitUntil(t, &sel.changes, 5*time.Second, "another change after the expiry is seen", func() bool { return sel.Active(contract.ServiceBudget) == contract.Primary })
	if got := sel.Snapshot().TagString(); !strings.HasPrefix(got, "1.p3.") {
		t.Fatalf("tag = %s", got)
	}
	_ = contract.ZNodeVersion
}
