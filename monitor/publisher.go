package monitor

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// offer is a selection the evaluation loop wants published.
type offer struct {
	// gen is the seed generation the decision was made from; the publisher
	// drops offers of an older generation.
	gen int64
	sel contract.Selection
	// switched and kind come from the decision (core.Decision); merged
	// offers keep a switch that a later offer of the same service replaces.
	switched bool
	kind     string
	// windows are the decision record's entries of the windows decided
	// since the last write (merged offers keep them all), recorded once
	// the selection is persisted.
	windows []decisions.Entry
}

// maxPendingWindows bounds the window entries waiting for a write while
// ZooKeeper is slow (the oldest go first).
const maxPendingWindows = 64

// recordAppender is what the publisher needs of the decision record.
type recordAppender interface {
	append([]decisions.Entry)
}

// restoreMsg carries persisted selections to the evaluation loop.
type restoreMsg struct {
	// gen > 0: this replica now leads; the loop restores the selections into
	// the engine and makes its offers with gen from then on. gen == 0: a
	// follower's periodic mirror of what the leader published.
	gen  int64
	sels []contract.Selection
}

// publisher is the only goroutine that writes selections. It runs apart
// from the evaluation loop so that a slow or absent ZooKeeper never delays
// an evaluation: offers wait in a mailbox (latest per service wins).
//
// As leader, on every new term it reads every selection (versions and the
// hysteresis to continue) and hands them to the loop, then writes each
// offer with writeSelection. A fenced or conflicting write is logged and
// never retried as it was: the publisher reads again and the loop decides
// again. As follower it reads the selections once per window and hands
// them to the loop as a mirror, so a takeover continues from fresh state.
type publisher struct {
	s        *zkutil.Session
	paths    contract.Paths
	acl      []zk.ACL
	services []contract.Service
	window   time.Duration
	retry    time.Duration
	log      *slog.Logger
	m        *metrics
	rec      recordAppender // nil: no decision record
	leader   func() leadership
	restore  chan<- restoreMsg
	changes  *changes.Feed // told after every step

	wake chan struct{}
	mu   sync.Mutex
	// pending offers by service.
	pending map[contract.Service]offer
	// published is the latest selection known to be in ZooKeeper per
	// service (written by this replica or read).
	published map[contract.Service]*contract.Selection

	// owned by run
	gen        int64
	seededTerm int64
	versions   map[contract.Service]int32
	uncertain  map[contract.Service]*contract.Selection // a write whose outcome is unknown
	nextMirror time.Time
}

func newPublisher(p *publisher) *publisher {
	if p.changes == nil {
		p.changes = &changes.Feed{}
	}
	p.wake = make(chan struct{}, 1)
	p.pending = map[contract.Service]offer{}
	p.published = map[contract.Service]*contract.Selection{}
	p.versions = map[contract.Service]int32{}
	p.uncertain = map[contract.Service]*contract.Selection{}
	return p
}

// offer queues a selection for publication (non-blocking).
func (p *publisher) offer(o offer) {
	p.mu.Lock()
	if old, ok := p.pending[o.sel.Service]; ok && old.gen == o.gen {
		if old.switched && !o.switched {
			o.switched, o.kind = true, old.kind
		}
		o.windows = joinWindows(old.windows, o.windows)
	}
	p.pending[o.sel.Service] = o
	p.mu.Unlock()
	p.poke()
}

func (p *publisher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// publishedSelections returns a copy of what is known to be published.
func (p *publisher) publishedSelections() map[contract.Service]*contract.Selection {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[contract.Service]*contract.Selection, len(p.published))
	for k, v := range p.published {
		c := *v
		out[k] = &c
	}
	return out
}

func (p *publisher) run(ctx context.Context) {
	pokes, unsubscribe := p.s.Subscribe()
	defer unsubscribe()
	for ctx.Err() == nil {
		wait := p.step(ctx, time.Now())
		p.changes.Notify()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-pokes:
		case <-p.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// step does what is due and returns how long to sleep at most.
func (p *publisher) step(ctx context.Context, now time.Time) time.Duration {
	if !p.s.Usable() {
		return p.window
	}
	l := p.leader()
	switch {
	case !l.Leader:
		p.seededTerm = 0
		p.dropPending()
		if now.Before(p.nextMirror) {
			return p.nextMirror.Sub(now)
		}
		if err := p.mirror(ctx); err != nil {
			p.log.Warn("reading the published selections failed", "err", err)
			return p.retry
		}
		p.nextMirror = now.Add(p.window)
		return p.window
	case p.seededTerm != l.Term:
		if err := p.seed(ctx, l); err != nil {
			p.log.Warn("reading the selections to continue from failed; retrying", "err", err)
			return p.retry
		}
		return p.window
	}
	return p.flush(l)
}

func (p *publisher) dropPending() {
	p.mu.Lock()
	clear(p.pending)
	p.mu.Unlock()
	clear(p.uncertain)
}

// readAll reads every service's selection and its version.
func (p *publisher) readAll() ([]contract.Selection, error) {
	var sels []contract.Selection
	versions := map[contract.Service]int32{}
	for _, svc := range p.services {
		sel, v, err := readSelection(p.s.Conn(), p.paths, svc)
		if err != nil && !errors.Is(err, contract.ErrInvalidDocument) {
			return nil, err
		}
		if err != nil {
			p.log.Warn("published selection does not decode; it will be overwritten", "service", svc, "err", err)
		}
		versions[svc] = v
		if sel != nil {
			sels = append(sels, *sel)
		}
	}
	p.versions = versions
	return sels, nil
}

// seed starts a term: read what is published and hand the loop every
// selection that differs from what this replica knew (what it wrote or
// mirrored last). An unchanged one is already part of the loop's state,
// which may have moved on since (e.g. decisions made while ZooKeeper was
// unreachable): those are kept and published, not rolled back.
func (p *publisher) seed(ctx context.Context, l leadership) error {
	sels, err := p.readAll()
	if err != nil {
		return err
	}
	p.gen++
	p.seededTerm = l.Term
	p.dropPending()
	changed := p.setPublished(sels, "")
	p.log.Info("leading: continuing from the published selections", "term", l.Term,
		"selections", len(sels), "changed_by_others", len(changed), "node", l.Node)
	return p.send(ctx, restoreMsg{gen: p.gen, sels: changed})
}

// mirror is a follower's periodic read of the leader's selections.
func (p *publisher) mirror(ctx context.Context) error {
	sels, err := p.readAll()
	if err != nil {
		return err
	}
	changed := p.setPublished(sels, "the leader")
	if len(changed) == 0 {
		return nil
	}
	return p.send(ctx, restoreMsg{sels: changed})
}

func (p *publisher) send(ctx context.Context, m restoreMsg) error {
	select {
	case p.restore <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setPublished records what was read and returns the selections that
// differ from what was known; with a writer it also records the switches
// the leader made since the last read.
func (p *publisher) setPublished(sels []contract.Selection, writer string) []contract.Selection {
	p.mu.Lock()
	defer p.mu.Unlock()
	var changed []contract.Selection
	for i := range sels {
		sel := sels[i]
		prev := p.published[sel.Service]
		if sameSelection(prev, &sel) {
			continue
		}
		changed = append(changed, sel)
		if writer != "" && prev != nil && prev.Active != sel.Active {
			p.log.Info("the leader switched the active side", "service", sel.Service, "from", prev.Active, "to", sel.Active, "epoch", sel.Epoch, "reason", sel.Reason)
		}
		p.published[sel.Service] = &sel
	}
	return changed
}

// takePending removes and returns the offers of the current generation.
func (p *publisher) takePending() []offer {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []offer
	for svc, o := range p.pending {
		if o.gen == p.gen {
			out = append(out, o)
		}
		delete(p.pending, svc)
	}
	return out
}

// putBack re-queues an offer unless a newer one arrived meanwhile (which
// then takes its windows).
func (p *publisher) putBack(o offer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if newer, ok := p.pending[o.sel.Service]; ok {
		newer.windows = joinWindows(o.windows, newer.windows)
		p.pending[o.sel.Service] = newer
		return
	}
	p.pending[o.sel.Service] = o
}

func joinWindows(older, newer []decisions.Entry) []decisions.Entry {
	all := append(slices.Clone(older), newer...)
	return all[max(len(all)-maxPendingWindows, 0):]
}

// record appends entries to the decision record, if there is one.
func (p *publisher) record(entries []decisions.Entry) {
	if p.rec != nil && len(entries) > 0 {
		p.rec.append(entries)
	}
}

// flush writes the pending offers as leader.
func (p *publisher) flush(l leadership) time.Duration {
	for _, o := range p.takePending() {
		svc := o.sel.Service
		if att := p.uncertain[svc]; att != nil {
			if !p.reconcile(svc, att) {
				return 0 // conflict: re-seed now
			}
		}
		p.mu.Lock()
		same := sameSelection(p.published[svc], &o.sel)
		p.mu.Unlock()
		if same {
			p.record(o.windows) // the selection is there, e.g. offered again after a reconnect
			continue
		}
		v, err := writeSelection(p.s.Conn(), p.paths, l.Node, o.sel, p.versions[svc], p.acl)
		switch {
		case err == nil:
			p.written(o, v)
		case errors.Is(err, ErrFenced):
			p.m.publishErrors.WithLabelValues(svc.String(), "fenced").Inc()
			p.log.Warn("selection write fenced off: this replica no longer leads; not retrying",
				"service", svc, "active", o.sel.Active, "epoch", o.sel.Epoch, "node", l.Node, "err", err)
			p.seededTerm = 0
			p.dropPending()
			return p.retry
		case errors.Is(err, ErrVersionConflict):
			p.m.publishErrors.WithLabelValues(svc.String(), "version_conflict").Inc()
			p.log.Warn("selection changed since it was read; reading it again and deciding again instead of retrying",
				"service", svc, "active", o.sel.Active, "epoch", o.sel.Epoch, "err", err)
			p.seededTerm = 0
			p.dropPending()
			return 0
		case errors.Is(err, ErrACL):
			p.m.publishErrors.WithLabelValues(svc.String(), "acl").Inc()
			p.log.Error("selection write refused by ZooKeeper's ACL", "service", svc, "err", err)
		default:
			p.m.publishErrors.WithLabelValues(svc.String(), "zk").Inc()
			p.log.Warn("selection write failed; it will be checked and tried again", "service", svc, "err", err)
			att := o.sel
			p.uncertain[svc] = &att
			p.putBack(o)
			return p.retry
		}
	}
	return p.window
}

// reconcile settles a write whose outcome is unknown (the connection broke):
// if ZooKeeper holds it, it counts as written; if ZooKeeper still holds the
// selection before it, the version is refreshed for the next try; anything
// else is a conflict and it returns false.
func (p *publisher) reconcile(svc contract.Service, attempted *contract.Selection) bool {
	cur, v, err := readSelection(p.s.Conn(), p.paths, svc)
	if err != nil && !errors.Is(err, contract.ErrInvalidDocument) {
		return true // still unknown: the write below fails the same way and retries
	}
	delete(p.uncertain, svc)
	p.mu.Lock()
	prev := p.published[svc]
	p.mu.Unlock()
	switch {
	case sameSelection(cur, attempted):
		p.written(offer{sel: *attempted, kind: "unknown"}, v)
		return true
	case sameSelection(cur, prev):
		p.versions[svc] = v
		return true
	}
	p.m.publishErrors.WithLabelValues(svc.String(), "version_conflict").Inc()
	p.log.Warn("selection changed by another writer during a failed write; reading again", "service", svc)
	p.seededTerm = 0
	p.dropPending()
	return false
}

func sameSelection(a, b *contract.Selection) bool {
	if a == nil || b == nil {
		return a == b
	}
	ba, _ := contract.Encode(a)
	bb, _ := contract.Encode(b)
	return bytes.Equal(ba, bb)
}

// written records a successful write and reports a switch: the switch is
// logged (once, at WARN, with the evidence) only after it is persisted.
// Then, best-effort, the decision record gets what changed and the windows
// decided: persist to ZooKeeper first, then record.
func (p *publisher) written(o offer, version int32) {
	svc := o.sel.Service
	p.versions[svc] = version
	sel := o.sel
	p.mu.Lock()
	prev := p.published[svc]
	p.published[svc] = &sel
	p.mu.Unlock()
	p.m.publications.WithLabelValues(svc.String()).Inc()
	p.m.lastPublished.WithLabelValues(svc.String()).Set(float64(time.Now().UnixNano()) / 1e9)
	kind := o.kind
	if kind == "" || kind == "unknown" || kind == "stay" {
		kind = kindOf(sel)
	}
	switch {
	case prev == nil:
		p.log.Info("first selection published", "service", svc, "active", sel.Active, "epoch", sel.Epoch, "reason", sel.Reason)
	case prev.Active != sel.Active:
		p.m.switches.WithLabelValues(svc.String(), sel.Active.String(), kind).Inc()
		p.log.Warn("switched the active side", switchEvidence(sel, prev.Active.String(), kind)...)
	}
	p.record(append(slices.Clone(o.windows), decisions.Changes(prev, sel, kind)...))
}

// switchEvidence is the one WARN line of a switch: every number behind it.
func switchEvidence(sel contract.Selection, from, kind string) []any {
	args := []any{"service", sel.Service, "from", from, "to", sel.Active, "kind", kind,
		"epoch", sel.Epoch, "reason", sel.Reason, "degraded", sel.Degraded}
	for _, side := range contract.Sides() {
		s, ok := sel.Sides[side]
		if !ok {
			args = append(args, slog.Group(side.String(), "known", false))
			continue
		}
		g := []any{"healthy", s.Healthy, "reasons", s.Reasons, "qps", s.QPS, "lag_p99_ms", s.LagP99Ms, "build", s.Build}
		if s.HealthySince != nil {
			g = append(g, "healthy_since", s.HealthySince.UTC())
		}
		args = append(args, slog.Group(side.String(), g...))
	}
	if o := sel.Override; o != nil {
		args = append(args, slog.Group("override", "side", o.Side, "by", o.By, "until", o.Until, "reason", o.Reason))
	}
	return args
}

// kindOf infers why a published selection has its active side.
func kindOf(sel contract.Selection) string {
	switch {
	case sel.Override != nil && sel.Override.Side == sel.Active:
		return "override"
	case sel.Active == sel.Preferred:
		return "return"
	}
	return "failover"
}
