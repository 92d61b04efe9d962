package compare

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/yamlconf"
)

// Config is the comparator's YAML configuration (`hotpair dark compare
// --config FILE`), decoded strictly. The Rules' keys (interval, settle,
// relative, resources, …) are top-level keys of the same file.
// docs/dark.md lists every key with its default.
type Config struct {
	// ZK is where the dark targets are configured (/dark/<name>). Without
	// servers, only the targets listed under targets are judged.
	ZK ZKConfig `yaml:"zk"`
	// Clusters are the two live sides' Kafka clusters.
	Clusters struct {
		Primary ClusterConfig `yaml:"primary"`
		Standby ClusterConfig `yaml:"standby"`
	} `yaml:"clusters"`
	// TopicPrefix is the live topics' prefix (default none).
	TopicPrefix string `yaml:"topic_prefix"`
	// DarkKafka is the TLS and SASL of the dark targets found in ZooKeeper
	// (their documents name brokers only).
	DarkKafka contract.KafkaSecurity `yaml:"dark_kafka"`
	// Targets are dark targets judged whatever ZooKeeper says; a target of
	// the same name in ZooKeeper is this one.
	Targets []TargetConfig `yaml:"targets"`
	// HTTP.Listen serves /, /api/v1/dark, /metrics and /healthz. Default
	// ":9472"; "off" serves nothing (an embedder mounts Handler).
	HTTP struct {
		Listen string `yaml:"listen"`
	} `yaml:"http"`

	Rules `yaml:",inline"`
}

// ZKConfig is the ZooKeeper ensemble the dark targets are read from.
type ZKConfig struct {
	Servers []string `yaml:"servers"`
	// Root of hotpair's znodes. Default /hotpair.
	Root           string        `yaml:"root"`
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// Auth ("user:password") is an identity, only needed when the dark
	// documents are not world-readable.
	Auth string `yaml:"auth"`
}

// ClusterConfig is one Kafka cluster: brokers and the security block.
type ClusterConfig = contract.KafkaCluster

// TargetConfig is a dark target given in the config: its name, source side,
// brokers and security block.
type TargetConfig struct {
	Name string `yaml:"name"`
	// Source is the live side whose input the target receives. Default primary.
	Source                string `yaml:"source"`
	contract.KafkaCluster `yaml:",inline"`
}

// DefaultConfig returns the defaults, without clusters.
func DefaultConfig() Config {
	c := Config{ZK: ZKConfig{Root: contract.DefaultRoot, SessionTimeout: 10 * time.Second}, Rules: DefaultRules()}
	c.HTTP.Listen = ":9472"
	return c
}

// LoadConfig reads a config file over the defaults and validates it.
func LoadConfig(path string) (Config, error) {
	c := DefaultConfig()
	if err := yamlconf.Load(path, &c); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %v; docs/dark.md lists every key", ErrConfig, path, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Validate checks every key; each error names the key and the fix.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s %s", ErrConfig, key, fmt.Sprintf(format, args...)))
	}
	brokers := func(key string, bs []string) {
		if len(bs) == 0 {
			bad(key, "is required: the cluster's seed brokers, e.g. [\"kafka-1:9092\"]")
		}
		for _, b := range bs {
			if _, _, err := net.SplitHostPort(b); err != nil {
				bad(key, "has %q, which is not host:port", b)
			}
		}
	}
	security := func(prefix string, s contract.KafkaSecurity) {
		if err := s.Validate(prefix); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
		}
	}
	brokers("clusters.primary.brokers", c.Clusters.Primary.Brokers)
	brokers("clusters.standby.brokers", c.Clusters.Standby.Brokers)
	security("clusters.primary.", c.Clusters.Primary.Kafka)
	security("clusters.standby.", c.Clusters.Standby.Kafka)
	security("dark_kafka.", c.DarkKafka)
	if len(c.ZK.Servers) == 0 && len(c.Targets) == 0 {
		bad("zk.servers", "or targets is required: the ZooKeeper ensemble holding /dark/<name>, or the dark targets themselves")
	}
	for _, s := range c.ZK.Servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			bad("zk.servers", "has %q, which is not host:port", s)
		}
	}
	if !strings.HasPrefix(c.ZK.Root, "/") {
		bad("zk.root", "%q must be an absolute znode path such as /hotpair", c.ZK.Root)
	}
	if c.ZK.SessionTimeout < time.Second {
		bad("zk.session_timeout", "must be at least 1s (e.g. 10s), got %s", c.ZK.SessionTimeout)
	}
	if _, err := contract.ParseCredentials(c.ZK.Auth); err != nil {
		bad("zk.auth", "must be user:password")
	}
	for i, t := range c.Targets {
		key := fmt.Sprintf("targets[%d].", i)
		if !contract.ValidDarkName(t.Name) {
			bad(key+"name", "%q: use lower-case letters, digits and dashes (at most 40)", t.Name)
		}
		if slices.IndexFunc(c.Targets, func(o TargetConfig) bool { return o.Name == t.Name }) != i {
			bad(key+"name", "%q is listed twice", t.Name)
		}
		if _, err := contract.ParseSide(t.Source); t.Source != "" && err != nil {
			bad(key+"source", "%q: want primary or standby", t.Source)
		}
		brokers(key+"brokers", t.Brokers)
		security(key, t.Kafka)
	}
	if c.HTTP.Listen != "off" {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			bad("http.listen", "%q is not host:port (e.g. \":9472\"), or \"off\"", c.HTTP.Listen)
		}
	}
	if err := c.Rules.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// clusters loads the live clusters' security blocks, primary first.
func (c Config) clusters() ([2]kafka.Cluster, error) {
	out, err := kafka.LoadSides(c.Clusters.Primary, c.Clusters.Standby)
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return out, nil
}
