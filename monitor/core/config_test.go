package core

import (
	"errors"
	"strings"
	"testing"
	"time"
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
