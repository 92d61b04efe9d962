package dispatch_test

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/yamlconftest"
)

func TestGoodConfig(t *testing.T) {
	c, err := dispatch.LoadFileConfig("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Side != contract.Primary || cfg.Buffer != 10000 || cfg.DeliveryTimeout != 30*time.Second || cfg.Start != dispatch.StartNewest ||
		cfg.ZKRoot != "/hotpair" || len(cfg.LiveBrokers) != 1 || c.HTTP.Listen != "127.0.0.1:9490" ||
		cfg.GroupSessionTimeout != 8*time.Second || cfg.GroupInstanceID != "dispatch-0" {
		t.Fatalf("config: %+v", cfg)
	}
	if _, err := dispatch.New(cfg); err != nil {
		t.Fatal(err)
	}
}

// Every rejected config names its key and the fix.
func TestBadConfigs(t *testing.T) {
	yamlconftest.CheckBadConfigs(t, "testdata/bad-*.yml", 20, func(path string) error {
		c, err := dispatch.LoadFileConfig(path)
		if err != nil {
			return err
		}
		_, err = c.Config()
		return err
	})
}
