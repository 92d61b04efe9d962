package compare

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hotpair/hotpair/internal/yamlconftest"
)

func TestExampleConfigIsTheDefaults(t *testing.T) {
	c, err := LoadConfig("testdata/dark-compare.yml")
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	if c.Rules != d.Rules || c.HTTP != d.HTTP || c.ZK.Root != d.ZK.Root || c.ZK.SessionTimeout != d.ZK.SessionTimeout || len(c.ZK.Servers) != 3 {
		t.Fatalf("testdata/dark-compare.yml differs from the defaults it documents:\n got %+v\nwant %+v", c, d)
	}
}

func TestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "good.yml")
	os.WriteFile(path, []byte(`zk: {servers: ["127.0.0.1:2181"]}
clusters:
  primary: {brokers: ["a:9092"]}
  standby: {brokers: ["b:9092"]}
dark_kafka: {sasl: {mechanism: SCRAM-SHA-512, username: dark, password_env: DARK_PW}}
targets:
  - {name: cand, source: standby, brokers: ["d:9092"]}
settle: 3s
resources: {cpu_increase: 0.5}
`), 0o644)
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultRules()
	if c.Settle != 3*time.Second || c.Resources.CPUIncrease != 0.5 || c.Interval != d.Interval || c.Resources.MemoryIncrease != d.Resources.MemoryIncrease ||
		c.HTTP.Listen != ":9472" || c.ZK.Root != "/hotpair" || c.Targets[0].Source != "standby" {
		t.Fatalf("config %+v", c)
	}
	// One file per rejected case; the first line says what the error names.
	yamlconftest.CheckBadConfigs(t, "testdata/bad-*.yml", 20, func(p string) error {
		_, err := LoadConfig(p)
		return err
	})
}
