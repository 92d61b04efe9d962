package monitor

import (
	"errors"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

func TestElectionOneLeaderAndHandover(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	sa, sb := testSession(t, addr, nil), testSession(t, addr, nil)
	a, _ := startElection(t, sa, paths, "a")
	waitFor(t, &a.changes, 10*time.Second, "a to lead", func() bool { return a.get().Leader })
	b, _ := startElection(t, sb, paths, "b")
	// b reports its node once it has checked it: as a follower, watching a.
	waitFor(t, &b.changes, 10*time.Second, "b to enter the election", func() bool { return b.get().Node != "" })
	if b.get().Leader || !a.get().Leader {
		t.Fatalf("want exactly a to lead, got a=%+v b=%+v", a.get(), b.get())
	}
	if data, n, err := leaderOf(sa.conn, paths.LeaderDir()); err != nil || string(data) != "a" || n != 2 {
		t.Fatalf("leaderOf = %q, %d candidates, %v; want a of 2", data, n, err)
	}

	// The leader's session ends: b must take over at once (its watch on
	// a's node fires when the node goes).
	start := time.Now()
	sa.Close()
	waitFor(t, &b.changes, 5*time.Second, "b to lead", func() bool { return b.get().Leader })
	t.Logf("handover after a clean close took %s", time.Since(start))
	if b.get().Term != 1 {
		t.Fatalf("b's term = %d, want 1", b.get().Term)
	}
}

func TestElectionReentersAfterSessionExpiry(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	s := testSession(t, addr, nil)
	w, _ := startElection(t, s, paths, "a")
	waitFor(t, &w.changes, 10*time.Second, "a to lead", func() bool { return w.get().Leader })
	first := w.get().Node
	oldSession := s.ID()

	// Cut the replica off for longer than the session timeout: the server
	// expires the session and the candidate node with it.
	partitionUntilExpired(t, s, addr, first)
	waitFor(t, &w.changes, 30*time.Second, "a to lead again", func() bool { return w.get().Leader && w.get().Node != first })
	if s.ID() == oldSession {
		t.Fatalf("still on the old session %x", oldSession)
	}
	if w.get().Term != 2 {
		t.Fatalf("term = %d, want 2", w.get().Term)
	}
	sawNotLeader := false
	w.mu.Lock()
	for _, l := range w.all {
		sawNotLeader = sawNotLeader || (!l.Leader && l.Node == first)
	}
	w.mu.Unlock()
	if !sawNotLeader {
		t.Fatalf("never reported losing leadership while cut off: %+v", w.all)
	}
}

func TestFencedWrite(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	sa, sb := testSession(t, addr, nil), testSession(t, addr, nil)
	a, _ := startElection(t, sa, paths, "a")
	waitFor(t, &a.changes, 10*time.Second, "a to lead", func() bool { return a.get().Leader })
	b, _ := startElection(t, sb, paths, "b")
	waitFor(t, &b.changes, 10*time.Second, "b to enter", func() bool { return b.get().Node != "" })

	sel := contract.Selection{V: 1, Service: contract.ServiceBudget, Active: contract.Primary, Preferred: contract.Primary, Epoch: 0, Reason: "first"}
	aNode := a.get().Node
	v, err := writeSelection(sa.conn, paths, aNode, sel, absent, zkutil.OpenACL())
	if err != nil || v != 0 {
		t.Fatalf("first write: v=%d err=%v", v, err)
	}
	// A stale version is refused even for the leader.
	if _, err := writeSelection(sa.conn, paths, aNode, sel, absent, zkutil.OpenACL()); !errors.Is(err, ErrVersionConflict) {
		t.Fatalf("create over an existing selection: err=%v, want ErrVersionConflict", err)
	}
	// b is not the leader yet, but even if it thought so its node is not
	// the one that matters: only a deposed node is fenced. Depose a.
	sa.Close()
	waitFor(t, &b.changes, 5*time.Second, "b to lead", func() bool { return b.get().Leader })
	sel.Active, sel.Epoch, sel.Reason = contract.Standby, 1, "b decided"
	if _, err := writeSelection(sb.conn, paths, b.get().Node, sel, 0, nil); err != nil {
		t.Fatalf("new leader's write: %v", err)
	}
	// The deposed leader's write (made through another session, as if its
	// own had survived) fails and changes nothing.
	other := testSession(t, addr, nil)
	old := sel
	old.Active, old.Epoch, old.Reason = contract.Primary, 1, "a's late write"
	if _, err := writeSelection(other.conn, paths, aNode, old, 1, nil); !errors.Is(err, ErrFenced) {
		t.Fatalf("deposed write: err=%v, want ErrFenced", err)
	}
	got, ver, err := readSelection(sb.conn, paths, contract.ServiceBudget)
	if err != nil || got.Active != contract.Standby || ver != 1 {
		t.Fatalf("selection after the fenced write: %+v v%d %v; want standby v1", got, ver, err)
	}
}
