package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/changestest"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/pipeline"
)

// TestScaleOutAcrossProcesses runs one side as three `hotpair pipeline`
// processes (one config, three instance ids) on one cluster with 12
// partitions: every stage's partitions are spread over the three, the
// registry in ZooKeeper shows three instances per stage, and the monitor's
// partition coverage is full. Then one process is killed with SIGKILL in
// the middle of the stream: its partitions move to the two others (hot
// standby, 2 s session timeout), coverage is full again, and every
// campaign's spend ends exact. The test reports how long the takeover took.
func TestScaleOutAcrossProcesses(t *testing.T) {
	t.Parallel() // see TestFaultMatrix
	const (
		partitions     = 12
		sessionTimeout = 2 * time.Second
		sample         = 500 * time.Millisecond
	)
	brokers := kafkatest.Cluster(t, kfake.GroupMinSessionTimeout(500*time.Millisecond)).ListenAddrs()
	zkAddr := zktest.Addr(t)
	root := fmt.Sprintf("/hotpair-test/scaleout-%d", time.Now().UnixNano())
	config := filepath.Join(t.TempDir(), "pipeline.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `side: primary
brokers: [%s]
topics: {partitions: %d, replication: 1}
storage: {backend: memory}
group: {session_timeout: %s, hot_standby: true}
aggregator: {window: 1s, lateness: 1s, idle_close: 2s}
health: {sample_interval: %s}
http: {listen: "127.0.0.1:0"}
zk: {servers: ["%s"], root: %s}
`, brokers[0], partitions, sessionTimeout, sample, zkAddr, root), 0o644); err != nil {
		t.Fatal(err)
	}
	instances := []string{"scale-1", "scale-2", "scale-3"}
	procs := map[string]*testbin.Process{}
	for _, id := range instances {
		procs[id] = testbin.Start(t, "pipeline", "--config", config, "--instance", id)
	}

	cov := newCoverage(t, brokers, sample)
	statuses := kafkatest.Follow(t, brokers, contract.TopicsWithPrefix("").BudgetStatus)
	waitRegistered(t, zktest.Conn(t, zkAddr, nil), root, len(instances))
	changestest.WaitFor(t, &cov.changes, 90*time.Second, "every stage's partitions spread over the three instances", func() bool {
		return cov.spread(instances, partitions) == ""
	})
	t.Logf("spread: %s", cov.describe())
	if msg := cov.monitorCoverage(instances); msg != "" {
		t.Fatalf("the monitor's view: %s", msg)
	}

	in, err := pipeline.NewIngester(pipeline.IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	truth := map[string]int64{}
	const campaigns = 48
	for c := range campaigns {
		k := fmt.Sprintf("camp-%02d", c)
		in.Write("budgets", []byte(k), fmt.Appendf(nil, `{"v":1,"campaign":%q,"advertiser":"adv","daily_micros":0,"lifetime_micros":0,"timezone":"UTC"}`, k), nil, time.Now())
	}
	killed := instances[1]
	var killedAt time.Time
	for batch := range 24 {
		for i := range 200 {
			k := fmt.Sprintf("camp-%02d", (batch*200+i)%campaigns)
			price := int64(1000 + i)
			truth[k] += price
			in.Write("ad-events", []byte(k), fmt.Appendf(nil, `{"v":1,"id":"b%d-%d","type":"impression","campaign":%q,"advertiser":"adv","price_micros":%d,"ts":%q}`,
				batch, i, k, price, time.Now().UTC().Format(time.RFC3339Nano)), nil, time.Now())
		}
		if batch == 8 {
			procs[killed].Kill()
			killedAt = time.Now()
			cov.forget(killed, partitions)
		}
		time.Sleep(250 * time.Millisecond)
	}
	survivors := []string{instances[0], instances[2]}
	changestest.WaitFor(t, &cov.changes, 60*time.Second, "the killed instance's partitions taken over", func() bool {
		return cov.spread(survivors, partitions) == ""
	})
	takeover := cov.coveredAt().Sub(killedAt)
	t.Logf("takeover: every stage's %d partitions covered by the two survivors %s after the SIGKILL (session timeout %s, samples every %s); %s",
		partitions, takeover.Round(10*time.Millisecond), sessionTimeout, sample, cov.describe())
	if msg := cov.monitorCoverage(survivors); msg != "" {
		t.Fatalf("the monitor's view: %s", msg)
	}
	statuses.Until(t, 90*time.Second, func(records []*kgo.Record) string {
		return spendMismatch(kafkatest.LatestOf(records), truth)
	})
}

// waitRegistered waits, on ZooKeeper watches, until every stage has n
// instances registered.
func waitRegistered(t *testing.T, conn *zk.Conn, root string, n int) {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for _, stage := range contract.Stages() {
		node := root + "/instances/" + contract.Primary.String() + "/" + stage.String()
		for {
			kids, _, ev, err := conn.ChildrenW(node)
			if errors.Is(err, zk.ErrNoNode) {
				var exists bool
				if exists, _, ev, err = conn.ExistsW(node); err == nil && exists {
					continue // created meanwhile: watch its children
				}
			}
			if err != nil {
				t.Fatalf("watching %s: %v", node, err)
			}
			if len(kids) == n {
				break
			}
			select {
			case <-ev:
			case <-deadline:
				t.Fatalf("%s: %d instances registered, want %d", node, len(kids), n)
			}
		}
	}
}

// coverage reads the health samples of the cluster: each instance's latest
// assigned partitions per stage, and the monitor's aggregation of them.
type coverage struct {
	changes changes.Feed // every batch of samples read
	mu      sync.Mutex
	latest  map[string]map[string]contract.HealthSample // stage -> instance -> newest sample
	at      map[string]map[string]time.Time             // when it arrived
	agg     *core.Aggregator
	gone    map[string]bool
	// after forget: the partitions to cover, and the arrival of the first
	// sample with which the remaining instances covered them in every stage
	total   int32
	covered time.Time
}

func newCoverage(t *testing.T, brokers []string, sample time.Duration) *coverage {
	cfg := core.DefaultConfig()
	cfg.Rules.SampleInterval = sample
	c := &coverage{latest: map[string]map[string]contract.HealthSample{}, at: map[string]map[string]time.Time{},
		agg: core.NewAggregator(cfg, time.Now()), gone: map[string]bool{}}
	cl := kafkatest.Client(t, brokers, kgo.ConsumeTopics(contract.TopicsWithPrefix("").Health),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				s, err := contract.DecodeHealthSample(r.Value)
				if err != nil {
					return
				}
				c.mu.Lock()
				c.agg.Add(&s, now)
				if c.gone[s.Instance] { // a sample it wrote before it was killed
					c.mu.Unlock()
					return
				}
				if c.latest[s.Service.String()] == nil {
					c.latest[s.Service.String()] = map[string]contract.HealthSample{}
					c.at[s.Service.String()] = map[string]time.Time{}
				}
				c.latest[s.Service.String()][s.Instance] = s
				c.at[s.Service.String()][s.Instance] = now
				if c.total > 0 && c.covered.IsZero() && c.spreadLocked(c.remaining(), c.total) == "" {
					c.covered = now
				}
				c.mu.Unlock()
			})
			c.changes.Notify()
		}
	}()
	return c
}

// forget stops counting an instance (it was killed) and starts watching for
// the others to cover all partitions.
func (c *coverage) forget(instance string, partitions int32) {
	c.mu.Lock()
	c.gone[instance] = true
	c.total = partitions
	for _, byInstance := range c.latest {
		delete(byInstance, instance)
	}
	c.mu.Unlock()
}

// remaining lists the instances that reported and were not forgotten.
func (c *coverage) remaining() []string {
	seen := map[string]bool{}
	for _, byInstance := range c.latest {
		for in := range byInstance {
			seen[in] = true
		}
	}
	var out []string
	for in := range seen {
		out = append(out, in)
	}
	return out
}

// spread returns "" when, for every stage, each of instances has at least
// one partition and together they have all of them, else what is missing.
func (c *coverage) spread(instances []string, partitions int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spreadLocked(instances, partitions)
}

func (c *coverage) spreadLocked(instances []string, partitions int32) string {
	for _, stage := range contract.Stages() {
		var union []int32
		for _, in := range instances {
			s, ok := c.latest[stage.String()][in]
			if !ok || len(s.Partitions) == 0 {
				return fmt.Sprintf("%s %s has no partitions", stage, in)
			}
			union = append(union, s.Partitions...)
		}
		slices.Sort(union)
		if union = slices.Compact(union); len(union) != int(partitions) {
			return fmt.Sprintf("%s: %d of %d partitions assigned", stage, len(union), partitions)
		}
	}
	return ""
}

// coveredAt is when the remaining instances first covered every partition
// of every stage after forget.
func (c *coverage) coveredAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.covered
}

func (c *coverage) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := ""
	for _, stage := range contract.Stages() {
		out += stage.String() + ":"
		ids := make([]string, 0, len(c.latest[stage.String()]))
		for in := range c.latest[stage.String()] {
			if !c.gone[in] {
				ids = append(ids, in)
			}
		}
		slices.Sort(ids)
		for _, in := range ids {
			out += fmt.Sprintf(" %s%v", in, c.latest[stage.String()][in].Partitions)
		}
		out += "; "
	}
	return out
}

// monitorCoverage closes a window of the monitor's aggregation and checks
// that every stage is covered by exactly the given instances (a killed
// instance counts no more once its heartbeat expired).
func (c *coverage) monitorCoverage(instances []string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, st := range c.agg.Close(time.Now()) {
		if k.Side != contract.Primary {
			continue
		}
		if st.UnassignedCount != 0 || st.TopicPartitions != 12 || st.Instances != len(instances) {
			return fmt.Sprintf("%s: %d live instances, %d of %d partitions unassigned", k.Service, st.Instances, st.UnassignedCount, st.TopicPartitions)
		}
	}
	return ""
}

// spendMismatch returns "" when every campaign's lifetime spend in the
// latest budget statuses equals truth.
func spendMismatch(latest map[string][]byte, truth map[string]int64) string {
	for c, want := range truth {
		st, err := contract.DecodeBudgetStatus(latest[c])
		if err != nil || st.SpentLifetimeMicros != want {
			return fmt.Sprintf("campaign %s: spent %d, want %d (%v)", c, st.SpentLifetimeMicros, want, err)
		}
	}
	return ""
}
