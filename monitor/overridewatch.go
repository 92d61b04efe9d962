package monitor

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// overrideWatcher keeps every service's override document current: it
// watches each /override/<service> znode (its creation, change or deletion)
// and reads them all again after every change of the session. It hands
// each new set to notify; while ZooKeeper is unreachable the last known set
// stays in force.
type overrideWatcher struct {
	s        *zkutil.Session
	paths    contract.Paths
	services []contract.Service
	log      *slog.Logger
	retry    time.Duration
	notify   func(map[contract.Service]*contract.Override)
}

func (w *overrideWatcher) run(ctx context.Context) {
	pokes, unsubscribe := w.s.Subscribe()
	defer unsubscribe()
	var last map[contract.Service]*contract.Override
	for ctx.Err() == nil {
		round, cancel := context.WithCancel(ctx)
		fired := make(chan struct{}, 1)
		wait := w.retry
		if w.s.Usable() {
			cur, watches, err := w.read()
			if err != nil {
				w.log.Warn("reading the overrides failed; keeping the last known", "err", err)
			} else {
				wait = time.Hour
				if !sameOverrides(last, cur) {
					last = cur
					w.notify(maps.Clone(cur))
				}
				fanIn(round, watches, fired)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-pokes:
		case <-fired:
		case <-t.C:
		}
		t.Stop()
		cancel()
	}
}

// read returns the override of every service that has one, and one watch
// per service.
func (w *overrideWatcher) read() (map[contract.Service]*contract.Override, []<-chan zk.Event, error) {
	out := map[contract.Service]*contract.Override{}
	var watches []<-chan zk.Event
	for _, svc := range w.services {
		p := w.paths.Override(svc)
		b, _, ch, err := w.s.Conn().GetW(p)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			ok, _, ch, err = w.s.Conn().ExistsW(p)
			if err == nil && ok {
				return nil, nil, errors.New("override of " + svc.String() + " appeared while reading it")
			}
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, nil, zkErr("watch", p, err)
		}
		watches = append(watches, ch)
		if len(b) == 0 {
			continue
		}
		o, err := contract.DecodeOverride(b)
		if err != nil {
			w.log.Warn("ignoring an override that does not decode", "service", svc, "path", p, "err", err)
			continue
		}
		out[svc] = &o
	}
	return out, watches, nil
}

// fanIn signals fired once when any watch fires; it stops with ctx.
func fanIn(ctx context.Context, watches []<-chan zk.Event, fired chan<- struct{}) {
	var once sync.Once
	for _, ch := range watches {
		go func() {
			select {
			case <-ch:
				once.Do(func() { fired <- struct{}{} })
			case <-ctx.Done():
			}
		}()
	}
}

func sameOverrides(a, b map[contract.Service]*contract.Override) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || !sameOverride(x, y) {
			return false
		}
	}
	return true
}

func sameOverride(x, y *contract.Override) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.Side == y.Side && x.Until.Equal(y.Until) && x.Reason == y.Reason && x.By == y.By && x.V == y.V
}
