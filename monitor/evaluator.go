package monitor

import (
	"context"
	"slices"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// snapshot is what the evaluation loop last decided, for Status and the page.
type snapshot struct {
	lastEvaluation time.Time
	local          map[contract.Service]*LocalDecision
}

// evaluator is the evaluation loop: the one goroutine that owns the core
// engine. It takes in samples as they arrive, closes a window on every tick
// of its own ticker (so a dead cluster or ZooKeeper never delays it),
// applies override changes between windows, and restores the persisted
// state the publisher reads. In this order, per window: Tick the engine,
// export metrics, offer every decision with the window's verdicts to the
// publisher (which persists it before it reports a switch and records it).
type evaluator struct {
	m        *Monitor
	engine   *core.Engine
	pub      *publisher
	samples  <-chan received
	restores <-chan restoreMsg

	gen       int64 // > 0 while leading: the seed generation to offer with
	overrides map[contract.Service]*contract.Override
	last      core.Evaluation
	stagger   map[contract.Service]string
	kinds     map[contract.Service]string
	expiry    *time.Timer
}

func (e *evaluator) run(ctx context.Context) {
	ticker := time.NewTicker(e.m.cfg.Window)
	defer ticker.Stop()
	e.expiry = time.NewTimer(time.Hour)
	e.expiry.Stop()
	e.stagger, e.kinds = map[contract.Service]string{}, map[contract.Service]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-e.samples:
			e.engine.Observe(&r.sample, r.at)
			e.m.steps.Store(e.engine.Counters().Steps)
		case now := <-ticker.C:
			e.tick(e.windowEnd(now))
		case msg := <-e.restores:
			e.restore(msg, time.Now())
		case <-e.m.ovPoke:
			e.overrides = e.m.currentOverrides()
			e.redecide(time.Now())
		case now := <-e.expiry.C:
			e.redecide(now)
		}
		e.m.changes.Notify()
	}
}

// windowEnd puts a tick on the window schedule: the current window's start
// plus a whole number of windows, the last one at or before the tick (every
// window starts where the one before ended, so the schedule needs no origin
// of its own). A ticker fires at or a little after its schedule
// (microseconds, or milliseconds on a loaded machine), so ticks taken as
// they come make windows a little longer or shorter than the window, and a
// side healthy for n windows could be healthy for a microsecond less than n
// windows: with a grace of n windows its return waited one window more
// whenever the tick ending its health came less late than the one that
// began it. On the schedule every window is exactly one window long. A tick
// less than a window after the start is taken as it comes.
func (e *evaluator) windowEnd(tick time.Time) time.Time {
	w := e.m.cfg.Window
	start := e.engine.WindowStart()
	end := start.Add(tick.Sub(start) / w * w)
	if !end.After(start) {
		return tick
	}
	return end
}

func (e *evaluator) tick(now time.Time) {
	ev, err := e.engine.Tick(now, e.overrides)
	if err != nil {
		e.m.log.Warn("evaluation window skipped", "err", err)
		return
	}
	e.last = ev
	e.m.m.evaluations.Inc()
	e.m.m.lastEvaluation.Set(float64(now.UnixNano()) / 1e9)
	e.exportVerdicts(contract.StageAggregator) // how far behind each side's input is
	for i, d := range ev.Decisions {
		if !slices.Contains(e.m.cfg.services(), d.Service) {
			continue
		}
		sv := ev.Stagger[i]
		e.stagger[d.Service] = sv.Detail
		e.m.m.stagger.WithLabelValues(d.Service.String()).Set(b2f(sv.Violated))
		e.exportVerdicts(d.Service.Stage())
		e.offer(d, true)
	}
	e.m.evaluated.Store(true)
	e.publishSnapshot(now)
	e.armExpiry(now)
}

// restore continues from persisted selections: as the new leader (gen > 0)
// or as a follower mirroring the leader (gen == 0). msg holds only the
// selections that differ from what this replica knew; as leader it then
// offers every other decided service, whose state here is the newer one.
func (e *evaluator) restore(msg restoreMsg, now time.Time) {
	restored := map[contract.Service]bool{}
	for _, sel := range msg.sels {
		if err := e.engine.Restore(sel); err != nil {
			e.m.log.Warn("cannot continue from the published selection", "service", sel.Service, "err", err)
			continue
		}
		restored[sel.Service] = true
		e.kinds[sel.Service] = kindOf(sel)
		e.exportDecision(e.engine.State(sel.Service))
	}
	e.gen = msg.gen
	if e.gen > 0 {
		for _, svc := range e.m.cfg.services() {
			if st := e.engine.State(svc); !restored[svc] && st.Active != 0 {
				e.offerState(st, false, e.kinds[svc], false)
			}
		}
		// An override may have begun or ended since the old leader wrote.
		e.redecide(now)
	}
	e.publishSnapshot(e.snapshotTime())
}

// redecide applies override changes (and expiries) between windows. Before
// the first window nothing is decided: a decision needs verdicts.
func (e *evaluator) redecide(now time.Time) {
	if e.last.WindowEnd.IsZero() {
		return
	}
	for _, d := range e.engine.Redecide(now, e.overrides) {
		if !slices.Contains(e.m.cfg.services(), d.Service) {
			continue
		}
		if d.OverrideEnded {
			e.m.log.Info("override ended", "service", d.Service, "active", d.State.Active)
		}
		e.offer(d, false)
	}
	e.publishSnapshot(e.snapshotTime())
	e.armExpiry(now)
}

// offer exports a decision's gauges and, while leading, hands it to the
// publisher; closed says it ends the window e.last (its verdicts are
// offered too, for the decision record).
func (e *evaluator) offer(d core.Decision, closed bool) {
	e.kinds[d.Service] = d.Kind.String()
	e.exportDecision(d.State)
	if e.gen == 0 {
		if d.Switched {
			e.m.log.Debug("follower decided a switch; the leader publishes", "service", d.Service, "to", d.State.Active)
		}
		return
	}
	e.offerState(d.State, d.Switched, d.Kind.String(), closed)
}

func (e *evaluator) offerState(st core.State, switched bool, kind string, closed bool) {
	sel := st.Selection()
	sel.StaggerViolation = e.stagger[st.Service]
	o := offer{gen: e.gen, sel: sel, switched: switched, kind: kind}
	if closed {
		o.windows = []decisions.Entry{e.windowEntry(sel)}
	}
	e.pub.offer(o)
}

// windowEntry is the decision record's entry of the window e.last for sel's
// service: both sides' verdicts and the selection decided with them.
func (e *evaluator) windowEntry(sel contract.Selection) decisions.Entry {
	verdicts := map[contract.Side]decisions.Verdict{}
	for _, side := range contract.Sides() {
		if v, ok := e.last.Verdict(sel.Service.Stage(), side); ok {
			verdicts[side] = sideVerdictOf(v)
		}
	}
	d := e.m.cfg.Decision
	th := decisions.Thresholds{Preferred: d.Preferred, FailoverAfter: d.FailoverAfter, Grace: d.Grace.String()}
	return decisions.WindowEntry(sel, e.last.WindowStart, e.last.WindowEnd, verdicts, th)
}

func (e *evaluator) exportDecision(st core.State) {
	for _, side := range contract.Sides() {
		e.m.m.activeSide.WithLabelValues(st.Service.String(), side.String()).Set(b2f(st.Active == side))
	}
	e.m.m.degraded.WithLabelValues(st.Service.String()).Set(b2f(st.Degraded))
	e.m.m.overrideOn.WithLabelValues(st.Service.String()).Set(b2f(st.Override != nil))
	e.m.m.epoch.WithLabelValues(st.Service.String()).Set(float64(st.Epoch))
}

func (e *evaluator) exportVerdicts(service contract.Stage) {
	for _, side := range contract.Sides() {
		v, ok := e.last.Verdict(service, side)
		if !ok {
			continue
		}
		e.m.m.sideHealthy.WithLabelValues(service.String(), side.String()).Set(b2f(v.Healthy))
		e.m.m.sideQPS.WithLabelValues(service.String(), side.String()).Set(v.Stats.QPS)
		e.m.m.sideLag.WithLabelValues(service.String(), side.String()).Set(float64(v.Stats.LagP99Ms) / 1000)
		e.m.m.sideBehind.WithLabelValues(service.String(), side.String()).Set(b2f(v.CatchingUp != ""))
		e.m.m.sideInstances.WithLabelValues(service.String(), side.String()).Set(float64(v.Stats.Instances))
		for _, r := range core.AllRules() {
			e.m.m.sideReason.WithLabelValues(service.String(), side.String(), r.String()).Set(b2f(v.Failing(r)))
		}
	}
}

// armExpiry sets the timer to the earliest future end of an override in force.
func (e *evaluator) armExpiry(now time.Time) {
	e.expiry.Stop()
	var next time.Time
	for _, o := range e.overrides {
		if o != nil && o.Until.After(now) && (next.IsZero() || o.Until.Before(next)) {
			next = o.Until
		}
	}
	if !next.IsZero() {
		e.expiry.Reset(next.Sub(now) + time.Millisecond)
	}
}

func (e *evaluator) snapshotTime() time.Time {
	if s := e.m.snap.Load(); s != nil {
		return s.lastEvaluation
	}
	return time.Time{}
}

// publishSnapshot stores the local decisions for Status (read by other goroutines).
func (e *evaluator) publishSnapshot(lastEval time.Time) {
	s := &snapshot{lastEvaluation: lastEval, local: map[contract.Service]*LocalDecision{}}
	for _, svc := range e.m.cfg.services() {
		st := e.engine.State(svc)
		if st.Active == 0 {
			continue
		}
		ld := &LocalDecision{Active: st.Active, Kind: e.kinds[svc], Reason: st.Reason, Degraded: st.Degraded, Epoch: st.Epoch,
			DecidedAt: st.DecidedAt, Sides: map[contract.Side]SideVerdict{}, StaggerViolation: e.stagger[svc]}
		for _, side := range contract.Sides() {
			v, ok := e.last.Verdict(svc.Stage(), side)
			if !ok {
				continue
			}
			ld.Sides[side] = sideVerdictOf(v)
		}
		s.local[svc] = ld
	}
	e.m.snap.Store(s)
}

// sideVerdictOf is a verdict with its numbers, as Status and the decision
// record show it.
func sideVerdictOf(v core.Verdict) SideVerdict {
	return SideVerdict{Healthy: v.Healthy, Reasons: v.ReasonStrings(), CatchingUp: v.CatchingUp, QPS: v.Stats.QPS,
		LagP99Ms: v.Stats.LagP99Ms, LagMaxMs: v.Stats.LagMaxMs, AggregatorLagP99Ms: v.Stats.UpstreamLagP99Ms, Samples: v.Stats.Samples,
		Instances: v.Stats.Instances, TopicPartitions: v.Stats.TopicPartitions,
		Unassigned: v.Stats.UnassignedCount, Build: v.Stats.NewestBuild().Build}
}
