// Package zkutil is the ZooKeeper session plumbing shared by the monitor, the
// selector, the pipeline registry and the CLI: connecting with slog logging
// and an event callback (go-zookeeper's event channel holds 6 events and drops
// the rest), digest authentication, and creating paths with ACLs.
package zkutil

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Credentials are a digest identity, "user:password" on the command line.
type Credentials struct {
	User     string
	Password string
}

// ParseCredentials parses "user:password". An empty string is no credentials.
func ParseCredentials(s string) (*Credentials, error) {
	if s == "" {
		return nil, nil
	}
	u, p, ok := strings.Cut(s, ":")
	if !ok || u == "" || p == "" {
		return nil, fmt.Errorf("credentials must be user:password")
	}
	return &Credentials{User: u, Password: p}, nil
}

func (c *Credentials) String() string { return c.User + ":" + c.Password }

// Options configure Connect.
type Options struct {
	Servers        []string
	SessionTimeout time.Duration // default 10s
	// Auth, when set, is added as a digest identity to the session (and
	// re-added by the library after every reconnect).
	Auth *Credentials
	// OnEvent sees every session and watch event, in order, on the library's
	// event goroutine: it must not block.
	OnEvent func(zk.Event)

	// Injected dependencies.
	Logger *slog.Logger
}

// Connect opens a session. It returns at once; the session is established
// in the background and OnEvent reports its state changes.
func Connect(o Options) (*zk.Conn, error) {
	if len(o.Servers) == 0 {
		return nil, errors.New("zkutil: Options.Servers is required")
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cb := o.OnEvent
	if cb == nil {
		cb = func(zk.Event) {}
	}
	conn, _, err := zk.Connect(o.Servers, o.SessionTimeout,
		zk.WithLogger(slogAdapter{o.Logger}), zk.WithEventCallback(cb))
	if err != nil {
		return nil, fmt.Errorf("zkutil: connect %v: %w", o.Servers, err)
	}
	if o.Auth != nil {
		if err := conn.AddAuth("digest", []byte(o.Auth.String())); err != nil {
			conn.Close()
			return nil, fmt.Errorf("zkutil: adding digest auth for %q: %w", o.Auth.User, err)
		}
	}
	return conn, nil
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, args ...any) {
	a.l.Debug(fmt.Sprintf(format, args...), "component", "zk")
}

// OpenACL is readable and writable by anyone: the ACL when auth is off.
func OpenACL() []zk.ACL { return zk.WorldACL(zk.PermAll) }

// ProtectedACL is readable by anyone and changeable only by the writer
// identity (and, for parents, the admin identities in extra).
func ProtectedACL(writer *Credentials, extra ...*Credentials) []zk.ACL {
	acl := []zk.ACL{{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}
	for _, c := range append([]*Credentials{writer}, extra...) {
		if c == nil {
			continue
		}
		acl = append(acl, zk.DigestACL(zk.PermAll, c.User, c.Password)...)
	}
	return acl
}

// EnsurePath creates p and any missing parents with acl. Existing nodes are
// left as they are.
func EnsurePath(conn *zk.Conn, p string, acl []zk.ACL) error {
	if p == "/" || p == "" {
		return nil
	}
	if err := EnsurePath(conn, path.Dir(p), acl); err != nil {
		return err
	}
	_, err := conn.Create(p, nil, 0, acl)
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("zkutil: create %s: %w", p, err)
	}
	return nil
}

// WaitConnected blocks until the session is connected (has session state
// HasSession) or timeout passes.
func WaitConnected(conn *zk.Conn, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			return fmt.Errorf("zkutil: no ZooKeeper session within %s (state %s)", timeout, conn.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
