package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/internal/zktest"
)

// TestDarkPipelineStaysInItsPrefix runs a dark pipeline on a cluster that
// also holds live topics with live input. It must process its own
// (prefixed) input exactly, write zero records to any topic without the
// prefix, use only prefixed consumer groups, register only under
// instances/dark/<name>, write nothing else to ZooKeeper, and report its
// health samples (role dark, with dead letters and resources) on its own
// health topic, where no monitor reads them.
func TestDarkPipelineStaysInItsPrefix(t *testing.T) {
	const prefix = "dark.canary."
	brokers := kafkatest.Cluster(t).ListenAddrs()
	ctx := context.Background()

	// Live topics with live input, as on a cluster shared with a live side:
	// every live topic exists, hotpair-health (the monitor's) included.
	var specs []kafka.TopicSpec
	for _, name := range contract.TopicsWithPrefix("").All() {
		specs = append(specs, kafka.TopicSpec{Name: name})
	}
	if err := kafka.EnsureTopics(ctx, kafka.Cluster{Brokers: brokers}, 4, 1, specs...); err != nil {
		t.Fatal(err)
	}
	live, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	lw := newWorkload(5, 50, 11)
	lw.writeBudgets(t, live)
	lw.writeEvents(t, live)
	live.Close(ctx) // writes what it buffered
	before := endOffsets(t, brokers)

	addr := zktest.Addr(t)
	root := fmt.Sprintf("/hotpair-test/dark-%d", time.Now().UnixNano())
	o := testOptions(brokers, contract.Primary)
	o.Role, o.DarkName, o.Instance = contract.RoleDark, "canary", "dark-0"
	o.Registry = &RegistryOptions{Servers: []string{addr}, Root: root, SessionTimeout: 4 * time.Second}
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	startPipeline(t, o)

	dark, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: brokers}, TopicPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer dark.Close(ctx)
	w := newWorkload(10, 600, 12)
	w.writeBudgets(t, dark)
	w.writeEvents(t, dark)
	dark.Write("ad-events", []byte("camp-001"), []byte(`{"v":1,`), nil, time.Now()) // a dead letter
	kafkatest.Follow(t, brokers, prefix+"budget-status").Until(t, 90*time.Second, func(recs []*kgo.Record) string {
		return spentIs(w.truth)(statusesOf(t, kafkatest.LatestOf(recs)))
	})

	checkDarkHealth(t, brokers, prefix+"hotpair-health")
	checkDarkRegistry(t, addr, root, o)

	after := endOffsets(t, brokers)
	if _, ok := after["hotpair-health"]; !ok {
		t.Fatal("the live health topic is gone")
	}
	for topic, n := range after {
		if !strings.HasPrefix(topic, prefix) && n != before[topic] {
			t.Errorf("the dark pipeline wrote %d records to live topic %s", n-before[topic], topic)
		}
	}
	if after[prefix+"spend"] == 0 || after[prefix+"hotpair-dlq"] != 1 {
		t.Errorf("dark topics: %d spend events, %d dead letters; want some and 1", after[prefix+"spend"], after[prefix+"hotpair-dlq"])
	}
	groups, err := kadm.NewClient(kafkatest.Client(t, brokers)).ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups() {
		if !strings.HasPrefix(g, prefix) {
			t.Errorf("consumer group %s lacks the dark prefix", g)
		}
	}
	if v, _ := metricvalue.Get(reg, "hotpair_pipeline_refused_records_total"); v != 0 {
		t.Errorf("%v records refused: the pipeline tried to write outside its prefix", v)
	}
}

// endOffsets returns the number of records of every topic of the cluster.
func endOffsets(t *testing.T, brokers []string) map[string]int64 {
	t.Helper()
	adm := kadm.NewClient(kafkatest.Client(t, brokers))
	topics, err := adm.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(context.Background(), topics.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Topic] += o.Offset })
	return out
}

// checkDarkHealth: every stage's samples are role dark and carry plausible
// resources; the aggregator's count the dead letter.
func checkDarkHealth(t *testing.T, brokers []string, topic string) {
	t.Helper()
	cpu := map[contract.Stage]float64{}
	var deadLetters int64
	for _, r := range kafkatest.UpToEnd(t, brokers, topic) {
		s, err := contract.DecodeHealthSample(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		res := s.Resources
		if s.Role != contract.RoleDark || res == nil || res.RSSBytes <= 0 || res.Goroutines <= 0 || res.CPUSeconds < 0 || res.GCPauseSeconds < 0 {
			t.Fatalf("sample %s: role %s, resources %+v", s.Key(), s.Role, res)
		}
		cpu[s.Service] += res.CPUSeconds
		if s.Service == contract.StageAggregator {
			deadLetters += s.DeadLetters
		}
	}
	for _, st := range contract.Stages() {
		if cpu[st] <= 0 {
			t.Errorf("%s: %v CPU seconds over its samples under load", st, cpu[st])
		}
	}
	if deadLetters != 1 {
		t.Errorf("the aggregator's samples count %d dead letters, want 1", deadLetters)
	}
}

// checkDarkRegistry: each stage registered under instances/dark/canary as
// role dark, and nothing else written under the root (no selection, no
// override, no live registration).
func checkDarkRegistry(t *testing.T, addr, root string, o Options) {
	t.Helper()
	conn := zktest.Conn(t, addr, nil)
	paths := contract.NewPaths(root)
	for _, st := range contract.Stages() {
		node := paths.DarkInstances("canary", st) + "/" + o.Instance
		var r contract.Registration
		if b := waitZnode(t, conn, node, 20*time.Second); json.Unmarshal(b, &r) != nil || r.Role != contract.RoleDark || r.Stage != st {
			t.Fatalf("%s holds %s", node, b)
		}
	}
	for dir, want := range map[string][]string{root: {"instances"}, root + "/instances": {"dark"}, root + "/instances/dark": {"canary"}} {
		kids, _, err := conn.Children(dir)
		slices.Sort(kids)
		if err != nil || !slices.Equal(kids, want) {
			t.Errorf("%s holds %v (%v), want only %v", dir, kids, err, want)
		}
	}
}
