package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/internal/zkutil"
)

// session owns one replica's ZooKeeper connection. It connects through a
// dialer that Kill can cut (a crash: the session is left to expire on the
// server), adds the digest identity once the session exists (the library
// re-adds it after every reconnect), and pokes its subscribers on every
// change of the session state. The election and the publisher wait on those
// pokes instead of polling.
type session struct {
	conn    *zk.Conn
	dialer  *cutDialer
	auth    *zkutil.Credentials
	timeout time.Duration
	log     *slog.Logger
	onState func(zk.State)

	mu     sync.Mutex
	subs   []chan struct{}
	authed bool
}

type sessionOptions struct {
	servers []string
	timeout time.Duration
	auth    *zkutil.Credentials
	log     *slog.Logger
	// onState sees every session state change on the library's event
	// goroutine; it must not block.
	onState func(zk.State)
}

func dialSession(o sessionOptions) (*session, error) {
	s := &session{dialer: &cutDialer{}, auth: o.auth, timeout: o.timeout, log: o.log, onState: o.onState}
	if s.onState == nil {
		s.onState = func(zk.State) {}
	}
	conn, _, err := zk.Connect(o.servers, o.timeout,
		zk.WithLogger(zkLogger{o.log}), zk.WithEventCallback(s.event), zk.WithDialer(s.dialer.dial))
	if err != nil {
		return nil, fmt.Errorf("monitor: connecting to ZooKeeper %v: %w", o.servers, err)
	}
	s.conn = conn
	return s, nil
}

// event runs on the library's event goroutine: it must not block.
func (s *session) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateExpired:
		s.log.Warn("ZooKeeper session expired; a new session is being opened", "server", ev.Server)
	case zk.StateDisconnected:
		s.log.Info("ZooKeeper disconnected", "server", ev.Server)
	case zk.StateHasSession:
		s.log.Info("ZooKeeper session established", "server", ev.Server)
	}
	s.onState(ev.State)
	s.poke()
}

func (s *session) poke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// subscribe returns a channel that receives (coalesced) pokes whenever the
// session state changes.
func (s *session) subscribe() <-chan struct{} {
	c := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs = append(s.subs, c)
	s.mu.Unlock()
	return c
}

// usable reports whether requests can be made as the monitor identity now.
func (s *session) usable() bool {
	s.mu.Lock()
	authed := s.authed || s.auth == nil
	s.mu.Unlock()
	return authed && s.conn.State() == zk.StateHasSession
}

// sessionID is the current session's id (0 while none).
func (s *session) sessionID() int64 { return s.conn.SessionID() }

// run adds the digest identity once the first session exists, retrying
// until it succeeds or ctx ends.
func (s *session) run(ctx context.Context) {
	if s.auth == nil {
		return
	}
	pokes := s.subscribe()
	for {
		if s.conn.State() == zk.StateHasSession {
			err := s.conn.AddAuth("digest", []byte(s.auth.String()))
			if err == nil {
				s.mu.Lock()
				s.authed = true
				s.mu.Unlock()
				s.poke()
				return
			}
			s.log.Warn("adding the ZooKeeper digest identity failed; retrying", "user", s.auth.User, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-pokes:
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// close ends the session: ZooKeeper deletes its ephemeral nodes at once.
func (s *session) close() { s.conn.Close() }

// kill cuts the connection without ending the session, as a crash would:
// the ephemeral nodes stay until the server expires the session.
func (s *session) kill() { s.dialer.cut() }

// cutDialer dials TCP and remembers its connections so that cut can drop
// them all and refuse new ones.
type cutDialer struct {
	mu    sync.Mutex
	dead  bool
	conns []net.Conn
}

var errCut = errors.New("monitor: connection cut (replica killed)")

func (d *cutDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errCut
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	// Keep only live connections: the library opens one at a time.
	d.conns = append(d.conns[:0], c)
	return c, nil
}

func (d *cutDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, c := range d.conns {
		_ = c.Close()
	}
	d.conns = nil
}

type zkLogger struct{ l *slog.Logger }

func (a zkLogger) Printf(format string, args ...any) {
	a.l.Debug(fmt.Sprintf(format, args...), "component", "zk")
}

// zkErr maps ZooKeeper's permission errors to ErrACL so callers can tell a
// configuration problem from an outage.
func zkErr(op, path string, err error) error {
	if errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) {
		return fmt.Errorf("%w: %s %s: %v", ErrACL, op, path, err)
	}
	return fmt.Errorf("monitor: %s %s: %w", op, path, err)
}
