package compare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/canary/compare/comparetest"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// The targets come from their documents in ZooKeeper (/dark/<name>) and are
// followed: a disabled target is no longer compared.
func TestComparatorFollowsTargetsInZooKeeper(t *testing.T) {
	addr, root, conn := zkRoot(t)
	paths := contract.NewPaths(root)
	p := comparetest.Start(t, "cand")
	doc := darkDoc("cand", contract.Standby, p.Dark.ListenAddrs())
	putTarget(t, conn, paths, doc)
	// A document that does not decode is skipped, not fatal.
	if _, err := conn.Create(paths.Dark("broken"), []byte(`{"v":1}`), 0, zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Rules = fastRules()
	cfg.HTTP.Listen = "off"
	cfg.ZK.Servers, cfg.ZK.Root = []string{addr}, root
	cfg.Clusters.Primary.Brokers = p.Primary.ListenAddrs()
	cfg.Clusters.Standby.Brokers = p.Standby.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(Options{Config: cfg, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	defer func() { cancel(); <-done }()
	c, rep := writeTwice(t, p, 30, nil, func() *Comparator {
		go func() { done <- c.Run(ctx) }()
		return c
	})
	if len(rep.Targets) != 1 || rep.Targets[0].Name != "cand" || rep.Targets[0].Source != "standby" || rep.Verdict != Pass {
		t.Fatalf("report %+v", rep)
	}
	doc.Enabled = false
	putTarget(t, conn, paths, doc)
	if err := c.Until(ctx, func(r Report) bool { return len(r.Targets) == 0 }); err != nil {
		t.Fatalf("the disabled target is still compared: %v", c.Report().Targets)
	}
	if r := c.Report(); r.Verdict != InsufficientData {
		t.Fatalf("no target: verdict %s", r.Verdict)
	}
}

// zkRoot is the test's ZooKeeper, a fresh root in it with its /dark
// directory, and a connection.
func zkRoot(t *testing.T) (addr, root string, conn *zk.Conn) {
	t.Helper()
	addr = zktest.Addr(t)
	root = fmt.Sprintf("/compare-test-%d", time.Now().UnixNano())
	conn = zktest.Conn(t, addr, nil)
	if err := zkutil.EnsurePath(conn, contract.NewPaths(root).DarkDir(), zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	return addr, root, conn
}

// darkDoc is an enabled target document: name, fed from source's input,
// on brokers.
func darkDoc(name string, source contract.Side, brokers []string) contract.DarkTarget {
	return contract.DarkTarget{V: 1, Name: name, Source: source, Strategy: contract.DarkRelative, Multiplier: 0.25,
		Brokers: brokers, Prefix: contract.DarkPrefix(name), Enabled: true, UpdatedAt: time.Now().UTC()}
}

// putTarget writes doc at /dark/<name>, replacing any document there.
func putTarget(t *testing.T, conn *zk.Conn, paths contract.Paths, doc contract.DarkTarget) {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	at := paths.Dark(doc.Name)
	_, err = conn.Create(at, b, 0, zkutil.OpenACL())
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = conn.Set(at, b, -1)
	}
	if err != nil {
		t.Fatal(err)
	}
}
