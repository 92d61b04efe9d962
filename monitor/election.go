package monitor

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/internal/zkutil"
)

// leadership is what the election reports: whether this replica leads, and
// the candidate node the fenced publication checks.
type leadership struct {
	Leader bool
	// Node is this replica's candidate znode ("" when it has none).
	Node string
	// Term counts the times this replica became leader; a publication
	// prepared in an older term is dropped.
	Term int64
}

// election is one replica's candidacy: an ephemeral sequential znode under
// the leader directory; the replica whose node has the lowest sequence
// number leads, every other watches its predecessor (no herd effect). After
// a session expiry the node is gone with the session and the replica enters
// the election again. While the session is not usable the replica reports
// that it does not lead (as Curator's LeaderLatch does when suspended); the
// fencing of every publication makes that safe either way.
type election struct {
	s      *zkutil.Session
	dir    string
	data   []byte
	acl    []zk.ACL
	log    *slog.Logger
	report func(leadership)
	// retry is the pause after a failed ZooKeeper request.
	retry time.Duration
}

func (e *election) run(ctx context.Context) {
	pokes, unsubscribe := e.s.Subscribe()
	defer unsubscribe()
	var (
		node    string
		session int64
		cur     leadership
	)
	set := func(leader bool) {
		if leader == cur.Leader && node == cur.Node {
			return
		}
		if leader && !cur.Leader {
			cur.Term++
		}
		cur.Leader, cur.Node = leader, node
		e.report(cur)
	}
	defer set(false)
	for ctx.Err() == nil {
		var wake <-chan zk.Event
		switch {
		case !e.s.Usable():
			set(false)
		case node == "" || session != e.s.ID():
			set(false)
			n, err := e.s.Conn().CreateProtectedEphemeralSequential(e.dir+"/n_", e.data, e.acl)
			if err != nil {
				e.log.Warn("entering the monitor election failed; retrying", "dir", e.dir, "err", zkErr("create", e.dir, err))
				break
			}
			node, session = n, e.s.ID()
			e.log.Info("entered the monitor election", "node", node)
			continue
		default:
			leader, w, err := e.check(node, session)
			switch {
			case errors.Is(err, errCandidateGone):
				e.log.Warn("monitor election candidate node is gone; entering again", "node", node)
				node = ""
				set(false)
				continue
			case err != nil:
				e.log.Warn("monitor election check failed; retrying", "node", node, "err", err)
			default:
				set(leader)
				wake = w
			}
		}
		var retry <-chan time.Time
		if wake == nil {
			retry = time.After(e.retry)
		}
		select {
		case <-ctx.Done():
		case <-pokes:
		case <-wake:
		case <-retry:
		}
	}
}

var errCandidateGone = errors.New("candidate node gone")

// check reports whether node leads and returns a watch that fires when that
// may have changed: on node itself for the leader, on its predecessor for a
// follower. A predecessor owned by this very session is an orphan of a
// create whose reply was lost; it is deleted.
func (e *election) check(node string, session int64) (bool, <-chan zk.Event, error) {
	for range 10 {
		children, _, err := e.s.Conn().Children(e.dir)
		if err != nil {
			return false, nil, zkErr("list", e.dir, err)
		}
		sortCandidates(children)
		i := slices.Index(children, path.Base(node))
		if i < 0 {
			return false, nil, errCandidateGone
		}
		watched := node
		if i > 0 {
			watched = e.dir + "/" + children[i-1]
		}
		ok, stat, w, err := e.s.Conn().ExistsW(watched)
		if err != nil {
			return false, nil, zkErr("watch", watched, err)
		}
		switch {
		case !ok && watched == node:
			return false, nil, errCandidateGone
		case !ok:
			continue // the predecessor left between the two calls: look again
		case watched != node && stat.EphemeralOwner == session:
			e.log.Warn("deleting an orphan candidate of this session", "node", watched)
			if err := e.s.Conn().Delete(watched, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return false, nil, zkErr("delete", watched, err)
			}
			continue
		}
		return i == 0, w, nil
	}
	return false, nil, errors.New("monitor: the election directory keeps changing")
}

// sortCandidates orders candidate names by their sequence number (the last
// ten digits; the protected prefix before them differs per candidate).
func sortCandidates(names []string) {
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(seqOf(a), seqOf(b)) })
}

func seqOf(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

// leaderOf returns the current leader's candidate data under dir, or nil
// when there is no candidate.
func leaderOf(conn *zk.Conn, dir string) ([]byte, int, error) {
	children, _, err := conn.Children(dir)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && len(children) == 0) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, zkErr("list", dir, err)
	}
	sortCandidates(children)
	for _, c := range children {
		b, _, err := conn.Get(dir + "/" + c)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, 0, zkErr("read", dir+"/"+c, err)
		}
		return b, len(children), nil
	}
	return nil, 0, nil
}
