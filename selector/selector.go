package selector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// Selector watches the selection znode of every configured service and keeps
// the last good decisions in an immutable Snapshot behind an atomic pointer.
//
// Before a service's selection has been read it answers the default side
// (Snapshot.IsDefault says so). While ZooKeeper is unreachable or the session
// has expired it keeps answering the last good snapshot (fail static); once a
// session is back it reads every znode again and sets new watches, so a
// change made meanwhile is seen. A malformed or deleted znode is counted and
// logged, and never changes a side.
type Selector struct {
	cfg     cfg
	paths   contract.Paths
	log     *slog.Logger
	m       *metrics
	started time.Time
	running atomic.Bool

	snap    atomic.Pointer[Snapshot]
	changes changes.Feed // every read applied and every session event

	mu      sync.Mutex // guards below, and every store to snap
	watched [contract.NumServices + 1]bool
	state   [contract.NumServices + 1]watchState
	up      bool          // the session is established
	upFlip  chan struct{} // closed and replaced whenever up flips
	closing bool          // Run is ending: losing the session is expected
}

// watchState is the watcher's knowledge of one service, besides the snapshot.
type watchState struct {
	zn znodeState
	// fresh: the session is up, a watch is set and the snapshot holds what the
	// znode holds. staleSince is when it last stopped being so (the start
	// time before the first read).
	fresh      bool
	staleSince time.Time
}

// zkReader is the part of a ZooKeeper session the watcher uses.
type zkReader interface {
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
}

// New returns a Selector of the ZooKeeper ensemble servers ("host:port").
// It answers the default side until Run has read the selections.
func New(servers []string, opts ...Option) (*Selector, error) {
	c := defaultCfg()
	c.servers = servers
	for _, o := range opts {
		o.applySelector(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &Selector{
		cfg:     c,
		paths:   contract.NewPaths(c.root),
		log:     c.logger.With("component", "selector"),
		started: c.now(),
		upFlip:  make(chan struct{}),
	}
	s.snap.Store(newDefaultSnapshot(c.defaultSide))
	for _, svc := range c.services {
		s.watched[svc] = true
		s.state[svc].staleSince = s.started
	}
	s.m = newMetrics(c.reg, c.services, func(svc contract.Service) float64 { return s.age(svc, c.now()).Seconds() })
	for _, svc := range c.services {
		s.m.setSide(svc, c.defaultSide, -1, true)
	}
	return s, nil
}

// Active returns the side to read svc from. It never blocks and does not
// allocate; an unset or unwatched service answers the default side.
func (s *Selector) Active(svc contract.Service) contract.Side { return s.snap.Load().Active(svc) }

// ActiveByName is Active for a service name ("budget", "pacer", "bidder");
// an unknown name answers the default side.
func (s *Selector) ActiveByName(service string) contract.Side {
	return s.snap.Load().Active(contract.ServiceByName(service))
}

// Snapshot returns the current snapshot.
func (s *Selector) Snapshot() *Snapshot { return s.snap.Load() }

// Tag returns the current snapshot as a request tag.
func (s *Selector) Tag() Tag { return s.snap.Load().tag }

// Ready reports whether every watched service has a selection read from
// ZooKeeper (it stays true through later outages: fail static).
func (s *Selector) Ready() bool {
	snap := s.snap.Load()
	for _, svc := range s.cfg.services {
		if snap.IsDefault(svc) {
			return false
		}
	}
	return true
}

// Run connects to ZooKeeper and keeps the snapshot current until ctx is
// done. It returns nil after ctx is done, or ErrAlreadyRunning.
func (s *Selector) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	sess, err := s.connect(ctx)
	if err != nil {
		return nil // ctx ended before a session could be opened
	}
	var wg sync.WaitGroup
	for _, svc := range s.cfg.services {
		wg.Go(func() { s.watch(ctx, func() zkReader { return sess.Conn() }, svc) })
	}
	<-ctx.Done()
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	sess.Close() // fails reads in flight, so the watch loops can end
	wg.Wait()
	s.setSession(false, s.cfg.now())
	return nil
}

// connect opens the session, retrying until ctx is done: opening only fails
// when no server name resolves, and the snapshot serves meanwhile.
func (s *Selector) connect(ctx context.Context) (*zkutil.Session, error) {
	delay := s.cfg.retryMin
	for {
		sess, err := zkutil.Open(zkutil.Options{
			Servers: s.cfg.servers, SessionTimeout: s.cfg.sessionTimeout, Auth: s.cfg.auth,
			OnState: s.onEvent, Logger: s.log,
		})
		if err == nil {
			return sess, nil
		}
		s.log.Error("selector: cannot open a ZooKeeper session; serving the last snapshot", "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, s.cfg.retryMax)
	}
}

// onEvent sees every session event on the library's event goroutine (a
// session is established once the identity, if any, is added); it only
// updates state under s.mu and never calls into the session.
func (s *Selector) onEvent(ev zk.Event) {
	defer s.changes.Notify()
	now := s.cfg.now()
	switch ev.State {
	case zk.StateHasSession:
		s.setSession(true, now)
	case zk.StateExpired:
		s.m.expirations.Inc()
		s.log.Warn("selector: ZooKeeper session expired; serving the last snapshot until a new session has read the selections again")
		s.setSession(false, now)
	case zk.StateDisconnected:
		s.setSession(false, now)
	case zk.StateAuthFailed:
		s.log.Error("selector: ZooKeeper authentication failed")
	}
}

// setSession records that the session is up or down. Going down makes every
// service stale from now; each watch loop wakes up to read again once it is
// back.
func (s *Selector) setSession(up bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up == up {
		return
	}
	s.up = up
	close(s.upFlip)
	s.upFlip = make(chan struct{})
	if up {
		s.m.connected.Set(1)
		s.log.Info("selector: ZooKeeper session established; reading the selections")
		return
	}
	s.m.connected.Set(0)
	for i := range s.state {
		if s.state[i].fresh {
			s.state[i].fresh, s.state[i].staleSince = false, now
		}
	}
	if !s.closing {
		s.log.Warn("selector: ZooKeeper session lost; serving the last snapshot (fail static)")
	}
}

func (s *Selector) session() (up bool, flip <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up, s.upFlip
}

// watch keeps svc's entry of the snapshot current: while the session is up
// it reads the znode and sets a watch, and reads again when the watch fires
// or the session goes away and comes back.
func (s *Selector) watch(ctx context.Context, conn func() zkReader, svc contract.Service) {
	path := s.paths.Selection(svc)
	delay := s.cfg.retryMin
	for ctx.Err() == nil {
		up, flip := s.session()
		if !up {
			select {
			case <-flip:
			case <-ctx.Done():
			}
			continue
		}
		events, err := s.readAndApply(conn(), svc, path)
		if err != nil {
			if ctx.Err() == nil {
				s.m.readErrors.WithLabelValues(svc.String()).Inc()
				s.log.Warn("selector: reading a selection failed; retrying", "service", svc.String(), "path", path, "err", err, "retry_in", delay)
			}
			select {
			case <-flip:
			case <-time.After(delay):
			case <-ctx.Done():
			}
			delay = min(2*delay, s.cfg.retryMax)
			continue
		}
		delay = s.cfg.retryMin
		select {
		case <-events: // changed, deleted, created, or the watch ended with the session
		case <-flip: // session lost (wait for it) or regained (read again)
		case <-ctx.Done():
		}
	}
}

var closedEvents = func() chan zk.Event { c := make(chan zk.Event); close(c); return c }()

// readAndApply reads svc's znode with a watch and applies what it read.
func (s *Selector) readAndApply(conn zkReader, svc contract.Service, path string) (<-chan zk.Event, error) {
	data, stat, events, err := conn.GetW(path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		exists, _, ev, err := conn.ExistsW(path)
		if err != nil {
			return nil, err
		}
		if exists {
			return closedEvents, nil // created in between: read it
		}
		s.apply(svc, read{}, s.cfg.now())
		return ev, nil
	case err != nil:
		return nil, err
	}
	s.apply(svc, read{exists: true, mzxid: stat.Mzxid, data: data}, s.cfg.now())
	return events, nil
}

// apply carries out judge's verdict on one read.
func (s *Selector) apply(svc contract.Service, r read, now time.Time) {
	defer s.changes.Notify()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.state[svc]
	zn, v, doc, side, err := judge(st.zn, svc, r)
	st.zn = zn
	switch v {
	case verdictApply:
		s.install(svc, side, doc, now)
	case verdictRejected, verdictDeleted:
		s.m.rejected.WithLabelValues(svc.String(), rejectReason(v)).Inc()
		snap := s.snap.Load()
		attrs := []any{"service", svc.String(), "reason", rejectReason(v),
			"side", snap.Active(svc).String(), "default", snap.IsDefault(svc)}
		if err != nil {
			attrs = append(attrs, "err", err)
		}
		s.log.Warn("selector: ignoring the selection znode; keeping the last good snapshot", attrs...)
	}
	switch fresh := v.fresh() && s.up; {
	case fresh:
		st.fresh = true
	case st.fresh:
		st.fresh, st.staleSince = false, now
	}
}

// install puts a new selection of svc into the snapshot (s.mu held).
func (s *Selector) install(svc contract.Service, side contract.Side, doc *contract.Selection, now time.Time) {
	old := s.snap.Load()
	n := old.with(svc, side, doc, now)
	s.snap.Store(n)
	if n.changed != old.changed {
		close(old.changed)
	}
	s.m.setSide(svc, side, doc.Epoch, false)
	attrs := []any{"service", svc.String(), "side", side.String(), "epoch", doc.Epoch, "reason", doc.Reason}
	if prev, ok := old.Epoch(svc); ok && doc.Epoch < prev {
		s.log.Warn("selector: the selection's epoch went back; applying it (ZooKeeper is authoritative)",
			append(attrs, "previous_epoch", prev)...)
	}
	switch from := old.Active(svc); {
	case from != side:
		s.m.switches.WithLabelValues(svc.String()).Inc()
		s.log.Warn("selector: active side changed", append(attrs, "from", from.String(), "from_default", old.IsDefault(svc))...)
	case old.IsDefault(svc):
		s.log.Info("selector: selection read", attrs...)
	}
}

// age is how long svc's snapshot has not been known to match ZooKeeper.
func (s *Selector) age(svc contract.Service, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ageLocked(svc, now)
}

func (s *Selector) ageLocked(svc contract.Service, now time.Time) time.Duration {
	st := s.state[svc]
	if st.fresh {
		return 0
	}
	return max(now.Sub(st.staleSince), 0)
}

// ServiceStatus is one service's entry of a Status.
type ServiceStatus struct {
	Service string `json:"service"`
	Active  string `json:"active"`
	// Epoch is the epoch of the selection, null while Default.
	Epoch *int64 `json:"epoch"`
	// Default: the side is the configured default, no selection was read.
	Default bool `json:"default"`
	// Watched is false for a service the selector was not configured for.
	Watched bool `json:"watched"`
	// Fresh: connected, watching, and the snapshot matches the znode.
	Fresh bool `json:"fresh"`
	// AgeSeconds is how long the snapshot has not been known to match ZooKeeper.
	AgeSeconds float64             `json:"age_seconds"`
	ReadAt     *time.Time          `json:"read_at,omitempty"`
	Selection  *contract.Selection `json:"selection,omitempty"`
}

// Status is the selector's state for people and for HTTP clients.
type Status struct {
	// Tag is the encoded request tag of the snapshot.
	Tag         string          `json:"tag"`
	ZKConnected bool            `json:"zk_connected"`
	Services    []ServiceStatus `json:"services"`
}

// Status returns the current state and the snapshot it describes.
func (s *Selector) Status(now time.Time) (Status, *Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.snap.Load()
	st := Status{Tag: snap.encTag, ZKConnected: s.up}
	for _, svc := range contract.Services() {
		ss := ServiceStatus{
			Service: svc.String(), Active: snap.Active(svc).String(), Default: snap.IsDefault(svc),
			Watched: s.watched[svc], Selection: snap.Selection(svc),
		}
		if e, ok := snap.Epoch(svc); ok {
			ss.Epoch = &e
		}
		if t := snap.ReadAt(svc); !t.IsZero() {
			ss.ReadAt = &t
		}
		if ss.Watched {
			ss.Fresh = s.state[svc].fresh
			ss.AgeSeconds = s.ageLocked(svc, now).Seconds()
		}
		st.Services = append(st.Services, ss)
	}
	return st, snap
}

// String describes the selector for logs.
func (s *Selector) String() string {
	return fmt.Sprintf("selector(%v root=%s services=%v default=%s)", s.cfg.servers, s.paths.Root, s.cfg.services, s.cfg.defaultSide)
}
