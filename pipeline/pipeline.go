package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/buildinfo"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/kgoka"
	"github.com/hotpair/hotpair/statestore"
)

// Options configure one side's pipeline.
type Options struct {
	// Brokers of the side's Kafka cluster. Required.
	Brokers []string
	// KafkaAuth is the cluster's TLS and SASL (nil: plaintext), for the
	// stages' goka clients and every other client alike. A broker that
	// refuses it stops Run at start.
	KafkaAuth *contract.KafkaAuth
	// Side is Primary or Standby. Required.
	Side contract.Side
	// Role is RoleLive (default) or RoleDark.
	Role contract.Role
	// DarkName is the dark target of a RoleDark pipeline (required then,
	// empty otherwise). A dark pipeline's topics and consumer groups all
	// start with contract.DarkPrefix(DarkName), before TopicPrefix; its
	// producers refuse any other topic; it registers under
	// instances/dark/<DarkName>.
	DarkName string
	// Instance names this process in health samples; default host-pid.
	Instance string
	// Build is the version reported in health samples; default the binary's.
	Build string
	// Stages to run; default all four.
	Stages []contract.Stage

	// TopicPrefix is prepended to every topic and consumer group name (for a
	// dark pipeline after its dark prefix, unless it starts with it).
	TopicPrefix string
	// Partitions of the topics created when missing (default 8). Every
	// pipeline topic must have the same count: goka co-partitions them.
	Partitions int32
	// Replication of the topics created when missing (default 1).
	Replication int16
	// CreateTopics creates missing topics at start.
	CreateTopics bool

	// Storage chooses the goka storage backend.
	Storage statestore.Config

	// SessionTimeout of the stages' consumer groups: a crashed instance's
	// partitions move to the other instances about this long after it
	// stopped (default 6s, Kafka's default minimum).
	SessionTimeout time.Duration
	// HotStandby keeps every partition's state current in every instance
	// (goka's hot standby and recover-ahead), so that an instance takes
	// over a crashed one's partitions without replaying their changelogs.
	// Each instance then holds the whole state and reads every changelog.
	HotStandby bool

	// Window is the aggregation window (default 10s); Lateness how long
	// after its end a window waits for late events (default 5s); MaxFuture
	// how far ahead of the clock an event's ts may be (default 1h);
	// IdleClose how long a partition without events waits before it closes
	// windows by wall clock (default: Window).
	Window, Lateness, MaxFuture, IdleClose time.Duration
	// SampleInterval is how often every stage writes a HealthSample (default 10s).
	SampleInterval time.Duration
	// WakeInterval is how often due timer wake-ups are looked for (default
	// 250ms; the aggregator looks at least every 100 ms, and at once when a
	// live partition's clock passes a window close).
	WakeInterval time.Duration

	Pacer  PacerConfig
	Bidder BidderConfig

	// Registry, when set, registers every stage of this instance in
	// ZooKeeper while it runs (see RegistryOptions).
	Registry *RegistryOptions

	// Injected dependencies.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (o *Options) applyDefaults() {
	if o.Role == 0 {
		o.Role = contract.RoleLive
	}
	if o.Instance == "" {
		h, _ := os.Hostname()
		o.Instance = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if o.Build == "" {
		o.Build = buildinfo.String()
	}
	if len(o.Stages) == 0 {
		o.Stages = contract.Stages()
	}
	if o.Partitions == 0 {
		o.Partitions = 8
	}
	if o.Replication == 0 {
		o.Replication = 1
	}
	if o.Storage.Backend == "" {
		o.Storage.Backend = statestore.BackendLevelDB
	}
	setDefault(&o.Window, 10*time.Second)
	setDefault(&o.Lateness, 5*time.Second)
	setDefault(&o.MaxFuture, time.Hour)
	setDefault(&o.IdleClose, o.Window)
	setDefault(&o.SampleInterval, 10*time.Second)
	setDefault(&o.WakeInterval, 250*time.Millisecond)
	setDefault(&o.SessionTimeout, kgoka.DefaultSessionTimeout)
	if o.Pacer == (PacerConfig{}) {
		o.Pacer = DefaultPacerConfig()
	}
	if o.Bidder == (BidderConfig{}) {
		o.Bidder = DefaultBidderConfig()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func (o *Options) validate() error {
	switch {
	case len(o.Brokers) == 0:
		return fmt.Errorf("%w: Options.Brokers is required", ErrInvalidOptions)
	case !o.Side.Valid():
		return fmt.Errorf("%w: Options.Side must be primary or standby, got %q", ErrInvalidOptions, o.Side)
	case !o.Role.Valid():
		return fmt.Errorf("%w: Options.Role must be live or dark, got %q", ErrInvalidOptions, o.Role)
	case o.Window < time.Millisecond || o.Lateness < 0:
		return fmt.Errorf("%w: Options.Window must be positive and Options.Lateness not negative", ErrInvalidOptions)
	case o.Registry != nil && len(o.Registry.Servers) == 0:
		return fmt.Errorf("%w: Options.Registry.Servers is required", ErrInvalidOptions)
	case o.Role == contract.RoleDark && !contract.ValidDarkName(o.DarkName):
		return fmt.Errorf("%w: Options.DarkName %q is not a dark target name (a RoleDark pipeline needs one)", ErrInvalidOptions, o.DarkName)
	case o.Role != contract.RoleDark && o.DarkName != "":
		return fmt.Errorf("%w: Options.DarkName is only for a RoleDark pipeline", ErrInvalidOptions)
	}
	if o.Role == contract.RoleDark {
		if _, err := darkTopicPrefix(o.DarkName, o.TopicPrefix); err != nil {
			return fmt.Errorf("%w: Options.TopicPrefix: %v", ErrInvalidOptions, err)
		}
	}
	for _, s := range o.Stages {
		if !s.Valid() {
			return fmt.Errorf("%w: Options.Stages: %q is not a stage (%v)", ErrInvalidOptions, s, contract.StageNames())
		}
	}
	for _, err := range []error{o.Storage.Validate(), o.Pacer.Validate(), o.Bidder.Validate()} {
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
	}
	return nil
}

// Pipeline runs the stages of one side against one Kafka cluster.
type Pipeline struct {
	opts     Options
	topics   contract.Topics
	log      *slog.Logger
	metrics  *metrics
	builders kgoka.Builders
	stopping chan struct{} // closed when Run's context ends (kgoka.Builders.Stopping)
	stages   []*stage
	client   *kafka.GuardedProducer // health samples and wake-ups: every record goes through the guard
	admin    *kgo.Client            // the same client, for requests that write no record (end offsets)
	// guard refuses records outside a dark pipeline's prefix (nil: live).
	guard *kafka.TopicGuard

	mu      sync.Mutex
	running bool
}

// New validates the options and builds the stages' group graphs.
func New(opts Options) (*Pipeline, error) {
	opts.applyDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	stopping := make(chan struct{})
	if opts.Role == contract.RoleDark {
		opts.TopicPrefix, _ = darkTopicPrefix(opts.DarkName, opts.TopicPrefix) // validated
	}
	p := &Pipeline{
		opts:     opts,
		stopping: stopping,
		topics:   contract.TopicsWithPrefix(opts.TopicPrefix),
		log:      opts.Logger.With("side", opts.Side, "role", opts.Role),
		metrics:  newMetrics(opts.Registerer),
		builders: kgoka.Builders{
			ClientID:       "hotpair-" + opts.Side.String() + "-" + opts.Instance,
			Auth:           opts.KafkaAuth,
			Replication:    int(opts.Replication),
			Partitions:     int(opts.Partitions),
			SessionTimeout: opts.SessionTimeout,
			Stopping:       stopping,
		},
	}
	if opts.Role == contract.RoleDark {
		p.guard, _ = kafka.NewTopicGuard(contract.DarkPrefix(opts.DarkName), p.refused)
		p.builders.Guard = p.guard
		p.builders.ClientID = "hotpair-dark-" + opts.DarkName + "-" + opts.Instance
	}
	for _, name := range contract.Stages() { // topological order, whatever the config's order
		if !slices.Contains(opts.Stages, name) {
			continue
		}
		if name == contract.StageAggregator {
			p.stages = append(p.stages, newAggregator(p))
		} else {
			p.stages = append(p.stages, newService(p, name))
		}
	}
	return p, nil
}

// Run creates missing topics (when configured) and runs every stage until
// ctx ends. Stages start in topological order and stop in reverse.
func (p *Pipeline) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return ErrRunning
	}
	p.running = true
	p.mu.Unlock()

	cl, err := kafka.NewProducer(p.cluster(), p.builders.ClientID,
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(20_000))
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	p.client, p.admin = kafka.Guard(cl, p.guard), cl
	defer cl.Close()
	if err := kafka.CheckAuth(ctx, p.cluster()); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if p.opts.CreateTopics {
		if err := p.ensureTopics(ctx); err != nil {
			return err
		}
	}

	if p.opts.Registry != nil {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); p.register(rctx, *p.opts.Registry) }()
		defer func() { cancel(); <-done }()
	}
	cancels := make([]context.CancelFunc, len(p.stages))
	dones := make([]chan struct{}, len(p.stages))
	for i, st := range p.stages {
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		cancels[i], dones[i] = cancel, make(chan struct{})
		go func() { defer close(dones[i]); st.run(sctx) }()
		p.log.Info("stage started", "service", st.name)
	}
	<-ctx.Done()
	close(p.stopping)
	for i := len(p.stages) - 1; i >= 0; i-- {
		cancels[i]()
		<-dones[i]
		p.log.Info("stage stopped", "service", p.stages[i].name)
	}
	return nil
}

// ensureTopics creates the pipeline's topics, retrying while the cluster is
// unreachable: a side may start before its cluster does.
func (p *Pipeline) ensureTopics(ctx context.Context) error {
	var specs []kafka.TopicSpec
	for _, t := range p.topics.All() {
		specs = append(specs, kafka.TopicSpec{Name: t, Compacted: p.topics.Compacted(t)})
	}
	for _, st := range p.stages {
		specs = append(specs, kafka.TopicSpec{Name: st.tableTopic(), Compacted: true}, kafka.TopicSpec{Name: st.loopTopic()})
	}
	for backoff := time.Second; ; backoff = min(2*backoff, 30*time.Second) {
		err := kafka.EnsureTopics(ctx, p.cluster(), p.opts.Partitions, p.opts.Replication, specs...)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if errors.Is(err, kafka.ErrPartitionMismatch) {
			return fmt.Errorf("pipeline: %w", err)
		}
		if kafka.NotAuthorized(err) {
			// Not transient: an operator must grant it.
			return fmt.Errorf("pipeline: %w: grant the pipeline's principal Create on its missing topics "+
				"(hotpair config acls), or create them and set topics.create: false", err)
		}
		p.log.Warn("creating topics; retrying", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
}

func (p *Pipeline) stage(name contract.Stage) (*stage, error) {
	for _, st := range p.stages {
		if st.name == name {
			return st, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoSuchStage, name)
}

// Pause makes a stage stop consuming (paused=true) or resume. A paused stage
// keeps its partitions and keeps writing health samples, with no events: what
// a stuck streams application looks like. Operators use it for maintenance;
// the sandbox uses it to inject stalls.
func (p *Pipeline) Pause(stage contract.Stage, paused bool) error {
	st, err := p.stage(stage)
	if err != nil {
		return err
	}
	st.gate.set(paused)
	st.m.paused.Set(map[bool]float64{false: 0, true: 1}[paused])
	p.log.Warn("stage pause changed", "service", stage, "paused", paused)
	return nil
}

// Throttle caps the rate at which a stage takes input records to perSecond
// (0 lifts the cap): a stage that cannot keep up, as a CPU-starved or
// throttled instance would. Records beyond the rate wait in Kafka, so the
// stage falls behind and its event lag grows. The sandbox uses it to inject
// overload.
func (p *Pipeline) Throttle(stage contract.Stage, perSecond float64) error {
	st, err := p.stage(stage)
	if err != nil {
		return err
	}
	if perSecond < 0 {
		return fmt.Errorf("%w: a rate must not be negative, got %g", ErrInvalidOptions, perSecond)
	}
	st.limit.set(perSecond)
	st.m.rateLimit.Set(perSecond)
	p.log.Warn("stage rate limit changed", "service", stage, "per_second", perSecond)
	return nil
}

// RestartStage stops a stage's processor without a clean hand-over and lets
// its supervisor rebuild it, recovering state from its store and changelog.
func (p *Pipeline) RestartStage(stage contract.Stage) error {
	st, err := p.stage(stage)
	if err != nil {
		return err
	}
	if !st.restart() {
		return fmt.Errorf("%w: %q", ErrNotRunning, stage)
	}
	return nil
}

// Ready reports whether every stage's processor runs and has recovered its
// state (goka replays the changelog into the store before it consumes input).
func (p *Pipeline) Ready() bool {
	for _, st := range p.stages {
		st.mu.Lock()
		proc := st.proc
		st.mu.Unlock()
		if proc == nil || !proc.Recovered() {
			return false
		}
	}
	return len(p.stages) > 0
}

// cluster is the side's Kafka cluster as the pipeline's clients reach it.
func (p *Pipeline) cluster() kafka.Cluster {
	return kafka.Cluster{Name: p.opts.Side.String(), Brokers: p.opts.Brokers, Auth: p.opts.KafkaAuth}
}
