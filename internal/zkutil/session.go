package zkutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
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
// on its own: ephemeral znodes and watches of the old one are gone.
type Session struct {
	conn      *zk.Conn
	o         Options
	wake      chan struct{} // poked on every raw session event, for the auth loop
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	authD     sync.WaitGroup

	mu     sync.Mutex
	authed bool     // Auth added (or none to add)
	state  zk.State // last state reported to OnState and subscribers
	ups    uint64   // how many times the session became usable
	subs   map[chan struct{}]struct{}
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
	s := &Session{o: o, wake: make(chan struct{}, 1), done: make(chan struct{}),
		authed: o.Auth == nil, state: zk.StateDisconnected, subs: map[chan struct{}]struct{}{}}
	if o.Dialer == nil {
		o.Dialer = net.DialTimeout
	}
	conn, _, err := zk.Connect(o.Servers, o.SessionTimeout,
		zk.WithLogger(slogAdapter{o.Logger}), zk.WithEventCallback(s.event), zk.WithDialer(o.Dialer))
	if err != nil {
		return nil, fmt.Errorf("zkutil: connect %v: %w", o.Servers, err)
	}
	s.conn = conn
	if o.Auth != nil {
		s.authD.Go(s.addAuth)
	}
	return s, nil
}

// Conn is the library connection, for requests. Do not Close it: Close the
// Session.
func (s *Session) Conn() *zk.Conn { return s.conn }

// ID is the current session's id (0 while none).
func (s *Session) ID() int64 { return s.conn.SessionID() }

// Usable reports whether requests can be made now, as the identity when
// Auth is set.
func (s *Session) Usable() bool {
	s.mu.Lock()
	up := s.state == zk.StateHasSession
	s.mu.Unlock()
	return up && s.conn.State() == zk.StateHasSession
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
			return fmt.Errorf("zkutil: no usable ZooKeeper session (state %s): %w", s.conn.State(), context.Cause(ctx))
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
	s.closeOnce.Do(func() { close(s.done) })
	s.conn.Close()
	s.authD.Wait()
}

func (s *Session) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// event runs on the library's goroutines: it must not block.
func (s *Session) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.State == zk.StateHasSession && !s.authed {
		return // reported by addAuth once the identity is added
	}
	s.report(ev)
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

// addAuth adds the digest identity once a session exists, retrying until
// it succeeds or the Session is closed.
func (s *Session) addAuth() {
	for {
		if s.conn.State() == zk.StateHasSession {
			err := s.conn.AddAuth("digest", []byte(s.o.Auth.Digest()))
			if err == nil {
				s.mu.Lock()
				s.authed = true
				if s.conn.State() == zk.StateHasSession {
					s.report(zk.Event{Type: zk.EventSession, State: zk.StateHasSession, Server: s.conn.Server()})
				}
				s.mu.Unlock()
				return
			}
			if s.closed() {
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
