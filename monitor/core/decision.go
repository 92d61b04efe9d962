package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/humantime"
)

// Kind says which rule of the state machine made a decision.
type Kind int

// Kinds of decisions.
const (
	// KindInitial: the first decision of a service, on the preferred side.
	KindInitial Kind = 1 + iota
	// KindStay: nothing calls for a change (the reason says why).
	KindStay
	// KindFailover: the active side was unhealthy for FailoverAfter windows
	// and the other side is healthy.
	KindFailover
	// KindReturn: back to the preferred side after it was healthy for the
	// whole grace period.
	KindReturn
	// KindOverride: an operator override is in force.
	KindOverride
)

var kindNames = [...]string{"", "initial", "stay", "failover", "return", "override"}

func (k Kind) String() string {
	if k <= 0 || int(k) >= len(kindNames) {
		return "unknown"
	}
	return kindNames[k]
}

// Input is what one decision step looks at.
type Input struct {
	// Verdicts of a window that just closed, by side. Nil when re-deciding
	// between windows (an override appeared or ended): the side states then
	// stay as they are and no window is counted.
	Verdicts map[contract.Side]Verdict
	// Override is the operator override of the service, if one exists; it
	// applies while now is before its Until.
	Override *contract.Override
}

// Decision is the outcome of one step for one service.
type Decision struct {
	Service contract.Service
	// State is the new state: the driver persists State.Selection().
	State State
	Kind  Kind
	// From is the active side before the step ("" at the first decision).
	From contract.Side
	// Switched is set when the active side changed (Epoch grew).
	Switched bool
	// Changed is set when anything a reader acts on changed: the active
	// side, degraded, the override, or a side's health. The driver writes
	// at once when set, and at most once per window otherwise.
	Changed bool
	// OverrideEnded is set when an override that was in force no longer is.
	OverrideEnded bool
	// Reason explains the decision with its evidence, for people.
	Reason string
}

// Step runs the state machine once for one service: it folds in the
// verdicts of a closed window (if any), then chooses the active side:
//
//  1. an override in force wins;
//  2. both sides unhealthy: stay, degraded;
//  3. both sides behind — the active side fails lag_high only and the other,
//     healthy, is catching up too (overload, or input late upstream of both):
//     stay, degraded; a switch would buy a side about as late;
//  4. the active side unhealthy for FailoverAfter windows and the other
//     healthy: switch at once;
//  5. on the non-preferred side, the preferred side healthy and keeping up
//     continuously for Grace: return;
//  6. otherwise stay.
func Step(cfg DecisionConfig, prev State, in Input, now time.Time) Decision {
	next := prev
	next.Preferred = cfg.PreferredSide()
	first := prev.Active == 0
	if first {
		next.Active = cfg.PreferredSide()
	}
	if in.Verdicts != nil {
		next.observe(in.Verdicts)
	}
	var override *contract.Override
	if in.Override.ActiveAt(now) {
		o := *in.Override
		override = &o
	}
	kind, to, reason := choose(cfg, &next, override, now)
	d := Decision{Service: prev.Service, From: prev.Active, Kind: kind}
	d.OverrideEnded = prev.Override != nil && override == nil
	if d.OverrideEnded {
		reason = fmt.Sprintf("override to %s by %s ended; %s", prev.Override.Side, prev.Override.By, reason)
	}
	switch {
	case first:
		next.Epoch = max(next.Epoch, 0) + 1
		if kind == KindStay {
			d.Kind = KindInitial
		}
	case to != prev.Active:
		next.Epoch++
		next.LastSwitch = now
		d.Switched = true
	}
	next.Active, next.Reason, next.Override, next.DecidedAt = to, reason, override, now
	next.Degraded = degraded(&next)
	d.State, d.Reason = next, reason
	d.Changed = first || d.Switched || next.Degraded != prev.Degraded ||
		!sameOverride(prev.Override, override) || healthChanged(&prev, &next)
	return d
}

// choose picks the active side; see Step for the order of the rules.
func choose(cfg DecisionConfig, s *State, override *contract.Override, now time.Time) (Kind, contract.Side, string) {
	if override != nil {
		return KindOverride, override.Side, fmt.Sprintf("operator override to %s by %s until %s: %s",
			override.Side, orUnknown(override.By), override.Until.UTC().Format(time.RFC3339), override.Reason)
	}
	active := s.Active
	other := active.Other()
	a, o := s.Side(active), s.Side(other)
	switch {
	case !a.Known || !o.Known:
		return KindStay, active, fmt.Sprintf("staying on %s: no verdict of both sides yet", active)
	case bothUnhealthy(s):
		return KindStay, active, fmt.Sprintf("both sides unhealthy, staying on %s (degraded): %s: %s; %s: %s",
			active, active, reasons(a), other, reasons(o))
	case laggingTogether(a, o):
		return KindStay, active, fmt.Sprintf("both sides behind, staying on %s (degraded): %s: %s; %s catching up: %s",
			active, active, reasons(a), other, o.CatchingUp)
	case !a.Healthy && a.UnhealthyWindows >= cfg.FailoverAfter:
		return KindFailover, other, fmt.Sprintf("failover %s → %s: %s unhealthy for %d window(s): %s; %s healthy (%s)",
			active, other, active, a.UnhealthyWindows, reasons(a), other, evidence(o))
	case !a.Healthy:
		return KindStay, active, fmt.Sprintf("staying on %s: unhealthy for %d of %d windows before failover: %s",
			active, a.UnhealthyWindows, cfg.FailoverAfter, reasons(a))
	case active != cfg.PreferredSide():
		return returnOrStay(cfg, s, now)
	case a.CatchingUp != "":
		return KindStay, active, fmt.Sprintf("%s healthy (%s), catching up: %s", active, evidence(a), a.CatchingUp)
	}
	return KindStay, active, fmt.Sprintf("%s healthy (%s)", active, evidence(a))
}

// returnOrStay decides on the non-preferred side while it is healthy: go back
// once the preferred side has been healthy for the whole grace period.
func returnOrStay(cfg DecisionConfig, s *State, now time.Time) (Kind, contract.Side, string) {
	active, pref := s.Active, cfg.PreferredSide()
	p := s.Side(pref)
	switch {
	case !p.Healthy:
		return KindStay, active, fmt.Sprintf("staying on %s: preferred %s unhealthy: %s", active, pref, reasons(p))
	case p.HealthySince.IsZero():
		return KindStay, active, fmt.Sprintf("staying on %s: preferred %s is catching up (%s); its grace period of %s starts once it keeps up",
			active, pref, orUnknown(p.CatchingUp), cfg.Grace)
	}
	healthyFor := now.Sub(p.HealthySince)
	if healthyFor >= cfg.Grace {
		return KindReturn, pref, fmt.Sprintf("return %s → %s: %s healthy continuously since %s (%s ≥ grace %s; %s)",
			active, pref, pref, p.HealthySince.UTC().Format(time.RFC3339), humantime.Round(healthyFor), cfg.Grace, evidence(p))
	}
	return KindStay, active, fmt.Sprintf("staying on %s: preferred %s healthy for %s of grace %s",
		active, pref, humantime.Round(healthyFor), cfg.Grace)
}

func bothUnhealthy(s *State) bool {
	p, b := &s.Sides[0], &s.Sides[1]
	return p.Known && b.Known && !p.Healthy && !b.Healthy
}

// laggingTogether: the active side a fails lag_high and nothing else, and
// the other side o, though healthy, is catching up: both are behind, as under
// an overload of both or input that arrives late upstream of both. Like both
// sides' input rate dropping together, it is no reason to switch.
func laggingTogether(a, o *SideState) bool {
	return a.Known && o.Known && !a.Healthy && o.Healthy && o.CatchingUp != "" &&
		slices.Equal(ruleNamesOf(a.Reasons), []string{RuleLagHigh.String()})
}

// degraded: no side can serve well — both unhealthy, or the active side only
// lags and the other is behind too.
func degraded(s *State) bool {
	return bothUnhealthy(s) || laggingTogether(s.Side(s.Active), s.Side(s.Active.Other()))
}

func healthChanged(prev, next *State) bool {
	for i := range prev.Sides {
		p, n := &prev.Sides[i], &next.Sides[i]
		if p.Known != n.Known || p.Healthy != n.Healthy || (p.CatchingUp == "") != (n.CatchingUp == "") ||
			!slices.Equal(ruleNamesOf(p.Reasons), ruleNamesOf(n.Reasons)) {
			return true
		}
	}
	return false
}

// ruleNamesOf strips the numbers off reasons, which change every window.
func ruleNamesOf(reasons []string) []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i], _, _ = strings.Cut(r, ":")
	}
	return out
}

func sameOverride(a, b *contract.Override) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Side == b.Side && a.Until.Equal(b.Until) && a.Reason == b.Reason && a.By == b.By
}

func reasons(s *SideState) string {
	if len(s.Reasons) == 0 {
		return "healthy"
	}
	return strings.Join(s.Reasons, ", ")
}

func evidence(s *SideState) string {
	return fmt.Sprintf("qps %s, lag p99 %d ms", formatQPS(s.QPS), s.LagP99Ms)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
