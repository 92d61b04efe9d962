package pipeline

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka/kgoka"
	"github.com/hotpair/hotpair/internal/yamlconf"
	"github.com/hotpair/hotpair/statestore"
)

// Config is the YAML config of `hotpair pipeline`. Every key is optional but
// side and brokers; see DefaultConfig for the defaults and
// docs/pipeline.md for an annotated example.
type Config struct {
	Side string `yaml:"side"`
	Role string `yaml:"role"`
	// DarkName is the dark target a role-dark pipeline belongs to: every
	// topic and consumer group then starts with dark.<dark_name>.
	DarkName string   `yaml:"dark_name"`
	Instance string   `yaml:"instance"`
	Build    string   `yaml:"build"`
	Brokers  []string `yaml:"brokers"`
	// Kafka is the cluster's TLS and SASL: keys tls and sasl beside brokers.
	Kafka       contract.KafkaSecurity `yaml:",inline"`
	TopicPrefix string                 `yaml:"topic_prefix"`
	Topics      TopicConfig            `yaml:"topics"`
	Stages      []string               `yaml:"stages"`
	Storage     statestore.Config      `yaml:"storage"`
	Group       GroupConfig            `yaml:"group"`
	Aggregator  AggregatorConfig       `yaml:"aggregator"`
	Pacer       PacerConfig            `yaml:"pacer"`
	Bidder      BidderConfig           `yaml:"bidder"`
	Health      HealthConfig           `yaml:"health"`
	HTTP        HTTPConfig             `yaml:"http"`
	ZK          ZKConfig               `yaml:"zk"`
}

// ZKConfig, when servers are set, registers the instance's stages in
// ZooKeeper under <root>/instances/<cluster>/<stage>/<instance>.
type ZKConfig struct {
	Servers []string `yaml:"servers"`
	Root    string   `yaml:"root"`
	// Cluster names the Kafka cluster in the path; default the side.
	Cluster string `yaml:"cluster"`
	// Auth is "user:password"; the registrations are then changeable only by it.
	Auth string `yaml:"auth"`
}

// TopicConfig says how missing topics are created.
type TopicConfig struct {
	Partitions  int32 `yaml:"partitions"`
	Replication int16 `yaml:"replication"`
	Create      bool  `yaml:"create"`
}

// GroupConfig is how the instances of a stage share its partitions (one
// Kafka consumer group per stage).
type GroupConfig struct {
	// SessionTimeout: a crashed instance's partitions move to the others
	// about this long after it stopped.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// HotStandby keeps every partition's state current in every instance.
	HotStandby bool `yaml:"hot_standby"`
}

// AggregatorConfig is the window configuration.
type AggregatorConfig struct {
	Window    time.Duration `yaml:"window"`
	Lateness  time.Duration `yaml:"lateness"`
	MaxFuture time.Duration `yaml:"max_future"`
	IdleClose time.Duration `yaml:"idle_close"`
}

// HealthConfig is the health sampling configuration.
type HealthConfig struct {
	SampleInterval time.Duration `yaml:"sample_interval"`
}

// HTTPConfig is where /metrics and /healthz are served.
type HTTPConfig struct {
	Listen string `yaml:"listen"`
}

// DefaultConfig returns the defaults (DESIGN §3–§4).
func DefaultConfig() Config {
	return Config{
		Role:       contract.RoleLive.String(),
		Topics:     TopicConfig{Partitions: 8, Replication: 3, Create: true},
		Stages:     contract.StageNames(),
		Storage:    statestore.Config{Backend: statestore.BackendLevelDB, Dir: "hotpair-state"},
		Group:      GroupConfig{SessionTimeout: kgoka.DefaultSessionTimeout, HotStandby: true},
		Aggregator: AggregatorConfig{Window: 10 * time.Second, Lateness: 5 * time.Second, MaxFuture: time.Hour, IdleClose: 10 * time.Second},
		Pacer:      DefaultPacerConfig(),
		Bidder:     DefaultBidderConfig(),
		Health:     HealthConfig{SampleInterval: 10 * time.Second},
		HTTP:       HTTPConfig{Listen: ":9464"},
	}
}

// LoadConfig reads a config file over the defaults and validates it.
func LoadConfig(path string) (Config, error) {
	c := DefaultConfig()
	if err := yamlconf.Load(path, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks every key and returns every problem (joined); each names
// the key and the fix.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, err := contract.ParseSide(c.Side); err != nil {
		bad("side: %q is not a side; set side: primary or side: standby", c.Side)
	}
	if _, err := contract.ParseRole(c.Role); err != nil {
		bad("role: %q is not a role; use live or dark", c.Role)
	}
	errs = append(errs, c.validateDark()...)
	if err := c.Kafka.Validate(""); err != nil {
		errs = append(errs, err)
	}
	if len(c.Brokers) == 0 {
		bad("brokers: at least one broker (host:port) is required")
	}
	if c.Topics.Partitions < 1 {
		bad("topics.partitions must be at least 1, got %d", c.Topics.Partitions)
	}
	if c.Topics.Replication < 1 {
		bad("topics.replication must be at least 1, got %d (use 1 on a single-broker cluster)", c.Topics.Replication)
	}
	if len(c.Stages) == 0 {
		bad("stages: name at least one of %v", contract.Stages())
	}
	for _, d := range []struct {
		key      string
		v, least time.Duration
	}{
		{"aggregator.window", c.Aggregator.Window, 10 * time.Millisecond},
		{"aggregator.max_future", c.Aggregator.MaxFuture, time.Nanosecond},
		{"aggregator.idle_close", c.Aggregator.IdleClose, time.Nanosecond},
		{"health.sample_interval", c.Health.SampleInterval, 100 * time.Millisecond},
	} {
		if d.v < d.least {
			if d.least == time.Nanosecond {
				bad("%s must be positive, got %s", d.key, d.v)
			} else {
				bad("%s must be at least %s, got %s", d.key, d.least, d.v)
			}
		}
	}
	if c.Aggregator.Lateness < 0 {
		bad("aggregator.lateness must not be negative, got %s", c.Aggregator.Lateness)
	}
	if c.Group.SessionTimeout < 100*time.Millisecond || c.Group.SessionTimeout > 5*time.Minute {
		bad("group.session_timeout must be between 100ms and 5m, got %s (brokers allow 6s to 5m by default)", c.Group.SessionTimeout)
	}
	for i, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			bad("brokers[%d]: %q is not host:port", i, b)
		}
	}
	for i, s := range c.Stages {
		if _, err := contract.ParseStage(s); err != nil {
			bad("stages[%d]: %q is not a stage; use some of %v", i, s, contract.StageNames())
		}
	}
	if c.HTTP.Listen != "" {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			bad("http.listen: %q is not host:port (e.g. :9464 or 127.0.0.1:0)", c.HTTP.Listen)
		}
	}
	for i, z := range c.ZK.Servers {
		if _, _, err := net.SplitHostPort(z); err != nil {
			bad("zk.servers[%d]: %q is not host:port", i, z)
		}
	}
	if _, err := contract.ParseCredentials(c.ZK.Auth); err != nil {
		bad("zk.auth: %v", err)
	}
	for _, err := range []error{c.Storage.Validate(), c.Pacer.Validate(), c.Bidder.Validate()} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validateDark checks the keys that keep a dark pipeline off live topics,
// live registrations and other dark targets, and a live one off dark names.
func (c Config) validateDark() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	role, _ := contract.ParseRole(c.Role)
	clusterDark := c.ZK.Cluster == darkCluster || strings.HasPrefix(c.ZK.Cluster, darkCluster+"/")
	switch {
	case role == contract.RoleDark && c.DarkName == "":
		bad("dark_name: role: dark needs the name of its dark target (e.g. dark_name: canary); its topics and groups then start with dark.<dark_name>.")
	case c.DarkName != "" && !contract.ValidDarkName(c.DarkName):
		bad("dark_name: %q is not a dark target name; use lower-case letters, digits and dashes (at most 40), e.g. canary", c.DarkName)
	case c.DarkName != "" && role != contract.RoleDark:
		bad("dark_name: only a dark pipeline has a dark target; set role: dark or remove dark_name")
	case role == contract.RoleDark:
		if _, err := darkTopicPrefix(c.DarkName, c.TopicPrefix); err != nil {
			bad("topic_prefix: %v", err)
		}
		if c.ZK.Cluster != "" {
			bad("zk.cluster: a dark pipeline registers under instances/dark/%s, not under a cluster; remove zk.cluster", c.DarkName)
		}
	case role == contract.RoleLive && strings.HasPrefix(c.TopicPrefix, darkTopicRoot):
		bad("topic_prefix: %q starts with %q, which only dark pipelines use; set role: dark and dark_name, or choose another prefix", c.TopicPrefix, darkTopicRoot)
	case role == contract.RoleLive && clusterDark:
		bad("zk.cluster: %q is where dark pipelines register; name the live cluster otherwise (default: the side)", c.ZK.Cluster)
	}
	return errs
}

// Options converts a valid config to pipeline options (without the injected
// dependencies), reading the files and environment the Kafka security block
// names; an error names the key and the fix.
func (c Config) Options() (Options, error) {
	auth, err := c.Kafka.Load("", nil)
	if err != nil {
		return Options{}, err
	}
	return c.options(auth), nil
}

// KafkaACLs is what the pipeline this valid config runs needs on its
// cluster (Pipeline.KafkaACLs), without reading the security block's files.
func (c Config) KafkaACLs() ([]contract.KafkaACL, error) {
	o := c.options(nil)
	o.Registerer = prometheus.NewRegistry()
	p, err := New(o)
	if err != nil {
		return nil, err
	}
	return p.KafkaACLs(), nil
}

func (c Config) options(auth *contract.KafkaAuth) Options {
	side, _ := contract.ParseSide(c.Side)
	role, _ := contract.ParseRole(c.Role)
	stages := make([]contract.Stage, 0, len(c.Stages))
	for _, name := range c.Stages {
		st, _ := contract.ParseStage(name)
		stages = append(stages, st)
	}
	return Options{
		Brokers: c.Brokers, KafkaAuth: auth, Side: side, Role: role, DarkName: c.DarkName, Instance: c.Instance, Build: c.Build,
		Stages: stages, TopicPrefix: c.TopicPrefix,
		Partitions: c.Topics.Partitions, Replication: c.Topics.Replication, CreateTopics: c.Topics.Create,
		Storage:        c.Storage,
		SessionTimeout: c.Group.SessionTimeout, HotStandby: c.Group.HotStandby,
		Window: c.Aggregator.Window, Lateness: c.Aggregator.Lateness, MaxFuture: c.Aggregator.MaxFuture, IdleClose: c.Aggregator.IdleClose,
		SampleInterval: c.Health.SampleInterval,
		Pacer:          c.Pacer, Bidder: c.Bidder,
		Registry: c.registry(),
	}
}

func (c Config) registry() *RegistryOptions {
	if len(c.ZK.Servers) == 0 {
		return nil
	}
	auth, _ := contract.ParseCredentials(c.ZK.Auth)
	return &RegistryOptions{Servers: c.ZK.Servers, Root: c.ZK.Root, Cluster: c.ZK.Cluster, Auth: auth}
}
