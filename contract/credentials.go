package contract

import (
	"errors"
	"strings"
)

// Credentials are a ZooKeeper digest identity: the monitor's, an operator's,
// a pipeline's registrations. On the command line and in configs they are
// written "user:password".
type Credentials struct {
	User     string
	Password string
}

// ErrBadCredentials is returned by ParseCredentials for a value that is not
// user:password.
var ErrBadCredentials = errors.New("credentials must be user:password")

// ParseCredentials parses "user:password". An empty string is no
// credentials (nil, nil).
func ParseCredentials(s string) (*Credentials, error) {
	if s == "" {
		return nil, nil
	}
	u, p, ok := strings.Cut(s, ":")
	if !ok || u == "" || p == "" {
		return nil, ErrBadCredentials
	}
	return &Credentials{User: u, Password: p}, nil
}

// Digest returns "user:password", the form ZooKeeper's digest scheme
// takes. It is a secret: never log it.
func (c *Credentials) Digest() string { return c.User + ":" + c.Password }

// String returns the user name only, so that printing credentials never
// shows the password.
func (c *Credentials) String() string { return c.User + ":***" }
