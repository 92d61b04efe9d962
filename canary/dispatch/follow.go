package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// follower reads every dark target's document, and a relative target's
// instance counts, and keeps one ZooKeeper watch armed on each path it
// read: any change (or a session event) pokes it and it reads again. Watches
// fire in milliseconds on a healthy ensemble, well within the one second in
// which a change must apply.
type follower struct {
	conn    func() *zk.Conn // the session's current connection
	paths   contract.Paths
	cluster string // the live source cluster's name in the registry
	watch   bool   // arm watches (a one-off read, as status does, arms none)

	mu    sync.Mutex
	armed map[string]bool // "kind:path" with a watch pending
	poke  chan struct{}
}

func newFollower(conn func() *zk.Conn, paths contract.Paths, cluster string) *follower {
	return &follower{conn: conn, paths: paths, cluster: cluster, watch: true, armed: map[string]bool{}, poke: make(chan struct{}, 1)}
}

// errZKDown is what the follower reports while the session is not usable.
var errZKDown = errors.New("the ZooKeeper session is not usable")

// run reads and publishes what it read (or the error that stopped it) every
// time something changed, until ctx ends. A failed read is tried again
// after retry.
func (f *follower) run(ctx context.Context, sess *zkutil.Session, retry time.Duration, publish func(map[string]Observed, error)) {
	pokes, unsubscribe := sess.Subscribe()
	defer unsubscribe()
	for {
		var again <-chan time.Time
		if !sess.Usable() {
			publish(nil, errZKDown)
		} else if obs, err := f.readAll(); err != nil {
			publish(nil, err)
			again = time.After(retry)
		} else {
			publish(obs, nil)
		}
		select {
		case <-ctx.Done():
			return
		case <-pokes:
		case <-f.poke:
		case <-again:
		}
	}
}

// readAll reads every target under the dark directory.
func (f *follower) readAll() (map[string]Observed, error) {
	names, err := f.children(f.paths.DarkDir())
	if err != nil {
		return nil, err
	}
	out := make(map[string]Observed, len(names))
	for _, name := range names {
		b, ok, err := f.data(f.paths.Dark(name))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // deleted since listed: the directory's watch fires
		}
		o := Observed{Name: name}
		if d, err := contract.DecodeDarkTarget(b); err != nil {
			o.DocErr = err
		} else if d.Name != name {
			o.DocErr = fmt.Errorf("%w: name=%q in the znode of %q", contract.ErrInvalidDocument, d.Name, name)
		} else {
			o.Doc = &d
		}
		if o.Doc != nil && o.Doc.Strategy == contract.DarkRelative {
			o.Counts = f.counts(*o.Doc)
		}
		out[name] = o
	}
	return out, nil
}

// counts reads how many live aggregators of the source cluster and dark
// aggregators of the target are registered.
func (f *follower) counts(d contract.DarkTarget) Counts {
	cluster := f.cluster
	if cluster == "" {
		cluster = d.Source.String()
	}
	live, err := f.children(f.paths.Instances(cluster, contract.StageAggregator))
	if err != nil {
		return Counts{Err: err}
	}
	dark, err := f.children(f.paths.DarkInstances(d.Name, contract.StageAggregator))
	if err != nil {
		return Counts{Err: err}
	}
	return Counts{Live: len(live), Dark: len(dark)}
}

// children lists p's children with a watch armed on them; a missing p has
// none, with a watch on its creation.
func (f *follower) children(p string) ([]string, error) {
	for range 3 {
		var (
			kids []string
			err  error
		)
		if f.isArmed("c:" + p) {
			kids, _, err = f.conn().Children(p)
		} else {
			var w <-chan zk.Event
			kids, _, w, err = f.conn().ChildrenW(p)
			if err == nil {
				f.arm("c:"+p, w)
			}
		}
		if !errors.Is(err, zk.ErrNoNode) {
			if err != nil {
				return nil, fmt.Errorf("dispatch: listing %s: %w", p, err)
			}
			return kids, nil
		}
		if ok, err := f.exists(p); err != nil || !ok {
			return nil, err
		}
		// created between the two calls: list again
	}
	return nil, fmt.Errorf("dispatch: listing %s: it keeps coming and going", p)
}

// exists reports whether p exists, with a watch on its creation or deletion.
func (f *follower) exists(p string) (bool, error) {
	if f.isArmed("e:" + p) {
		ok, _, err := f.conn().Exists(p)
		return ok, err
	}
	ok, _, w, err := f.conn().ExistsW(p)
	if err != nil {
		return false, fmt.Errorf("dispatch: checking %s: %w", p, err)
	}
	f.arm("e:"+p, w)
	return ok, nil
}

// data reads p with a watch on its changes; ok is false when p is gone.
func (f *follower) data(p string) ([]byte, bool, error) {
	var (
		b   []byte
		err error
	)
	if f.isArmed("d:" + p) {
		b, _, err = f.conn().Get(p)
	} else {
		var w <-chan zk.Event
		b, _, w, err = f.conn().GetW(p)
		if err == nil {
			f.arm("d:"+p, w)
		}
	}
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("dispatch: reading %s: %w", p, err)
	}
	return b, true, nil
}

func (f *follower) isArmed(key string) bool {
	if !f.watch {
		return true // read without setting a watch
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.armed[key]
}

// arm waits for the watch w in a goroutine of its own, which ends when the
// watch fires (a change, or the session's end: ZooKeeper fires every watch
// then) and pokes the run loop.
func (f *follower) arm(key string, w <-chan zk.Event) {
	f.mu.Lock()
	f.armed[key] = true
	f.mu.Unlock()
	go func() {
		<-w
		f.mu.Lock()
		delete(f.armed, key)
		f.mu.Unlock()
		select {
		case f.poke <- struct{}{}:
		default:
		}
	}()
}
