package monitor

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// hotpair status lists the pipeline instances registered in ZooKeeper,
// read straight from the znodes the pipelines write.
func TestStatusListsRegisteredInstances(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	conn := testConn(t, addr, nil)
	for _, n := range []string{"primary/aggregator/p-1", "primary/budget/p-1", "primary/budget/p-2", "standby/budget/s-1", "dark/canary/budget/d-1"} {
		if err := zkutil.EnsurePath(conn, paths.Root+"/instances/"+n, zkutil.OpenACL()); err != nil {
			t.Fatal(err)
		}
	}
	st, err := ReadStatus(conn, paths, []contract.Service{contract.ServiceBudget}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []Registered{
		{Cluster: "dark/canary", Stage: "budget", Instances: []string{"d-1"}},
		{Cluster: "primary", Stage: "aggregator", Instances: []string{"p-1"}},
		{Cluster: "primary", Stage: "budget", Instances: []string{"p-1", "p-2"}},
		{Cluster: "standby", Stage: "budget", Instances: []string{"s-1"}},
	}
	if len(st.Instances) != len(want) {
		t.Fatalf("instances %+v, want %+v", st.Instances, want)
	}
	for i := range want {
		if st.Instances[i].Cluster != want[i].Cluster || st.Instances[i].Stage != want[i].Stage ||
			strings.Join(st.Instances[i].Instances, ",") != strings.Join(want[i].Instances, ",") {
			t.Fatalf("instances %+v, want %+v", st.Instances, want)
		}
	}
	var b bytes.Buffer
	if err := WriteStatusText(&b, st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "budget      2: p-1, p-2") {
		t.Fatalf("status text lacks the registered instances:\n%s", b.String())
	}
	// Without any registration there is no section, and no error.
	empty := testRoot(t)
	if _, err := conn.Create(empty.Root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		t.Fatal(err)
	}
	if st, err := ReadStatus(conn, empty, []contract.Service{contract.ServiceBudget}, time.Now()); err != nil || len(st.Instances) != 0 {
		t.Fatalf("empty root: %+v %v", st.Instances, err)
	}
}
