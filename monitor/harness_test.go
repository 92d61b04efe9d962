package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/devsec"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// Timings of the integration tests: short windows so that the package's
// tests stay within a couple of minutes with -race on two cores.
const (
	tWindow         = 2 * time.Second
	tSampleInterval = 250 * time.Millisecond
	tHeartbeat      = 4 * tSampleInterval
	tGrace          = 5 * time.Second
	tSession        = 2 * time.Second
	tPartitions     = 4
)

// cluster is one side's kfake cluster with the health topic.
type cluster struct {
	side    contract.Side
	brokers []string
	kc      *kfake.Cluster
	// sec is the cluster's TLS and SASL (a secured cluster only): the
	// config block naming its CA and password files, and what test clients
	// connect with.
	sec  contract.KafkaSecurity
	auth *contract.KafkaAuth
}

func startClusters(t testing.TB) (primary, standby cluster) {
	t.Helper()
	return startClustersWith(t, nil)
}

// startSecureClusters starts both clusters with TLS and SASL on (one CA and
// user), their CA and password in files the configs name.
func startSecureClusters(t testing.TB) (primary, standby cluster) {
	t.Helper()
	sec, err := devsec.New()
	if err != nil {
		t.Fatal(err)
	}
	return startClustersWith(t, sec)
}

func startClustersWith(t testing.TB, sec *devsec.Setup) (primary, standby cluster) {
	t.Helper()
	topic := contract.TopicsWithPrefix("").Health
	var cs [2]cluster
	for i, side := range contract.Sides() {
		if sec == nil {
			c := kafkatest.Cluster(t)
			cs[i] = cluster{side: side, brokers: c.ListenAddrs(), kc: c}
		} else {
			c := kafkatest.Cluster(t, sec.ClusterOpts()...)
			dir := t.TempDir()
			ca, pw := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "password")
			if err := errors.Join(sec.WriteCA(ca), sec.WritePassword(pw)); err != nil {
				t.Fatal(err)
			}
			cs[i] = cluster{side: side, brokers: c.ListenAddrs(), kc: c, sec: sec.Security(ca, pw), auth: sec.Auth()}
		}
		if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: cs[i].brokers, Auth: cs[i].auth}, 3, 1, kafka.TopicSpec{Name: topic}); err != nil {
			t.Fatal(err)
		}
	}
	return cs[0], cs[1]
}

// fleet plays every stage instance of one side: each reports a HealthSample
// every tSampleInterval to hotpair-health of its own cluster, keyed
// service/side/instance, as DESIGN §3 describes.
type fleet struct {
	side contract.Side
	cl   *kgo.Client

	mu      sync.Mutex
	stopped bool
	events  int64 // per instance and sample
	lagMs   int64
	build   string
	sent    int
}

func newFleet(t testing.TB, c cluster) *fleet {
	t.Helper()
	f := &fleet{side: c.side, cl: kafkatest.ClientOf(t, kafka.Cluster{Brokers: c.brokers, Auth: c.auth}), events: 50, lagMs: 40, build: "b1"}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { f.run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return f
}

func (f *fleet) set(fn func(f *fleet)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fleet) run(ctx context.Context) {
	tick := time.NewTicker(tSampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			f.mu.Lock()
			stopped, events, lag, build := f.stopped, f.events, f.lagMs, f.build
			f.mu.Unlock()
			if stopped {
				continue
			}
			for _, stage := range contract.Stages() {
				for inst := range 2 {
					s := sample(stage, f.side, fmt.Sprintf("i%d", inst), build, now, events, lag)
					s.Partitions = []int32{int32(2 * inst), int32(2*inst + 1)}
					// Asynchronous: a dead cluster must not block the
					// fleet (its records fail when the client closes).
					f.cl.Produce(ctx, record(s), func(_ *kgo.Record, err error) {
						if err == nil {
							f.mu.Lock()
							f.sent++
							f.mu.Unlock()
						}
					})
				}
			}
		}
	}
}

func sample(stage contract.Stage, side contract.Side, instance, build string, end time.Time, events, lagMs int64) contract.HealthSample {
	s := contract.HealthSample{V: 1, Service: stage, Side: side, Role: contract.RoleLive, Instance: instance,
		Build: build, Partitions: []int32{0, 1, 2, 3}, TopicPartitions: tPartitions,
		WindowStart: end.Add(-tSampleInterval).UTC(), WindowEnd: end.UTC(), Events: events, LagMsMax: lagMs}
	for range events {
		s.LagMs.Observe(lagMs)
	}
	return s
}

func record(s contract.HealthSample) *kgo.Record {
	b, err := contract.Encode(s)
	if err != nil {
		panic(err)
	}
	return &kgo.Record{Topic: contract.TopicsWithPrefix("").Health, Key: []byte(s.Key()), Value: b}
}

// testConfig is a monitor config for the test clusters and ZooKeeper.
func testConfig(id, zkAddr string, paths contract.Paths, p, s cluster) Config {
	c := DefaultConfig()
	c.ID = id
	c.ZK.Servers = []string{zkAddr}
	c.ZK.Root = paths.Root
	c.ZK.SessionTimeout = tSession
	c.Clusters.Primary.Brokers, c.Clusters.Primary.Kafka = p.brokers, p.sec
	c.Clusters.Standby.Brokers, c.Clusters.Standby.Kafka = s.brokers, s.sec
	c.HTTP.Listen = "off"
	c.Window = tWindow
	c.Rules.SampleInterval = tSampleInterval
	c.Rules.HeartbeatMissed = int(tHeartbeat / tSampleInterval)
	c.Rules.PartitionGrace = 2 * time.Second
	c.Rules.LagLimit = 5 * time.Second
	c.Decision.Grace = tGrace
	c.Record.Replication = 1 // single-broker clusters
	return c
}

// replica is a running Monitor of a test.
type replica struct {
	*Monitor
	reg  *prometheus.Registry
	done chan error
	stop context.CancelFunc
}

func startReplica(t testing.TB, cfg Config) *replica {
	t.Helper()
	return startReplicaLogged(t, cfg, testLogger(t))
}

// startReplicaLogged is startReplica with the replica's logs going to log.
func startReplicaLogged(t testing.TB, cfg Config, log *slog.Logger) *replica {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(Options{Config: cfg, Logger: log, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{Monitor: m, reg: reg, done: make(chan error, 1), stop: cancel}
	go func() { r.done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil && !errors.Is(err, ErrKilled) {
				t.Errorf("replica %s: Run: %v", cfg.ID, err)
			}
			r.done <- err
		case <-time.After(15 * time.Second):
			t.Errorf("replica %s did not stop", cfg.ID)
		}
	})
	return r
}

// metric returns the value of the series of name whose labels include
// labels (0 when there is none), from the replica's own registry.
func (r *replica) metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	return gathered(t, r.reg, name, labels...)
}

func gathered(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, _ := metricvalue.Get(g, name, labels...)
	return v
}

// selectionWatcher records every version of one service's selection, from
// a session of its own, as a reader on the read side would see it.
type selectionWatcher struct {
	changes changes.Feed // every selection seen
	mu      sync.Mutex
	seen    []contract.Selection
}

func watchSelection(t testing.TB, conn *zk.Conn, paths contract.Paths, service contract.Service) *selectionWatcher {
	t.Helper()
	w := &selectionWatcher{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		p := paths.Selection(service)
		for ctx.Err() == nil {
			b, _, ch, err := conn.GetW(p)
			if errors.Is(err, zk.ErrNoNode) {
				_, _, ch, err = conn.ExistsW(p)
			}
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			if len(b) > 0 {
				if sel, err := contract.DecodeSelection(b); err == nil {
					w.mu.Lock()
					w.seen = append(w.seen, sel)
					w.mu.Unlock()
					w.changes.Notify()
				}
			}
			select {
			case <-ctx.Done():
			case <-ch:
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

func (w *selectionWatcher) all() []contract.Selection {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]contract.Selection(nil), w.seen...)
}

func (w *selectionWatcher) last() *contract.Selection {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) == 0 {
		return nil
	}
	s := w.seen[len(w.seen)-1]
	return &s
}

// waitActive waits until the published selection names side and returns it.
func (w *selectionWatcher) waitActive(t testing.TB, side contract.Side, timeout time.Duration) contract.Selection {
	t.Helper()
	var got *contract.Selection
	waitFor(t, &w.changes, timeout, "the selection to name "+side.String(), func() bool {
		got = w.last()
		return got != nil && got.Active == side
	})
	return *got
}

// checkNeverReversed fails when the epochs a reader saw ever went down, or
// the active side changed without the epoch growing.
func checkNeverReversed(t testing.TB, seen []contract.Selection) {
	t.Helper()
	for i := 1; i < len(seen); i++ {
		a, b := seen[i-1], seen[i]
		if b.Epoch < a.Epoch || (b.Active != a.Active && b.Epoch == a.Epoch) {
			var h []string
			for _, s := range seen {
				h = append(h, fmt.Sprintf("%s@%d", s.Active, s.Epoch))
			}
			t.Fatalf("selection went back: %s", strings.Join(h, " "))
		}
	}
}
