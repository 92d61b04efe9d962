package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/httpserver"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// Options configure a Monitor.
type Options struct {
	// Config is the daemon's configuration (LoadConfig, or DefaultConfig
	// with servers and brokers filled in).
	Config Config

	// Injected dependencies.

	// Logger receives the monitor's logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the monitor's metrics. Default: a new registry.
	// Two replicas in one process need a registry each.
	Registerer prometheus.Registerer
	// Gatherer serves /metrics. Default: Registerer when it is a Gatherer.
	Gatherer prometheus.Gatherer
	// KafkaOptions are extra franz-go options for every Kafka client of the
	// replica: the health consumers, the decision record's producers and readers.
	KafkaOptions []kgo.Opt
}

// Monitor is one monitor replica: it consumes hotpair-health of both
// clusters, evaluates every window, takes part in the leader election and,
// while it leads, publishes every service's selection to ZooKeeper.
//
// Lifecycle: Run runs until its ctx ends. Cancelling ctx is a clean stop:
// the ZooKeeper session is closed, so the replica's election node goes at
// once and a follower takes over within moments. Kill is a crash: the
// connection is cut without closing the session, so the node stays until
// ZooKeeper expires the session (zk.session_timeout) and only then does a
// follower take over. A Monitor runs once.
type Monitor struct {
	cfg    Config
	id     string
	log    *slog.Logger
	m      *metrics
	gather prometheus.Gatherer
	paths  contract.Paths
	creds  *contract.Credentials
	policy ACLPolicy
	kopts  []kgo.Opt
	// clusters are both sides' Kafka clusters, primary first.
	clusters [2]kafka.Cluster
	hist     *history
	// dark is the dark canary's comparator replica (nil unless dark.enabled).
	dark *compare.Comparator

	steps     atomic.Uint64
	leader    atomic.Pointer[leadership]
	zkUp      atomic.Bool
	evaluated atomic.Bool
	snap      atomic.Pointer[snapshot]
	pub       atomic.Pointer[publisher]
	httpAddr  atomic.Pointer[string]

	ran     atomic.Bool
	dialer  cutDialer
	killMu  sync.Mutex
	killed  bool
	stopRun context.CancelFunc

	// changes tells waiters (tests, embedders) that the replica's state
	// changed: its session, its leadership, a sample merged, a window
	// evaluated, a publication.
	changes changes.Feed

	ovMu      sync.Mutex
	overrides map[contract.Service]*contract.Override
	ovPoke    chan struct{}
}

// New validates the options and returns a Monitor ready to Run.
func New(o Options) (*Monitor, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	creds, err := o.Config.ZK.credentials()
	if err != nil {
		return nil, err
	}
	clusters, err := o.Config.kafkaClusters()
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		r := prometheus.NewRegistry()
		o.Registerer, o.Gatherer = r, r
	}
	if o.Gatherer == nil {
		g, ok := o.Registerer.(prometheus.Gatherer)
		if !ok {
			return nil, errors.New("monitor: Options.Gatherer is required when Options.Registerer is not a Gatherer")
		}
		o.Gatherer = g
	}
	id := o.Config.ID
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	mon := &Monitor{
		cfg: o.Config, id: id, log: o.Logger.With("replica", id), gather: o.Gatherer,
		paths: contract.NewPaths(o.Config.ZK.Root), creds: creds, policy: o.Config.policy(creds),
		kopts: o.KafkaOptions, clusters: clusters, hist: newHistory(o.Config.History), ovPoke: make(chan struct{}, 1),
	}
	mon.m = newMetrics(o.Registerer, func() float64 { return float64(mon.steps.Load()) })
	mon.m.initCounters(o.Config.services())
	latest := map[[2]string]time.Time{} // owned by the history's lock
	mon.hist.onDecision = func(e *decisions.Entry) {
		if k := [2]string{e.Service.String(), e.Label()}; e.At.After(latest[k]) {
			latest[k] = e.At
			mon.m.decisionLast.WithLabelValues(k[0], k[1]).Set(float64(e.At.UnixNano()) / 1e9)
		}
	}
	if o.Config.Dark.Enabled {
		mon.dark, err = compare.New(compare.Options{Config: o.Config.compareConfig(), ZKAuth: creds,
			Logger: o.Logger.With("component", "dark-compare"), Registerer: o.Registerer, KafkaOptions: o.KafkaOptions})
		if err != nil {
			return nil, fmt.Errorf("%w: dark: %w", ErrConfig, err)
		}
	}
	mon.leader.Store(&leadership{})
	return mon, nil
}

// ID is the replica's name in the election and the logs.
func (m *Monitor) ID() string { return m.id }

// IsLeader reports whether this replica leads (and so is the one writer).
func (m *Monitor) IsLeader() bool { return m.leader.Load().Leader }

// Changed returns a channel closed at the replica's next change of state:
// its session, its leadership, a sample merged, a window evaluated, a
// publication. A waiter (the sandbox, tests) takes it, checks what it waits
// for, and waits on it to check again: no change is missed, nothing polls.
func (m *Monitor) Changed() <-chan struct{} { return m.changes.Next() }

// Ready reports whether the replica has a usable ZooKeeper session and has
// evaluated at least one window.
func (m *Monitor) Ready() bool { return m.zkUp.Load() && m.evaluated.Load() }

// HTTPAddr is the address the HTTP endpoint listens on once Run started it
// ("" before, or with http.listen off).
func (m *Monitor) HTTPAddr() string {
	if p := m.httpAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// Kill stops the replica the way a crash would: its ZooKeeper connection is
// cut without closing the session (the election node stays until the
// session expires), and Run returns ErrKilled. For fault injection.
func (m *Monitor) Kill() {
	m.killMu.Lock()
	defer m.killMu.Unlock()
	m.killed = true
	m.dialer.cut()
	if m.stopRun != nil {
		m.stopRun()
	}
}

// Run runs the replica until ctx ends (nil error), Kill (ErrKilled), or a
// fatal error: the HTTP address cannot be bound or serving it fails, or
// ZooKeeper's ACLs refuse the monitor identity (ErrACL). A ZooKeeper or
// Kafka outage is not fatal: the replica keeps evaluating and catches up
// when they return.
func (m *Monitor) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return errors.New("monitor: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess, err := zkutil.Open(zkutil.Options{Servers: m.cfg.ZK.Servers, SessionTimeout: m.cfg.ZK.SessionTimeout,
		Auth: m.creds, OnState: m.onZKState, Dialer: m.dialer.dial, Logger: m.log})
	if err != nil {
		return fmt.Errorf("monitor: connecting to ZooKeeper: %w", err)
	}
	m.killMu.Lock()
	m.stopRun = cancel
	if m.killed {
		cancel()
	}
	m.killMu.Unlock()

	var srv *httpserver.Server
	if m.cfg.HTTP.Listen != "off" {
		if srv, err = httpserver.Listen(m.cfg.HTTP.Listen, m.Handler()); err != nil {
			sess.Close()
			return fmt.Errorf("monitor: http.listen: %w", err)
		}
		addr := srv.Addr().String()
		m.httpAddr.Store(&addr)
	}
	// One slot per goroutine that may fail (layout, the record, four
	// readers, HTTP), so none blocks once Run stopped reading.
	fatal := make(chan error, 8)
	var wg sync.WaitGroup
	m.start(ctx, &wg, sess, fatal)
	if m.dark != nil {
		wg.Go(func() {
			if err := m.dark.Run(ctx); err != nil {
				m.log.Error("the dark comparator stopped", "err", err)
			}
		})
	}
	if srv != nil {
		wg.Go(func() {
			if err := srv.Serve(ctx); err != nil {
				fatal <- fmt.Errorf("monitor: %w", err)
			}
		})
	}
	m.log.Info("monitor started", "zk", m.cfg.ZK.Servers, "root", m.paths.Root, "window", m.cfg.Window,
		"acl", m.policy.Enabled(), "http", m.HTTPAddr())
	select {
	case <-ctx.Done():
	case err = <-fatal:
	}
	cancel()
	wg.Wait()
	sess.Close()
	m.m.leader.Set(0)
	m.m.zkConnected.Set(0)
	m.killMu.Lock()
	killed := m.killed
	m.killMu.Unlock()
	switch {
	case err != nil:
		m.log.Error("monitor stopped", "err", err)
		return err
	case killed:
		m.log.Warn("monitor killed")
		return ErrKilled
	}
	m.log.Info("monitor stopped")
	return nil
}

// start starts every goroutine of a run, in dependency order: the session,
// the decision record's writer, the layout then the election, the
// publisher and override watcher, the readers of health samples and of the
// decision record, and the evaluation loop.
func (m *Monitor) start(ctx context.Context, wg *sync.WaitGroup, sess *zkutil.Session, fatal chan<- error) {
	begin := time.Now()
	engine, err := core.NewEngine(m.cfg.Config, begin)
	if err != nil {
		fatal <- err // Validate in New makes this unreachable
		return
	}
	restores := make(chan restoreMsg, 4)
	samples := make(chan received, 1024)
	retry := min(time.Second, m.cfg.Window/2)
	rec, err := newRecorder(m, retry)
	if err != nil {
		fatal <- fmt.Errorf("monitor: decision record: %w", err)
		return
	}
	wg.Go(func() { rec.run(ctx) })
	pub := newPublisher(&publisher{s: sess, paths: m.paths, acl: m.policy.Selection(), services: m.cfg.services(),
		window: m.cfg.Window, retry: retry, log: m.log, m: m.m, rec: rec,
		leader: func() leadership { return *m.leader.Load() }, restore: restores, changes: &m.changes})
	m.pub.Store(pub)
	el := &election{s: sess, dir: m.paths.LeaderDir(), data: m.candidateData(), acl: m.policy.Selection(),
		log: m.log, retry: retry, report: func(l leadership) { m.setLeadership(l); pub.poke() }}
	ow := &overrideWatcher{s: sess, paths: m.paths, services: m.cfg.services(), log: m.log, retry: retry,
		notify: m.setOverrides}

	laidOut := make(chan struct{})
	wg.Go(func() {
		if err := m.layout(ctx, sess, retry, laidOut); err != nil {
			fatal <- err
		}
	})
	wg.Go(func() {
		select {
		case <-laidOut:
			el.run(ctx)
		case <-ctx.Done():
		}
	})
	wg.Go(func() { pub.run(ctx) })
	wg.Go(func() { ow.run(ctx) })
	for i, cl := range m.clusters {
		side := contract.Sides()[i]
		for _, t := range []*tail{m.healthTail(side, cl, begin, samples),
			m.recordTail(side, cl, begin.Add(-m.cfg.History.Retention))} {
			wg.Go(func() {
				if err := t.run(ctx); err != nil {
					fatal <- fmt.Errorf("monitor: reading %s of %s: %w", t.what, side, err)
				}
			})
		}
	}
	ev := &evaluator{m: m, engine: engine, pub: pub, samples: samples, restores: restores}
	wg.Go(func() { ev.run(ctx) })
}

// layout creates the znode layout in every session, once it is usable: at
// start, and again after an expiry or a new session (an ensemble rebuilt
// empty has none, and the election and the publisher create their znodes
// in it). laidOut is closed once the first layout exists. A failure is
// retried while the session lasts; a refusal by ZooKeeper's ACLs is fatal:
// it will not fix itself.
func (m *Monitor) layout(ctx context.Context, sess *zkutil.Session, retry time.Duration, laidOut chan<- struct{}) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	first := sync.OnceFunc(func() { close(laidOut) })
	sess.EachSession(ctx, func() {
		for ctx.Err() == nil && sess.Usable() {
			err := ensureLayout(sess.Conn(), m.paths, m.policy, m.cfg.services())
			switch {
			case err == nil:
				first()
				return
			case errors.Is(err, ErrACL):
				stop(err)
				return
			}
			m.log.Warn("creating the znode layout failed; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(retry):
			}
		}
	})
	if err := context.Cause(ctx); errors.Is(err, ErrACL) {
		return err
	}
	return nil
}

func (m *Monitor) candidateData() []byte {
	c := Candidate{ID: m.id, Since: time.Now().UTC()}
	if l := m.cfg.HTTP.Listen; l != "off" {
		host, port, _ := net.SplitHostPort(l)
		if host == "" || host == "0.0.0.0" || host == "::" {
			host, _ = os.Hostname()
		}
		c.HTTP = net.JoinHostPort(host, port)
	}
	b, _ := json.Marshal(c)
	return b
}

// onZKState runs on the library's event goroutine: it must not block.
func (m *Monitor) onZKState(ev zk.Event) {
	switch ev.State {
	case zk.StateExpired:
		m.log.Warn("ZooKeeper session expired; a new session is being opened", "server", ev.Server)
	case zk.StateDisconnected:
		m.log.Info("ZooKeeper disconnected", "server", ev.Server)
	case zk.StateHasSession:
		m.log.Info("ZooKeeper session established", "server", ev.Server)
	}
	up := ev.State == zk.StateHasSession
	m.zkUp.Store(up)
	m.m.zkConnected.Set(b2f(up))
	m.changes.Notify()
}

func (m *Monitor) setLeadership(l leadership) {
	prev := m.leader.Swap(&l)
	m.m.leader.Set(b2f(l.Leader))
	defer m.changes.Notify()
	if prev.Leader != l.Leader {
		if l.Leader {
			m.log.Info("this replica now leads the monitors", "node", l.Node, "term", l.Term)
		} else {
			m.log.Warn("this replica no longer leads the monitors", "node", prev.Node)
		}
	}
}

func (m *Monitor) setOverrides(o map[contract.Service]*contract.Override) {
	m.ovMu.Lock()
	m.overrides = o
	m.ovMu.Unlock()
	select {
	case m.ovPoke <- struct{}{}:
	default:
	}
}

func (m *Monitor) currentOverrides() map[contract.Service]*contract.Override {
	m.ovMu.Lock()
	defer m.ovMu.Unlock()
	return m.overrides
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
