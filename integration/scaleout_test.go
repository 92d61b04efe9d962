package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/internal/zkserver"
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
	const (
		partitions     = 12
		sessionTimeout = 2 * time.Second
		sample         = 500 * time.Millisecond
	)
	brokers := kafkatest.Cluster(t, kfake.GroupMinSessionTimeout(500*time.Millisecond)).ListenAddrs()
	zkAddr := zkserver.ForTest(t)
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
	procs := map[string]*process{}
	for _, id := range instances {
		procs[id] = startPipeline(t, config, id)
	}

	cov := newCoverage(t, brokers, sample)
	eventually(t, 90*time.Second, "three instances registered per stage", func() bool {
		return registered(t, zkAddr, root) == 3
	})
	eventually(t, 90*time.Second, "every stage's partitions spread over the three instances", func() bool {
		return cov.spread(instances, partitions) == ""
	})
	t.Logf("spread: %s", cov.describe())
	if msg := cov.monitorCoverage(instances); msg != "" {
		t.Fatalf("the monitor's view: %s", msg)
	}

	in, err := pipeline.NewIngester(pipeline.IngestOptions{Clusters: map[string][]string{pipeline.SidePrimary: brokers}})
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
			procs[killed].kill()
			killedAt = time.Now()
			cov.forget(killed, partitions)
		}
		time.Sleep(250 * time.Millisecond)
	}
	survivors := []string{instances[0], instances[2]}
	eventually(t, 60*time.Second, "the killed instance's partitions taken over", func() bool {
		return cov.spread(survivors, partitions) == ""
	})
	takeover := cov.coveredAt().Sub(killedAt)
	t.Logf("takeover: every stage's %d partitions covered by the two survivors %s after the SIGKILL (session timeout %s, samples every %s); %s",
		partitions, takeover.Round(10*time.Millisecond), sessionTimeout, sample, cov.describe())
	if msg := cov.monitorCoverage(survivors); msg != "" {
		t.Fatalf("the monitor's view: %s", msg)
	}
	eventually(t, 90*time.Second, "every campaign's spend exact", func() bool {
		return spendMismatch(t, brokers, truth) == ""
	})
}

// process is a `hotpair pipeline` child process.
type process struct {
	cmd  *exec.Cmd
	out  testbin.Buffer
	done chan struct{}
}

func startPipeline(t *testing.T, config, instance string) *process {
	t.Helper()
	p := &process{done: make(chan struct{})}
	p.cmd = exec.Command(testbin.Hotpair(t), "pipeline", "--config", config, "--instance", instance)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", instance, tail(p.out.String()))
		}
	})
	return p
}

// kill sends SIGKILL: no clean leave of the groups, no offset commit.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// registered returns the fewest instances registered for any stage.
func registered(t *testing.T, addr, root string) int {
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fewest := -1
	for _, stage := range pipeline.Stages() {
		kids, _, _ := conn.Children(root + "/instances/" + pipeline.SidePrimary + "/" + stage)
		if fewest < 0 || len(kids) < fewest {
			fewest = len(kids)
		}
	}
	return fewest
}

// coverage reads the health samples of the cluster: each instance's latest
// assigned partitions per stage, and the monitor's aggregation of them.
type coverage struct {
	mu     sync.Mutex
	latest map[string]map[string]pipeline.HealthSample // stage -> instance -> newest sample
	at     map[string]map[string]time.Time             // when it arrived
	agg    *core.Aggregator
	gone   map[string]bool
	// after forget: the partitions to cover, and the arrival of the first
	// sample with which the remaining instances covered them in every stage
	total   int32
	covered time.Time
}

func newCoverage(t *testing.T, brokers []string, sample time.Duration) *coverage {
	cfg := core.DefaultConfig()
	cfg.Rules.SampleInterval = sample
	c := &coverage{latest: map[string]map[string]pipeline.HealthSample{}, at: map[string]map[string]time.Time{},
		agg: core.NewAggregator(cfg, time.Now()), gone: map[string]bool{}}
	cl := kafkatest.Client(t, brokers, kgo.ConsumeTopics(pipeline.TopicsWithPrefix("").Health),
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
				s, err := pipeline.DecodeHealthSample(r.Value)
				if err != nil {
					return
				}
				c.mu.Lock()
				c.agg.Add(&s, now)
				if c.gone[s.Instance] { // a sample it wrote before it was killed
					c.mu.Unlock()
					return
				}
				if c.latest[s.Service] == nil {
					c.latest[s.Service] = map[string]pipeline.HealthSample{}
					c.at[s.Service] = map[string]time.Time{}
				}
				c.latest[s.Service][s.Instance] = s
				c.at[s.Service][s.Instance] = now
				if c.total > 0 && c.covered.IsZero() && c.spreadLocked(c.remaining(), c.total) == "" {
					c.covered = now
				}
				c.mu.Unlock()
			})
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
	for _, stage := range pipeline.Stages() {
		var union []int32
		for _, in := range instances {
			s, ok := c.latest[stage][in]
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
	for _, stage := range pipeline.Stages() {
		out += stage + ":"
		ids := make([]string, 0, len(c.latest[stage]))
		for in := range c.latest[stage] {
			if !c.gone[in] {
				ids = append(ids, in)
			}
		}
		slices.Sort(ids)
		for _, in := range ids {
			out += fmt.Sprintf(" %s%v", in, c.latest[stage][in].Partitions)
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
		if k.Side != pipeline.SidePrimary {
			continue
		}
		if st.UnassignedCount != 0 || st.TopicPartitions != 12 || st.Instances != len(instances) {
			return fmt.Sprintf("%s: %d live instances, %d of %d partitions unassigned", k.Service, st.Instances, st.UnassignedCount, st.TopicPartitions)
		}
	}
	return ""
}

// spendMismatch returns "" when every campaign's lifetime spend in the
// budget statuses equals truth.
func spendMismatch(t *testing.T, brokers []string, truth map[string]int64) string {
	latest := kafkatest.Latest(t, brokers, pipeline.TopicsWithPrefix("").BudgetStatus)
	for c, want := range truth {
		st, err := pipeline.DecodeBudgetStatus(latest[c])
		if err != nil || st.SpentLifetimeMicros != want {
			return fmt.Sprintf("campaign %s: spent %d, want %d (%v)", c, st.SpentLifetimeMicros, want, err)
		}
	}
	return ""
}
