// Package sandbox runs the whole of hotpair in one process: two embedded
// Kafka clusters (kfake), the real Apache ZooKeeper server, both sides'
// pipelines, two monitor replicas, the selector, the dual-cluster views and
// the retriever, and a load generator standing in for the ads servers that
// closes the loop through them. It injects faults on demand and runs
// scripted failure scenarios that check their outcome.
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/devsec"
	"github.com/hotpair/hotpair/internal/zkserver"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/pipeline"
	"github.com/hotpair/hotpair/selector"
	"github.com/hotpair/hotpair/statestore"
)

// Timing is how fast the sandbox's control loop runs.
type Timing struct {
	// Window is the monitor's evaluation window; Grace how long the
	// preferred side must stay healthy before traffic returns to it.
	Window, Grace time.Duration
	// SampleInterval is how often every stage writes a health sample.
	SampleInterval time.Duration
	// PartitionGrace is how long partitions may stay unassigned (a goka
	// rebalance) before the monitor calls them uncovered.
	PartitionGrace time.Duration
	// LagLimit is the monitor's lag_high threshold; CatchUpLag the lag above
	// which a side counts as draining a backlog.
	LagLimit, CatchUpLag time.Duration
	// ZKSession is the ZooKeeper session timeout of the monitors and the selector.
	ZKSession time.Duration
	// AggWindow and AggLateness are the aggregator's window and lateness.
	AggWindow, AggLateness time.Duration
	// Hold is how long a side must run a new build healthily before the
	// other side may take it: the monitors' stagger period, and what the
	// staggered-deploy scenario asks the rollout gate for.
	Hold time.Duration
}

// DemoTiming is the interactive sandbox's: a switch within a window of 15 s,
// a return after a 90 s grace period.
func DemoTiming() Timing {
	return Timing{Window: 15 * time.Second, Grace: 90 * time.Second, SampleInterval: 2 * time.Second,
		PartitionGrace: 20 * time.Second, LagLimit: 20 * time.Second, CatchUpLag: time.Second, ZKSession: 6 * time.Second,
		AggWindow: 3 * time.Second, AggLateness: 2 * time.Second, Hold: 2 * time.Minute}
}

// ScenarioTiming is the scripted scenarios': short enough that each runs in
// well under 3 minutes.
func ScenarioTiming() Timing {
	return Timing{Window: 3 * time.Second, Grace: 15 * time.Second, SampleInterval: time.Second,
		PartitionGrace: 15 * time.Second, LagLimit: 8 * time.Second, CatchUpLag: time.Second, ZKSession: 4 * time.Second,
		AggWindow: 750 * time.Millisecond, AggLateness: time.Second, Hold: 12 * time.Second}
}

// Options configure a sandbox. The zero value is the demo.
type Options struct {
	// ZK is an existing ZooKeeper to use ("" starts the local Apache
	// ZooKeeper server in a temporary directory on a free loopback port).
	ZK string
	// ZKRoot is the root of hotpair's znodes (default /hotpair).
	ZKRoot string
	// HTTP is the address of the sandbox's web endpoint (default 127.0.0.1:9400).
	HTTP string
	// Dir holds the clusters' data and ZooKeeper's (default: a temporary
	// directory, removed at the end).
	Dir string
	// Campaigns, QPS (ad requests per second at the mean of the day curve)
	// and Day (how long one simulated day of the traffic curve lasts) shape
	// the load. Defaults: 40, 300, 10m.
	Campaigns int
	QPS       float64
	Day       time.Duration
	// Partitions of every topic (default 4).
	Partitions int32
	// Instances runs each side's pipeline as this many instances, which
	// share its partitions as separate processes would (default 1).
	Instances int
	// IngestBuffer is how many records each side's ingest buffers while
	// its link or cluster is down (default 100000).
	IngestBuffer int
	// Insecure turns security off: ZooKeeper ACLs, and TLS and SASL on the
	// Kafka clusters (all on by default).
	Insecure bool
	// Timing of the control loop (default DemoTiming).
	Timing Timing
	// Seed of the load generator's randomness (default 1).
	Seed uint64
	// SaveHistory, with a scenario, is a file to write at its end the health
	// samples both clusters received while the monitors ran, as JSON lines:
	// `hotpair monitor simulate --file` replays them (Result.Simulate has
	// the arguments with the scenario's thresholds).
	SaveHistory string
	// Dark runs a dark target: a third cluster and, as a separate process
	// of DarkBinary, a dark pipeline (role dark, DarkName) against it.
	Dark bool
	// DarkBinary is the hotpair binary of the dark pipeline, a candidate
	// build (default: this process's executable).
	DarkBinary string
	// DarkMultiplier is the relative multiplier of the dark target's copy
	// of live traffic (default 0.25).
	DarkMultiplier float64
	// DarkDispatchers is how many dispatcher replicas copy the primary's
	// input to the dark target, in one consumer group (default 1). With
	// more than one, each is a static group member with a session timeout
	// of dispatcherSessionTimeout, and crash-dispatcher-replica can kill one.
	DarkDispatchers int

	// Injected dependencies.
	Logger *slog.Logger
}

func (o *Options) applyDefaults() {
	if o.ZKRoot == "" {
		o.ZKRoot = contract.DefaultRoot
	}
	if o.HTTP == "" {
		o.HTTP = "127.0.0.1:9400"
	}
	if o.Campaigns == 0 {
		o.Campaigns = 40
	}
	if o.QPS == 0 {
		o.QPS = 300
	}
	if o.Day == 0 {
		o.Day = 10 * time.Minute
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.Instances == 0 {
		o.Instances = 1
	}
	if o.IngestBuffer == 0 {
		o.IngestBuffer = 100_000
	}
	if o.Timing == (Timing{}) {
		o.Timing = DemoTiming()
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DarkDispatchers == 0 {
		o.DarkDispatchers = 1
	}
	if o.DarkMultiplier == 0 {
		o.DarkMultiplier = 0.25
	}
}

// Addresses are where the sandbox's parts listen, for other tools to attach.
type Addresses struct {
	PrimaryBrokers []string `json:"primary_brokers"`
	StandbyBrokers []string `json:"standby_brokers"`
	ZK             string   `json:"zk"`
	ZKRoot         string   `json:"zk_root"`
	HTTP           string   `json:"http"`
	// Kafka security (absent with --insecure): both clusters speak only
	// SASL_SSL. KafkaCAFile is the PEM file of the CA that signed the
	// brokers' certificate (ssl.ca.location); the SASL user may use
	// SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN.
	KafkaSecurityProtocol string `json:"kafka_security_protocol,omitempty"`
	KafkaCAFile           string `json:"kafka_ca_file,omitempty"`
	KafkaSASLMechanism    string `json:"kafka_sasl_mechanism,omitempty"`
	KafkaSASLUsername     string `json:"kafka_sasl_username,omitempty"`
	KafkaSASLPassword     string `json:"kafka_sasl_password,omitempty"`
	// OperatorAuth is the operator identity (user:password) that
	// `hotpair override --auth` needs while ACLs are on.
	OperatorAuth string `json:"operator_auth,omitempty"`
	// DarkBrokers are the dark target's cluster (with --dark), secured as
	// the other two; its topics start with dark.canary.
	DarkBrokers []string `json:"dark_brokers,omitempty"`
}

// Sandbox is the whole system in one process.
type Sandbox struct {
	opts   Options
	log    *slog.Logger
	dir    string
	tmpDir bool

	zk       *zkserver.Server // nil with an external ZooKeeper
	zkAddr   string
	clusters map[string]*cluster
	pipes    map[string]*pipeRun // guarded by mu: a deploy replaces a side's
	ingest   *pipeline.Ingester
	sel      *selector.Selector
	views    *selector.Views
	ret      *selector.Retriever
	load     *loadGen
	monitors *replicas
	faults   *faults
	events   timeline
	// recorded is the selector snapshot whose changes the timeline holds
	// (watchSelection), notified on recordedC.
	recorded  atomic.Pointer[selector.Snapshot]
	recordedC changes.Feed
	regs      *registries
	httpAddr  string
	dark      *darkRun // nil without Options.Dark

	monitorCreds, operatorCreds *contract.Credentials
	kafkaSec                    *devsec.Setup   // nil when insecure
	topics                      contract.Topics // the names on both clusters
	started                     time.Time
	monitorsFrom                time.Time // when the monitors started: the history they judged begins

	ctx  context.Context // of Run, for faults that start components
	stop []func()        // in reverse order of start
	mu   sync.Mutex
}

// New prepares a sandbox; Run starts it.
func New(o Options) (*Sandbox, error) {
	o.applyDefaults()
	if o.Timing.Window < 3*o.Timing.SampleInterval {
		return nil, fmt.Errorf("sandbox: the monitor window (%s) must hold at least 3 sample intervals (%s)", o.Timing.Window, o.Timing.SampleInterval)
	}
	// A service's input arrives in one burst per aggregator window: with
	// fewer than 4 of them per monitor window, a steady side can read half
	// the other side's rate (docs/monitor-core.md, Rules).
	if o.Timing.Window < 4*o.Timing.AggWindow {
		return nil, fmt.Errorf("sandbox: the monitor window (%s) must hold at least 4 aggregator windows (%s), or input_rate_low misreads the bursts of a steady side; use a window of %s or more",
			o.Timing.Window, o.Timing.AggWindow, 4*o.Timing.AggWindow)
	}
	if o.Dark && o.DarkBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: the dark pipeline's binary: %w (set DarkBinary)", err)
		}
		o.DarkBinary = exe
	}
	if o.DarkMultiplier < 0 || o.DarkMultiplier > 10 {
		return nil, fmt.Errorf("sandbox: the dark multiplier must be in (0, 10], got %g", o.DarkMultiplier)
	}
	s := &Sandbox{opts: o, log: o.Logger, clusters: map[string]*cluster{}, pipes: map[string]*pipeRun{},
		regs: newRegistries(), topics: contract.TopicsWithPrefix("")}
	s.faults = newFaults(s)
	s.monitors = newReplicas(s)
	if !o.Insecure {
		s.monitorCreds = &contract.Credentials{User: "hotpair-monitor", Password: secret()}
		s.operatorCreds = &contract.Credentials{User: "hotpair-operator", Password: secret()}
		sec, err := devsec.New()
		if err != nil {
			return nil, fmt.Errorf("sandbox: Kafka security: %w", err)
		}
		s.kafkaSec = sec
	}
	return s, nil
}

func secret() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Addresses returns where the parts listen (complete once Run reported ready).
func (s *Sandbox) Addresses() Addresses {
	a := Addresses{ZK: s.zkAddr, ZKRoot: s.opts.ZKRoot, HTTP: s.httpAddr}
	if c := s.clusters[contract.Primary.String()]; c != nil {
		a.PrimaryBrokers = c.brokers()
	}
	if c := s.clusters[contract.Standby.String()]; c != nil {
		a.StandbyBrokers = c.brokers()
	}
	if c := s.clusters[darkCluster]; c != nil {
		a.DarkBrokers = c.brokers()
	}
	if s.operatorCreds != nil {
		a.OperatorAuth = s.operatorCreds.Digest()
	}
	if s.kafkaSec != nil {
		a.KafkaSecurityProtocol, a.KafkaCAFile = "SASL_SSL", s.kafkaCAFile()
		a.KafkaSASLMechanism, a.KafkaSASLUsername, a.KafkaSASLPassword = s.kafkaSec.Mechanism, s.kafkaSec.User, s.kafkaSec.Password
	}
	return a
}

// Run starts every part in dependency order, calls ready once traffic flows,
// and runs until ctx ends; then it stops every part in reverse order and
// removes what it created.
func (s *Sandbox) Run(ctx context.Context, ready func(Addresses)) (err error) {
	s.ctx = ctx
	defer s.shutdown()
	for _, step := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"data directory", s.startDir},
		{"ZooKeeper", s.startZK},
		{"Kafka clusters", s.startClusters},
		{"pipelines", s.startPipelines},
		{"dark pipeline", s.startDark},
		{"ingest", s.startIngest},
		{"selector and views", s.startReadSide},
		{"HTTP", s.startHTTP},
		{"load generator", s.startLoad},
		// The monitors start once traffic flows, so that their first window
		// does not judge a side by a pipeline still starting up.
		{"monitors", s.startMonitors},
	} {
		s.log.Info("sandbox: starting " + step.name)
		if err := step.fn(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sandbox: %s: %w", step.name, err)
		}
	}
	s.started = time.Now()
	s.events.add(Event{Kind: EventInfo, Detail: "sandbox up: traffic flows to both sides"})
	if ready != nil {
		ready(s.Addresses())
	}
	<-ctx.Done()
	return nil
}

func (s *Sandbox) onStop(f func()) {
	s.mu.Lock()
	s.stop = append(s.stop, f)
	s.mu.Unlock()
}

func (s *Sandbox) shutdown() {
	s.faults.stopAll()
	s.mu.Lock()
	stops := s.stop
	s.stop = nil
	s.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// goRun runs fn in a goroutine until the sandbox stops, or until the
// returned function is called; stopping cancels its context and waits for
// it to return (once: later calls return at once).
func (s *Sandbox) goRun(name string, fn func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("sandbox: "+name+" stopped", "err", err)
		}
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			s.log.Error("sandbox: " + name + " did not stop within 30s")
		}
	})
	s.onStop(stop)
	return stop
}

func (s *Sandbox) startDir(context.Context) error {
	s.dir = s.opts.Dir
	if s.dir == "" {
		d, err := os.MkdirTemp("", "hotpair-sandbox-")
		if err != nil {
			return err
		}
		s.dir, s.tmpDir = d, true
		s.onStop(func() { _ = os.RemoveAll(d) })
	}
	return os.MkdirAll(s.dir, 0o755)
}

func (s *Sandbox) startZK(ctx context.Context) error {
	if s.opts.ZK != "" {
		s.zkAddr = s.opts.ZK
		return nil
	}
	srv, err := zkserver.Start(ctx, zkserver.Options{Dir: filepath.Join(s.dir, "zookeeper"), TickTime: 250 * time.Millisecond})
	if err != nil {
		return err
	}
	s.zk, s.zkAddr = srv, srv.Addr()
	s.onStop(func() { _ = srv.Stop() })
	return nil
}

func (s *Sandbox) startClusters(context.Context) error {
	var opts []kfake.Opt
	if sec := s.kafkaSec; sec != nil {
		if err := sec.WriteCA(s.kafkaCAFile()); err != nil {
			return err
		}
		if err := sec.WritePassword(s.kafkaPasswordFile()); err != nil {
			return err
		}
		opts = sec.ClusterOpts()
	}
	// Several dispatcher replicas use a session timeout scaled to the
	// lateness (dispatcherSessionTimeout), below Kafka's default minimum.
	opts = append(opts, kfake.GroupMinSessionTimeout(time.Second))
	names := []string{contract.Primary.String(), contract.Standby.String()}
	if s.opts.Dark {
		names = append(names, darkCluster)
	}
	for _, name := range names {
		c, err := startCluster(name, filepath.Join(s.dir, "kafka-"+name), opts...)
		if err != nil {
			return err
		}
		s.clusters[name] = c
		s.onStop(c.stop)
	}
	return nil
}

func (s *Sandbox) startPipelines(context.Context) error {
	for _, side := range contract.Sides() {
		if err := s.startPipeline(side.String(), ""); err != nil {
			return err
		}
	}
	s.onStop(func() {
		for _, side := range contract.Sides() {
			if run := s.pipeRunOf(side.String()); run != nil {
				run.halt()
			}
		}
	})
	return nil
}

// pipeRun is one side's running pipeline: its instances.
type pipeRun struct {
	ps   sidePipes
	stop context.CancelFunc
	done chan struct{} // closed when every instance has stopped
}

// halt stops the pipeline and waits for it.
func (r *pipeRun) halt() {
	r.stop()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
	}
}

// startPipeline starts a side's pipeline, as Options.Instances instances,
// reporting build ("" the binary's) in its health samples. Its metrics
// replace those of the side's previous pipeline, as restarted processes'
// would.
func (s *Sandbox) startPipeline(side, build string) error {
	t := s.opts.Timing
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.ctx))
	run := &pipeRun{stop: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	for i := range s.opts.Instances {
		name := "sandbox-" + side
		var reg prometheus.Registerer = s.regs.add("pipeline-" + side)
		if s.opts.Instances > 1 {
			name = fmt.Sprintf("sandbox-%s-%d", side, i+1)
			reg = prometheus.WrapRegistererWith(prometheus.Labels{"instance": name}, s.regs.add("pipeline-"+name))
		}
		p, err := pipeline.New(pipeline.Options{
			Brokers: s.clusters[side].brokers(), KafkaAuth: s.kafkaAuth(), Side: sideOf(side), Instance: name, Build: build,
			Partitions: s.opts.Partitions, Replication: 1, CreateTopics: true,
			Storage: statestore.Config{Backend: statestore.BackendMemory}, HotStandby: true,
			Window: t.AggWindow, Lateness: t.AggLateness, IdleClose: t.AggWindow,
			SampleInterval: t.SampleInterval,
			Registry:       &pipeline.RegistryOptions{Servers: []string{s.zkAddr}, Root: s.opts.ZKRoot, SessionTimeout: t.ZKSession},
			Logger:         s.log.With("instance", name), Registerer: reg,
		})
		if err != nil {
			cancel()
			return err
		}
		run.ps = append(run.ps, p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Run(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("sandbox: pipeline stopped", "side", side, "instance", name, "err", err)
			}
		}()
	}
	go func() { wg.Wait(); close(run.done) }()
	s.mu.Lock()
	s.pipes[side] = run
	s.mu.Unlock()
	return nil
}

// pipe returns a side's current pipeline instances.
func (s *Sandbox) pipe(side string) sidePipes { return s.pipeRunOf(side).ps }

func (s *Sandbox) pipeRunOf(side string) *pipeRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pipes[side]
}

// deploy restarts a side's pipeline on a new build label, as a rolling
// deploy of its instances would: the stages stop, start again and recover
// their state from the changelogs.
func (s *Sandbox) deploy(side, build string) error {
	s.pipeRunOf(side).halt()
	return s.startPipeline(side, build)
}

// sidePipes are the pipeline instances of one side.
type sidePipes []*pipeline.Pipeline

// Pause pauses (or resumes) the stage in every instance: the side's stage
// stalls as a whole.
func (ps sidePipes) Pause(stage string, paused bool) error {
	for _, p := range ps {
		if err := p.Pause(stageOf(stage), paused); err != nil {
			return err
		}
	}
	return nil
}

// Throttle caps the side's stage at perSecond input records (0 lifts the
// cap), shared evenly by the instances as they share the partitions.
func (ps sidePipes) Throttle(stage string, perSecond float64) error {
	for _, p := range ps {
		if err := p.Throttle(stageOf(stage), perSecond/float64(len(ps))); err != nil {
			return err
		}
	}
	return nil
}

// RestartStage kills the stage in one instance, the first.
func (ps sidePipes) RestartStage(stage string) error { return ps[0].RestartStage(stageOf(stage)) }

// Ready reports whether every instance is ready.
func (ps sidePipes) Ready() bool {
	for _, p := range ps {
		if !p.Ready() {
			return false
		}
	}
	return true
}

func (s *Sandbox) startIngest(context.Context) error {
	in, err := pipeline.NewIngester(pipeline.IngestOptions{
		Clusters: map[contract.Side][]string{
			contract.Primary: s.clusters[contract.Primary.String()].brokers(),
			contract.Standby: s.clusters[contract.Standby.String()].brokers(),
		},
		KafkaAuth: map[contract.Side]*contract.KafkaAuth{contract.Primary: s.kafkaAuth(), contract.Standby: s.kafkaAuth()},
		Buffer:    s.opts.IngestBuffer, DeliveryTimeout: 10 * time.Minute,
		OnLost: func(side contract.Side, r *kgo.Record, err error) {
			if l := s.loadGen(); l != nil {
				l.onLost(side.String(), r, err)
			}
		},
		Logger: s.log.With("component", "ingest"), Registerer: s.regs.add("ingest"),
	})
	if err != nil {
		return err
	}
	s.ingest = in
	s.onStop(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		in.Close(ctx)
	})
	return nil
}

func (s *Sandbox) loadGen() *loadGen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load
}

func (s *Sandbox) startMonitors(ctx context.Context) error {
	s.monitorsFrom = time.Now()
	if err := s.monitors.start(ctx); err != nil {
		return err
	}
	// Ready once a replica leads and every service has a selection.
	return s.waitUntil(ctx, time.Minute, "a monitor leading with every service decided", func() bool {
		_, m := s.monitors.leader()
		if m == nil {
			return false
		}
		for _, svc := range m.Status().Services {
			if svc.Selection == nil {
				return false
			}
		}
		return true
	})
}

// monitorConfig is the config of monitor replica i.
func (s *Sandbox) monitorConfig(i int) monitor.Config {
	t := s.opts.Timing
	c := monitor.DefaultConfig()
	c.ID = fmt.Sprintf("sandbox-monitor-%d", i+1)
	c.ZK.Servers, c.ZK.Root, c.ZK.SessionTimeout = []string{s.zkAddr}, s.opts.ZKRoot, t.ZKSession
	if s.monitorCreds != nil {
		c.ZK.Auth = s.monitorCreds.Digest()
		c.ZK.OperatorUser = monitor.DigestID(*s.operatorCreds)
	}
	c.Clusters.Primary.Brokers = s.clusters[contract.Primary.String()].brokers()
	c.Clusters.Standby.Brokers = s.clusters[contract.Standby.String()].brokers()
	if sec := s.kafkaSec; sec != nil { // as an operator configures it: files
		c.Clusters.Primary.Kafka = sec.Security(s.kafkaCAFile(), s.kafkaPasswordFile())
		c.Clusters.Standby.Kafka = sec.Security(s.kafkaCAFile(), s.kafkaPasswordFile())
	}
	c.HTTP.Listen = "off"
	c.Window, c.Decision.Grace = t.Window, t.Grace
	c.Rules.SampleInterval, c.Rules.PartitionGrace = t.SampleInterval, t.PartitionGrace
	c.Rules.LagLimit, c.Rules.CatchUpLag = t.LagLimit, t.CatchUpLag
	c.Stagger.Period = t.Hold
	c.Record.Replication = 1 // single-broker clusters
	// With a dark target, each replica runs a comparator; the leader's
	// section shows on the page, its report at /api/v1/dark.
	if s.opts.Dark {
		c.Dark.Enabled = true
		if sec := s.kafkaSec; sec != nil {
			c.Dark.DarkKafka = sec.Security(s.kafkaCAFile(), s.kafkaPasswordFile())
		}
		// Scaled to the sandbox's aggregator window, as the defaults are
		// to the 10 s default window (docs/dark.md): a round every half
		// window compares every window, and a target without a new
		// comparison for ten windows is stale (a dead dark target shows
		// as insufficient data within a scenario's time).
		c.Dark.Settle, c.Dark.MaxSkew = t.AggWindow/5, t.AggWindow/2
		c.Dark.Interval, c.Dark.Stale = t.AggWindow/2, 10*t.AggWindow
		// A difference waits for the gap rows of a replica's takeover, as
		// the default 20 s does for production's (twice the session
		// timeout and gap_after).
		c.Dark.Hold = 2 * (dispatcherSessionTimeout(t) + dispatcherGapAfter(t))
	}
	return c
}

func (s *Sandbox) startReadSide(ctx context.Context) error {
	reg := s.regs.add("read-side")
	log := s.log
	sel, err := selector.New([]string{s.zkAddr}, selector.WithRoot(s.opts.ZKRoot), selector.WithDefaultSide(contract.Primary),
		selector.WithSessionTimeout(s.opts.Timing.ZKSession), selector.WithLogger(log), selector.WithRegisterer(reg))
	if err != nil {
		return err
	}
	views, err := selector.NewViews(
		selector.WithCluster(contract.Primary, s.clusters[contract.Primary.String()].brokers()...),
		selector.WithCluster(contract.Standby, s.clusters[contract.Standby.String()].brokers()...),
		selector.WithKafkaAuth(contract.Primary, s.kafkaAuth()), selector.WithKafkaAuth(contract.Standby, s.kafkaAuth()),
		selector.WithLogger(log), selector.WithRegisterer(reg))
	if err != nil {
		return err
	}
	ret, err := selector.NewRetriever(views, sel, selector.WithLogger(log), selector.WithRegisterer(reg))
	if err != nil {
		return err
	}
	s.sel, s.views, s.ret = sel, views, ret
	s.goRun("selector", sel.Run)
	s.goRun("views", views.Run)
	s.goRun("selection watcher", s.watchSelection)
	s.goRun("verdict watcher", s.watchVerdicts)
	return nil
}

func (s *Sandbox) startLoad(ctx context.Context) error {
	rng := mrand.New(mrand.NewPCG(s.opts.Seed, 3))
	cs, err := newCampaigns(campaignZones, s.opts.Campaigns, s.opts.QPS, time.Now(), rng)
	if err != nil {
		return err
	}
	g := newLoadGen(cs, s.opts.QPS, s.opts.Day, s.topics, s.ingest, s.sel, s.ret, s.opts.Seed)
	s.mu.Lock()
	s.load = g
	s.mu.Unlock()
	g.writeBudgets()
	// Traffic starts once both sides run and have their budgets: a campaign
	// must not spend before its budget row is known.
	if err := s.waitUntil(ctx, 2*time.Minute, "both pipelines ready with every budget applied", s.budgetsApplied); err != nil {
		return err
	}
	s.goRun("load generator", func(ctx context.Context) error { g.run(ctx); return nil })
	return nil
}

// waitUntil polls cond every 100ms until it holds, ctx ends or timeout passes.
func (s *Sandbox) waitUntil(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("not %s within %s", what, timeout)
		case <-tick.C:
		}
	}
	return nil
}

// budgetsApplied reports whether both sides' pipelines have recovered and
// the views of both sides hold a budget status for every budgeted campaign.
func (s *Sandbox) budgetsApplied() bool {
	for _, side := range contract.Sides() {
		if !s.pipe(side.String()).Ready() {
			return false
		}
	}
	for _, c := range s.load.campaigns {
		if c.Budget == nil {
			continue
		}
		for _, side := range []contract.Side{contract.Primary, contract.Standby} {
			if a := s.views.Get(contract.ServiceBudget, c.ID, side); !a.Found || a.From != side {
				return false
			}
		}
	}
	return true
}

// registries collects the metrics of every part; each part registers on a
// registry of its own (two pipelines and two monitor replicas register the
// same metric names), and /metrics gathers them all.
type registries struct {
	mu   sync.Mutex
	regs map[string]*prometheus.Registry
}

func newRegistries() *registries {
	r := &registries{regs: map[string]*prometheus.Registry{}}
	proc := r.add("process")
	proc.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

func (r *registries) add(name string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	r.mu.Lock()
	r.regs[name] = reg
	r.mu.Unlock()
	return reg
}

// remove drops a registry: its series go, as a dead process's do.
func (r *registries) remove(name string) {
	r.mu.Lock()
	delete(r.regs, name)
	r.mu.Unlock()
}

// Gather implements prometheus.Gatherer over the current registries.
func (r *registries) Gather() ([]*dto.MetricFamily, error) {
	r.mu.Lock()
	gs := make(prometheus.Gatherers, 0, len(r.regs))
	for _, reg := range r.regs {
		gs = append(gs, reg)
	}
	r.mu.Unlock()
	return gs.Gather()
}

var errNoLocalZK = errors.New("sandbox: stop-zk and wipe-zk need the sandbox's own ZooKeeper (it was started with --zk)")

// kafkaCAFile and kafkaPasswordFile are where the sandbox writes the CA of
// its clusters' certificates and the SASL password (for the monitors'
// configs, which name files as an operator's would).
func (s *Sandbox) kafkaCAFile() string       { return filepath.Join(s.dir, "kafka-ca.pem") }
func (s *Sandbox) kafkaPasswordFile() string { return filepath.Join(s.dir, "kafka-password") }

// kafkaAuth is what the sandbox's own clients connect with (nil: insecure).
func (s *Sandbox) kafkaAuth() *contract.KafkaAuth {
	if s.kafkaSec == nil {
		return nil
	}
	return s.kafkaSec.Auth()
}

// kafkaCluster is a side's cluster (side by name) as clients reach it.
func (s *Sandbox) kafkaCluster(side string) kafka.Cluster {
	return kafka.Cluster{Name: side, Brokers: s.clusters[side].brokers(), Auth: s.kafkaAuth()}
}
