package core

import (
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// gateSel is a selection decided at decided with both sides healthy since
// healthySince on established builds.
func gateSel(service contract.Service, decided, healthySince time.Time) *contract.Selection {
	hs := healthySince
	return &contract.Selection{V: contract.ZNodeVersion, Service: service, Active: contract.Primary, DecidedAt: decided,
		Sides: map[contract.Side]contract.SideState{
			contract.Primary: {Healthy: true, HealthySince: &hs, Build: "b1"},
			contract.Standby: {Healthy: true, HealthySince: &hs, Build: "b1"},
		}}
}

// Every rule on its own, with the evidence an operator reads, and the
// verdict's hold; the stories in testdata/gate-*.txt drive the same rules
// through the Engine.
func TestGateRules(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	at := func(d time.Duration) *time.Time { x := now.Add(-d); return &x }
	var registered []contract.Registration
	for _, tc := range []struct {
		name    string
		side    contract.Side
		edit    func(sel *contract.Selection, ov map[contract.Service]*contract.Override)
		rules   string // failing rules of budget, in order; "" = ok
		detail  string
		held    time.Duration
		maxAge  time.Duration
		missing bool // budget has no selection
	}{
		{name: "both healthy for an hour", side: contract.Standby, held: time.Hour},
		{name: "no selection", side: contract.Standby, missing: true, rules: "no_selection", detail: "no monitor has published a selection yet"},
		{name: "stale selection", side: contract.Standby, maxAge: 10 * time.Minute,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				s.DecidedAt = now.Add(-11 * time.Minute)
			},
			rules: "selection_stale", detail: "last written 11m0s ago (limit 10m0s)", held: 49 * time.Minute},
		{name: "other side never judged", side: contract.Standby,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				delete(s.Sides, contract.Primary)
			},
			rules: "other_side_unhealthy,only_healthy_side", detail: "primary has no verdict yet"},
		{name: "both unhealthy: no deploy of either", side: contract.Primary,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				s.Sides[contract.Primary] = contract.SideState{Reasons: []string{"lag_high: p99 75000 ms > limit 60000 ms"}}
				s.Sides[contract.Standby] = contract.SideState{Reasons: []string{"no_heartbeat: last sample 2m0s ago"}}
			},
			rules: "other_side_unhealthy", detail: "standby is unhealthy: no_heartbeat: last sample 2m0s ago"},
		{name: "build newer than the healthy streak", side: contract.Standby,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				ss := s.Sides[contract.Primary]
				ss.Build, ss.BuildSince = "b2", at(20*time.Minute)
				s.Sides[contract.Primary] = ss
			},
			rules: "hold_too_short", detail: `primary has been healthy on build "b2" for 20m0s, less than the hold 30m0s`, held: 20 * time.Minute},
		{name: "healthy streak newer than the build", side: contract.Standby,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				ss := s.Sides[contract.Primary]
				ss.BuildSince, ss.HealthySince = at(90*time.Minute), at(5*time.Minute)
				s.Sides[contract.Primary] = ss
			},
			rules: "hold_too_short", detail: "for 5m0s, less than the hold", held: 5 * time.Minute},
		{name: "other side catching up", side: contract.Standby,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				ss := s.Sides[contract.Primary]
				ss.HealthySince, ss.CatchingUp = nil, "lag p99 3.2 s > catch_up_lag 1000 ms"
				s.Sides[contract.Primary] = ss
			},
			rules: "hold_too_short", detail: "primary is catching up (lag p99 3.2 s > catch_up_lag 1000 ms): its hold begins once it keeps up"},
		{name: "rolling out", side: contract.Primary,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				ss := s.Sides[contract.Standby]
				ss.RollingFrom = "b0"
				s.Sides[contract.Standby] = ss
			},
			rules: "other_side_rolling_out", detail: `standby still runs "b0" beside "b1"`, held: time.Hour},
		{name: "a deploy the monitor has not judged yet", side: contract.Standby, held: time.Hour,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				registered = []contract.Registration{
					{Side: contract.Primary, Role: contract.RoleLive, Stage: contract.StageBudget, Instance: "p-0", Build: "b1"},
					{Side: contract.Primary, Role: contract.RoleDark, Stage: contract.StageBudget, Instance: "d-0", Build: "b9"},
					{Side: contract.Standby, Role: contract.RoleLive, Stage: contract.StageBudget, Instance: "s-0", Build: "b9"},
					{Side: contract.Primary, Role: contract.RoleLive, Stage: contract.StageBudget, Instance: "p-1", Build: "b2", StartedAt: now.Add(-time.Second)},
				}
			},
			rules: "other_side_build_unjudged", detail: `primary instance p-1 runs "b2" since 2026-11-30T13:59:59Z, which the monitor has not judged yet (it last saw "b1")`},
		{name: "registered instances on judged builds", side: contract.Standby, held: time.Hour,
			edit: func(s *contract.Selection, _ map[contract.Service]*contract.Override) {
				registered = []contract.Registration{{Side: contract.Primary, Role: contract.RoleLive, Stage: contract.StageBudget, Instance: "p-0", Build: "b1"}}
			}},
		{name: "override pins the side", side: contract.Standby,
			edit: func(_ *contract.Selection, ov map[contract.Service]*contract.Override) {
				ov[contract.ServiceBudget] = &contract.Override{V: 1, Side: contract.Standby, Until: now.Add(time.Minute), Reason: "maintenance", By: "alice"}
			},
			rules: "override_pins_side", detail: "an operator override by alice pins it to standby until", held: time.Hour},
		{name: "override to the other side", side: contract.Primary, held: time.Hour,
			edit: func(_ *contract.Selection, ov map[contract.Service]*contract.Override) {
				ov[contract.ServiceBudget] = &contract.Override{V: 1, Side: contract.Standby, Until: now.Add(time.Minute), Reason: "maintenance"}
			}},
		{name: "expired override", side: contract.Standby, held: time.Hour,
			edit: func(_ *contract.Selection, ov map[contract.Service]*contract.Override) {
				ov[contract.ServiceBudget] = &contract.Override{V: 1, Side: contract.Standby, Until: now, Reason: "maintenance"}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			registered = nil
			in := GateInput{Services: contract.Services(), Selections: map[contract.Service]*contract.Selection{}, Overrides: map[contract.Service]*contract.Override{}}
			for _, svc := range contract.Services() {
				in.Selections[svc] = gateSel(svc, now, now.Add(-time.Hour))
			}
			if tc.missing {
				delete(in.Selections, contract.ServiceBudget)
			}
			if tc.edit != nil {
				tc.edit(in.Selections[contract.ServiceBudget], in.Overrides)
			}
			in.Registered = registered
			v := Gate(GateRequest{Side: tc.side, Hold: 30 * time.Minute, MaxAge: tc.maxAge}, in, now)
			var rules []string
			var details string
			for _, r := range v.Reasons {
				if r.Service != contract.ServiceBudget {
					t.Fatalf("a reason for %s: %s", r.Service, r)
				}
				rules = append(rules, r.Rule.String())
				details += r.String() + "\n"
			}
			if got := strings.Join(rules, ","); got != tc.rules || v.OK != (tc.rules == "") {
				t.Fatalf("ok=%v rules %q, want %q:\n%s", v.OK, got, tc.rules, details)
			}
			if !strings.Contains(details, tc.detail) {
				t.Fatalf("reasons lack %q:\n%s", tc.detail, details)
			}
			if v.OtherHeld != tc.held {
				t.Fatalf("other side held %s, want %s", v.OtherHeld, tc.held)
			}
			if v.Other != tc.side.Other() || len(v.Services) != 3 {
				t.Fatalf("verdict %+v", v)
			}
		})
	}
}

func TestGateRequestValidate(t *testing.T) {
	for _, tc := range []struct {
		req  GateRequest
		want string
	}{
		{GateRequest{Side: contract.Standby, Hold: time.Minute}, ""},
		{GateRequest{Side: 0, Hold: time.Minute}, `side must be primary or standby, got ""`},
		{GateRequest{Side: contract.Primary}, "held must be a positive duration"},
		{GateRequest{Side: contract.Primary, Hold: time.Minute, MaxAge: -time.Second}, "max_age must not be negative"},
	} {
		err := tc.req.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: got %v, want %q", tc.req, err, tc.want)
		}
	}
	if v := Gate(GateRequest{Side: contract.Primary, Hold: time.Minute}, GateInput{}, t0); v.OK {
		t.Fatal("a gate over no services said yes")
	}
}
