// Package zktest gives tests a real ZooKeeper server and sessions on it. It
// is imported by tests only, so the binary never links package testing.
package zktest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkserver"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// EnvAddr names the environment variable with the address of a ZooKeeper
// server the test command started for the whole run.
const EnvAddr = "HOTPAIR_TEST_ZK"

// Addr returns the address of a ZooKeeper server for a test that does not
// stop or restart it: the shared server of the test command when EnvAddr is
// set, else a server of the test's own, stopped at cleanup. Tests sharing a
// server must use a root path of their own.
func Addr(t testing.TB) string {
	t.Helper()
	if a := os.Getenv(EnvAddr); a != "" {
		return a
	}
	return Start(t).Addr()
}

// Start starts a server of the test's own (for tests that kill or restart
// it), stopped and removed at cleanup. A missing installation fails the
// test with the command that installs it.
func Start(t testing.TB) *zkserver.Server {
	t.Helper()
	s, err := zkserver.Start(context.Background(), zkserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting ZooKeeper: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// Session opens a session with o (Servers required), waits until it is
// usable (at most 20 s) and closes it at cleanup.
func Session(t testing.TB, o zkutil.Options) *zkutil.Session {
	t.Helper()
	s, err := zkutil.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitUsable(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// Conn is a usable connection to addr as auth (nil: anonymous), closed at
// cleanup.
func Conn(t testing.TB, addr string, auth *contract.Credentials) *zk.Conn {
	t.Helper()
	return Session(t, zkutil.Options{Servers: []string{addr}, SessionTimeout: 4 * time.Second, Auth: auth}).Conn()
}
