package core

import (
	"fmt"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Engine is the whole pure core wired together: an Aggregator for the
// windows, the rules for the verdicts and one State per service for the
// decisions. The daemon and Simulate drive it the same way (see the package
// doc). It is not safe for concurrent use: the driver owns it.
type Engine struct {
	cfg    Config
	agg    *Aggregator
	states map[contract.Service]State
}

// Evaluation is what one Tick returns.
type Evaluation struct {
	WindowStart, WindowEnd time.Time
	// Verdicts of every stage (aggregator included) on both sides, in the
	// order of contract.Stages() then contract.Sides().
	Verdicts []Verdict
	// Decisions, one per service in the order of contract.Services().
	Decisions []Decision
	// Stagger, one per service in the order of contract.Services().
	Stagger []StaggerVerdict
}

// Verdict returns the verdict of (service, side).
func (e Evaluation) Verdict(service contract.Stage, side contract.Side) (Verdict, bool) {
	for _, v := range e.Verdicts {
		if v.Service == service && v.Side == side {
			return v, true
		}
	}
	return Verdict{}, false
}

// NewEngine validates cfg and starts the first window at start.
func NewEngine(cfg Config, start time.Time) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, agg: NewAggregator(cfg, start), states: map[contract.Service]State{}}
	for _, svc := range contract.Services() {
		e.states[svc] = State{Service: svc, Preferred: cfg.Decision.PreferredSide()}
	}
	return e, nil
}

// Config returns the engine's config.
func (e *Engine) Config() Config { return e.cfg }

// Observe merges one sample received at receivedAt into the current window.
func (e *Engine) Observe(s *contract.HealthSample, receivedAt time.Time) Outcome {
	return e.agg.Add(s, receivedAt)
}

// Counters returns the aggregation step counters.
func (e *Engine) Counters() Counters { return e.agg.Counters() }

// WindowStart is the start of the current window.
func (e *Engine) WindowStart() time.Time { return e.agg.WindowStart() }

// State returns the decision state of service.
func (e *Engine) State(service contract.Service) State { return e.states[service] }

// Restore continues service's hysteresis from a persisted selection: called
// by a monitor that just became leader, before its next Tick.
func (e *Engine) Restore(sel contract.Selection) error {
	st, err := StateFromSelection(sel)
	if err != nil {
		return err
	}
	e.states[st.Service] = st
	return nil
}

// Tick closes the window at now, judges every (stage, side) and decides
// every service. overrides maps a service to its operator override (absent
// or nil: none). now must be after the window's start.
func (e *Engine) Tick(now time.Time, overrides map[contract.Service]*contract.Override) (Evaluation, error) {
	start := e.agg.WindowStart()
	if !now.After(start) {
		return Evaluation{}, fmt.Errorf("%w: tick at %s is not after the window start %s",
			ErrClockBackwards, now.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
	}
	stats := e.agg.Close(now)
	ev := Evaluation{WindowStart: start, WindowEnd: now}
	for _, stage := range contract.Stages() {
		for _, side := range contract.Sides() {
			self, other := e.windowOf(stats, stage, side, start, now), e.windowOf(stats, stage, side.Other(), start, now)
			if stage != contract.StageAggregator {
				self.UpstreamLagP99Ms = e.windowOf(stats, contract.StageAggregator, side, start, now).LagP99Ms
				other.UpstreamLagP99Ms = e.windowOf(stats, contract.StageAggregator, side.Other(), start, now).LagP99Ms
			}
			ev.Verdicts = append(ev.Verdicts, Evaluate(e.cfg.Rules, Key{stage, side}, self, other))
		}
	}
	for _, svc := range contract.Services() {
		p, _ := ev.Verdict(svc.Stage(), contract.Primary)
		s, _ := ev.Verdict(svc.Stage(), contract.Standby)
		in := Input{Verdicts: map[contract.Side]Verdict{contract.Primary: p, contract.Standby: s}, Override: overrides[svc]}
		d := Step(e.cfg.Decision, e.states[svc], in, now)
		e.states[svc] = d.State
		ev.Decisions = append(ev.Decisions, d)
		running := map[contract.Side][]BuildSeen{contract.Primary: p.Stats.Builds, contract.Standby: s.Stats.Builds}
		ev.Stagger = append(ev.Stagger, CheckStagger(svc, e.cfg.Stagger.Period, running, now))
	}
	return ev, nil
}

// Redecide applies a change of overrides between windows: every service is
// decided again from its last verdicts, without closing a window. Only
// decisions with Changed set are returned.
func (e *Engine) Redecide(now time.Time, overrides map[contract.Service]*contract.Override) []Decision {
	var out []Decision
	for _, svc := range contract.Services() {
		d := Step(e.cfg.Decision, e.states[svc], Input{Override: overrides[svc]}, now)
		if d.Changed {
			e.states[svc] = d.State
			out = append(out, d)
		}
	}
	return out
}

func (e *Engine) windowOf(stats map[Key]WindowStats, stage contract.Stage, side contract.Side, start, end time.Time) WindowStats {
	if st, ok := stats[Key{stage, side}]; ok {
		return st
	}
	return WindowStats{Start: start, End: end}
}
