package pipeline

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/yamlconftest"
)

func TestLoadConfigEveryKey(t *testing.T) {
	c, err := LoadConfig("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case o.Side != contract.Standby || o.Instance != "b-1" || len(o.Brokers) != 2 || o.TopicPrefix != "prod.":
		t.Fatalf("identity: %+v", o)
	case o.Partitions != 16 || o.Replication != 3 || o.CreateTopics:
		t.Fatalf("topics: %+v", o)
	case !slices.Equal(o.Stages, []contract.Stage{contract.StageBudget, contract.StagePacer}) || o.Storage.Dir != "/var/lib/hotpair":
		t.Fatalf("stages/storage: %+v", o)
	case o.SessionTimeout != 10*time.Second || o.HotStandby:
		t.Fatalf("group: %+v", o)
	case o.Window != 20*time.Second || o.Lateness != 10*time.Second || o.MaxFuture != 30*time.Minute || o.IdleClose != 30*time.Second:
		t.Fatalf("aggregator: %+v", o)
	case o.Pacer.MinRate != 0.02 || o.Bidder.MaxMultiplier != 1.5 || o.SampleInterval != 5*time.Second:
		t.Fatalf("controllers: %+v", o)
	case o.Registry == nil || len(o.Registry.Servers) != 2 || o.Registry.Cluster != "kafka-b" || o.Registry.Auth == nil || o.Registry.Auth.User != "pipeline":
		t.Fatalf("registry: %+v", o.Registry)
	}
	if _, err := New(o); err != nil {
		t.Fatalf("a valid config's options: %v", err)
	}
}

// Every testdata/bad-*.yml is rejected with an error naming the key.
func TestConfigRejects(t *testing.T) {
	yamlconftest.CheckBadConfigs(t, "testdata/bad-*.yml", 10, func(path string) error {
		c, err := LoadConfig(path)
		if err == nil {
			err = c.Validate()
		}
		if err == nil {
			_, err = c.Options() // reads the files the Kafka block names
		}
		return err
	})
}

// The example configs in deploy/examples stay valid.
func TestDeployExamples(t *testing.T) {
	files, _ := filepath.Glob("../deploy/examples/pipeline-*.yml")
	if len(files) != 2 {
		t.Fatalf("want the primary and standby examples, found %v", files)
	}
	sides := map[string]bool{}
	for _, f := range files {
		c, err := LoadConfig(f)
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sides[c.Side] = true
	}
	if !sides["primary"] || !sides["standby"] {
		t.Fatalf("the examples cover sides %v", sides)
	}
}

// A dark config's topics and groups start with the dark prefix, before the
// configured prefix (kept when it already starts with it).
func TestDarkConfigPrefixesEveryName(t *testing.T) {
	c, err := LoadConfig("testdata/good-dark.yml")
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	names := p.topics.All()
	for _, st := range p.stages {
		names = append(names, string(st.group), st.tableTopic(), st.loopTopic())
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "dark.canary.team-a.") {
			t.Errorf("%s lacks the prefix dark.canary.team-a.", n)
		}
	}
	if p.guard.Prefix() != "dark.canary." {
		t.Errorf("the producers' guard allows %q, want dark.canary.", p.guard.Prefix())
	}
	for prefix, want := range map[string]string{"": "dark.canary.", "dark.canary.x.": "dark.canary.x.", "x.": "dark.canary.x."} {
		if got, err := darkTopicPrefix("canary", prefix); got != want || err != nil {
			t.Errorf("prefix %q: got %q (%v), want %q", prefix, got, err, want)
		}
	}
}
