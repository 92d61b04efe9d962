package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/canary/compare/comparetest"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// The targets come from their documents in ZooKeeper (/dark/<name>) and are
// followed: a disabled target is no longer compared.
func TestComparatorFollowsTargetsInZooKeeper(t *testing.T) {
	addr := zktest.Addr(t)
	root := fmt.Sprintf("/compare-test-%d", time.Now().UnixNano())
	paths := contract.NewPaths(root)
	conn := zktest.Conn(t, addr, nil)
	if err := zkutil.EnsurePath(conn, paths.DarkDir(), zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	p := comparetest.Start(t, "cand")
	doc := contract.DarkTarget{V: 1, Name: "cand", Source: contract.Standby, Strategy: contract.DarkRelative, Multiplier: 0.25,
		Brokers: p.Dark.ListenAddrs(), Prefix: contract.DarkPrefix("cand"), Enabled: true, UpdatedAt: time.Now().UTC()}
	b, _ := json.Marshal(doc)
	if _, err := conn.Create(paths.Dark("cand"), b, 0, zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
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
	b, _ = json.Marshal(doc)
	if _, err := conn.Set(paths.Dark("cand"), b, -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Until(ctx, func(r Report) bool { return len(r.Targets) == 0 }); err != nil {
		t.Fatalf("the disabled target is still compared: %v", c.Report().Targets)
	}
	if r := c.Report(); r.Verdict != InsufficientData {
		t.Fatalf("no target: verdict %s", r.Verdict)
	}
}
