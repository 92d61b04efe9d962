package monitor

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// ACLPolicy is who may change hotpair's znodes. With both identities empty
// (auth off) every znode is open. With them set:
//
//	<root>                       world: read+create;  monitor, operator: all
//	<root>/selection[/<service>] world: read;         monitor: all
//	<root>/monitor[/leader]      world: read;         monitor: all
//	<root>/override[/<service>]  world: read;         operator: all
//	<root>/dark[/<name>]         world: read;         operator: all
//
// ZooKeeper authorises a delete by the parent's ACL, so the directories are
// protected like their children: an unauthenticated client can read every
// document but can neither change nor delete nor create one.
type ACLPolicy struct {
	// Monitor and Operator are ZooKeeper digest ids, "user:base64(sha1(user:password))",
	// as DigestID computes them.
	Monitor  string
	Operator string
}

// DigestID returns ZooKeeper's digest id of an identity: what an ACL names,
// without the password.
func DigestID(c contract.Credentials) string {
	sum := sha1.Sum([]byte(c.User + ":" + c.Password))
	return c.User + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// ParseDigestID checks a "user:digest" id and returns it.
func ParseDigestID(s string) (string, error) {
	user, digest, ok := strings.Cut(s, ":")
	if !ok || user == "" {
		return "", errors.New(`want "user:digest", where digest is base64(sha1("user:password"))`)
	}
	b, err := base64.StdEncoding.DecodeString(digest)
	if err != nil || len(b) != sha1.Size {
		return "", fmt.Errorf(`digest of %q is not base64 of a SHA-1 (28 characters); compute it with: printf '%%s' '%s:PASSWORD' | openssl sha1 -binary | base64`, user, user)
	}
	return s, nil
}

// Enabled reports whether the znodes are protected.
func (p ACLPolicy) Enabled() bool { return p.Monitor != "" || p.Operator != "" }

func (p ACLPolicy) acl(worldPerms int32, writers ...string) []zk.ACL {
	if !p.Enabled() {
		return zkutil.OpenACL()
	}
	acl := []zk.ACL{{Perms: worldPerms, Scheme: "world", ID: "anyone"}}
	for _, w := range writers {
		if w != "" {
			acl = append(acl, zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: w})
		}
	}
	return acl
}

// Root is the ACL of the root (when the monitor creates it): anyone may add
// children (pipeline instances register under it) but not delete them.
func (p ACLPolicy) Root() []zk.ACL {
	return p.acl(zk.PermRead|zk.PermCreate, p.Monitor, p.Operator)
}

// Selection is the ACL of the selection znodes, their directory and the
// leader election directory.
func (p ACLPolicy) Selection() []zk.ACL { return p.acl(zk.PermRead, p.Monitor) }

// Override is the ACL of the override znodes and their directory.
func (p ACLPolicy) Override() []zk.ACL { return p.acl(zk.PermRead, p.Operator) }

// Dark is the ACL of the dark canary's target documents and their
// directory (written by `hotpair dark set`).
func (p ACLPolicy) Dark() []zk.ACL { return p.acl(zk.PermRead, p.Operator) }

// OperatorPolicy is the policy an operator tool applies to what it creates:
// an identity given on the command line protects the override it writes.
func OperatorPolicy(c *contract.Credentials) ACLPolicy {
	if c == nil {
		return ACLPolicy{}
	}
	return ACLPolicy{Operator: DigestID(*c)}
}

// ensureLayout creates the monitor's znodes that are missing and, when the
// policy is enabled, brings the ACLs of existing ones in line with it (an
// upgrade from auth off to auth on needs no manual step). An existing root is
// left as the operator set it up. It fails with ErrACL when ZooKeeper does
// not let it; the message names the znode and the fix.
func ensureLayout(conn *zk.Conn, paths contract.Paths, p ACLPolicy, services []contract.Service) error {
	steps := []struct {
		path string
		acl  []zk.ACL
		mode nodeMode
	}{
		{paths.Root, p.Root(), createOnly},
		{paths.SelectionDir(), p.Selection(), createOrFix},
		{path.Dir(paths.LeaderDir()), p.Selection(), createOrFix},
		{paths.LeaderDir(), p.Selection(), createOrFix},
		{paths.OverrideDir(), p.Override(), createOrFix},
	}
	for _, s := range services {
		// Selections are created by the first publication, overrides by
		// operators: fix only the ones that exist.
		steps = append(steps,
			struct {
				path string
				acl  []zk.ACL
				mode nodeMode
			}{paths.Selection(s), p.Selection(), fixOnly},
			struct {
				path string
				acl  []zk.ACL
				mode nodeMode
			}{paths.Override(s), p.Override(), fixOnly})
	}
	for _, s := range steps {
		if err := ensureNode(conn, s.path, s.acl, s.mode, p.Enabled()); err != nil {
			return err
		}
	}
	return nil
}

type nodeMode int

const (
	createOnly nodeMode = 1 + iota
	createOrFix
	fixOnly
)

// ensureNode creates p (and missing parents) with acl unless mode is
// fixOnly, and sets the ACL of an existing p when fix is on and it differs.
func ensureNode(conn *zk.Conn, p string, acl []zk.ACL, mode nodeMode, fix bool) error {
	if mode != fixOnly {
		if err := zkutil.EnsurePath(conn, path.Dir(p), acl); err != nil {
			return aclHint(p, err)
		}
		_, err := conn.Create(p, nil, 0, acl)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return aclHint(p, zkErr("create", p, err))
		}
	}
	if mode == createOnly || !fix {
		return nil
	}
	have, stat, err := conn.GetACL(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return zkErr("read ACL of", p, err)
	}
	if sameACL(have, acl) {
		return nil
	}
	if _, err := conn.SetACL(p, acl, stat.Aversion); err != nil {
		return aclHint(p, zkErr("set ACL of", p, err))
	}
	return nil
}

// sameACL compares the ACL read from ZooKeeper (have) with the one wanted.
// ZooKeeper hides the digest of a digest id ("oncall:x") from a client
// without ADMIN permission on the node — the monitor on the override
// directory, or any replica on what another replica just created — so a
// hidden digest matches a wanted id of the same user.
func sameACL(have, want []zk.ACL) bool {
	key := func(x zk.ACL, hide bool) string {
		id := x.ID
		if x.Scheme == "digest" && hide {
			user, _, _ := strings.Cut(id, ":")
			id = user + ":x"
		}
		return fmt.Sprintf("%s:%s:%d", x.Scheme, id, x.Perms)
	}
	hidden := false
	for _, x := range have {
		hidden = hidden || (x.Scheme == "digest" && strings.HasSuffix(x.ID, ":x"))
	}
	ka, kb := make([]string, len(have)), make([]string, len(want))
	for i, x := range have {
		ka[i] = key(x, hidden)
	}
	for i, x := range want {
		kb[i] = key(x, hidden)
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

func aclHint(p string, err error) error {
	const hint = " (the identity this process authenticates as — zk.auth for the monitor, --auth for the tools — may not create or administer it: use the right identity, or fix the znode's ACL with zkCli setAcl)"
	switch {
	case errors.Is(err, ErrACL):
		return fmt.Errorf("%w%s", err, hint)
	case errors.Is(err, zk.ErrNoAuth):
		return fmt.Errorf("%w: %s: %v%s", ErrACL, p, err, hint)
	}
	return err
}
