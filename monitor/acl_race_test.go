package monitor

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/internal/zktest"
)

// Replicas of a secure deployment start together (a rollout, the sandbox):
// each creates or corrects the layout's ACLs at start, and none may fail
// because the other got there first.
func TestSecureReplicasStartTogether(t *testing.T) {
	addr := zktest.Addr(t)
	p, s := startClusters(t)
	for round := range 5 {
		paths := testRoot(t)
		var rs []*replica
		for i := range 2 {
			cfg := testConfig("together-"+string(rune('a'+i)), addr, paths, p, s)
			cfg.ZK.Auth = monitorID.String()
			cfg.ZK.OperatorUser = DigestID(operatorID)
			rs = append(rs, startReplica(t, cfg))
		}
		// Both enter the election (a watch on its candidates), unless one
		// stops first.
		conn := testConn(t, addr, nil)
		deadline := time.After(10 * time.Second)
		dir := paths.LeaderDir()
		for {
			candidates, _, entered, err := conn.ChildrenW(dir)
			if errors.Is(err, zk.ErrNoNode) {
				var exists bool
				if exists, _, entered, err = conn.ExistsW(dir); exists {
					continue // created in between
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(candidates) == 2 {
				break
			}
			select {
			case <-entered:
			case err := <-rs[0].done:
				rs[0].done <- err
				t.Fatalf("round %d: replica a stopped: %v", round, err)
			case err := <-rs[1].done:
				rs[1].done <- err
				t.Fatalf("round %d: replica b stopped: %v", round, err)
			case <-deadline:
				t.Fatalf("round %d: candidates %v in the election after 10s, want 2", round, candidates)
			}
		}
		for _, r := range rs {
			r.stop()
			r.done <- <-r.done // stopped; the harness's cleanup reads it again
		}
	}
}
