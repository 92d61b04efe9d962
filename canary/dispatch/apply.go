package dispatch

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// rateWindow is the time constant of the live rate's moving average.
const rateWindow = 10 * time.Second

// apply is the dispatcher's control loop, the one owner of the senders: it
// turns what the follower read into plans (PlanTarget), opens and closes the
// targets' senders, publishes the routes the consumers read, sends the
// budget rows of campaigns a target newly samples, and shows it all in the
// metrics. It plans again every second, so an expiry (until) applies
// without a ZooKeeper event. It returns the senders when ctx ends.
func (d *Dispatcher) apply(ctx context.Context, observed <-chan followed) map[string]*sender {
	senders := map[string]*sender{}
	var (
		obs   map[string]Observed
		zkErr = errZKDown
		rate  float64
		last  int64
		seen  bool // the follower read the targets once
	)
	alpha := 1 - math.Exp(-float64(time.Second)/float64(rateWindow))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return senders
		case f := <-observed:
			if zkErr = f.err; f.err == nil {
				obs, seen = f.obs, true
			}
		case <-tick.C:
			n := d.consumed.Load()
			rate += alpha * (float64(n-last) - rate)
			last = n
			d.m.liveRate.Set(rate)
			for _, s := range senders {
				s.updateBuffered()
				s.sampledRate.tick(alpha)
			}
		}
		d.replan(ctx, obs, zkErr, senders, rate)
		if seen {
			d.plan.Do(func() { close(d.planned) })
		}
	}
}

// replan carries out one round of the control loop, in this order: plans,
// senders, routes, the budget rows of newly sampled campaigns, metrics and
// logs.
func (d *Dispatcher) replan(ctx context.Context, obs map[string]Observed, zkErr error, senders map[string]*sender, rate float64) {
	now := time.Now()
	d.plansMu.Lock()
	old := d.plans
	d.plansMu.Unlock()
	var next map[string]Plan
	if zkErr != nil {
		next = PausedAll(old, ReasonZKUnavailable, zkErr.Error())
	} else {
		next = make(map[string]Plan, len(obs))
		for name, o := range obs {
			if o.Doc != nil && o.Doc.Source != d.cfg.Side {
				continue // another side's dispatcher feeds it
			}
			next[name] = PlanTarget(o, old[name], now)
		}
	}
	fresh := d.reconcile(ctx, next, senders, zkErr == nil)
	var routes []route
	var changed []sampleChange
	for _, name := range slices.Sorted(maps.Keys(next)) {
		p, s := next[name], senders[name]
		if !p.Sending() || s == nil {
			continue
		}
		routes = append(routes, route{s: s, f: p.Fraction})
		from := old[name].Fraction
		if !old[name].Sending() || fresh[name] {
			from = 0
		}
		if p.Fraction != from {
			// A sender that was there while the target was not sent to
			// (paused, disabled): the copy of what it samples again had a
			// gap.
			resumed := !fresh[name] && !old[name].Sending()
			changed = append(changed, sampleChange{s: s, from: from, to: p.Fraction, gap: resumed})
		}
	}
	d.routes.Store(&routes)
	d.sendSampleChanges(changed, nil)
	d.m.targets.Set(float64(len(routes)))
	for name, p := range next {
		d.m.setPlan(p, d.expectedRate(p, senders[name], rate))
		d.logChange(old[name], p)
	}
	for name := range old {
		if _, ok := next[name]; !ok {
			d.m.forget(name)
			d.log.Info("dispatch: dark target removed", "target", name)
		}
	}
	d.plansMu.Lock()
	d.plans = next
	d.plansMu.Unlock()
	d.changes.Notify()
}

// reconcile opens a sender for every target that sends and has none, and
// closes the senders of deleted targets and of targets whose brokers
// changed. With prune false (ZooKeeper unreadable) nothing is closed. It
// returns the targets whose sender is new.
func (d *Dispatcher) reconcile(ctx context.Context, next map[string]Plan, senders map[string]*sender, prune bool) map[string]bool {
	fresh := map[string]bool{}
	for name, s := range senders {
		p, ok := next[name]
		gone := prune && !ok
		moved := ok && p.Doc != nil && senderKey(*p.Doc) != s.key
		if gone || moved {
			delete(senders, name)
			go s.close(closeCtx(ctx))
		}
	}
	for name, p := range next {
		if !p.Sending() || senders[name] != nil {
			continue
		}
		s, err := newSender(*p.Doc, d.cfg, d.m, d.log)
		if err != nil {
			d.log.Error("dispatch: cannot build the dark target's producer", "target", name, "err", err)
			continue
		}
		if p.Doc.Strategy == contract.DarkConstant {
			s.feed = newConstantFeed(d.cfg.Buffer)
			pctx, cancel := context.WithCancel(ctx)
			s.cancel = cancel
			go s.pace(pctx, p.Doc.Rate, d.budgetRow)
		} else {
			close(s.done)
		}
		senders[name] = s
		fresh[name] = true
	}
	return fresh
}

// closeCtx bounds how long a closed sender may flush.
func closeCtx(ctx context.Context) context.Context {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	context.AfterFunc(c, cancel)
	return c
}

// closeSenders closes every sender at the end of Run, each flushing for at
// most a few seconds, all at once.
func (d *Dispatcher) closeSenders(senders map[string]*sender) {
	done := make(chan struct{}, len(senders))
	for _, s := range senders {
		go func() { s.close(closeCtx(context.Background())); done <- struct{}{} }()
	}
	for range senders {
		<-done
	}
}

// sampleChange is a target whose sampled fraction changed.
type sampleChange struct {
	s        *sender
	from, to float64
	gap      bool // the target resumes after a pause: its rows say gap
}

// reason is why the rows of the copies a change adds are sent.
func (c sampleChange) reason() contract.DarkRowReason {
	if c.gap {
		return contract.DarkRowGap
	}
	return contract.DarkRowSample
}

// sendSampleChanges sends, for every target whose fraction grew, the budget
// rows of the copies it now samples and did not before (every row for a new
// or resumed target; reason sample, gap for a target that resumes after a
// pause or a copy that had a gap: sendGapRows), and for every target whose
// fraction shrank, a tombstone for each copy it no longer samples: a
// campaign leaves the target's budgets topic when it leaves the sample, so
// the comparator stops judging it (its copy ends in the middle of a
// window). Only the campaigns only keeps are sent (nil: all). It holds the
// table while it sends, as the budgets consumer does, so a newer row is
// never overtaken by an older one. It returns how many campaigns it sent a
// row or a tombstone.
func (d *Dispatcher) sendSampleChanges(changed []sampleChange, only func(campaign string) bool) int {
	if len(changed) == 0 {
		return 0
	}
	d.budgetsMu.Lock()
	defer d.budgetsMu.Unlock()
	campaigns := 0
	for campaign, row := range d.budgets {
		if only != nil && !only(campaign) {
			continue
		}
		sent := false
		for _, c := range changed {
			for k := contract.DarkCopies(campaign, c.from); k < contract.DarkCopies(campaign, c.to); k++ {
				c.s.budget([]byte(campaign), row, k, c.reason())
				sent = true
			}
			for k := contract.DarkCopies(campaign, c.to); k < contract.DarkCopies(campaign, c.from); k++ {
				c.s.budget([]byte(campaign), nil, k, contract.DarkRowUpdate)
				sent = true
			}
		}
		if sent {
			campaigns++
		}
	}
	return campaigns
}

// expectedRate is the ad events per second a target should receive now:
// while it is sent to, the copies the sampling chose (counted before they
// reach the target, so a dead target still shows what it misses); while it
// is paused, the live rate × the last fraction known; a constant target's
// rate.
func (d *Dispatcher) expectedRate(p Plan, s *sender, liveRate float64) float64 {
	switch {
	case !p.Active:
		return 0
	case p.Doc != nil && p.Doc.Strategy == contract.DarkConstant:
		return p.Doc.Rate
	case p.Sending() && s != nil && s.sampledRate.started:
		return s.sampledRate.value
	}
	return liveRate * p.Expected
}

// ewma is a moving average of a counter's increase per second.
type ewma struct {
	n       atomic.Int64 // the counter, added to by the consumers
	last    int64
	value   float64
	started bool // one tick seen
}

// tick is called every second.
func (e *ewma) tick(alpha float64) {
	n := e.n.Load()
	if e.started {
		e.value += alpha * (float64(n-e.last) - e.value)
	}
	e.last, e.started = n, true
}

// logChange logs a target's plan when it changed: once per state change.
func (d *Dispatcher) logChange(was, now Plan) {
	if was.Sending() == now.Sending() && was.Paused == now.Paused && was.Fraction == now.Fraction && was.Active == now.Active {
		return
	}
	l := d.log.With("target", now.Name, "fraction", now.Fraction)
	if now.Doc != nil {
		l = l.With("strategy", string(now.Doc.Strategy))
	}
	switch {
	case now.Paused != "":
		l.Warn("dispatch: dark target paused: sending nothing", "reason", string(now.Paused), "detail", now.Detail)
	case !now.Active:
		l.Info("dispatch: dark target off (disabled or expired)")
	default:
		l.Info("dispatch: dark target sending", "live_instances", now.Live, "dark_instances", now.Dark)
	}
}
