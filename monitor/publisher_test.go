package monitor

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// syncBuffer is a log sink for tests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A leader that was deposed (its candidate node is gone) tries to publish:
// ZooKeeper refuses the multi, the newer decision stays, the refusal is
// logged at WARN and counted, and the publisher does not retry the write:
// it reads the selections again for the loop to decide from.
func TestDeposedLeaderWriteIsFencedOffAndNotRetried(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	sa := testSession(t, addr, nil)
	if err := ensureLayout(sa.conn, paths, ACLPolicy{}, nil); err != nil {
		t.Fatal(err)
	}
	aNode, err := sa.conn.CreateProtectedEphemeralSequential(paths.LeaderDir()+"/n_", nil, zkutil.OpenACL())
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	restores := make(chan restoreMsg, 8)
	lead := leadership{Leader: true, Node: aNode, Term: 1}
	pub := newPublisher(&publisher{s: sa.Session, paths: paths, acl: zkutil.OpenACL(), services: []contract.Service{contract.ServiceBudget},
		window: time.Hour, retry: 50 * time.Millisecond, m: newMetrics(reg, func() float64 { return 0 }),
		log:    slog.New(slog.NewTextHandler(&logs, nil)),
		leader: func() leadership { return lead }, restore: restores})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { pub.run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	msg := <-restores
	if msg.gen != 1 || len(msg.sels) != 0 {
		t.Fatalf("first seed: %+v", msg)
	}
	sel := contract.Selection{V: 1, Service: contract.ServiceBudget, Active: contract.Primary, Preferred: contract.Primary, Epoch: 1, Reason: "a"}
	pub.offer(offer{gen: 1, sel: sel, kind: "initial"})
	waitFor(t, pub.changes, 5*time.Second, "a's first write", func() bool { return gathered(t, reg, "hotpair_monitor_publications_total") == 1 })

	// a is deposed: its node goes (as with an expired session) and b, the
	// new leader, publishes a newer decision.
	if err := sa.conn.Delete(aNode, -1); err != nil {
		t.Fatal(err)
	}
	sb := testSession(t, addr, nil)
	bNode, err := sb.conn.CreateProtectedEphemeralSequential(paths.LeaderDir()+"/n_", nil, zkutil.OpenACL())
	if err != nil {
		t.Fatal(err)
	}
	newer := sel
	newer.Active, newer.Epoch, newer.Reason = contract.Standby, 2, "b"
	if _, err := writeSelection(sb.conn, paths, bNode, newer, 0, nil); err != nil {
		t.Fatal(err)
	}

	late := sel
	late.Reason = "a's late write"
	pub.offer(offer{gen: 1, sel: late, kind: "stay"})
	waitFor(t, pub.changes, 5*time.Second, "the fenced write to be counted", func() bool {
		return gathered(t, reg, "hotpair_monitor_publish_errors_total", "service", "budget", "reason", "fenced") == 1
	})
	reread := <-restores
	if reread.gen != 2 || len(reread.sels) != 1 || reread.sels[0].Active != contract.Standby {
		t.Fatalf("after the fenced write the publisher handed over %+v; want b's selection to decide from", reread)
	}
	// Two more steps of the publisher: neither writes the late offer again.
	for range 2 {
		next := pub.changes.Next()
		pub.poke()
		select {
		case <-next:
		case <-time.After(5 * time.Second):
			t.Fatal("the publisher did not step")
		}
	}
	if got := gathered(t, reg, "hotpair_monitor_publish_errors_total", "reason", "fenced"); got != 1 {
		t.Fatalf("fenced writes = %g: the write was retried", got)
	}
	cur, _, err := readSelection(sb.conn, paths, contract.ServiceBudget)
	if err != nil || cur.Active != contract.Standby || cur.Reason != "b" {
		t.Fatalf("selection = %+v, %v; want b's", cur, err)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "fenced off") {
		t.Fatalf("no WARN about the fenced write in:\n%s", l)
	}
}
