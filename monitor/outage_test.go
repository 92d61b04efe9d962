package monitor

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
)

// ZooKeeper stops: the monitor keeps evaluating (it decides the failover on
// its own, reports not ready), reconnects when ZooKeeper is back and then
// publishes the decision it made meanwhile.
func TestZooKeeperOutageKeepsEvaluatingAndPublishesOnReturn(t *testing.T) {
	srv := zktest.Start(t)
	paths := testRoot(t)
	p, s := startClusters(t)
	pf, _ := newFleet(t, p), newFleet(t, s)
	r := startReplica(t, testConfig("m", srv.Addr(), paths, p, s))
	observer := testConn(t, srv.Addr(), nil)
	w := watchSelection(t, observer, paths, contract.ServiceBudget)
	first := w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)
	waitFor(t, &r.changes, 5*time.Second, "readiness", r.Ready)

	srv.Kill()
	down := time.Now()
	waitFor(t, &r.changes, 5*time.Second, "the replica to notice", func() bool { return !r.Ready() })
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz during the outage = %d, want 503", rec.Code)
	}
	evals := r.metric(t, "hotpair_monitor_evaluations_total")
	pf.set(func(f *fleet) { f.stopped = true })
	waitFor(t, &r.changes, tHeartbeat+2*tWindow+5*time.Second, "the replica to decide the failover on its own", func() bool {
		for _, ss := range r.Status().Services {
			if ss.Service == contract.ServiceBudget && ss.Local != nil {
				return ss.Local.Active == contract.Standby
			}
		}
		return false
	})
	if got := r.metric(t, "hotpair_monitor_evaluations_total"); got < evals+1 {
		t.Fatalf("evaluations during the outage: %g -> %g", evals, got)
	}
	rec = httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/healthz during the outage = %d, want 200 (evaluation goes on)", rec.Code)
	}
	if l := w.last(); l.Active != contract.Primary || l.Epoch != first.Epoch {
		t.Fatalf("something was published while ZooKeeper was down: %+v", l)
	}

	if err := srv.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	t.Logf("ZooKeeper was down for %s", back.Sub(down).Round(time.Millisecond))
	// A reader on a new session: the old observer's watch does not always
	// survive the server's restart (go-zookeeper sets it again after its
	// own reconnect, which can come after the monitor's write and then
	// miss it), and what is measured here is the monitor.
	after := watchSelection(t, testConn(t, srv.Addr(), nil), paths, contract.ServiceBudget)
	got := after.waitActive(t, contract.Standby, 20*time.Second)
	t.Logf("failover published %s after ZooKeeper returned", time.Since(back).Round(time.Millisecond))
	if got.Epoch != first.Epoch+1 {
		t.Fatalf("published epoch %d, want %d", got.Epoch, first.Epoch+1)
	}
	waitFor(t, &r.changes, 10*time.Second, "readiness again", r.Ready)
	checkNeverReversed(t, w.all())
	checkNeverReversed(t, after.all())
}

// ZooKeeper comes back empty (an ensemble rebuilt after losing its disks):
// it refuses the replica's old connection for good, and has no layout. The
// replica starts a new session after twice the session timeout, creates
// the layout again, leads, and publishes the side it had decided, at the
// same epoch: the failover made before the wipe holds.
func TestZooKeeperThatLostItsDataGetsTheSelectionsBack(t *testing.T) {
	srv := zktest.Start(t)
	paths := testRoot(t)
	p, s := startClusters(t)
	pf, _ := newFleet(t, p), newFleet(t, s)
	r := startReplica(t, testConfig("m", srv.Addr(), paths, p, s))
	w := watchSelection(t, testConn(t, srv.Addr(), nil), paths, contract.ServiceBudget)
	w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)
	pf.set(func(f *fleet) { f.stopped = true })
	before := w.waitActive(t, contract.Standby, tHeartbeat+4*tWindow+5*time.Second)

	srv.Kill()
	if err := srv.RestartEmpty(t.Context()); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	after := watchSelection(t, testConn(t, srv.Addr(), nil), paths, contract.ServiceBudget)
	got := after.waitActive(t, contract.Standby, 2*tSession+2*tWindow+20*time.Second)
	t.Logf("the selection was back %s after ZooKeeper returned empty", time.Since(back).Round(time.Millisecond))
	if got.Epoch != before.Epoch {
		t.Fatalf("published epoch %d after the wipe, want %d (no switch happened)", got.Epoch, before.Epoch)
	}
	waitFor(t, &r.changes, 10*time.Second, "readiness again", r.Ready)
	conn := testConn(t, srv.Addr(), nil)
	for _, dir := range []string{paths.LeaderDir(), paths.OverrideDir(), paths.SelectionDir()} {
		if ok, _, err := conn.Exists(dir); err != nil || !ok {
			t.Errorf("%s after the wipe: exists %v, err %v", dir, ok, err)
		}
	}
	if kids, _, err := conn.Children(paths.LeaderDir()); err != nil || len(kids) != 1 {
		t.Errorf("election candidates after the wipe: %v (err %v), want the replica's", kids, err)
	}
}
