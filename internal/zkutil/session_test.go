package zkutil_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkserver"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

func testRoot(t *testing.T) string {
	return fmt.Sprintf("/zkutil-test/%s-%08x", t.Name(), rand.Uint32())
}

// A session with an identity is usable only once the identity is added:
// the first request after WaitUsable already runs as it.
func TestSessionIsUsableOnceAuthenticated(t *testing.T) {
	addr := zktest.Addr(t)
	root := testRoot(t)
	me := &contract.Credentials{User: "zkutil-test", Password: "s3cret"}
	var mu sync.Mutex
	var states []zk.State
	sess := zktest.Session(t, zkutil.Options{Servers: []string{addr}, Auth: me,
		OnState: func(ev zk.Event) { mu.Lock(); states = append(states, ev.State); mu.Unlock() }})
	if err := zkutil.EnsurePath(sess.Conn(), root, zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	node := root + "/mine"
	if _, err := sess.Conn().Create(node, []byte("a"), 0, zkutil.ProtectedACL(me)); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Conn().Set(node, []byte("b"), -1); err != nil {
		t.Fatalf("the identity's own write: %v", err)
	}
	anon := zktest.Conn(t, addr, nil)
	if _, err := anon.Set(node, []byte("c"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("an anonymous write: %v, want ErrNoAuth", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(states); n == 0 || states[n-1] != zk.StateHasSession {
		t.Fatalf("states reported %v, want the last to be %s", states, zk.StateHasSession)
	}
}

// WaitUsable gives up with ctx when no server answers, naming the state.
func TestWaitUsableEndsWithContext(t *testing.T) {
	port, err := zkserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	sess, err := zkutil.Open(zkutil.Options{Servers: []string{fmt.Sprintf("127.0.0.1:%d", port)},
		Auth: &contract.Credentials{User: "u", Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close() // also ends the identity's retry loop
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = sess.WaitUsable(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "state") {
		t.Fatalf("WaitUsable = %v, want the deadline and the state", err)
	}
	if sess.Usable() {
		t.Fatal("usable without a server")
	}
}

func TestOpenNeedsServers(t *testing.T) {
	if _, err := zkutil.Open(zkutil.Options{}); err == nil || !strings.Contains(err.Error(), "Servers") {
		t.Fatalf("Open without servers: %v", err)
	}
}

// EachSession writes an ephemeral znode for every session: after an expiry
// (the server deleted it) the new session writes it again; every
// subscriber hears of the changes.
func TestEachSessionRegistersAgainAfterExpiry(t *testing.T) {
	addr := zktest.Addr(t)
	root := testRoot(t)
	node := root + "/instance"
	watcher := zktest.Conn(t, addr, nil)
	if err := zkutil.EnsurePath(watcher, root, zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	d := &cuttable{}
	// The server's minimum session timeout is 2 ticks (1 s by default).
	sess := zktest.Session(t, zkutil.Options{Servers: []string{addr}, SessionTimeout: time.Second, Dialer: d.dial})
	pokes, unsubscribe := sess.Subscribe()
	defer unsubscribe()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	registered := make(chan int64, 4)
	go sess.EachSession(ctx, func() {
		if _, err := sess.Conn().Create(node, nil, zk.FlagEphemeral, zkutil.OpenACL()); err != nil {
			t.Errorf("registering: %v", err)
		}
		registered <- sess.ID()
	})
	first := <-registered
	created := waitNode(t, watcher, node, true)

	// Cut the session off until the server has expired it: the watcher
	// sees the ephemeral znode go.
	d.cut(true)
	waitNode(t, watcher, node, false)
	<-pokes // disconnected
	if sess.Usable() {
		t.Fatal("usable while cut off")
	}
	d.cut(false)
	var second int64
	select {
	case second = <-registered:
	case <-time.After(30 * time.Second):
		t.Fatal("no registration in the new session")
	}
	if second == first || second == 0 {
		t.Fatalf("registered again in session %x, the first was %x", second, first)
	}
	if again := waitNode(t, watcher, node, true); again.EphemeralOwner != second || again.Czxid == created.Czxid {
		t.Fatalf("the znode after the expiry is owned by %x (created %d), want a new one of %x", again.EphemeralOwner, again.Czxid, second)
	}
}

// A server rebuilt empty (its data lost) refuses a connection that has seen
// a newer transaction than its own, and the library retries that forever.
// The Session replaces such a connection after twice the session timeout
// when a server answers meanwhile: the identity is added again and
// EachSession registers again, on the rebuilt server. A server that is
// down for as long and comes back with its data resumes the session:
// nothing is replaced.
func TestSessionRecoversFromAServerThatLostItsData(t *testing.T) {
	srv := zktest.Start(t)
	addr := srv.Addr()
	root := testRoot(t)
	node := root + "/instance"
	me := &contract.Credentials{User: "zkutil-test", Password: "s3cret"}
	sess := zktest.Session(t, zkutil.Options{Servers: []string{addr}, SessionTimeout: 2 * time.Second, Auth: me})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Every usable session registers (a registration the connection drops
	// in the middle fails, as it may in a daemon; the next session's try
	// is what counts).
	type registration struct {
		session int64
		err     error
	}
	registered := make(chan registration, 16)
	go sess.EachSession(ctx, func() {
		conn := sess.Conn()
		err := zkutil.EnsurePath(conn, root, zkutil.OpenACL())
		if err == nil {
			_, err = conn.Create(node, nil, zk.FlagEphemeral, zkutil.ProtectedACL(me))
		}
		if errors.Is(err, zk.ErrNodeExists) {
			err = nil // the same session, reconnected
		}
		registered <- registration{sess.ID(), err}
	})
	r := <-registered
	if r.err != nil {
		t.Fatal(r.err)
	}
	first := r.session
	// Enough transactions that the client's last zxid is ahead of what the
	// rebuilt server will have reached by the time the client comes back.
	for i := range 50 {
		if _, err := sess.Conn().Set(node, []byte{byte(i)}, -1); err != nil {
			t.Fatal(err)
		}
	}

	// Down for longer than twice the session timeout, then back with its
	// data: no server answered meanwhile, so the session is kept, and
	// resumes (the server gives restored sessions a new timeout).
	srv.Kill()
	time.Sleep(5 * time.Second) // deliberate real time: an outage longer than the 4 s after which a connection is replaced
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sess.WaitUsable(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := sess.Renewals(); n != 0 || sess.ID() != first {
		t.Fatalf("after a 5 s outage with the data kept: %d renewals, session %x (was %x); want the same session", n, sess.ID(), first)
	}

	for len(registered) > 0 {
		<-registered
	}

	srv.Kill()
	if err := srv.RestartEmpty(context.Background()); err != nil {
		t.Fatal(err)
	}
	var second int64
	for deadline := time.After(40 * time.Second); second == 0; {
		select {
		case r := <-registered:
			if r.err == nil {
				second = r.session
			}
		case <-deadline:
			t.Fatalf("no registration on the rebuilt server within 40 s (%d renewals)", sess.Renewals())
		}
	}
	if second == first || sess.Renewals() != 1 {
		t.Fatalf("registered in session %x after %d renewals; the first session was %x", second, sess.Renewals(), first)
	}
	// The new session holds the identity: its own znode is writable.
	if _, err := sess.Conn().Set(node, []byte("after"), -1); err != nil {
		t.Fatalf("writing the znode created with the identity's ACL: %v", err)
	}
	anon := zktest.Conn(t, addr, nil)
	if stat := waitNode(t, anon, node, true); stat.EphemeralOwner != second {
		t.Fatalf("the znode is owned by %x, want the new session %x", stat.EphemeralOwner, second)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitNode waits, on a ZooKeeper watch, until p exists (or not).
func waitNode(t *testing.T, conn *zk.Conn, p string, exists bool) *zk.Stat {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ok, stat, ch, err := conn.ExistsW(p)
		if err != nil {
			t.Fatal(err)
		}
		if ok == exists {
			return stat
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s exists=%v for 30s", p, ok)
		}
	}
}

// cuttable dials TCP; while cut it drops its connection and refuses new ones.
type cuttable struct {
	mu   sync.Mutex
	off  bool
	conn net.Conn
}

func (c *cuttable) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off {
		return nil, errors.New("cut")
	}
	conn, err := net.DialTimeout(network, addr, timeout)
	c.conn = conn
	return conn, err
}

func (c *cuttable) cut(off bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off = off
	if off && c.conn != nil {
		_ = c.conn.Close()
	}
}
