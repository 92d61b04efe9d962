package dispatch

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/yamlconf"
)

// FileConfig is the YAML config of `hotpair dark dispatch --config FILE`
// (docs/dark.md, "Dispatcher"). Unknown keys are errors.
type FileConfig struct {
	// Side is the live side whose input is copied: primary or standby.
	Side string     `yaml:"side"`
	ZK   ZKConfig   `yaml:"zk"`
	Live LiveConfig `yaml:"live"`
	// Group is the consumer group on the live cluster (default
	// hotpair-dark-dispatch-<side>).
	Group string `yaml:"group"`
	// GroupSessionTimeout: a crashed replica's partitions move to the
	// others after about this long (default 6s).
	GroupSessionTimeout time.Duration `yaml:"group_session_timeout"`
	// GroupInstanceID makes the replica a static group member (default none).
	GroupInstanceID string `yaml:"group_instance_id"`
	// GapAfter: a live partition resumed at a record that waited this long
	// had a gap in its copy (default 3s).
	GapAfter time.Duration `yaml:"gap_after"`
	// Start is where a new group starts: newest (default) or oldest.
	Start   string        `yaml:"start"`
	Targets TargetsConfig `yaml:"targets"`
	HTTP    HTTPConfig    `yaml:"http"`
}

// ZKConfig is the ZooKeeper ensemble the target documents and the instance
// registry are read from.
type ZKConfig struct {
	Servers        []string      `yaml:"servers"`
	Root           string        `yaml:"root"`
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// Auth ("user:password") or AuthFile: an identity for reading, only
	// where the documents are not world-readable.
	Auth     string `yaml:"auth"`
	AuthFile string `yaml:"auth_file"`
}

// LiveConfig is the live side's Kafka cluster.
type LiveConfig struct {
	Brokers []string `yaml:"brokers"`
	// Kafka is the cluster's TLS and SASL: keys tls and sasl beside brokers.
	Kafka contract.KafkaSecurity `yaml:",inline"`
	// TopicPrefix of the live topics (default none).
	TopicPrefix string `yaml:"topic_prefix"`
	// Cluster is the side's name in the instance registry (default: side).
	Cluster string `yaml:"cluster"`
}

// TargetsConfig applies to every dark target.
type TargetsConfig struct {
	// Kafka is the TLS and SASL of the targets' brokers (keys tls, sasl).
	Kafka contract.KafkaSecurity `yaml:",inline"`
	// Buffer: copies held per target while it is slow (default 10000).
	Buffer int `yaml:"buffer"`
	// DeliveryTimeout: a copy not acknowledged by then is dropped (default 30s).
	DeliveryTimeout time.Duration `yaml:"delivery_timeout"`
}

// HTTPConfig is where /metrics and /healthz are served.
type HTTPConfig struct {
	// Listen is host:port (default ":9490"); "off" serves nothing.
	Listen string `yaml:"listen"`
}

// LoadFileConfig reads and validates a config file.
func LoadFileConfig(path string) (FileConfig, error) {
	var c FileConfig
	if err := yamlconf.Load(path, &c); err != nil {
		return FileConfig{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	c.defaults()
	if err := c.Validate(); err != nil {
		return FileConfig{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

func (c *FileConfig) defaults() {
	if c.ZK.Root == "" {
		c.ZK.Root = contract.DefaultRoot
	}
	if c.ZK.SessionTimeout == 0 {
		c.ZK.SessionTimeout = 10 * time.Second
	}
	if c.Start == "" {
		c.Start = "newest"
	}
	if c.GroupSessionTimeout == 0 {
		c.GroupSessionTimeout = DefaultGroupSessionTimeout
	}
	if c.GapAfter == 0 {
		c.GapAfter = DefaultGapAfter
	}
	if c.Targets.Buffer == 0 {
		c.Targets.Buffer = 10_000
	}
	if c.Targets.DeliveryTimeout == 0 {
		c.Targets.DeliveryTimeout = 30 * time.Second
	}
	if c.HTTP.Listen == "" {
		c.HTTP.Listen = ":9490"
	}
}

// Validate returns every problem, each naming its key and the fix.
func (c FileConfig) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s %s", ErrInvalidConfig, key, fmt.Sprintf(format, a...)))
	}
	if _, err := contract.ParseSide(c.Side); err != nil {
		bad("side", "is %q: want primary or standby (the live side whose input is copied)", c.Side)
	}
	if len(c.ZK.Servers) == 0 {
		bad("zk.servers", "is required: the ZooKeeper ensemble, host:port each")
	}
	checkHostPorts(bad, "zk.servers", c.ZK.Servers)
	if !strings.HasPrefix(c.ZK.Root, "/") {
		bad("zk.root", "%q must be an absolute znode path such as /hotpair", c.ZK.Root)
	}
	if c.ZK.SessionTimeout < time.Second || c.ZK.SessionTimeout > time.Minute {
		bad("zk.session_timeout", "must be between 1s and 1m (e.g. 10s), got %s", c.ZK.SessionTimeout)
	}
	if c.ZK.Auth != "" && c.ZK.AuthFile != "" {
		bad("zk.auth_file", "and zk.auth are both set: keep one")
	}
	if _, err := contract.ParseCredentials(c.ZK.Auth); c.ZK.Auth != "" && err != nil {
		bad("zk.auth", "must be user:password")
	}
	if len(c.Live.Brokers) == 0 {
		bad("live.brokers", "is required: the live side's Kafka bootstrap addresses")
	}
	checkHostPorts(bad, "live.brokers", c.Live.Brokers)
	if err := c.Live.Kafka.Validate("live."); err != nil {
		errs = append(errs, fmt.Errorf("%w: %v", ErrInvalidConfig, err))
	}
	if contract.IsDarkTopic(c.Live.TopicPrefix + "x") {
		bad("live.topic_prefix", "%q is a dark prefix: the dispatcher reads a live side", c.Live.TopicPrefix)
	}
	if c.GroupSessionTimeout < 100*time.Millisecond || c.GroupSessionTimeout > 5*time.Minute {
		bad("group_session_timeout", "must be between 100ms and 5m (e.g. 6s; brokers refuse less than their group.min.session.timeout.ms), got %s", c.GroupSessionTimeout)
	}
	if c.GapAfter < 100*time.Millisecond || c.GapAfter > 5*time.Minute {
		bad("gap_after", "must be between 100ms and 5m (e.g. 3s, under the dark pipeline's aggregator lateness), got %s", c.GapAfter)
	}
	if strings.ContainsAny(c.GroupInstanceID, " \t\n") {
		bad("group_instance_id", "%q must not contain spaces (e.g. the pod's name)", c.GroupInstanceID)
	}
	if c.Start != "newest" && c.Start != "oldest" {
		bad("start", "is %q: want newest (copy from now on) or oldest (what the topic retains first)", c.Start)
	}
	if err := c.Targets.Kafka.Validate("targets."); err != nil {
		errs = append(errs, fmt.Errorf("%w: %v", ErrInvalidConfig, err))
	}
	if c.Targets.Buffer < 1 {
		bad("targets.buffer", "must be at least 1 (copies held per target), got %d", c.Targets.Buffer)
	}
	if c.Targets.DeliveryTimeout < time.Second {
		bad("targets.delivery_timeout", "must be at least 1s, got %s", c.Targets.DeliveryTimeout)
	}
	if c.HTTP.Listen != "off" {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			bad("http.listen", "%q is not host:port (e.g. :9490) or off", c.HTTP.Listen)
		}
	}
	return errors.Join(errs...)
}

func checkHostPorts(bad func(key, format string, a ...any), key string, addrs []string) {
	for _, s := range addrs {
		if _, _, err := net.SplitHostPort(s); err != nil {
			bad(key, "has %q, which is not host:port", s)
		}
	}
}

// Config loads what the file names (credentials, the security blocks'
// files) and returns the Dispatcher's Config.
func (c FileConfig) Config() (Config, error) {
	side, err := contract.ParseSide(c.Side)
	if err != nil {
		return Config{}, fmt.Errorf("%w: side: %v", ErrInvalidConfig, err)
	}
	out := Config{ZK: c.ZK.Servers, ZKRoot: c.ZK.Root, ZKSessionTimeout: c.ZK.SessionTimeout, Side: side,
		Cluster: c.Live.Cluster, TopicPrefix: c.Live.TopicPrefix, Group: c.Group, Start: StartNewest,
		GroupSessionTimeout: c.GroupSessionTimeout, GroupInstanceID: c.GroupInstanceID, GapAfter: c.GapAfter,
		Buffer: c.Targets.Buffer, DeliveryTimeout: c.Targets.DeliveryTimeout}
	if c.Start == "oldest" {
		out.Start = StartOldest
	}
	auth := c.ZK.Auth
	if c.ZK.AuthFile != "" {
		b, err := os.ReadFile(c.ZK.AuthFile)
		if err != nil {
			return Config{}, fmt.Errorf("%w: zk.auth_file: %v", ErrInvalidConfig, err)
		}
		auth = strings.TrimSpace(string(b))
	}
	if out.ZKAuth, err = contract.ParseCredentials(auth); err != nil {
		return Config{}, fmt.Errorf("%w: zk.auth_file: %s must hold user:password", ErrInvalidConfig, c.ZK.AuthFile)
	}
	live, err := c.Live.Kafka.Load("live.", nil)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	out.LiveBrokers, out.LiveAuth = c.Live.Brokers, live
	if out.TargetAuth, err = c.Targets.Kafka.Load("targets.", nil); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return out, nil
}
