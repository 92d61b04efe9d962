package dispatch_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor"
)

// operator is the identity that may write dark targets in these tests.
var operator = &contract.Credentials{User: "oncall", Password: "dark-s3cret"}

// env is one test's world: the shared real ZooKeeper under a root of the
// test's own, the operator's session, and the live side's kfake cluster.
type env struct {
	t     *testing.T
	zk    string
	paths contract.Paths
	op    *zk.Conn
	live  []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := newZKEnv(t)
	e.live = kafkatest.Cluster(t).ListenAddrs()
	createTopics(t, e.live, "")
	return e
}

// newZKEnv is newEnv without the live cluster, for a test that starts its
// own and sets live.
func newZKEnv(t *testing.T) *env {
	t.Helper()
	addr := zktest.Addr(t)
	e := &env{t: t, zk: addr, paths: contract.NewPaths(fmt.Sprintf("/dispatch-test/%s-%08x", t.Name(), rand.Uint32()))}
	e.op = zktest.Conn(t, addr, operator)
	if err := zkutil.EnsurePath(e.op, path.Dir(e.paths.Root), zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	return e
}

// createTopics creates ad-events and budgets with prefix on a cluster.
func createTopics(t testing.TB, brokers []string, prefix string) {
	t.Helper()
	createTopicsOn(t, kafka.Cluster{Brokers: brokers}, prefix)
}

// createTopicsOn is createTopics on a cluster with its security settings.
func createTopicsOn(t testing.TB, c kafka.Cluster, prefix string) {
	t.Helper()
	tp := contract.TopicsWithPrefix(prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, c, 4, 1,
		kafka.TopicSpec{Name: tp.AdEvents}, kafka.TopicSpec{Name: tp.Budgets, Compacted: true}); err != nil {
		t.Fatal(err)
	}
}

// darkCluster starts a dark target's kfake cluster with its topics.
func darkCluster(t *testing.T, name string) []string {
	t.Helper()
	b := kafkatest.Cluster(t).ListenAddrs()
	createTopics(t, b, contract.DarkPrefix(name))
	return b
}

func doc(name string, s contract.DarkStrategy, multiplier float64, brokers []string) contract.DarkTarget {
	return contract.DarkTarget{V: 1, Name: name, Source: contract.Primary, Strategy: s, Multiplier: multiplier,
		Brokers: brokers, Prefix: contract.DarkPrefix(name), Enabled: true, UpdatedBy: operator.User, UpdatedAt: time.Now().UTC()}
}

// set writes a target document as the operator.
func (e *env) set(d contract.DarkTarget) {
	e.t.Helper()
	if err := dispatch.SetTarget(e.op, e.paths, monitor.OperatorPolicy(operator), d); err != nil {
		e.t.Fatal(err)
	}
}

// register adds n ephemeral aggregator registrations under dir, on a
// session of their own; the returned function removes them (the session ends).
func (e *env) register(dir string, n int) func() {
	e.t.Helper()
	sess, err := zkutil.Open(zkutil.Options{Servers: []string{e.zk}, SessionTimeout: 4 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sess.WaitUsable(ctx); err != nil {
		e.t.Fatal(err)
	}
	if err := zkutil.EnsurePath(sess.Conn(), dir, zkutil.OpenACL()); err != nil {
		e.t.Fatal(err)
	}
	for i := range n {
		if _, err := sess.Conn().Create(fmt.Sprintf("%s/inst-%d", dir, i), nil, zk.FlagEphemeral, zkutil.OpenACL()); err != nil {
			e.t.Fatal(err)
		}
	}
	e.t.Cleanup(sess.Close)
	return sess.Close
}

func (e *env) liveInstances() string {
	return e.paths.Instances(contract.Primary.String(), contract.StageAggregator)
}

func (e *env) darkInstances(name string) string {
	return e.paths.DarkInstances(name, contract.StageAggregator)
}

// start runs a dispatcher of the primary side until the test ends, and
// waits until its group has partitions.
func (e *env) start(edit func(*dispatch.Config)) (*dispatch.Dispatcher, *prometheus.Registry) {
	e.t.Helper()
	d, reg, _ := e.startStoppable(edit)
	return d, reg
}

// startStoppable is start, with a function that stops the dispatcher
// cleanly (its copies flushed, its group's offsets committed) and waits.
func (e *env) startStoppable(edit func(*dispatch.Config)) (*dispatch.Dispatcher, *prometheus.Registry, func()) {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	c := dispatch.Config{ZK: []string{e.zk}, ZKRoot: e.paths.Root, Side: contract.Primary,
		LiveBrokers: e.live, Start: dispatch.StartOldest,
		Group: "dispatch-test-" + strings.ReplaceAll(e.t.Name(), "/", "-"), DeliveryTimeout: 5 * time.Second}
	if edit != nil {
		edit(&c)
	}
	d, err := dispatch.New(c, dispatch.WithRegisterer(reg), dispatch.WithLogger(testLogger()))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					e.t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				e.t.Error("the dispatcher did not stop within 30s")
			}
		})
	}
	e.t.Cleanup(stop)
	select {
	case <-d.Assigned():
	case <-time.After(30 * time.Second):
		e.t.Fatal("the dispatcher's group got no partitions within 30s")
	}
	return d, reg, stop
}

func testLogger() *slog.Logger {
	if os.Getenv("HOTPAIR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// workload is campaigns with budget rows and events of known ids.
type workload struct {
	campaigns []string
	perCamp   int
	round     int
}

func newWorkload(n, perCamp int) *workload {
	w := &workload{perCamp: perCamp}
	for i := range n {
		w.campaigns = append(w.campaigns, fmt.Sprintf("camp-%03d", i))
	}
	return w
}

// budgets writes every campaign's budget row to the live side.
func (w *workload) budgets(t testing.TB, brokers []string) {
	t.Helper()
	w.budgetsTo(t, kafka.Cluster{Brokers: brokers})
}

// budgetsTo is budgets on a live cluster with its security settings.
func (w *workload) budgetsTo(t testing.TB, c kafka.Cluster) {
	t.Helper()
	var recs []*kgo.Record
	for _, c := range w.campaigns {
		b, _ := contract.Encode(contract.Budget{V: 1, Campaign: c, Advertiser: "adv", DailyMicros: 1 << 40, Timezone: "UTC"})
		recs = append(recs, &kgo.Record{Topic: "budgets", Key: []byte(c), Value: b})
	}
	produce(t, c, recs)
}

// events writes one round of perCamp events per campaign and returns their
// ids by campaign.
func (w *workload) events(t testing.TB, brokers []string) map[string][]string {
	t.Helper()
	return w.eventsTo(t, kafka.Cluster{Brokers: brokers})
}

// eventsTo is events on a live cluster with its security settings.
func (w *workload) eventsTo(t testing.TB, c kafka.Cluster) map[string][]string {
	t.Helper()
	w.round++
	ids := map[string][]string{}
	var recs []*kgo.Record
	now := time.Now().UTC()
	for _, c := range w.campaigns {
		for i := range w.perCamp {
			id := fmt.Sprintf("ev-%s-%d-%d", c, w.round, i)
			b, _ := contract.Encode(contract.AdEvent{V: 1, ID: id, Type: contract.EventImpression, Campaign: c,
				Advertiser: "adv", PriceMicros: 1000 + int64(i), TS: now})
			recs = append(recs, &kgo.Record{Topic: "ad-events", Key: []byte(c), Value: b})
			ids[c] = append(ids[c], id)
		}
	}
	produce(t, c, recs)
	return ids
}

func produce(t testing.TB, c kafka.Cluster, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafkatest.ClientOf(t, c).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// expectEvents is what a target at fraction f must receive, computed from
// the hash alone: campaign c's copy k goes when DarkHash(c) < f − k, copy k
// of an event carries campaign and id with suffix ~dark<k> for k ≥ 1.
func expectEvents(ids map[string][]string, f float64) []string {
	var out []string
	for c, evs := range ids {
		for k := 0; float64(k) < f; k++ {
			if contract.DarkHash(c) >= f-float64(k) {
				continue
			}
			for _, id := range evs {
				if k == 0 {
					out = append(out, c+" "+id)
				} else {
					out = append(out, fmt.Sprintf("%s~dark%d %s~dark%d", c, k, id, k))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// expectBudgets is the campaign ids whose budget row a target at f gets.
func expectBudgets(campaigns []string, f float64) []string {
	var out []string
	for _, c := range campaigns {
		for k := 0; float64(k) < f; k++ {
			if contract.DarkHash(c) < f-float64(k) {
				if k == 0 {
					out = append(out, c)
				} else {
					out = append(out, fmt.Sprintf("%s~dark%d", c, k))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// gotEvents is what a dark events topic holds, as "campaign id" lines.
func gotEvents(t testing.TB, recs []*kgo.Record) []string {
	var out []string
	for _, r := range recs {
		e, err := contract.DecodeAdEvent(r.Value)
		if err != nil {
			t.Errorf("a dark event does not decode: %v", err)
			continue
		}
		if string(r.Key) != e.Campaign {
			t.Errorf("dark event keyed %q carries campaign %q", r.Key, e.Campaign)
		}
		out = append(out, e.Campaign+" "+e.ID)
	}
	slices.Sort(out)
	return out
}

func gotBudgets(t testing.TB, recs []*kgo.Record) []string {
	var out []string
	for c, v := range kafkatest.LatestOf(recs) {
		b, err := contract.DecodeBudget(v)
		if err != nil || b.Campaign != c {
			t.Errorf("dark budget row %q: %v %+v", c, err, b)
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// waitFor waits on a follower of the dark topic until got(records) equals want.
func waitFor(t *testing.T, f *kafkatest.Follower, want []string, got func(testing.TB, []*kgo.Record) []string) {
	t.Helper()
	f.Until(t, 60*time.Second, func(recs []*kgo.Record) string {
		g := got(t, recs)
		if slices.Equal(g, want) {
			return ""
		}
		return fmt.Sprintf("%d records, want %d (%s)", len(g), len(want), firstDiff(g, want))
	})
}

func firstDiff(got, want []string) string {
	w := map[string]bool{}
	for _, x := range want {
		w[x] = true
	}
	for _, x := range got {
		if !w[x] {
			return "unexpected " + x
		}
	}
	g := map[string]bool{}
	for _, x := range got {
		g[x] = true
	}
	for _, x := range want {
		if !g[x] {
			return "missing " + x
		}
	}
	return "duplicates"
}

func metric(reg prometheus.Gatherer, name string, labels ...string) float64 {
	v, _ := metricvalue.Get(reg, name, labels...)
	return v
}
