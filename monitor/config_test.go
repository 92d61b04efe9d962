package monitor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/yamlconftest"
	"github.com/hotpair/hotpair/monitor/core"
)

func TestExampleConfigIsTheDefaults(t *testing.T) {
	c, err := LoadConfig("testdata/monitor.yml")
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	if c.Window != d.Window || c.Decision != d.Decision || c.Rules != d.Rules || c.Stagger != d.Stagger ||
		c.History != d.History || c.Record != d.Record || c.HTTP != d.HTTP || c.ZK.Root != d.ZK.Root || c.ZK.SessionTimeout != d.ZK.SessionTimeout ||
		strings.Join(c.Services, ",") != strings.Join(d.Services, ",") {
		t.Fatalf("testdata/monitor.yml differs from the defaults it documents:\n got %+v\nwant %+v", c, d)
	}
	if len(c.ZK.Servers) != 3 || len(c.Clusters.Primary.Brokers) != 2 || c.ID != "monitor-1" {
		t.Fatalf("servers/brokers/id not read: %+v", c)
	}
}

func TestMinimalConfigGetsDefaults(t *testing.T) {
	c, err := ParseConfig([]byte("zk: {servers: [\"127.0.0.1:2181\"]}\nclusters: {primary: {brokers: [\"a:1\"]}, standby: {brokers: [\"b:1\"]}}\nwindow: 5s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Window != 5*time.Second || c.Decision.Grace != 10*time.Minute || len(c.Services) != 3 || c.HTTP.Listen != ":9470" {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

// Every key of the pure core is read from the monitor's file (the core's
// keys are top-level keys of it).
func TestEveryCoreKeyIsRead(t *testing.T) {
	c, err := LoadConfig("testdata/core-keys.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := core.Config{
		Window: 30 * time.Second,
		Rules: core.Rules{SampleInterval: 5 * time.Second, HeartbeatMissed: 4, PartitionGrace: 40 * time.Second,
			RateRatio: 0.25, RateReference: 2.5, LagLimit: 90 * time.Second, CatchUpLag: 10 * time.Second},
		Decision: core.DecisionConfig{Preferred: "standby", FailoverAfter: 2, Grace: 15 * time.Minute},
		Stagger:  core.StaggerConfig{Period: 2 * time.Hour},
	}
	if c.Config != want {
		t.Fatalf("got %+v\nwant %+v", c.Config, want)
	}
}

// Every rejected case has its file; the error names the key and the fix.
func TestBadConfigs(t *testing.T) {
	yamlconftest.CheckBadConfigs(t, "testdata/bad-*.yml", 20, func(path string) error {
		c, err := LoadConfig(path)
		if err == nil {
			_, err = c.kafkaClusters() // reads the files the Kafka blocks name, as New does
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("error does not wrap ErrConfig: %v", err)
		}
		return err
	})
}

func TestAuthFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "auth")
	if err := os.WriteFile(f, []byte("hotpair-monitor:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.ZK.AuthFile = f
	got, err := c.ZK.credentials()
	if err != nil || got == nil || got.User != "hotpair-monitor" || got.Password != "s3cret" {
		t.Fatalf("credentials() = %+v, %v", got, err)
	}
	if err := os.WriteFile(f, []byte("nocolon"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ZK.credentials(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "zk.auth_file") {
		t.Fatalf("bad auth file: %v", err)
	}
}

func TestDigestID(t *testing.T) {
	// ZooKeeper's documented example: super:test has the digest below.
	id := DigestID(contract.Credentials{User: "super", Password: "test"})
	if id != "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" {
		t.Fatalf("DigestID = %s", id)
	}
	if want := zk.DigestACL(zk.PermAll, "super", "test")[0].ID; id != want {
		t.Fatalf("DigestID = %s, go-zookeeper says %s", id, want)
	}
	if _, err := ParseDigestID(id); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "super", ":abc", "super:superpw"} {
		if _, err := ParseDigestID(bad); err == nil {
			t.Errorf("ParseDigestID(%q) accepted", bad)
		}
	}
}
