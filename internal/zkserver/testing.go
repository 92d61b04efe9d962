package zkserver

import (
	"context"
	"os"
	"testing"
)

// EnvAddr names the environment variable with the address of a ZooKeeper
// server the test command started for the whole run.
const EnvAddr = "HOTPAIR_TEST_ZK"

// ForTest returns the address of a ZooKeeper server for a test that does not
// stop or restart it: the shared server of the test command when EnvAddr is
// set, else a server of the test's own, stopped at cleanup. Tests sharing a
// server must use their own root path (see TestRoot).
func ForTest(t testing.TB) string {
	t.Helper()
	if a := os.Getenv(EnvAddr); a != "" {
		return a
	}
	return StartForTest(t).Addr()
}

// StartForTest starts a server of the test's own (for tests that kill or
// restart it), stopped and removed at cleanup. A missing installation fails
// the test with the command that installs it.
func StartForTest(t testing.TB) *Server {
	t.Helper()
	s, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting ZooKeeper: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}
