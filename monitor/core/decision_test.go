package core

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// verdicts builds the Input verdicts of one window ending at end.
func verdicts(end time.Time, window time.Duration, primaryHealthy, standbyHealthy bool) map[contract.Side]Verdict {
	v := func(side contract.Side, healthy bool) Verdict {
		out := Verdict{Key: Key{contract.StageBudget, side}, WindowStart: end.Add(-window), WindowEnd: end, Healthy: healthy,
			Stats: WindowStats{QPS: 100, LagP99Ms: 50}}
		if !healthy {
			out.Reasons = []Reason{{RuleLagHigh, "p99 75000 ms > limit 60000 ms"}}
			out.Stats.LagP99Ms = 75_000
		}
		return out
	}
	return map[contract.Side]Verdict{contract.Primary: v(contract.Primary, primaryHealthy), contract.Standby: v(contract.Standby, standbyHealthy)}
}

// behindStandby and behindPrimary make a side healthy but catching up.
func behindStandby(vs map[contract.Side]Verdict) map[contract.Side]Verdict {
	return behind(vs, contract.Standby)
}
func behindPrimary(vs map[contract.Side]Verdict) map[contract.Side]Verdict {
	return behind(vs, contract.Primary)
}

func behind(vs map[contract.Side]Verdict, side contract.Side) map[contract.Side]Verdict {
	v := vs[side]
	v.Stats.LagP99Ms, v.CatchingUp = 30_000, "lag p99 30000 ms > catch_up_lag 5000 ms"
	vs[side] = v
	return vs
}

// deadPrimary makes the primary fail no_heartbeat instead of lag_high.
func deadPrimary(vs map[contract.Side]Verdict) map[contract.Side]Verdict {
	v := vs[contract.Primary]
	v.Reasons = []Reason{{RuleNoHeartbeat, "last sample 2m0s ago > limit 30s (3 × 10s)"}}
	vs[contract.Primary] = v
	return vs
}

func catchingUpPrimary(s State) State {
	s.Sides[0].HealthySince, s.Sides[0].CatchingUp = time.Time{}, "lag p99 30000 ms > catch_up_lag 5000 ms"
	return s
}

func TestStep(t *testing.T) {
	cfg := DefaultConfig().Decision // failover after 1, grace 10m
	const w = 2 * time.Minute
	now := t0.Add(time.Hour)
	onStandby := func(primaryHealthySince time.Duration) State {
		s := State{Service: contract.ServiceBudget, Active: contract.Standby, Preferred: contract.Primary, Epoch: 2, LastSwitch: now.Add(-time.Hour)}
		s.Sides[0] = SideState{Known: true, Healthy: true, HealthySince: now.Add(-primaryHealthySince)}
		s.Sides[1] = SideState{Known: true, Healthy: true, HealthySince: now.Add(-2 * time.Hour)}
		return s
	}
	onPrimary := func() State {
		s := State{Service: contract.ServiceBudget, Active: contract.Primary, Preferred: contract.Primary, Epoch: 1}
		s.Sides[0] = SideState{Known: true, Healthy: true, HealthySince: now.Add(-time.Hour)}
		s.Sides[1] = SideState{Known: true, Healthy: true, HealthySince: now.Add(-time.Hour)}
		return s
	}
	for _, tc := range []struct {
		name         string
		prev         State
		in           Input
		wantActive   string
		wantKind     Kind
		wantSwitched bool
		wantDegraded bool
		wantReason   string
	}{
		{"first decision on the preferred side", State{Service: contract.ServiceBudget}, Input{Verdicts: verdicts(now, w, true, true)},
			"primary", KindInitial, false, false, "primary healthy (qps 100.00, lag p99 50 ms)"},
		{"first decision with a broken primary fails over", State{Service: contract.ServiceBudget}, Input{Verdicts: verdicts(now, w, false, true)},
			"standby", KindFailover, false, false, "failover primary → standby: primary unhealthy for 1 window(s): lag_high: p99 75000 ms > limit 60000 ms; standby healthy (qps 100.00, lag p99 50 ms)"},
		{"healthy primary stays", onPrimary(), Input{Verdicts: verdicts(now, w, true, true)},
			"primary", KindStay, false, false, "primary healthy"},
		{"unhealthy primary, healthy standby: failover", onPrimary(), Input{Verdicts: verdicts(now, w, false, true)},
			"standby", KindFailover, true, false, "failover primary → standby"},
		{"both unhealthy: stay, degraded", onPrimary(), Input{Verdicts: verdicts(now, w, false, false)},
			"primary", KindStay, false, true, "both sides unhealthy, staying on primary (degraded): primary: lag_high: p99 75000 ms > limit 60000 ms; standby: lag_high"},
		{"standby unhealthy while on primary: nothing to do", onPrimary(), Input{Verdicts: verdicts(now, w, true, false)},
			"primary", KindStay, false, false, "primary healthy"},
		{"on standby, primary healthy 9m: stay", onStandby(9 * time.Minute), Input{},
			"standby", KindStay, false, false, "staying on standby: preferred primary healthy for 9m0s of grace 10m0s"},
		{"on standby, primary healthy exactly 10m: return", onStandby(10 * time.Minute), Input{},
			"primary", KindReturn, true, false, "return standby → primary: primary healthy continuously since 2026-11-30T12:50:00Z (10m0s ≥ grace 10m0s"},
		{"on standby, standby fails, primary healthy 1m: back at once", onStandby(3 * time.Minute), Input{Verdicts: verdicts(now, w, true, false)},
			"primary", KindFailover, true, false, "failover standby → primary: standby unhealthy for 1 window(s)"},
		{"on standby, primary healthy but catching up: its grace clock does not run", catchingUpPrimary(onStandby(time.Hour)), Input{},
			"standby", KindStay, false, false, "staying on standby: preferred primary is catching up (lag p99 30000 ms > catch_up_lag 5000 ms); its grace period of 10m0s starts once it keeps up"},
		{"primary only lags, standby behind too: stay, degraded", onPrimary(), Input{Verdicts: behindStandby(verdicts(now, w, false, true))},
			"primary", KindStay, false, true, "both sides behind, staying on primary (degraded): primary: lag_high: p99 75000 ms > limit 60000 ms; standby catching up: lag p99 30000 ms > catch_up_lag 5000 ms"},
		{"primary dead, standby behind: failover", onPrimary(), Input{Verdicts: behindStandby(deadPrimary(verdicts(now, w, false, true)))},
			"standby", KindFailover, true, false, "failover primary → standby: primary unhealthy for 1 window(s): no_heartbeat"},
		{"healthy primary catching up stays, and says so", onPrimary(), Input{Verdicts: behindPrimary(verdicts(now, w, true, true))},
			"primary", KindStay, false, false, "primary healthy (qps 100.00, lag p99 30000 ms), catching up: lag p99 30000 ms > catch_up_lag 5000 ms"},
		{"override wins over a healthy primary", onPrimary(), Input{Verdicts: verdicts(now, w, true, true),
			Override: &contract.Override{Side: contract.Standby, Until: now.Add(time.Minute), Reason: "drill", By: "alice"}},
			"standby", KindOverride, true, false, "operator override to standby by alice until 2026-11-30T13:01:00Z: drill"},
		{"expired override is ignored", onPrimary(), Input{Verdicts: verdicts(now, w, true, true),
			Override: &contract.Override{Side: contract.Standby, Until: now, Reason: "drill", By: "alice"}},
			"primary", KindStay, false, false, "primary healthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prevCopy := tc.prev
			d := Step(cfg, tc.prev, tc.in, now)
			if d.State.Active.String() != tc.wantActive || d.Kind != tc.wantKind || d.Switched != tc.wantSwitched || d.State.Degraded != tc.wantDegraded {
				t.Fatalf("got active=%s kind=%s switched=%v degraded=%v (%s)", d.State.Active, d.Kind, d.Switched, d.State.Degraded, d.Reason)
			}
			if !strings.HasPrefix(d.Reason, tc.wantReason) || d.State.Reason != d.Reason {
				t.Fatalf("reason %q\nwant prefix %q", d.Reason, tc.wantReason)
			}
			if d.Switched && (d.State.Epoch != tc.prev.Epoch+1 || !d.State.LastSwitch.Equal(now)) {
				t.Fatalf("switch: epoch %d→%d last %v", tc.prev.Epoch, d.State.Epoch, d.State.LastSwitch)
			}
			if !d.Switched && tc.prev.Active != 0 && (d.State.Epoch != tc.prev.Epoch || !d.State.LastSwitch.Equal(tc.prev.LastSwitch)) {
				t.Fatalf("no switch, but epoch %d→%d", tc.prev.Epoch, d.State.Epoch)
			}
			if !reflect.DeepEqual(prevCopy, tc.prev) {
				t.Fatal("Step changed its argument")
			}
		})
	}
}

func TestStepFirstDecisionEpoch(t *testing.T) {
	cfg := DefaultConfig().Decision
	d := Step(cfg, State{Service: contract.ServiceBudget}, Input{Verdicts: verdicts(t0, time.Minute, true, true)}, t0)
	if d.State.Epoch != 1 || !d.Changed || d.Switched || !d.State.LastSwitch.IsZero() {
		t.Fatalf("first: %+v", d)
	}
	d = Step(cfg, State{Service: contract.ServiceBudget}, Input{Verdicts: verdicts(t0, time.Minute, false, true)}, t0)
	if d.State.Epoch != 1 || d.State.Active != contract.Standby {
		t.Fatalf("first failover: epoch %d active %s", d.State.Epoch, d.State.Active)
	}
}

// HealthySince is the start of the first healthy window of a streak, and
// any unhealthy window resets it.
func TestStepHealthySince(t *testing.T) {
	cfg := DefaultConfig().Decision
	const w = time.Minute
	s := Step(cfg, State{Service: contract.ServiceBudget}, Input{Verdicts: verdicts(t0.Add(w), w, false, true)}, t0.Add(w)).State
	if !s.Side(contract.Primary).HealthySince.IsZero() || s.Side(contract.Primary).UnhealthyWindows != 1 {
		t.Fatalf("%+v", s.Side(contract.Primary))
	}
	for i := 2; i <= 4; i++ {
		end := t0.Add(time.Duration(i) * w)
		s = Step(cfg, s, Input{Verdicts: verdicts(end, w, true, true)}, end).State
	}
	if got := s.Side(contract.Primary).HealthySince; !got.Equal(t0.Add(w)) || s.Side(contract.Primary).UnhealthyWindows != 0 {
		t.Fatalf("healthy since %v", got.Sub(t0))
	}
	// A healthy window spent catching up ends the streak without counting as
	// unhealthy; the next streak starts with the first window that keeps up.
	s = Step(cfg, s, Input{Verdicts: behindPrimary(verdicts(t0.Add(5*w), w, true, true))}, t0.Add(5*w)).State
	if p := s.Side(contract.Primary); !p.HealthySince.IsZero() || p.UnhealthyWindows != 0 || !p.Healthy || p.CatchingUp == "" {
		t.Fatalf("catching up: %+v", p)
	}
	s = Step(cfg, s, Input{Verdicts: verdicts(t0.Add(6*w), w, true, true)}, t0.Add(6*w)).State
	if got := s.Side(contract.Primary).HealthySince; !got.Equal(t0.Add(5*w)) || s.Side(contract.Primary).CatchingUp != "" {
		t.Fatalf("healthy since %v after catching up", got.Sub(t0))
	}
}

func TestStepChanged(t *testing.T) {
	cfg := DefaultConfig().Decision
	const w = time.Minute
	s := Step(cfg, State{Service: contract.ServiceBudget}, Input{Verdicts: verdicts(t0.Add(w), w, true, true)}, t0.Add(w)).State
	// same health, new numbers: no change to write at once
	if d := Step(cfg, s, Input{Verdicts: verdicts(t0.Add(2*w), w, true, true)}, t0.Add(2*w)); d.Changed {
		t.Fatal("unchanged window reported as change")
	}
	// the standby turning unhealthy changes what readers see, without a switch
	d := Step(cfg, s, Input{Verdicts: verdicts(t0.Add(2*w), w, true, false)}, t0.Add(2*w))
	if !d.Changed || d.Switched {
		t.Fatalf("changed=%v switched=%v", d.Changed, d.Switched)
	}
	// an override appearing, then disappearing, are changes
	o := &contract.Override{Side: contract.Primary, Until: t0.Add(time.Hour), Reason: "pin", By: "bob"}
	d = Step(cfg, s, Input{Override: o}, t0.Add(90*time.Second))
	if !d.Changed || d.Switched || d.State.Override == nil || d.Kind != KindOverride {
		t.Fatalf("override: %+v", d)
	}
	d = Step(cfg, d.State, Input{}, t0.Add(100*time.Second))
	if !d.Changed || !d.OverrideEnded || d.State.Override != nil || !strings.HasPrefix(d.Reason, "override to primary by bob ended; ") {
		t.Fatalf("override ended: %+v", d)
	}
}

func TestSelectionRoundTrip(t *testing.T) {
	cfg := DefaultConfig().Decision
	const w = time.Minute
	s := State{Service: contract.ServicePacer}
	for i, ph := range []bool{false, true, true, false, true} {
		end := t0.Add(time.Duration(i+1) * w)
		s = Step(cfg, s, Input{Verdicts: verdicts(end, w, ph, true),
			Override: &contract.Override{V: 1, Side: contract.Standby, Until: t0.Add(3 * w), Reason: "r", By: "b"}}, end).State
	}
	s.Side(contract.Primary).Build, s.Side(contract.Standby).Build = "b7", "b6"
	s.Side(contract.Standby).CatchingUp, s.Side(contract.Standby).AggregatorLagP99Ms = "lag p99 9000 ms > catch_up_lag 5000 ms", 8000
	b, err := contract.Encode(s.Selection())
	if err != nil {
		t.Fatal(err)
	}
	sel, err := contract.DecodeSelection(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := StateFromSelection(sel)
	if err != nil {
		t.Fatal(err)
	}
	// times come back in UTC; compare after normalising
	if !reflect.DeepEqual(normal(got), normal(s)) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
	}
	if sel.Sides[contract.Primary].HealthySince == nil || !sel.Sides[contract.Primary].HealthySince.Equal(t0.Add(4*w)) {
		t.Fatalf("persisted healthy_since %v", sel.Sides[contract.Primary].HealthySince)
	}
}

func normal(s State) State {
	s.DecidedAt, s.LastSwitch = s.DecidedAt.UTC(), s.LastSwitch.UTC()
	for i := range s.Sides {
		s.Sides[i].HealthySince = s.Sides[i].HealthySince.UTC()
		if len(s.Sides[i].Reasons) == 0 {
			s.Sides[i].Reasons = nil
		}
	}
	if s.Override != nil {
		o := *s.Override
		o.Until = o.Until.UTC()
		s.Override = &o
	}
	return s
}

func TestStateFromSelectionRejects(t *testing.T) {
	for _, sel := range []contract.Selection{
		{V: 1, Service: 0, Active: contract.Primary},
		{V: 1, Service: contract.Service(9), Active: contract.Primary},
		{V: 1, Service: contract.ServiceBudget, Active: 0},
		{V: 1, Service: contract.ServiceBudget, Active: contract.Primary, Sides: map[contract.Side]contract.SideState{contract.Side(9): {}}},
	} {
		if _, err := StateFromSelection(sel); err == nil {
			t.Errorf("accepted %+v", sel)
		}
	}
}

func TestEngineRedecideAppliesOverrideAtOnce(t *testing.T) {
	e, err := NewEngine(DefaultConfig(), t0)
	if err != nil {
		t.Fatal(err)
	}
	var fleets []fleet
	for _, side := range contract.Sides() {
		for _, svc := range contract.Services() {
			fleets = append(fleets, healthyFleet(svc.Stage(), side))
		}
	}
	feed(t, e, fleets, t0, t0.Add(4*time.Minute), 10*sec)
	o := map[contract.Service]*contract.Override{contract.ServiceBidder: {V: 1, Side: contract.Standby, Until: t0.Add(time.Hour), Reason: "x", By: "y"}}
	ds := e.Redecide(t0.Add(5*time.Minute), o)
	if len(ds) != 1 || ds[0].Service != contract.ServiceBidder || !ds[0].Switched || e.State(contract.ServiceBidder).Active != contract.Standby {
		t.Fatalf("redecide: %+v", ds)
	}
	if ds := e.Redecide(t0.Add(5*time.Minute+sec), o); len(ds) != 0 {
		t.Fatalf("nothing changed, yet %d decisions", len(ds))
	}
	if _, err := e.Tick(t0.Add(4*time.Minute), nil); err == nil {
		t.Fatal("tick at the window start accepted")
	}
}
