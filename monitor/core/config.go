package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Config holds every threshold of the pure core. The monitor daemon's YAML
// embeds it inline, so its keys are top-level keys of that file (decoded,
// like every config, by internal/yamlconf through monitor.ParseConfig):
//
//	window: 2m
//	rules:
//	  sample_interval: 10s
//	  heartbeat_missed: 3
//	  partition_grace: 45s
//	  rate_ratio: 0.5
//	  rate_reference: 1
//	  catch_up_lag: 5s
//	  lag_limit: 60s
//	decision:
//	  preferred: primary
//	  failover_after: 1
//	  grace: 10m
//	stagger:
//	  period: 1h
type Config struct {
	// Window is the evaluation window: samples are merged over it and every
	// service is decided once at its end. Default 2m; 1s at least.
	Window   time.Duration  `yaml:"window"`
	Rules    Rules          `yaml:"rules"`
	Decision DecisionConfig `yaml:"decision"`
	Stagger  StaggerConfig  `yaml:"stagger"`
}

// Rules are the thresholds of the verdict rules (DESIGN §4).
type Rules struct {
	// SampleInterval is how often every stage instance reports. Default 10s.
	SampleInterval time.Duration `yaml:"sample_interval"`
	// HeartbeatMissed is how many sample intervals may pass without any
	// sample of a (service, side) before no_heartbeat fires; it is also how
	// long an instance that stopped reporting still counts as covering its
	// partitions. Default 3.
	HeartbeatMissed int `yaml:"heartbeat_missed"`
	// PartitionGrace is how long some input partitions may stay unassigned
	// before partitions_uncovered fires; it must outlast a normal goka
	// rebalance (5-16 s). Default 45s.
	PartitionGrace time.Duration `yaml:"partition_grace"`
	// RateRatio: input_rate_low fires when a side's QPS is below RateRatio ×
	// the other side's QPS. Default 0.5; in (0,1].
	RateRatio float64 `yaml:"rate_ratio"`
	// RateReference is the least QPS the other side must have for
	// input_rate_low to apply at all (events/s). Default 1.
	RateReference float64 `yaml:"rate_reference"`
	// LagLimit: lag_high fires when the merged p99 end-to-end event lag
	// exceeds it. Default 60s.
	LagLimit time.Duration `yaml:"lag_limit"`
	// CatchUpLag: while a side's merged p99 lag (or its aggregator's) is
	// above it, the side is catching up: draining a backlog (a recovery, a
	// flapping stall) or falling behind (overload). Such a side is no
	// reference for the other side's input_rate_low (without this a
	// recovering side would make the healthy one look slow and pull traffic
	// back at once, past the grace period); it is not healthy for the grace
	// clock, which starts once it keeps up; and it is no failover target for
	// a side that only lags too (both behind: stay, degraded). Default 5s;
	// 0 turns it off.
	CatchUpLag time.Duration `yaml:"catch_up_lag"`
}

// HeartbeatTimeout is HeartbeatMissed × SampleInterval.
func (r Rules) HeartbeatTimeout() time.Duration {
	return time.Duration(r.HeartbeatMissed) * r.SampleInterval
}

// DecisionConfig holds the thresholds of the decision state machine.
type DecisionConfig struct {
	// Preferred is the side to return to once it is healthy again. Default primary.
	Preferred string `yaml:"preferred"`
	// FailoverAfter is how many consecutive unhealthy windows of the active
	// side cause a switch to a healthy other side. Default 1.
	FailoverAfter int `yaml:"failover_after"`
	// Grace is how long the preferred side must be healthy without a break
	// before traffic returns to it. Default 10m.
	Grace time.Duration `yaml:"grace"`
}

// PreferredSide is Preferred as a side (unset until the config is valid).
func (d DecisionConfig) PreferredSide() contract.Side {
	s, _ := contract.ParseSide(d.Preferred)
	return s
}

// StaggerConfig configures the staggered-deploy check.
type StaggerConfig struct {
	// Period: a build first seen on a side less than Period ago is new; both
	// sides of a service running a new build is flagged. Default 1h; 0 turns
	// the check off.
	Period time.Duration `yaml:"period"`
}

// DefaultConfig returns the defaults of DESIGN §4.
func DefaultConfig() Config {
	return Config{
		Window: 2 * time.Minute,
		Rules: Rules{
			SampleInterval:  10 * time.Second,
			HeartbeatMissed: 3,
			PartitionGrace:  45 * time.Second,
			RateRatio:       0.5,
			RateReference:   1,
			LagLimit:        60 * time.Second,
			CatchUpLag:      5 * time.Second,
		},
		Decision: DecisionConfig{
			Preferred:     contract.Primary.String(),
			FailoverAfter: 1,
			Grace:         10 * time.Minute,
		},
		Stagger: StaggerConfig{Period: time.Hour},
	}
}

// Validate checks every key and returns one *ConfigError per bad key
// (joined), each naming the key and what would be accepted.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ConfigError{Key: key, Problem: fmt.Sprintf(format, args...)})
	}
	if c.Window < time.Second {
		bad("window", "must be at least 1s (e.g. 2m), got %s", c.Window)
	}
	r := c.Rules
	if r.SampleInterval < 100*time.Millisecond {
		bad("rules.sample_interval", "must be at least 100ms and match the pipelines' sample interval (e.g. 10s), got %s", r.SampleInterval)
	}
	if r.HeartbeatMissed < 1 {
		bad("rules.heartbeat_missed", "must be at least 1 (e.g. 3), got %d", r.HeartbeatMissed)
	}
	if r.PartitionGrace < 0 {
		bad("rules.partition_grace", "must not be negative (e.g. 45s), got %s", r.PartitionGrace)
	}
	if !(r.RateRatio > 0 && r.RateRatio <= 1) {
		bad("rules.rate_ratio", "must be in (0,1] (e.g. 0.5), got %g", r.RateRatio)
	}
	if !(r.RateReference > 0) {
		bad("rules.rate_reference", "must be above 0 events/s (e.g. 1), got %g", r.RateReference)
	}
	if r.CatchUpLag < 0 || (r.LagLimit > 0 && r.CatchUpLag > r.LagLimit) {
		bad("rules.catch_up_lag", "must be between 0 (off) and rules.lag_limit (e.g. 5s), got %s", r.CatchUpLag)
	}
	if r.LagLimit <= 0 {
		bad("rules.lag_limit", "must be above 0 (e.g. 60s), got %s", r.LagLimit)
	}
	d := c.Decision
	if !d.PreferredSide().Valid() {
		bad("decision.preferred", "must be %q or %q, got %q", contract.Primary, contract.Standby, d.Preferred)
	}
	if d.FailoverAfter < 1 {
		bad("decision.failover_after", "must be at least 1 window (e.g. 1), got %d", d.FailoverAfter)
	}
	if d.Grace < 0 {
		bad("decision.grace", "must not be negative (e.g. 10m), got %s", d.Grace)
	}
	if c.Stagger.Period < 0 {
		bad("stagger.period", "must not be negative (0 turns the check off, e.g. 1h), got %s", c.Stagger.Period)
	}
	return errors.Join(errs...)
}
