package zkutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hotpair/hotpair/contract"
)

// Options configure Open.
type Options struct {
	// Servers are the ensemble, "host:port" each. Required.
	Servers []string
	// SessionTimeout: the server expires the session (and deletes its
	// ephemeral znodes) after this long without hearing from it. Default 10s.
	SessionTimeout time.Duration
	// Auth, when set, is added as a digest identity once the first session
	// exists, again and again until it succeeds (the library re-adds it
	// after every reconnect). The session is not usable before.
	Auth *contract.Credentials
	// AuthRetry is the pause between two failed attempts to add Auth.
	// Default 500ms.
	AuthRetry time.Duration
	// OnState sees every session event (Type zk.EventSession) in order, on
	// the library's event goroutine: it must not block nor call the Session.
	// zk.StateHasSession is reported once the session is usable, that is
	// with Auth only once the identity has been added.
	OnState func(zk.Event)
	// Dialer opens the TCP connections. Default net.DialTimeout. Fault
	// injection passes one that can cut them (a crashed process).
	Dialer zk.Dialer

	// Injected dependencies.

	// Logger receives the library's own logs at debug level and failed
	// attempts to add Auth. Default: discard.
	Logger *slog.Logger
}

// Session is the one owner of a ZooKeeper session, used by every daemon
// and tool: it connects, adds the digest identity (retrying), fans state
// changes out to subscribers, and lets a caller write its ephemeral znodes
// again whenever a session becomes usable (EachSession). It never polls:
// everything waits on the library's session events.
//
// The library reconnects by itself, and after an expiry opens a new session
// on its own: ephemeral znodes and watches of the old one are gone. One case
// it never leaves: a server that lost its data (an ensemble rebuilt empty)
// refuses a client that has seen a newer transaction than its own, and the
// library retries with that client's last zxid forever. So a connection
// that had a session, has had none for twice the session timeout, and
// reached a server meanwhile (the server is up, yet gives it no session) is
// replaced by a new one, with a new session: subscribers see
// zk.StateExpired, then zk.StateHasSession, as after an expiry.
type Session struct {
	conn      atomic.Pointer[zk.Conn]
	gen       atomic.Uint64 // the current connection's; events of older ones are dropped
	answered  atomic.Int64  // unix ns when a server last accepted a TCP connection
	o         Options
	wake      chan struct{} // poked on every raw session event, for the auth loop
	lostC     chan struct{} // poked when the connection loses its session, for the rescue loop
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	loops     sync.WaitGroup // addAuth and rescue

	mu     sync.Mutex
	authed bool     // Auth added to the current connection (or none to add)
	state  zk.State // last state reported to OnState and subscribers
	ups    uint64   // how many times the session became usable
	subs   map[chan struct{}]struct{}
	had    bool      // the current connection has had a session
	lost   time.Time // when it last lost it; zero while it has one
	renews uint64    // connections replaced by rescue
}

// Open starts a session and returns at once: it is established in the
// background, and OnState, Subscribe and WaitUsable say when. It fails only
// on bad options or server names that do not resolve.
func Open(o Options) (*Session, error) {
	if len(o.Servers) == 0 {
		return nil, errors.New("zkutil: Options.Servers is required")
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.AuthRetry == 0 {
		o.AuthRetry = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OnState == nil {
		o.OnState = func(zk.Event) {}
	}
	if o.Dialer == nil {
		o.Dialer = net.DialTimeout
	}
	s := &Session{o: o, wake: make(chan struct{}, 1), lostC: make(chan struct{}, 1), done: make(chan struct{}),
		authed: o.Auth == nil, state: zk.StateDisconnected, subs: map[chan struct{}]struct{}{}}
	if err := s.dial(s.gen.Add(1)); err != nil {
		return nil, err
	}
	s.loops.Go(s.rescue)
	return s, nil
}

// dial opens connection gen (s.gen already holds it, so that none of its
// events is dropped), makes it current and, with Auth, starts the loop that
// adds the identity to it.
func (s *Session) dial(gen uint64) error {
	conn, _, err := zk.Connect(s.o.Servers, s.o.SessionTimeout, zk.WithLogger(slogAdapter{s.o.Logger}),
		zk.WithEventCallback(func(ev zk.Event) { s.event(gen, ev) }), zk.WithDialer(s.answering))
	if err != nil {
		return fmt.Errorf("zkutil: connect %v: %w", s.o.Servers, err)
	}
	s.conn.Store(conn)
	if s.o.Auth != nil {
		s.loops.Go(func() { s.addAuth(gen) })
	}
	return nil
}

// answering is the library's dialer: Options.Dialer, noting when a server
// last accepted a connection.
func (s *Session) answering(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := s.o.Dialer(network, addr, timeout)
	if err == nil {
		s.answered.Store(time.Now().UnixNano())
	}
	return c, err
}

// Conn is the library connection, for requests. Take it again for every
// request (or round of requests): a connection stuck without a session is
// replaced (see Session). Do not Close it: Close the Session.
func (s *Session) Conn() *zk.Conn { return s.conn.Load() }

// ID is the current session's id (0 while none).
func (s *Session) ID() int64 { return s.Conn().SessionID() }

// Renewals is how many times a connection stuck without a session was
// replaced by a new one.
func (s *Session) Renewals() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renews
}

// Usable reports whether requests can be made now, as the identity when
// Auth is set.
func (s *Session) Usable() bool {
	s.mu.Lock()
	up := s.state == zk.StateHasSession
	s.mu.Unlock()
	return up && s.Conn().State() == zk.StateHasSession
}

// Subscribe returns a channel that receives a (coalesced) poke whenever the
// session's state changes, and a function that ends the subscription.
// Subscribers look at Usable and ID when poked.
func (s *Session) Subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[c] = struct{}{}
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		delete(s.subs, c)
		s.mu.Unlock()
	}
}

// WaitUsable blocks until the session is usable or ctx ends.
func (s *Session) WaitUsable(ctx context.Context) error {
	pokes, cancel := s.Subscribe()
	defer cancel()
	for !s.Usable() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("zkutil: no usable ZooKeeper session (state %s): %w", s.Conn().State(), context.Cause(ctx))
		case <-pokes:
		}
	}
	return nil
}

// EachSession calls fn every time the session becomes usable (the first
// connection, every reconnection, and the new session after an expiry,
// which has lost the ephemeral znodes and watches of the old one), until
// ctx ends. This is where a caller writes its ephemeral znodes again. fn
// runs on the caller's goroutine, one call at a time.
func (s *Session) EachSession(ctx context.Context, fn func()) {
	pokes, cancel := s.Subscribe()
	defer cancel()
	var seen uint64
	for {
		s.mu.Lock()
		ups := s.ups
		s.mu.Unlock()
		if ups != seen && s.Usable() {
			seen = ups
			fn()
		}
		select {
		case <-ctx.Done():
			return
		case <-pokes:
		}
	}
}

// Close ends the session: ZooKeeper deletes its ephemeral znodes at once.
func (s *Session) Close() {
	s.mu.Lock() // rescue replaces the connection under the lock, never after done
	s.closeOnce.Do(func() { close(s.done) })
	s.mu.Unlock()
	s.Conn().Close()
	s.loops.Wait()
}

func (s *Session) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// event runs on the library's goroutines of connection gen: it must not
// block.
func (s *Session) event(gen uint64, ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen.Load() {
		return // a replaced connection's
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	switch {
	case ev.State == zk.StateHasSession:
		s.had, s.lost = true, time.Time{}
	case s.had && s.lost.IsZero() && (ev.State == zk.StateDisconnected || ev.State == zk.StateExpired):
		s.lost = time.Now()
		select {
		case s.lostC <- struct{}{}:
		default:
		}
	}
	if ev.State == zk.StateHasSession && !s.authed {
		return // reported by addAuth once the identity is added
	}
	s.report(ev)
}

// rescue replaces the connection when it had a session, has had none for
// twice the session timeout, and a server has accepted a connection since
// it lost it (see Session). While no server answers at all, the old session
// is kept: a server that comes back with its data resumes it, with its
// ephemeral znodes and watches.
func (s *Session) rescue() {
	stuckAfter := 2 * s.o.SessionTimeout
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		s.mu.Lock()
		lost := s.lost
		s.mu.Unlock()
		wait := time.Hour
		if !lost.IsZero() {
			due := lost.Add(stuckAfter)
			switch {
			case time.Now().Before(due):
				wait = time.Until(due)
			case s.answered.Load() > lost.UnixNano() && s.renew(lost, stuckAfter):
				continue
			default: // no server answered yet, or a new connection could not be opened
				wait = s.o.SessionTimeout
			}
		}
		t.Reset(wait)
		select {
		case <-s.done:
			return
		case <-s.lostC:
		case <-t.C:
		}
	}
}

// renew replaces the connection if it is still without a session since
// lost, and reports the old session as expired. It reports whether it did:
// not when the Session is closed, the session came back, or a new
// connection cannot be opened (its server names do not resolve), which
// rescue tries again a session timeout later.
func (s *Session) renew(lost time.Time, stuckAfter time.Duration) bool {
	s.mu.Lock()
	if s.closed() || !s.lost.Equal(lost) {
		s.mu.Unlock()
		return false
	}
	old, prev := s.Conn(), s.gen.Load()
	// From here on the old connection's events are dropped; the new one's
	// wait for the lock, so they come after the expiry reported below.
	gen := s.gen.Add(1)
	if err := s.dial(gen); err != nil {
		s.gen.Store(prev)
		s.mu.Unlock()
		s.o.Logger.Warn("starting a new ZooKeeper session failed; retrying", "err", err)
		return false
	}
	s.had, s.lost, s.authed = false, time.Time{}, s.o.Auth == nil
	s.renews++
	s.o.Logger.Warn("no ZooKeeper session for twice the session timeout while a server answers: starting a new one "+
		"(a server that lost its data refuses the old connection forever)", "without_session", stuckAfter, "servers", s.o.Servers)
	s.report(zk.Event{Type: zk.EventSession, State: zk.StateExpired})
	s.mu.Unlock()
	old.Close()
	return true
}

// report tells OnState and the subscribers about a state (s.mu held, so
// that the event goroutine and addAuth report in order).
func (s *Session) report(ev zk.Event) {
	if ev.State == zk.StateHasSession && s.state != zk.StateHasSession {
		s.ups++
	}
	s.state = ev.State
	s.o.OnState(ev)
	for c := range s.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// addAuth adds the digest identity to connection gen once it has a
// session, retrying until it succeeds, the connection is replaced or the
// Session is closed.
func (s *Session) addAuth(gen uint64) {
	for {
		conn := s.Conn()
		if gen != s.gen.Load() {
			return
		}
		if conn.State() == zk.StateHasSession {
			err := conn.AddAuth("digest", []byte(s.o.Auth.Digest()))
			if err == nil {
				s.mu.Lock()
				if gen == s.gen.Load() {
					s.authed = true
					if conn.State() == zk.StateHasSession {
						s.report(zk.Event{Type: zk.EventSession, State: zk.StateHasSession, Server: conn.Server()})
					}
				}
				s.mu.Unlock()
				return
			}
			if s.closed() || gen != s.gen.Load() {
				return
			}
			s.o.Logger.Warn("adding the ZooKeeper digest identity failed; retrying", "user", s.o.Auth.User, "err", err)
		}
		t := time.NewTimer(s.o.AuthRetry)
		select {
		case <-s.done:
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// slogAdapter is the library's logger: its lines go to slog at debug level.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, args ...any) {
	a.l.Debug(fmt.Sprintf(format, args...), "component", "zk")
}
