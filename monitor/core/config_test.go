package core

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/internal/yamlconf"
)

func TestDefaultConfigIsValid(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// DESIGN §4 defaults.
	if c.Window != 2*time.Minute || c.Rules.HeartbeatTimeout() != 30*time.Second || c.Rules.RateRatio != 0.5 ||
		c.Rules.RateReference != 1 || c.Rules.LagLimit != time.Minute || c.Decision.Grace != 10*time.Minute ||
		c.Decision.FailoverAfter != 1 || c.Decision.Preferred != "primary" {
		t.Fatalf("defaults drifted from DESIGN §4: %+v", c)
	}
}

func TestParseConfigEveryKey(t *testing.T) {
	b, err := os.ReadFile("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Window: 30 * time.Second,
		Rules: Rules{SampleInterval: 5 * time.Second, HeartbeatMissed: 4, PartitionGrace: 40 * time.Second,
			RateRatio: 0.25, RateReference: 2.5, LagLimit: 90 * time.Second, CatchUpLag: 10 * time.Second},
		Decision: DecisionConfig{Preferred: "standby", FailoverAfter: 2, Grace: 15 * time.Minute},
		Stagger:  StaggerConfig{Period: 2 * time.Hour},
	}
	if c != want {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
}

func TestParseConfigEmptyMeansDefaults(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil || c != DefaultConfig() {
		t.Fatalf("got %+v, %v", c, err)
	}
}

// Every testdata/bad-*.yml is rejected with an error that names the key and
// the accepted values; its first line says "# want: <substring>".
func TestParseConfigRejects(t *testing.T) {
	yamlconf.CheckBadConfigs(t, "testdata/bad-*.yml", 10, func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseConfig(b)
		if err != nil && (!errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "monitor: ")) {
			t.Errorf("error %q must wrap ErrInvalidConfig and start with monitor:", err)
		}
		return err
	})
}

func TestValidateReportsEveryBadKey(t *testing.T) {
	c := DefaultConfig()
	c.Rules.RateRatio = 0
	c.Decision.FailoverAfter = 0
	err := c.Validate()
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *ConfigError
		if errors.As(e, &ce) {
			keys = append(keys, ce.Key)
		}
	}
	if strings.Join(keys, ",") != "rules.rate_ratio,decision.failover_after" {
		t.Fatalf("keys %v from %v", keys, err)
	}
}
