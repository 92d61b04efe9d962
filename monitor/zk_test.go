package monitor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/changestest"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// testLogger logs to the test output when HOTPAIR_TEST_LOG is set.
func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	if os.Getenv("HOTPAIR_TEST_LOG") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
}

// testRoot returns a root path of the test's own on a shared server.
func testRoot(t testing.TB) contract.Paths {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return contract.NewPaths(fmt.Sprintf("/hotpair-test/%s-%08x", name, rand.Uint32()))
}

// testConn opens a plain session (auth may be nil), closed at cleanup.
func testConn(t testing.TB, addr string, auth *contract.Credentials) *zk.Conn {
	t.Helper()
	return zktest.Conn(t, addr, auth)
}

// testSess is a session as a replica opens it (2 s session timeout), with
// the dialer partition cuts.
type testSess struct {
	*zkutil.Session
	conn   *zk.Conn
	dialer *cutDialer
}

// testSession opens a monitor session and waits until it is usable; it is
// closed at cleanup.
func testSession(t testing.TB, addr string, auth *contract.Credentials) testSess {
	t.Helper()
	d := &cutDialer{}
	s := zktest.Session(t, zkutil.Options{Servers: []string{addr}, SessionTimeout: 2 * time.Second, Auth: auth,
		Dialer: d.dial, Logger: testLogger(t)})
	return testSess{Session: s, conn: s.Conn(), dialer: d}
}

// waitFor waits until cond holds, checking it again at every change the
// component reports (a replica's, an election's, a publisher's), or fails
// after timeout.
func waitFor(t testing.TB, changes *changes.Feed, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	changestest.WaitFor(t, changes, timeout, what, cond)
}

// leaderWatch records what an election reports.
type leaderWatch struct {
	changes changes.Feed
	mu      sync.Mutex
	cur     leadership
	all     []leadership
}

func (w *leaderWatch) report(l leadership) {
	defer w.changes.Notify()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cur = l
	w.all = append(w.all, l)
}

func (w *leaderWatch) get() leadership {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

func startElection(t testing.TB, s testSess, paths contract.Paths, id string) (*leaderWatch, context.CancelFunc) {
	t.Helper()
	if err := ensureLayout(s.conn, paths, ACLPolicy{}, nil); err != nil {
		t.Fatal(err)
	}
	w := &leaderWatch{}
	e := &election{s: s.Session, dir: paths.LeaderDir(), data: []byte(id), acl: zkutil.OpenACL(),
		log: testLogger(t).With("replica", id), report: w.report, retry: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.run(ctx) })
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return w, stop
}

// partitionUntilExpired cuts s off ZooKeeper (which stays up) until the
// server has expired its session, seen by another session as the deletion
// of node, an ephemeral znode of s; then it lets s reconnect.
func partitionUntilExpired(t testing.TB, s testSess, addr, node string) {
	t.Helper()
	watcher := testConn(t, addr, nil)
	s.dialer.cut()
	deadline := time.After(30 * time.Second)
	for {
		ok, _, ch, err := watcher.ExistsW(node)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s still there 30 s into the partition: the session did not expire", node)
		}
	}
	s.dialer.mu.Lock()
	s.dialer.dead = false
	s.dialer.mu.Unlock()
}
