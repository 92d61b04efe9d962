package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// RegistryOptions register a pipeline's instance in ZooKeeper: one
// ephemeral znode per stage, <root>/instances/<cluster>/<stage>/<instance>
// (a dark pipeline's <root>/instances/dark/<name>/<stage>/<instance>),
// there while the instance runs (DESIGN §5). Operators list them with any
// ZooKeeper client; a crashed instance's znode goes when its session expires.
type RegistryOptions struct {
	Servers []string
	// Root of hotpair's znodes (default /hotpair).
	Root string
	// Cluster names the Kafka cluster in the path (default: the side;
	// unused by a dark pipeline).
	Cluster string
	// Auth, if set, is the identity the registrations are written with;
	// they are then world-readable and changeable only by it.
	Auth *contract.Credentials
	// SessionTimeout of the registration session (default 10s).
	SessionTimeout time.Duration
}

// register keeps this instance's registrations in ZooKeeper until ctx ends:
// it writes them whenever a session is established (again after an expiry,
// which removes ephemeral znodes), and closes the session at the end, which
// removes them at once. ZooKeeper being down never affects the stages.
func (p *Pipeline) register(ctx context.Context, o RegistryOptions) {
	paths := contract.NewPaths(o.Root)
	cluster := o.Cluster
	if cluster == "" {
		cluster = p.opts.Side.String()
	}
	acl := zkutil.OpenACL()
	if o.Auth != nil {
		acl = zkutil.ProtectedACL(o.Auth)
	}
	sess, err := zkutil.Open(zkutil.Options{Servers: o.Servers, SessionTimeout: o.SessionTimeout, Auth: o.Auth, Logger: p.log})
	if err != nil {
		p.log.Error("registry: connecting to ZooKeeper", "err", err)
		return
	}
	defer sess.Close()
	started := time.Now().UTC()
	sess.EachSession(ctx, func() {
		for _, st := range p.stages {
			doc, _ := json.Marshal(contract.Registration{V: 1, Side: p.opts.Side, Role: p.opts.Role, Stage: st.name,
				Instance: p.opts.Instance, Build: p.opts.Build, StartedAt: started})
			node := path.Join(p.instancesDir(paths, cluster, st.name), p.opts.Instance)
			if err := registerNode(sess.Conn(), node, doc, acl); err != nil {
				p.log.Warn("registry: registering in ZooKeeper", "service", st.name, "znode", node, "err", err)
				continue
			}
			p.log.Info("registry: registered", "service", st.name, "znode", node)
		}
	})
}

// instancesDir is where this pipeline's stage registers: under the
// cluster, or for a dark pipeline under instances/dark/<name> (whatever the
// cluster), so that nothing reading the live registrations counts it.
func (p *Pipeline) instancesDir(paths contract.Paths, cluster string, stage contract.Stage) string {
	if p.opts.Role == contract.RoleDark {
		return paths.DarkInstances(p.opts.DarkName, stage)
	}
	return paths.Instances(cluster, stage)
}

// registerNode creates node as an ephemeral znode of this session. A znode
// of the same name left by an earlier session of this instance (a restart
// within the session timeout) is replaced.
func registerNode(conn *zk.Conn, node string, doc []byte, acl []zk.ACL) error {
	if err := zkutil.EnsurePath(conn, path.Dir(node), acl); err != nil {
		return err
	}
	for range 3 {
		_, err := conn.Create(node, doc, zk.FlagEphemeral, acl)
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		_, stat, err := conn.Get(node)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if stat.EphemeralOwner == conn.SessionID() {
			_, err = conn.Set(node, doc, stat.Version)
			return err
		}
		if err := conn.Delete(node, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return fmt.Errorf("registry: %s keeps being taken by another session", node)
}
