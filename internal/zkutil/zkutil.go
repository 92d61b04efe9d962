// Package zkutil is the ZooKeeper plumbing shared by the monitor, the
// selector, the pipeline registry, the CLI and the sandbox: the one place a
// session is opened (Session: slog logging, an event callback instead of
// go-zookeeper's event channel, which holds 6 events and drops the rest,
// digest authentication with retry, state changes fanned out to
// subscribers), credentials, ACLs, and creating paths.
package zkutil

import (
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
	"github.com/hotpair/hotpair/contract"
)

// OpenACL is readable and writable by anyone: the ACL when auth is off.
func OpenACL() []zk.ACL { return zk.WorldACL(zk.PermAll) }

// ProtectedACL is readable by anyone and changeable only by the writer
// identity (and, for parents, the admin identities in extra).
func ProtectedACL(writer *contract.Credentials, extra ...*contract.Credentials) []zk.ACL {
	acl := []zk.ACL{{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}
	for _, c := range append([]*contract.Credentials{writer}, extra...) {
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
