package main

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// zkForTest connects to the test ZooKeeper and returns the connection, the
// server's address and a root of the test's own with its selection
// directory created (open ACL).
func zkForTest(t *testing.T, name string) (*zk.Conn, string, string) {
	t.Helper()
	addr := zktest.Addr(t)
	root := fmt.Sprintf("/hotpair-test/%s-%08x", name, rand.Uint32())
	conn := zktest.Conn(t, addr, nil)
	if err := zkutil.EnsurePath(conn, contract.NewPaths(root).SelectionDir(), zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	return conn, addr, root
}
