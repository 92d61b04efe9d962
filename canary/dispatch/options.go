package dispatch

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
)

// StartAt is where a new consumer group starts reading ad-events.
type StartAt uint8

const (
	// StartNewest copies live traffic from now on (the default).
	StartNewest StartAt = 1 + iota
	// StartOldest copies what the topic retains first (tests, backfills).
	StartOldest
)

// Config is what a Dispatcher reads and writes.
type Config struct {
	// ZK are the ZooKeeper servers, host:port. Required.
	ZK []string
	// ZKRoot is the root of hotpair's znodes (default /hotpair).
	ZKRoot string
	// ZKAuth is the digest identity the session adds (nil: anonymous; the
	// dispatcher only reads).
	ZKAuth *contract.Credentials
	// ZKSessionTimeout (default 10s).
	ZKSessionTimeout time.Duration

	// Side is the live side whose input is copied. Required. A target whose
	// document names the other side as its source is left to that side's
	// dispatcher.
	Side contract.Side
	// LiveBrokers are the side's Kafka bootstrap addresses. Required.
	LiveBrokers []string
	// LiveAuth is the side's cluster's TLS and SASL (nil: plaintext).
	LiveAuth *contract.KafkaAuth
	// Cluster is the side's cluster name in the instance registry (default:
	// the side's name, as pipelines register).
	Cluster string
	// TopicPrefix is the prefix of the live topics (default none).
	TopicPrefix string
	// Group is the dispatcher's consumer group on the live cluster (default
	// hotpair-dark-dispatch-<side>). Replicas in one group share the load.
	Group string
	// Start is where a new group starts (default StartNewest).
	Start StartAt
	// GroupSessionTimeout is how long the group waits for a replica that
	// went silent (a crashed process) before its partitions move to the
	// others (default 6s, Kafka's default minimum). Until then, its
	// partitions are not copied: keep it well under the comparator's
	// missing grace (docs/dark.md).
	GroupSessionTimeout time.Duration
	// GroupInstanceID makes the replica a static member of the group
	// (Kafka's group.instance.id, e.g. a StatefulSet pod's name): a
	// restart within the session timeout keeps its partitions without a
	// rebalance, and a clean stop does not leave the group. Default none.
	GroupInstanceID string
	// GapAfter: a live partition resumed (at a start, a rebalance) at a
	// record that waited at least this long had a gap in its copy; the
	// budget rows of its sampled campaigns are sent again with reason gap
	// (default 3s, half the default session timeout: a crashed replica's
	// partitions resume after at least the session timeout, a clean
	// handover's after a rebalance).
	GapAfter time.Duration

	// TargetAuth is the TLS and SASL of every dark target's brokers (nil:
	// plaintext).
	TargetAuth *contract.KafkaAuth
	// Buffer is how many copies each target holds while it is slow or down
	// before new ones are dropped (default 10000).
	Buffer int
	// DeliveryTimeout is how long a copy may wait for its target before it
	// counts as dropped (default 30s).
	DeliveryTimeout time.Duration
}

// DefaultGroupSessionTimeout is Config.GroupSessionTimeout's default:
// Kafka's default group.min.session.timeout.ms (a shorter one needs brokers
// configured for it).
const DefaultGroupSessionTimeout = 6 * time.Second

// DefaultGapAfter is Config.GapAfter's default.
const DefaultGapAfter = 3 * time.Second

func (c *Config) defaults() {
	if c.ZKSessionTimeout == 0 {
		c.ZKSessionTimeout = 10 * time.Second
	}
	if c.Cluster == "" {
		c.Cluster = c.Side.String()
	}
	if c.Group == "" {
		c.Group = "hotpair-dark-dispatch-" + c.Side.String()
	}
	if c.Start == 0 {
		c.Start = StartNewest
	}
	if c.GroupSessionTimeout == 0 {
		c.GroupSessionTimeout = DefaultGroupSessionTimeout
	}
	if c.GapAfter == 0 {
		c.GapAfter = DefaultGapAfter
	}
	if c.Buffer == 0 {
		c.Buffer = 10_000
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = 30 * time.Second
	}
}

func (c Config) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case len(c.ZK) == 0:
		return bad("Config.ZK is required")
	case !c.Side.Valid():
		return bad("Config.Side %q is not one of primary, standby", c.Side)
	case len(c.LiveBrokers) == 0:
		return bad("Config.LiveBrokers is required")
	case contract.IsDarkTopic(c.TopicPrefix + "x"):
		return bad("Config.TopicPrefix %q is a dark prefix: the dispatcher reads a live side", c.TopicPrefix)
	case c.Buffer < 0:
		return bad("Config.Buffer must not be negative")
	case c.GroupSessionTimeout < 0 || c.GroupSessionTimeout > 5*time.Minute:
		return bad("Config.GroupSessionTimeout must be between 0 (the default, %s) and 5m", DefaultGroupSessionTimeout)
	case c.GapAfter < 0:
		return bad("Config.GapAfter must not be negative (0: the default, %s)", DefaultGapAfter)
	case c.DeliveryTimeout < 0:
		return bad("Config.DeliveryTimeout must not be negative")
	}
	return nil
}

// Option configures a Dispatcher (New).
type Option func(*options)

type options struct {
	logger *slog.Logger
	reg    prometheus.Registerer
	retry  time.Duration
}

// WithLogger sets the logger. Default: discard.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithRegisterer sets the registerer of the dispatcher's metrics. Default:
// a private registry.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *options) {
		if r != nil {
			o.reg = r
		}
	}
}
