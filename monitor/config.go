package monitor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/yamlconf"
	"github.com/hotpair/hotpair/monitor/core"
)

// Config is the monitor daemon's YAML configuration (`hotpair monitor
// --config FILE`). The pure core's keys (window, rules, decision, stagger)
// are top-level keys of the same file. Decoding is strict (yamlconf, as for
// every hotpair config): an unknown key is an error. docs/monitor.md lists
// every key with its default.
type Config struct {
	// ID names this replica in the election, the status and the logs.
	// Default: hostname-pid.
	ID          string         `yaml:"id"`
	ZK          ZKConfig       `yaml:"zk"`
	Clusters    ClustersConfig `yaml:"clusters"`
	TopicPrefix string         `yaml:"topic_prefix"`
	// Services are the services whose selection this monitor publishes.
	// Default: budget, pacer, bidder.
	Services []string      `yaml:"services"`
	HTTP     HTTPConfig    `yaml:"http"`
	History  HistoryConfig `yaml:"history"`
	Record   RecordConfig  `yaml:"record"`
	// Dark runs a replica of the dark canary's comparator in this process.
	Dark DarkConfig `yaml:"dark"`

	core.Config `yaml:",inline"`
}

// ZKConfig is the ZooKeeper ensemble and the monitor's identity on it.
type ZKConfig struct {
	Servers []string `yaml:"servers"`
	// Root of hotpair's znodes. Default /hotpair.
	Root string `yaml:"root"`
	// SessionTimeout: a crashed leader is replaced after about this long.
	// Default 10s.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// Auth is the monitor identity, "user:password" (ZooKeeper digest). With
	// it the monitor protects its znodes (see ACLPolicy). AuthFile names a
	// file holding the same, for keeping the secret out of the config.
	Auth     string `yaml:"auth"`
	AuthFile string `yaml:"auth_file"`
	// OperatorUser is the operator identity as a ZooKeeper digest id,
	// "user:base64(sha1(user:password))" (never the password): the only
	// identity allowed to write overrides. Required with auth.
	OperatorUser string `yaml:"operator_user"`
}

// ClustersConfig are the two Kafka clusters, one per side.
type ClustersConfig struct {
	Primary ClusterConfig `yaml:"primary"`
	Standby ClusterConfig `yaml:"standby"`
}

// ClusterConfig is one Kafka cluster: brokers, and its TLS and SASL (keys
// tls and sasl beside brokers).
type ClusterConfig = contract.KafkaCluster

// HTTPConfig is the monitor's HTTP endpoint.
type HTTPConfig struct {
	// Listen is the address of /, /metrics, /healthz, /readyz and
	// /api/v1/status. Default ":9470"; "off" serves nothing (an embedding
	// program mounts Monitor.Handler itself).
	Listen string `yaml:"listen"`
}

// HistoryConfig bounds each replica's copy of the decision record, behind
// the on-call page and /api/v1/history.
type HistoryConfig struct {
	// Retention is how far back the charts go, and how far back a replica
	// reads the record when it starts. Default 6h.
	Retention time.Duration `yaml:"retention"`
	// MaxPoints caps the windows kept per service (short windows and a long
	// retention would otherwise grow without bound). Default 2000.
	MaxPoints int `yaml:"max_points"`
	// Switches is how many decisions (switches, degraded, overrides,
	// stagger) a replica keeps and the page lists. Default 100.
	Switches int `yaml:"switches"`
}

// RecordConfig is the decision record: the topic hotpair-decisions
// (<topic_prefix>hotpair-decisions) on both clusters.
type RecordConfig struct {
	// Retention is the topic's retention.ms: how long the record lasts. The
	// monitor creates the topic with it and sets it on a topic that has
	// another. Default 720h (30 days); at least history.retention.
	Retention time.Duration `yaml:"retention"`
	// Replication is the topic's replication factor when the monitor
	// creates it. Default 3; 1 on a single-broker cluster.
	Replication int16 `yaml:"replication"`
}

// DarkConfig runs one replica of the dark canary's comparator
// (canary/compare) inside the monitor, off by default. It uses the monitor's
// ZooKeeper ensemble (the targets under /dark), clusters and topic prefix;
// its section shows on the on-call page and its report at /api/v1/dark.
// The comparison keys (interval, settle, relative, resources, …) are those
// of `hotpair dark compare`'s config, under dark: (docs/dark.md).
type DarkConfig struct {
	Enabled bool `yaml:"enabled"`
	// DarkKafka is the TLS and SASL of the dark targets' clusters.
	DarkKafka contract.KafkaSecurity `yaml:"dark_kafka"`
	// Targets are judged whatever ZooKeeper says.
	Targets       []compare.TargetConfig `yaml:"targets"`
	compare.Rules `yaml:",inline"`
}

// compareConfig is the comparator's config from the monitor's: its HTTP
// listener off (the monitor serves its report). It reads ZooKeeper as the
// monitor identity, which New passes once zk.auth_file is read.
func (c Config) compareConfig() compare.Config {
	cc := compare.DefaultConfig()
	cc.ZK = compare.ZKConfig{Servers: c.ZK.Servers, Root: c.ZK.Root, SessionTimeout: c.ZK.SessionTimeout}
	cc.Clusters.Primary, cc.Clusters.Standby = c.Clusters.Primary, c.Clusters.Standby
	cc.TopicPrefix, cc.DarkKafka, cc.Targets, cc.Rules = c.TopicPrefix, c.Dark.DarkKafka, c.Dark.Targets, c.Dark.Rules
	cc.HTTP.Listen = "off"
	return cc
}

// DefaultConfig returns a config with every default set and no servers.
func DefaultConfig() Config {
	return Config{
		ZK:       ZKConfig{Root: contract.DefaultRoot, SessionTimeout: 10 * time.Second},
		Services: contract.ServiceNames(),
		HTTP:     HTTPConfig{Listen: ":9470"},
		History:  HistoryConfig{Retention: 6 * time.Hour, MaxPoints: 2000, Switches: 100},
		Record:   RecordConfig{Retention: 30 * 24 * time.Hour, Replication: 3},
		Dark:     DarkConfig{Rules: compare.DefaultRules()},
		Config:   core.DefaultConfig(),
	}
}

// ParseConfig decodes YAML strictly (yamlconf: an unknown key, a bad
// value or a duration without a unit is an error naming the key and its
// line) over the defaults and validates it.
func ParseConfig(b []byte) (Config, error) {
	c := DefaultConfig()
	c.Services = nil
	if err := yamlconf.Decode(b, &c); err != nil {
		return Config{}, fmt.Errorf("%w: %v; docs/monitor.md lists every key", ErrConfig, err)
	}
	if c.Services == nil {
		c.Services = contract.ServiceNames()
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LoadConfig reads and parses a config file.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// kafkaClusters loads both clusters' security blocks (their files and
// environment); an error names the key and the fix.
func (c Config) kafkaClusters() ([2]kafka.Cluster, error) {
	out, err := kafka.LoadSides(c.Clusters.Primary, c.Clusters.Standby)
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return out, nil
}

// services returns Services as services (a valid config's).
func (c Config) services() []contract.Service {
	out := make([]contract.Service, 0, len(c.Services))
	for _, name := range c.Services {
		if svc, err := contract.ParseService(name); err == nil {
			out = append(out, svc)
		}
	}
	return out
}

// Validate checks every key; each error names the key and the fix.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s %s", ErrConfig, key, fmt.Sprintf(format, args...)))
	}
	c.validateZK(bad)
	for i, cl := range []ClusterConfig{c.Clusters.Primary, c.Clusters.Standby} {
		side := contract.SideNames()[i]
		if len(cl.Brokers) == 0 {
			bad("clusters."+side+".brokers", "is required: the seed brokers of the %s side's Kafka cluster, e.g. [\"kafka-%s-1:9092\"]", side, side[:1])
		}
		for _, b := range cl.Brokers {
			if _, _, err := net.SplitHostPort(b); err != nil {
				bad("clusters."+side+".brokers", "has %q, which is not host:port", b)
			}
		}
		if err := cl.Kafka.Validate("clusters." + side + "."); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
		}
	}
	if len(c.Clusters.Primary.Brokers) > 0 && slices.Equal(c.Clusters.Primary.Brokers, c.Clusters.Standby.Brokers) {
		bad("clusters.standby.brokers", "are the primary's: the two sides must be separate Kafka clusters")
	}
	if len(c.Services) == 0 {
		bad("services", "must list at least one of %s (or be left out for all)", strings.Join(contract.ServiceNames(), ", "))
	}
	for i, s := range c.Services {
		if _, err := contract.ParseService(s); err != nil {
			bad("services", "has %q: each must be one of %s", s, strings.Join(contract.ServiceNames(), ", "))
		} else if slices.Index(c.Services, s) != i {
			bad("services", "lists %q twice", s)
		}
	}
	if c.HTTP.Listen != "off" {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			bad("http.listen", "%q is not host:port (e.g. \":9470\"), or \"off\"", c.HTTP.Listen)
		}
	}
	if c.History.Retention < time.Minute {
		bad("history.retention", "must be at least 1m (e.g. 6h), got %s", c.History.Retention)
	}
	if c.History.MaxPoints < 10 || c.History.MaxPoints > 100_000 {
		bad("history.max_points", "must be between 10 and 100000 (e.g. 2000), got %d", c.History.MaxPoints)
	}
	if c.History.Switches < 1 || c.History.Switches > 10_000 {
		bad("history.switches", "must be between 1 and 10000 (e.g. 100), got %d", c.History.Switches)
	}
	if c.Record.Retention < c.History.Retention || c.Record.Retention < time.Hour {
		bad("record.retention", "must be at least 1h and at least history.retention (%s), so that a restarted replica finds its page's history in the record (e.g. 720h), got %s",
			c.History.Retention, c.Record.Retention)
	}
	if c.Record.Replication < 1 {
		bad("record.replication", "must be at least 1 (e.g. 3; 1 on a single-broker cluster), got %d", c.Record.Replication)
	}
	if c.Dark.Enabled {
		if err := c.compareConfig().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: dark: %w", ErrConfig, err))
		}
	}
	if err := c.Config.Validate(); err != nil {
		// The core's keys are top-level keys of this file.
		var joined interface{ Unwrap() []error }
		all := []error{err}
		if errors.As(err, &joined) {
			all = joined.Unwrap()
		}
		for _, e := range all {
			var ce *core.ConfigError
			if errors.As(e, &ce) {
				bad(ce.Key, "%s", ce.Problem)
			} else {
				errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, e))
			}
		}
	}
	return errors.Join(errs...)
}

func (c Config) validateZK(bad func(key, format string, args ...any)) {
	z := c.ZK
	if len(z.Servers) == 0 {
		bad("zk.servers", "is required: the ZooKeeper ensemble, e.g. [\"zk1:2181\", \"zk2:2181\", \"zk3:2181\"]")
	}
	for _, s := range z.Servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			bad("zk.servers", "has %q, which is not host:port", s)
		}
	}
	if !strings.HasPrefix(z.Root, "/") || (len(z.Root) > 1 && strings.HasSuffix(z.Root, "/")) || strings.Contains(z.Root, "//") {
		bad("zk.root", "%q must be an absolute znode path such as /hotpair", z.Root)
	}
	if z.SessionTimeout < time.Second || z.SessionTimeout > time.Minute {
		bad("zk.session_timeout", "must be between 1s and 1m (e.g. 10s), got %s", z.SessionTimeout)
	}
	if z.Auth != "" && z.AuthFile != "" {
		bad("zk.auth_file", "and zk.auth are both set: keep one")
	}
	if z.Auth != "" {
		if _, err := contract.ParseCredentials(z.Auth); err != nil {
			bad("zk.auth", "must be user:password (the monitor's digest identity)")
		}
	}
	auth := z.Auth != "" || z.AuthFile != ""
	switch {
	case auth && z.OperatorUser == "":
		bad("zk.operator_user", "is required with zk.auth: the operator identity as user:digest, where digest is the output of printf '%%s' 'USER:PASSWORD' | openssl sha1 -binary | base64")
	case !auth && z.OperatorUser != "":
		bad("zk.operator_user", "needs zk.auth (or zk.auth_file): without its own identity the monitor cannot protect the znodes")
	case z.OperatorUser != "":
		if _, err := ParseDigestID(z.OperatorUser); err != nil {
			bad("zk.operator_user", "%v", err)
		}
	}
}

// credentials returns the monitor identity, reading zk.auth_file if set.
func (z ZKConfig) credentials() (*contract.Credentials, error) {
	s := z.Auth
	if z.AuthFile != "" {
		b, err := os.ReadFile(z.AuthFile)
		if err != nil {
			return nil, fmt.Errorf("%w: zk.auth_file: %v", ErrConfig, err)
		}
		s = strings.TrimSpace(string(b))
	}
	c, err := contract.ParseCredentials(s)
	if err != nil {
		return nil, fmt.Errorf("%w: zk.auth_file: %s must hold user:password", ErrConfig, z.AuthFile)
	}
	return c, nil
}

// policy is the ACL policy the config asks for.
func (c Config) policy(monitor *contract.Credentials) ACLPolicy {
	if monitor == nil {
		return ACLPolicy{}
	}
	return ACLPolicy{Monitor: DigestID(*monitor), Operator: c.ZK.OperatorUser}
}
