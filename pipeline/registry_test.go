package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/zktest"
)

// A running instance is registered in ZooKeeper, one ephemeral znode per
// stage with its identity; a stopped one is gone at once.
func TestRegistry(t *testing.T) {
	addr := zktest.Addr(t)
	root := fmt.Sprintf("/hotpair-test/registry-%d", time.Now().UnixNano())
	o := testOptions(kafkatest.Cluster(t).ListenAddrs(), contract.Standby)
	o.Stages = []contract.Stage{contract.StageBudget, contract.StagePacer}
	o.Registry = &RegistryOptions{Servers: []string{addr}, Root: root, Cluster: "cluster-b", SessionTimeout: 4 * time.Second}
	_, stop := startPipeline(t, o)

	conn := zktest.Conn(t, addr, nil)
	for _, stage := range o.Stages {
		node := root + "/instances/cluster-b/" + stage.String() + "/" + o.Instance
		b := waitZnode(t, conn, node, 20*time.Second)
		var r contract.Registration
		if err := json.Unmarshal(b, &r); err != nil || r.Side != contract.Standby || r.Stage != stage || r.Instance != o.Instance || r.Role != contract.RoleLive {
			t.Fatalf("%s holds %s (%v)", node, b, err)
		}
	}
	if kids, _, _ := conn.Children(root + "/instances/cluster-b"); len(kids) != 2 {
		t.Fatalf("registered stages %v, want budget and pacer", kids)
	}
	stop()
	if kids, _, _ := conn.Children(root + "/instances/cluster-b/budget"); len(kids) != 0 {
		t.Fatalf("a stopped instance is still registered: %v", kids)
	}
}

// waitZnode waits, on a ZooKeeper watch, until node exists and returns its
// data.
func waitZnode(t *testing.T, conn *zk.Conn, node string, timeout time.Duration) []byte {
	t.Helper()
	deadline := time.After(timeout)
	for {
		ok, _, created, err := conn.ExistsW(node)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			b, _, err := conn.Get(node)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		select {
		case <-created:
		case <-deadline:
			t.Fatalf("%s not registered within %s", node, timeout)
		}
	}
}
