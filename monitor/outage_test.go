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
