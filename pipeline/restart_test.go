package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/statestore"
)

// TestKilledProcessRestartsWithExactTotals kills a pipeline process with
// SIGKILL in the middle of a stream and restarts it; state comes back from
// the changelog alone (a killed process's leveldb store may be ahead of the
// changelog: the restart empties it), and every campaign's totals end
// exact: nothing lost, nothing counted twice.
func TestKilledProcessRestartsWithExactTotals(t *testing.T) {
	for _, backend := range []string{"leveldb", "memory"} {
		t.Run(backend, func(t *testing.T) {
			brokers := kafkatest.Cluster(t).ListenAddrs()
			dir := t.TempDir()
			config := filepath.Join(dir, "pipeline.yml")
			writeFile(t, config, fmt.Sprintf(`side: primary
instance: killed
brokers: [%s]
topics: {partitions: 4, replication: 1}
storage: {backend: %s, dir: %s}
aggregator: {window: 1s, lateness: 2s}
health: {sample_interval: 1s}
http: {listen: "127.0.0.1:0"}
`, brokers[0], backend, filepath.Join(dir, "state")))

			proc := testbin.Start(t, "pipeline", "--config", config)
			in, w := primaryWithBudgets(t, brokers, 30, 2)

			for batch := range 16 {
				b := newWorkload(30, 250, uint64(100+batch))
				b.writeEvents(t, in)
				for c, v := range b.truth {
					w.truth[c] += v
				}
				switch batch {
				case 6:
					proc.Kill()
				case 9:
					proc = testbin.Start(t, "pipeline", "--config", config)
				}
				// Traffic is spread over 4 s, so that the kill and the
				// restart fall mid-stream (not a wait for a condition).
				time.Sleep(250 * time.Millisecond)
			}
			waitStatuses(t, brokers, 90*time.Second, spentIs(w.truth))
			if !strings.Contains(proc.Out.String(), "pipeline starting") {
				t.Fatalf("restarted process did not start: %s", proc.Out.String())
			}
			if emptied := strings.Contains(proc.Out.String(), "did not stop cleanly; emptied"); emptied != (backend == "leveldb") {
				t.Fatalf("restart emptied a store left by the killed process: %v, want %v", emptied, backend == "leveldb")
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A pipeline stopped cleanly leaves its leveldb stores for the next start,
// which recovers only what the changelog gained since; one that did not
// (killed, above) leaves them marked in use, and the next start empties them
// and recovers from the changelog alone.
func TestCleanStopKeepsTheLocalStores(t *testing.T) {
	brokers := kafkatest.Cluster(t).ListenAddrs()
	o := testOptions(brokers, contract.Primary)
	o.Storage = statestore.Config{Backend: statestore.BackendLevelDB, Dir: t.TempDir()}
	_, stop := startPipeline(t, o)
	primaryWithBudgets(t, brokers, 5, 3)
	for _, stage := range contract.Stages() {
		if !o.Storage.InUse(o.Side.String(), stage.String()) {
			t.Errorf("%s: store not marked in use while the pipeline runs", stage)
		}
	}
	stop()
	for _, stage := range contract.Stages() {
		if o.Storage.InUse(o.Side.String(), stage.String()) {
			t.Errorf("%s: store still marked in use after a clean stop: the next start would recover from the changelog alone", stage)
		}
		if _, err := os.Stat(filepath.Join(o.Storage.Dir, o.Side.String(), stage.String())); err != nil {
			t.Errorf("%s: store gone after a clean stop: %v", stage, err)
		}
	}
}
