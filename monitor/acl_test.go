package monitor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

var (
	monitorID  = contract.Credentials{User: "hotpair-monitor", Password: "m0n-secret"}
	operatorID = contract.Credentials{User: "oncall", Password: "op-secret"}
)

// With digest auth on, everyone can read the selection and the overrides,
// only the monitor identity can change (or delete, or create) selections
// and election candidates, and only the operator identity overrides. An
// operator override switches the service at once, between windows.
func TestACLsAndOperatorOverride(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	anon := testConn(t, addr, nil)
	// An older deployment left the selection directory open: the monitor
	// must close it.
	if err := zkutil.EnsurePath(anon, paths.SelectionDir(), zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	p, s := startClusters(t)
	newFleet(t, p)
	newFleet(t, s)
	cfg := testConfig("secure", addr, paths, p, s)
	cfg.ZK.Auth = monitorID.String()
	cfg.ZK.OperatorUser = DigestID(operatorID)
	r := startReplica(t, cfg)
	w := watchSelection(t, anon, paths, contract.ServiceBudget)
	w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)

	sel := paths.Selection(contract.ServiceBudget)
	if _, _, err := anon.Get(sel); err != nil {
		t.Fatalf("anonymous read of the selection: %v", err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("anonymous %s: err=%v, want zk.ErrNoAuth", what, err)
		}
	}
	_, err := anon.Set(sel, []byte(`{"v":1,"service":"budget","active":"standby"}`), -1)
	refused("set of the selection", err)
	refused("delete of the selection", anon.Delete(sel, -1))
	_, err = anon.Create(paths.SelectionDir()+"/bidder-fake", []byte("x"), 0, zkutil.OpenACL())
	refused("create in the selection directory", err)
	_, err = anon.Create(paths.LeaderDir()+"/n_", nil, zk.FlagEphemeral|zk.FlagSequence, zkutil.OpenACL())
	refused("entering the monitor election", err)
	_, err = anon.SetACL(sel, zkutil.OpenACL(), -1)
	refused("ACL change of the selection", err)
	_, err = anon.Create(paths.Override(contract.ServiceBudget), []byte("x"), 0, zkutil.OpenACL())
	refused("create of an override", err)

	now := time.Now()
	req := OverrideRequest{Service: contract.StageBudget.String(), Side: contract.Standby.String(), Until: now.Add(time.Hour),
		Reason: "drill", By: "oncall"}
	if _, err := SetOverride(anon, paths, OperatorPolicy(nil), req, now); !errors.Is(err, ErrACL) || !strings.Contains(err.Error(), "--auth") {
		t.Fatalf("anonymous SetOverride: err=%v, want ErrACL with a hint", err)
	}
	asMonitor := testConn(t, addr, &monitorID)
	if _, err := SetOverride(asMonitor, paths, OperatorPolicy(&monitorID), req, now); !errors.Is(err, ErrACL) {
		t.Fatalf("SetOverride as the monitor identity: err=%v, want ErrACL", err)
	}

	asOperator := testConn(t, addr, &operatorID)
	set := time.Now()
	if _, err := SetOverride(asOperator, paths, OperatorPolicy(&operatorID), req, now); err != nil {
		t.Fatalf("SetOverride as the operator: %v", err)
	}
	got := w.waitActive(t, contract.Standby, 5*time.Second)
	t.Logf("override published %s after it was set (window %s)", time.Since(set).Round(time.Millisecond), tWindow)
	if got.Override == nil || got.Override.By != "oncall" || !strings.Contains(got.Reason, "override") {
		t.Fatalf("selection under override: %+v", got)
	}
	// Counted once the write returned, which may be just after the watcher saw it.
	waitFor(t, &r.changes, 5*time.Second, "hotpair_switches_total{override} to be 1", func() bool {
		return r.metric(t, "hotpair_switches_total", "service", "budget", "side", "standby", "reason", "override") == 1
	})
	ov := paths.Override(contract.ServiceBudget)
	_, err = anon.Set(ov, []byte("x"), -1)
	refused("set of the override", err)
	refused("delete of the override", anon.Delete(ov, -1))
	if _, err := ClearOverride(anon, paths, contract.ServiceBudget, "anon", "", time.Now()); !errors.Is(err, ErrACL) {
		t.Fatalf("anonymous ClearOverride: err=%v, want ErrACL", err)
	}

	// Every protected znode, directories included: world may only read.
	for _, p := range []string{paths.SelectionDir(), sel, paths.LeaderDir(), paths.OverrideDir(), ov} {
		acl, _, err := anon.GetACL(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acl {
			if a.Scheme == "world" && a.Perms != zk.PermRead {
				t.Fatalf("%s grants the world %d, want read only (ACL %+v)", p, a.Perms, acl)
			}
		}
	}

	if _, err := ClearOverride(asOperator, paths, contract.ServiceBudget, "oncall", "drill over", time.Now()); err != nil {
		t.Fatalf("ClearOverride: %v", err)
	}
	o, _, err := ReadOverride(anon, paths, contract.ServiceBudget)
	if err != nil || o == nil || o.ActiveAt(time.Now()) || !strings.HasPrefix(o.Reason, "cleared: drill over") {
		t.Fatalf("override after clear: %+v, %v; want an ended override with the reason kept", o, err)
	}
	if _, err := ClearOverride(asOperator, paths, contract.ServiceBudget, "oncall", "", time.Now()); !errors.Is(err, ErrNoOverride) {
		t.Fatalf("clearing again: err=%v, want ErrNoOverride", err)
	}
}

// A selection directory the monitor identity may not administer (someone
// else protected it) stops the monitor at start with ErrACL, naming the
// znode, instead of running without ever being able to publish.
func TestForeignACLStopsTheMonitorAtStart(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	other := contract.Credentials{User: "someone-else", Password: "x"}
	conn := testConn(t, addr, &other)
	if err := zkutil.EnsurePath(conn, paths.Root, zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(paths.SelectionDir(), nil, 0, zkutil.ProtectedACL(&other)); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig("locked-out", addr, paths, cluster{brokers: []string{"127.0.0.1:1"}}, cluster{brokers: []string{"127.0.0.1:2"}})
	cfg.ZK.Auth = monitorID.String()
	cfg.ZK.OperatorUser = DigestID(operatorID)
	m, err := New(Options{Config: cfg, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(t.Context()) }()
	select {
	case err := <-done:
		t.Logf("Run: %v", err)
		if !errors.Is(err, ErrACL) || !strings.Contains(err.Error(), paths.SelectionDir()) {
			t.Fatalf("Run = %v; want ErrACL naming %s", err, paths.SelectionDir())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run kept going without being able to publish")
	}
}
