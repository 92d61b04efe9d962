package monitor

import (
	"testing"
	"time"

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
		conn := testConn(t, addr, nil)
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, err := ReadStatus(conn, paths, nil, time.Now())
			if err == nil && st.Candidates == 2 {
				break
			}
			for i, r := range rs {
				select {
				case err := <-r.done:
					r.done <- err
					t.Fatalf("round %d: replica %d stopped: %v", round, i, err)
				default:
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d candidates in the election after 10s, want 2 (%v)", round, st.Candidates, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, r := range rs {
			r.stop()
			r.done <- <-r.done // stopped; the harness's cleanup reads it again
		}
	}
}
