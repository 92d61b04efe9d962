package compare

import (
	"time"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
)

// Source names a pipeline the engine reads: a live side (Target "") or a
// dark target.
type Source struct {
	Side   contract.Side
	Target string
}

// Live is the live side s; Dark the dark target name.
func Live(s contract.Side) Source { return Source{Side: s} }

// Dark is the dark target name.
func Dark(name string) Source { return Source{Target: name} }

func (s Source) String() string {
	if s.Target != "" {
		return "dark " + s.Target
	}
	return s.Side.String()
}

// Target is one dark target the engine judges: its name and the live side
// whose input it copies.
type Target struct {
	Name   string
	Source contract.Side
}

// Engine is the comparison's pure core. The shell feeds it every output
// record and health sample with the time it was received, calls Round every
// Rules.Interval and asks for the Report; nothing in it reads a clock or
// does I/O. It is not safe for concurrent use: one goroutine owns it.
type Engine struct {
	rules   Rules
	tol     outdiff.Tolerances
	live    [2]*table // primary, standby
	targets map[string]*targetState
	removed map[string]bool // targets removed while the engine ran
	health  [2]*healthLog
}

// NewEngine returns an engine with rules (Validate them first).
func NewEngine(r Rules) *Engine {
	return &Engine{
		rules: r, tol: outdiff.Tolerances{PacingRateAbs: r.PacingRateAbs, BidMultiplierRel: r.BidMultiplierRel},
		live:    [2]*table{newTable(), newTable()},
		targets: map[string]*targetState{},
		removed: map[string]bool{},
		health:  [2]*healthLog{{}, {}},
	}
}

// SetTargets replaces the judged targets: a new one starts empty, a removed
// one is forgotten, a kept one keeps its data (its source may change). A
// target set again after a removal is compared afresh, as after a silence
// (see targetState.again): its copy has a gap.
func (e *Engine) SetTargets(ts []Target) {
	keep := map[string]bool{}
	for _, t := range ts {
		keep[t.Name] = true
		if st, ok := e.targets[t.Name]; ok {
			st.source = t.Source
			continue
		}
		st := newTargetState(t)
		st.again = e.removed[t.Name]
		e.targets[t.Name] = st
	}
	for name := range e.targets {
		if !keep[name] {
			delete(e.targets, name)
			e.removed[name] = true
		}
	}
}

// Targets returns the judged targets.
func (e *Engine) Targets() []Target {
	out := make([]Target, 0, len(e.targets))
	for _, st := range e.targets {
		out = append(out, Target{Name: st.name, Source: st.source})
	}
	return out
}

// ObserveOutput takes one output record (output is outdiff.BudgetStatus,
// Pacing or BidMultipliers) of src, received at at. A record that does not
// decode is returned as an error and ignored. A dark target's clones
// (contract.DarkCloneID) have no live counterpart and are not kept.
func (e *Engine) ObserveOutput(src Source, output, key string, value []byte, at time.Time) error {
	if src.Target == "" {
		if !src.Side.Valid() {
			return nil
		}
		return e.live[sideIndex(src.Side)].add(output, key, value, at)
	}
	st, ok := e.targets[src.Target]
	if !ok {
		return nil
	}
	if _, k := contract.DarkCampaignOf(key); k != 0 {
		return nil
	}
	st.received(at, e.rules.Stale)
	if !st.admit(key, at, e.rules.Stale) {
		return nil
	}
	return st.table.add(output, key, value, at)
}

// ObserveSampled takes one record of a dark target's budgets topic: its key
// is a campaign the dispatcher sent to the target, row its budget row, at at
// (the record's timestamp), why the dispatcher sent it in reason (its
// contract.HeaderDarkRow; "" without one, from an older dispatcher); a
// tombstone (row nil) takes it back. Clones are not kept. A sampled
// campaign whose outputs live has and the target does not write is missing
// (docs/dark.md).
func (e *Engine) ObserveSampled(target, campaign string, row []byte, reason contract.DarkRowReason, at time.Time) {
	if st, ok := e.targets[target]; ok {
		st.sample(campaign, row, reason, at)
	}
}

// ObserveHealth takes one health sample of src.
func (e *Engine) ObserveHealth(src Source, s contract.HealthSample, at time.Time) {
	if src.Target == "" {
		if src.Side.Valid() {
			e.health[sideIndex(src.Side)].add(s, at)
		}
		return
	}
	if st, ok := e.targets[src.Target]; ok {
		st.health.add(s, at)
	}
}

// Round compares, for every target, each sampled campaign's latest value of
// every output that changed since it was last compared and has settled on
// the pipelines compared, and forgets what is older than the horizon.
func (e *Engine) Round(now time.Time) {
	from := now.Add(-e.rules.Horizon)
	for _, st := range e.targets {
		st.round(e, now)
		st.prune(from)
	}
	for _, h := range e.health {
		h.prune(from)
	}
	// Live rows of campaigns no target samples go once a dark value of the
	// same update could no longer be compared with them: the live tables
	// hold the sampled campaigns, not every live campaign.
	unsampled := func(k outputKey) bool {
		for _, st := range e.targets {
			if _, ok := st.table.ver[k]; ok {
				return false
			}
			if _, ok := st.sampled[k.campaign]; ok {
				return false
			}
		}
		return true
	}
	old := now.Add(-(e.rules.Settle + e.rules.MaxSkew + e.rules.Interval))
	for _, t := range e.live {
		t.prune(from)
		t.pruneIf(old, unsampled)
	}
}

// sideIndex is 0 for the primary, 1 for the standby.
func sideIndex(s contract.Side) int {
	if s == contract.Standby {
		return 1
	}
	return 0
}
