package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// The rollout gate answers a rollout tool's question "may side S be
// deployed now?" from what the monitor leader published: yes only when the
// other side serves every service and has been healthy on its current build
// for at least the hold, no override pins traffic to S, and S is not the
// only healthy side of any service. The monitor's /api/v1/gate and `hotpair
// gate` both call Gate on the selections and overrides in ZooKeeper, so
// they give the same verdict.

// GateRule names one reason the gate refuses a deploy.
type GateRule int

// Rules of the gate, in the order their reasons are listed.
const (
	// GateNoSelection: a service has no published selection (no monitor
	// has decided it yet), so nothing is known about its sides.
	GateNoSelection GateRule = 1 + iota
	// GateSelectionStale: the selection was not written for longer than
	// GateRequest.MaxAge (the leader writes one every window): no monitor
	// leads, so what it says about health may no longer hold.
	GateSelectionStale
	// GateOtherSideUnhealthy: the other side is not healthy for a service
	// (or was never judged): it could not take the traffic if S breaks.
	GateOtherSideUnhealthy
	// GateOnlyHealthySide: S is the only healthy side of a service:
	// deploying it risks the last good copy.
	GateOnlyHealthySide
	// GateOtherSideRollingOut: the other side's instances still run more
	// than one build: its own deploy has not finished.
	GateOtherSideRollingOut
	// GateOtherSideBuildUnjudged: an instance of the other side registered
	// in ZooKeeper runs a build the monitor has not judged yet: it was
	// deployed moments ago, before the monitor's next window could see it.
	GateOtherSideBuildUnjudged
	// GateHoldTooShort: the other side has been healthy on its current
	// build for less than the hold: its new build has not proved itself.
	GateHoldTooShort
	// GateOverridePinsSide: an operator override pins a service to S.
	GateOverridePinsSide
)

var gateRuleNames = [...]string{"", "no_selection", "selection_stale", "other_side_unhealthy", "only_healthy_side",
	"other_side_rolling_out", "other_side_build_unjudged", "hold_too_short", "override_pins_side"}

func (r GateRule) String() string {
	if r <= 0 || int(r) >= len(gateRuleNames) {
		return "unknown"
	}
	return gateRuleNames[r]
}

// MarshalText writes the rule's name.
func (r GateRule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a rule's name.
func (r *GateRule) UnmarshalText(b []byte) error {
	for i, n := range gateRuleNames {
		if i > 0 && n == string(b) {
			*r = GateRule(i)
			return nil
		}
	}
	return fmt.Errorf("monitor: %q is not a gate rule", b)
}

// DefaultGateMaxAge is how old a selection may be before the gate calls it
// stale: five default windows, and the age at which the
// HotpairSelectionNotPublished alert fires.
const DefaultGateMaxAge = 10 * time.Minute

// GateRequest is the question: may Side be deployed, given that the other
// side must have held for Hold?
type GateRequest struct {
	Side contract.Side
	// Hold is how long the other side must have been healthy on its current
	// build. It should be at least the monitor's stagger.period, or a gated
	// deploy can still trip the stagger check.
	Hold time.Duration
	// MaxAge is how old a selection may be (0: DefaultGateMaxAge).
	MaxAge time.Duration
}

// Validate checks the request; errors say what to pass.
func (r GateRequest) Validate() error {
	switch {
	case !r.Side.Valid():
		return fmt.Errorf("side must be %s or %s, got %q", contract.Primary, contract.Standby, r.Side)
	case r.Hold <= 0:
		return fmt.Errorf("held must be a positive duration (e.g. 30m), got %s", r.Hold)
	case r.MaxAge < 0:
		return fmt.Errorf("max_age must not be negative (e.g. 10m), got %s", r.MaxAge)
	}
	return nil
}

// GateInput is what the gate reads: per service the published selection
// (nil or absent: none) and the override document (nil or absent: none),
// and the pipeline instances registered in ZooKeeper, which show a deploy
// at once, before the monitor's next window judges it.
type GateInput struct {
	Services   []contract.Service
	Selections map[contract.Service]*contract.Selection
	Overrides  map[contract.Service]*contract.Override
	Registered []contract.Registration
}

// GateReason is one failing rule for one service, with its evidence.
type GateReason struct {
	Rule    GateRule         `json:"rule"`
	Service contract.Service `json:"service"`
	Detail  string           `json:"detail"`
}

func (r GateReason) String() string {
	return r.Rule.String() + ": " + r.Service.String() + ": " + r.Detail
}

// GateService is what the gate saw of one service's other side.
type GateService struct {
	Service contract.Service `json:"service"`
	Active  contract.Side    `json:"active,omitempty"`
	// OtherHealthy, OtherBuild: the other side's latest verdict and build.
	OtherHealthy bool   `json:"other_healthy"`
	OtherBuild   string `json:"other_build,omitempty"`
	// OtherHeldSince is when the other side's current hold began: the later
	// of its healthy-since and build-since times (zero while unhealthy).
	OtherHeldSince time.Time `json:"other_held_since,omitzero"`
	// OtherHeld is how long that hold lasted up to the selection's
	// decided_at (the end of the last evaluated window).
	OtherHeld time.Duration `json:"-"`
}

// GateVerdict is the gate's answer.
type GateVerdict struct {
	Side, Other contract.Side
	Hold        time.Duration
	OK          bool
	// Reasons are every failing rule of every service, in the order of
	// the services and then of the rules; empty when OK.
	Reasons []GateReason
	// OtherHeld is how long the other side has held on every service: the
	// shortest hold over the services (0 when a service has none).
	OtherHeld time.Duration
	Services  []GateService
}

// gateCase is one service under the gate's rules.
type gateCase struct {
	req      GateRequest
	service  contract.Service
	sel      *contract.Selection
	override *contract.Override
	self     contract.SideState
	other    contract.SideState
	known    bool // the selection has a verdict of the other side
	now      time.Time
	// registered are the live instances of the service's stage on the other side.
	registered []contract.Registration
}

// gateRules are the named predicates in the order their reasons are listed;
// each returns its evidence and whether it fails. Rules that need the
// selection are not asked without one.
var gateRules = []struct {
	rule      GateRule
	needsSel  bool
	predicate func(c *gateCase) (string, bool)
}{
	{GateNoSelection, false, noSelection},
	{GateSelectionStale, true, selectionStale},
	{GateOtherSideUnhealthy, true, otherSideUnhealthy},
	{GateOnlyHealthySide, true, onlyHealthySide},
	{GateOtherSideRollingOut, true, otherSideRollingOut},
	{GateOtherSideBuildUnjudged, true, otherSideBuildUnjudged},
	{GateHoldTooShort, true, holdTooShort},
	{GateOverridePinsSide, false, overridePinsSide},
}

// Gate judges req at now against what was published.
func Gate(req GateRequest, in GateInput, now time.Time) GateVerdict {
	if req.MaxAge == 0 {
		req.MaxAge = DefaultGateMaxAge
	}
	other := req.Side.Other()
	v := GateVerdict{Side: req.Side, Other: other, Hold: req.Hold}
	for i, svc := range in.Services {
		c := &gateCase{req: req, service: svc, sel: in.Selections[svc], override: in.Overrides[svc], now: now}
		for _, r := range in.Registered {
			if r.Side == other && r.Stage == svc.Stage() && r.Role != contract.RoleDark {
				c.registered = append(c.registered, r)
			}
		}
		gs := GateService{Service: svc}
		if c.sel != nil {
			c.self = c.sel.Sides[req.Side]
			c.other, c.known = c.sel.Sides[other]
			gs.Active, gs.OtherHealthy, gs.OtherBuild = c.sel.Active, c.known && c.other.Healthy, c.other.Build
			gs.OtherHeldSince, gs.OtherHeld = c.heldSince(), c.held()
		}
		for _, r := range gateRules {
			if r.needsSel && c.sel == nil {
				continue
			}
			if detail, fails := r.predicate(c); fails {
				v.Reasons = append(v.Reasons, GateReason{Rule: r.rule, Service: svc, Detail: detail})
			}
		}
		if i == 0 || gs.OtherHeld < v.OtherHeld {
			v.OtherHeld = gs.OtherHeld
		}
		v.Services = append(v.Services, gs)
	}
	v.OK = len(v.Reasons) == 0 && len(in.Services) > 0
	return v
}

// heldSince is when the other side's hold began: the later of healthy
// since and build since; zero while it is not healthy.
func (c *gateCase) heldSince() time.Time {
	if !c.known || !c.other.Healthy || c.other.HealthySince == nil {
		return time.Time{}
	}
	since := *c.other.HealthySince
	if c.other.BuildSince != nil && c.other.BuildSince.After(since) {
		since = *c.other.BuildSince
	}
	return since
}

// held is the hold up to the selection's decided_at: the last window the
// monitor judged, never extrapolated.
func (c *gateCase) held() time.Duration {
	since := c.heldSince()
	if since.IsZero() || c.sel.DecidedAt.Before(since) {
		return 0
	}
	return c.sel.DecidedAt.Sub(since)
}

func noSelection(c *gateCase) (string, bool) {
	return "no monitor has published a selection yet", c.sel == nil
}

func selectionStale(c *gateCase) (string, bool) {
	age := c.now.Sub(c.sel.DecidedAt)
	return fmt.Sprintf("the selection was last written %s ago (limit %s): is a monitor leading?",
		age.Round(time.Second), c.req.MaxAge), age > c.req.MaxAge
}

func otherSideUnhealthy(c *gateCase) (string, bool) {
	other := c.req.Side.Other()
	switch {
	case !c.known:
		return fmt.Sprintf("%s has no verdict yet", other), true
	case !c.other.Healthy:
		return fmt.Sprintf("%s is unhealthy: %s", other, joinReasons(c.other.Reasons)), true
	}
	return "", false
}

func onlyHealthySide(c *gateCase) (string, bool) {
	return fmt.Sprintf("%s is the only healthy side; deploying it risks the last good copy", c.req.Side),
		c.self.Healthy && !(c.known && c.other.Healthy)
}

func otherSideRollingOut(c *gateCase) (string, bool) {
	return fmt.Sprintf("%s still runs %q beside %q: its deploy has not finished", c.req.Side.Other(), c.other.RollingFrom, c.other.Build),
		c.known && c.other.RollingFrom != ""
}

func otherSideBuildUnjudged(c *gateCase) (string, bool) {
	for _, r := range c.registered {
		if r.Build != c.other.Build && r.Build != c.other.RollingFrom {
			return fmt.Sprintf("%s instance %s runs %q since %s, which the monitor has not judged yet (it last saw %q)",
				r.Side, r.Instance, r.Build, r.StartedAt.UTC().Format(time.RFC3339), c.other.Build), true
		}
	}
	return "", false
}

func holdTooShort(c *gateCase) (string, bool) {
	if !c.known || !c.other.Healthy {
		return "", false // otherSideUnhealthy says why
	}
	other, held := c.req.Side.Other(), c.held()
	if c.other.HealthySince == nil && c.other.CatchingUp != "" {
		// Healthy, but its grace clock (and so its hold) waits until it
		// keeps up: say so rather than "healthy for 0s".
		return fmt.Sprintf("%s is catching up (%s): its hold begins once it keeps up", other, c.other.CatchingUp), held < c.req.Hold
	}
	build := c.other.Build
	if build == "" {
		build = "an unknown build"
	} else {
		build = fmt.Sprintf("build %q", build)
	}
	return fmt.Sprintf("%s has been healthy on %s for %s, less than the hold %s", other, build, held.Round(time.Second), c.req.Hold),
		held < c.req.Hold
}

func overridePinsSide(c *gateCase) (string, bool) {
	o := c.override
	if !o.ActiveAt(c.now) || o.Side != c.req.Side {
		return "", false
	}
	return fmt.Sprintf("an operator override by %s pins it to %s until %s: %s",
		orUnknown(o.By), o.Side, o.Until.UTC().Format(time.RFC3339), o.Reason), true
}

func joinReasons(rs []string) string {
	if len(rs) == 0 {
		return "no reasons recorded"
	}
	return strings.Join(rs, ", ")
}
