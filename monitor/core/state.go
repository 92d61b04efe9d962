package core

import (
	"time"

	"github.com/hotpair/hotpair/contract"
)

// State is the decision state of one service: the active side and the
// hysteresis that decides when it changes. It is a value: Step returns a new
// one and never changes its argument. It round-trips through
// contract.Selection, so a new leader continues it.
type State struct {
	Service   contract.Service
	Active    contract.Side // unset before the first decision
	Preferred contract.Side
	// Epoch counts the changes of Active; the first decision makes it 1.
	Epoch      int64
	DecidedAt  time.Time
	LastSwitch time.Time // zero if Active never changed
	Degraded   bool      // both sides unhealthy
	Reason     string
	// Override is the operator override in force at DecidedAt, if any.
	Override *contract.Override
	// Sides holds the per-side view: [0] primary, [1] standby.
	Sides [2]SideState
}

// SideState is one side's latest verdict and its hysteresis counters.
type SideState struct {
	Known   bool // a verdict has been seen
	Healthy bool
	Reasons []string
	// HealthySince is the start of the first window of the current healthy
	// streak; zero while unhealthy.
	HealthySince time.Time
	// UnhealthyWindows counts the consecutive unhealthy windows.
	UnhealthyWindows int
	// CatchingUp is the evidence that the side is behind (its lag, or its
	// aggregator's, above catch_up_lag), "" while it keeps up. A side that
	// is healthy but catching up has no HealthySince: its grace clock starts
	// once it keeps up.
	CatchingUp string
	QPS        float64
	// LagP99Ms is the end-to-end p99 lag of the service on this side;
	// AggregatorLagP99Ms its aggregator's (how far behind the side's input is).
	LagP99Ms           int64
	AggregatorLagP99Ms int64
	// Build is the newest build the side's live instances run (the last
	// one known while none runs). BuildSince is when the monitor first saw
	// it; zero for a build already running as the monitor started.
	Build      string
	BuildSince time.Time
	// RollingFrom is the oldest other build still running on the side
	// while a deploy rolls out; "" otherwise.
	RollingFrom string
}

func sideIndex(side contract.Side) int {
	if side == contract.Standby {
		return 1
	}
	return 0
}

// Side returns the state of side ("primary" or "standby").
func (s *State) Side(side contract.Side) *SideState { return &s.Sides[sideIndex(side)] }

// observe folds the verdicts of a closed window into the side states.
func (s *State) observe(verdicts map[contract.Side]Verdict) {
	for _, side := range contract.Sides() {
		v, ok := verdicts[side]
		if !ok {
			continue
		}
		ss := s.Side(side)
		ss.Known, ss.Healthy, ss.CatchingUp = true, v.Healthy, v.CatchingUp
		ss.Reasons = v.ReasonStrings()
		ss.QPS, ss.LagP99Ms = v.Stats.QPS, v.Stats.LagP99Ms
		ss.AggregatorLagP99Ms = v.Stats.UpstreamLagP99Ms
		ss.observeBuilds(v.Stats.Builds)
		switch {
		case !v.Healthy:
			ss.HealthySince = time.Time{}
			ss.UnhealthyWindows++
		case v.CatchingUp != "": // healthy, but not yet for the grace clock
			ss.HealthySince = time.Time{}
			ss.UnhealthyWindows = 0
		default:
			if ss.HealthySince.IsZero() {
				ss.HealthySince = v.WindowStart
			}
			ss.UnhealthyWindows = 0
		}
	}
}

// observeBuilds takes in the builds the side's live instances run, oldest
// first. A build of unknown age (running as this replica started) that the
// side already ran keeps the BuildSince a previous leader persisted, so a
// monitor restart never makes a fresh deploy look established. With no live
// instance the last known build stays.
func (ss *SideState) observeBuilds(builds []BuildSeen) {
	if len(builds) == 0 {
		ss.RollingFrom = ""
		return
	}
	newest := builds[len(builds)-1]
	if newest.Build != ss.Build || !newest.FirstSeen.IsZero() {
		ss.BuildSince = newest.FirstSeen
	}
	ss.Build, ss.RollingFrom = newest.Build, ""
	if len(builds) > 1 {
		ss.RollingFrom = builds[0].Build
	}
}

// Selection returns the document the leader persists at /selection/<service>.
func (s State) Selection() contract.Selection {
	sel := contract.Selection{
		V: contract.ZNodeVersion, Service: s.Service, Active: s.Active, Preferred: s.Preferred,
		Epoch: s.Epoch, DecidedAt: s.DecidedAt, Reason: s.Reason, Degraded: s.Degraded,
		LastSwitch: s.LastSwitch, Sides: map[contract.Side]contract.SideState{},
	}
	if s.Override != nil {
		o := *s.Override
		sel.Override = &o
	}
	for _, side := range contract.Sides() {
		ss := s.Side(side)
		if !ss.Known {
			continue
		}
		zs := contract.SideState{
			Healthy: ss.Healthy, Reasons: append([]string{}, ss.Reasons...),
			QPS: ss.QPS, LagP99Ms: ss.LagP99Ms, AggregatorLagP99Ms: ss.AggregatorLagP99Ms, Build: ss.Build,
			UnhealthyWindows: ss.UnhealthyWindows, CatchingUp: ss.CatchingUp,
		}
		if !ss.HealthySince.IsZero() {
			t := ss.HealthySince
			zs.HealthySince = &t
		}
		if !ss.BuildSince.IsZero() {
			t := ss.BuildSince
			zs.BuildSince = &t
		}
		zs.RollingFrom = ss.RollingFrom
		sel.Sides[side] = zs
	}
	return sel
}

// StateFromSelection restores the state a leader persisted, so that a new
// leader continues its hysteresis: healthy-since times, unhealthy-window
// counts, epoch and last switch.
func StateFromSelection(sel contract.Selection) (State, error) {
	if !sel.Service.Valid() {
		return State{}, fmtErr(ErrInvalidSelection, "service %q is not a service", sel.Service)
	}
	if !sel.Active.Valid() {
		return State{}, fmtErr(ErrInvalidSelection, "active %q is not a side", sel.Active)
	}
	s := State{
		Service: sel.Service, Active: sel.Active, Preferred: sel.Preferred, Epoch: sel.Epoch,
		DecidedAt: sel.DecidedAt, LastSwitch: sel.LastSwitch, Degraded: sel.Degraded, Reason: sel.Reason,
	}
	if sel.Override != nil {
		o := *sel.Override
		s.Override = &o
	}
	for side, zs := range sel.Sides {
		if !side.Valid() {
			return State{}, fmtErr(ErrInvalidSelection, "sides has key %q", side)
		}
		ss := s.Side(side)
		*ss = SideState{
			Known: true, Healthy: zs.Healthy, Reasons: append([]string{}, zs.Reasons...),
			UnhealthyWindows: zs.UnhealthyWindows, CatchingUp: zs.CatchingUp, QPS: zs.QPS,
			LagP99Ms: zs.LagP99Ms, AggregatorLagP99Ms: zs.AggregatorLagP99Ms, Build: zs.Build,
		}
		if zs.HealthySince != nil && zs.Healthy {
			ss.HealthySince = *zs.HealthySince
		}
		if zs.BuildSince != nil {
			ss.BuildSince = *zs.BuildSince
		}
		ss.RollingFrom = zs.RollingFrom
	}
	return s, nil
}
