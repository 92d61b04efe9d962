package compare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/httpserver"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// Options configure a Comparator.
type Options struct {
	// Config is the comparator's configuration (LoadConfig, or
	// DefaultConfig with clusters and targets filled in).
	Config Config
	// ZKAuth, when set, is the ZooKeeper identity instead of Config.ZK.Auth
	// (an embedder that read its own, such as the monitor).
	ZKAuth *contract.Credentials

	// Injected dependencies.

	// Logger receives the comparator's logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the hotpair_dark_* metrics. Default: a new registry.
	Registerer prometheus.Registerer
	// Gatherer serves /metrics on the comparator's own listener. Default:
	// Registerer when it is a Gatherer.
	Gatherer prometheus.Gatherer
	// KafkaOptions are extra franz-go options for every Kafka client.
	KafkaOptions []kgo.Opt
}

// Comparator is the dark comparison daemon: it reads the outputs and the
// health samples of both live sides and every dark target (and the
// target's budgets table: the campaigns it was sent), runs a
// comparison round every interval and keeps the latest Report. A
// Comparator runs once; cancelling Run's ctx stops it.
type Comparator struct {
	cfg      Config
	log      *slog.Logger
	m        *metrics
	gather   prometheus.Gatherer
	kopts    []kgo.Opt
	live     [2]kafka.Cluster
	liveT    contract.Topics
	darkAuth *contract.KafkaAuth
	static   map[string]targetSpec
	zkCreds  *contract.Credentials

	mu     sync.Mutex // owns engine
	engine *Engine

	report   atomic.Pointer[Report]
	httpAddr atomic.Pointer[string]
	ran      atomic.Bool
	// changes tells waiters (tests, embedders) that a round ran.
	changes changes.Feed
}

// targetSpec is a dark target as the readers need it.
type targetSpec struct {
	Target
	cluster kafka.Cluster
}

// New validates the options and returns a Comparator ready to Run.
func New(o Options) (*Comparator, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	live, err := o.Config.clusters()
	if err != nil {
		return nil, err
	}
	darkAuth, err := o.Config.DarkKafka.Load("dark_kafka.", nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	creds, _ := contract.ParseCredentials(o.Config.ZK.Auth) // validated
	if o.ZKAuth != nil {
		creds = o.ZKAuth
	}
	static := map[string]targetSpec{}
	for i, t := range o.Config.Targets {
		cl, err := kafka.Load(t.KafkaCluster, "dark "+t.Name, fmt.Sprintf("targets[%d].", i))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		src := contract.Primary
		if t.Source != "" {
			src, _ = contract.ParseSide(t.Source)
		}
		static[t.Name] = targetSpec{Target{t.Name, src}, cl}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		r := prometheus.NewRegistry()
		o.Registerer, o.Gatherer = r, r
	}
	if o.Gatherer == nil {
		o.Gatherer, _ = o.Registerer.(prometheus.Gatherer)
	}
	c := &Comparator{cfg: o.Config, log: o.Logger, m: newMetrics(o.Registerer), gather: o.Gatherer, kopts: o.KafkaOptions,
		live: live, liveT: contract.TopicsWithPrefix(o.Config.TopicPrefix), darkAuth: darkAuth, static: static, zkCreds: creds,
		engine: NewEngine(o.Config.Rules)}
	rep := c.engine.Report(time.Now())
	c.report.Store(&rep)
	return c, nil
}

// Report returns the latest round's report.
func (c *Comparator) Report() Report { return *c.report.Load() }

// Changes returns a channel closed at the next round.
func (c *Comparator) Changes() <-chan struct{} { return c.changes.Next() }

// Until waits until cond holds on the latest report, checking after every
// round, or until ctx ends.
func (c *Comparator) Until(ctx context.Context, cond func(Report) bool) error {
	return c.changes.Until(ctx, func() bool { return cond(c.Report()) })
}

// HTTPAddr is the address the comparator serves on, once Run listens ("" before).
func (c *Comparator) HTTPAddr() string {
	if p := c.httpAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// Run reads, compares and serves until ctx ends. Order: the HTTP listener
// (a bad address fails Run at once), the live readers, then every interval
// the target list (ZooKeeper and config) with a reader per target, and a
// round.
func (c *Comparator) Run(ctx context.Context) error {
	if c.ran.Swap(true) {
		return errors.New("compare: a Comparator runs once")
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: every reader and the server stop first
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.cfg.HTTP.Listen != "off" {
		srv, err := httpserver.Listen(c.cfg.HTTP.Listen, c.Handler())
		if err != nil {
			return fmt.Errorf("compare: http.listen: %w", err)
		}
		addr := srv.Addr().String()
		c.httpAddr.Store(&addr)
		c.log.Info("comparator serving /, /api/v1/dark, /metrics and /healthz", "http", addr)
		wg.Go(func() {
			if err := srv.Serve(ctx); err != nil {
				c.log.Error("the HTTP server stopped", "err", err)
			}
		})
	}
	for i, cl := range c.live {
		src := Live(contract.Sides()[i])
		wg.Go(func() { c.read(ctx, src, cl, c.liveT) })
	}
	var sess *zkutil.Session
	if len(c.cfg.ZK.Servers) > 0 {
		s, err := zkutil.Open(zkutil.Options{Servers: c.cfg.ZK.Servers, SessionTimeout: c.cfg.ZK.SessionTimeout, Auth: c.zkCreds, Logger: c.log})
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		defer s.Close()
		sess = s
		// Give the first session a moment, so that the first round knows
		// the targets; a ZooKeeper that is down only delays them.
		wctx, wcancel := context.WithTimeout(ctx, c.cfg.ZK.SessionTimeout)
		_ = sess.WaitUsable(wctx)
		wcancel()
	}
	readers := map[string]*targetReader{}
	defer func() {
		for _, r := range readers {
			r.stop()
		}
	}()
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	for {
		targets := c.targets(sess, readers)
		c.setTargets(targets) // before their readers: a target's budgets are read once
		c.follow(ctx, &wg, targets, readers)
		c.round()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// targetReader reads one dark target's topics until stopped.
type targetReader struct {
	spec targetSpec
	stop context.CancelFunc
}

// follow starts a reader for every new target (or one whose brokers
// changed) and stops the readers of targets that went away.
func (c *Comparator) follow(ctx context.Context, wg *sync.WaitGroup, targets []targetSpec, readers map[string]*targetReader) {
	for _, t := range targets {
		if r, ok := readers[t.Name]; ok && slices.Equal(r.spec.cluster.Brokers, t.cluster.Brokers) {
			continue
		} else if ok {
			r.stop()
		}
		rctx, stop := context.WithCancel(ctx)
		readers[t.Name] = &targetReader{spec: t, stop: stop}
		c.log.Info("comparing a dark target", "target", t.Name, "source", t.Source, "brokers", t.cluster.Brokers)
		topics := contract.TopicsWithPrefix(contract.DarkPrefix(t.Name))
		wg.Go(func() { c.read(rctx, Dark(t.Name), t.cluster, topics) })
		wg.Go(func() { c.readSampled(rctx, t.Name, t.cluster, topics) })
	}
	for name, r := range readers {
		if !slices.ContainsFunc(targets, func(t targetSpec) bool { return t.Name == name }) {
			c.log.Info("no longer comparing a dark target", "target", name)
			r.stop()
			delete(readers, name)
		}
	}
}

// setTargets tells the engine the targets to judge.
func (c *Comparator) setTargets(targets []targetSpec) {
	ts := make([]Target, len(targets))
	for i, t := range targets {
		ts[i] = t.Target
	}
	c.mu.Lock()
	c.engine.SetTargets(ts)
	c.mu.Unlock()
}

// round runs one comparison round and publishes its report.
func (c *Comparator) round() {
	now := time.Now()
	c.mu.Lock()
	c.engine.Round(now)
	rep := c.engine.Report(now)
	c.mu.Unlock()
	c.report.Store(&rep)
	c.m.update(rep)
	c.changes.Notify()
}

// read follows one pipeline's outputs and health from the horizon's start.
func (c *Comparator) read(ctx context.Context, src Source, cl kafka.Cluster, t contract.Topics) {
	topics := map[string]string{t.BudgetStatus: outdiff.BudgetStatus, t.Pacing: outdiff.Pacing, t.BidMultipliers: outdiff.BidMultipliers, t.Health: ""}
	from := time.Now().Add(-c.cfg.Horizon)
	c.poll(ctx, src, cl, readTopics(t), kgo.NewOffset().AfterMilli(from.UnixMilli()),
		func(r *kgo.Record, at time.Time) error {
			if r.Topic == t.Health {
				s, err := contract.DecodeHealthSample(r.Value)
				if err == nil {
					c.engine.ObserveHealth(src, s, at)
				}
				return err
			}
			if r.Value == nil {
				return nil
			}
			return c.engine.ObserveOutput(src, topics[r.Topic], string(r.Key), r.Value, at)
		})
}

// readSampled follows a dark target's budgets table from its start: its
// keys are the campaigns the dispatcher sent it, each with the time its row
// was written (a row is sent once, when the campaign goes dark, so the table
// is read whole, not from the horizon). It is compacted: one row per
// sampled campaign.
func (c *Comparator) readSampled(ctx context.Context, target string, cl kafka.Cluster, t contract.Topics) {
	c.poll(ctx, Dark(target), cl, []string{t.Budgets}, kgo.NewOffset().AtStart(), func(r *kgo.Record, _ time.Time) error {
		var reason contract.DarkRowReason // none: an older dispatcher's row
		for _, h := range r.Headers {
			if h.Key == contract.HeaderDarkRow {
				reason, _ = contract.ParseDarkRowReason(h.Value)
			}
		}
		c.engine.ObserveSampled(target, string(r.Key), r.Value, reason, r.Timestamp)
		return nil
	})
}

// poll reads topics of a pipeline from reset until ctx ends, handing every
// record to observe under the engine's lock with the time it was received.
func (c *Comparator) poll(ctx context.Context, src Source, cl kafka.Cluster, topics []string, reset kgo.Offset,
	observe func(r *kgo.Record, at time.Time) error) {
	opts := append([]kgo.Opt{kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(reset)}, c.kopts...)
	client, err := kafka.NewClient(cl, "hotpair-dark-compare", opts...)
	label := src.String()
	if err != nil {
		c.log.Error("cannot read a pipeline", "pipeline", label, "topics", topics, "err", err)
		return
	}
	defer client.Close()
	log, errs := c.log.With("pipeline", label), &kafka.ErrorLog{}
	for {
		fs := client.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) { c.fetchError(log, errs, label, topic, p, err) })
		at := time.Now()
		c.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			c.m.records.WithLabelValues(label).Inc()
			if observe(r, at) != nil {
				c.m.badRecords.WithLabelValues(label).Inc()
			}
		})
		c.mu.Unlock()
	}
}

// fetchError counts a failed read of a pipeline's topic and logs it at
// WARN once per change of the partition's error (a refusal recurs at every
// metadata refresh). A refusal (reason not_authorized: the user lacks
// an ACL of LiveKafkaACLs or TargetKafkaACLs) is logged naming what to
// grant.
func (c *Comparator) fetchError(log *slog.Logger, errs *kafka.ErrorLog, pipeline, topic string, p int32, err error) {
	reason, msg := "fetch_failed", "compare: reading a pipeline's topic"
	if kafka.NotAuthorized(err) {
		reason, msg = "not_authorized", "compare: not authorized to read a topic: grant Read on it to the comparator's Kafka user (docs/dark.md)"
	}
	c.m.readErrors.WithLabelValues(pipeline, reason).Inc()
	errs.Note(log, msg, topic, p, err)
}

// targets returns the targets to judge: the config's, and the enabled
// documents under /dark in ZooKeeper. When ZooKeeper cannot be read the
// targets being read stay (logged and counted), so a ZooKeeper outage does
// not empty the report.
func (c *Comparator) targets(sess *zkutil.Session, readers map[string]*targetReader) []targetSpec {
	var out []targetSpec
	for _, t := range c.static {
		out = append(out, t)
	}
	if sess != nil {
		docs, err := c.readTargets(sess)
		if err != nil {
			c.m.zkErrors.Inc()
			c.log.Warn("cannot read the dark targets from ZooKeeper: keeping the ones being compared", "err", err)
			for name, r := range readers {
				if _, ok := c.static[name]; !ok {
					out = append(out, r.spec)
				}
			}
		}
		for _, d := range docs {
			if _, ok := c.static[d.Name]; !ok {
				out = append(out, targetSpec{Target{d.Name, d.Source}, kafka.Cluster{Name: "dark " + d.Name, Brokers: d.Brokers, Auth: c.darkAuth}})
			}
		}
	}
	slices.SortFunc(out, func(a, b targetSpec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readTargets reads every active dark target document.
func (c *Comparator) readTargets(sess *zkutil.Session) ([]contract.DarkTarget, error) {
	if !sess.Usable() {
		return nil, errors.New("no ZooKeeper session")
	}
	paths := contract.NewPaths(c.cfg.ZK.Root)
	names, _, err := sess.Conn().Children(paths.DarkDir())
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		return nil, err
	}
	now := time.Now()
	var out []contract.DarkTarget
	for _, name := range names {
		b, _, err := sess.Conn().Get(paths.Dark(name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		d, err := contract.DecodeDarkTarget(b)
		if err != nil {
			c.log.Warn("ignoring a dark target document that does not decode", "path", paths.Dark(name), "err", err)
			continue
		}
		if d.ActiveAt(now) {
			out = append(out, d)
		}
	}
	return out, nil
}
