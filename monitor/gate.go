package monitor

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/httpserver"
	"github.com/hotpair/hotpair/monitor/core"
)

// GateAnswer is the rollout gate's answer as JSON: the body of
// /api/v1/gate (HTTP 200 when OK, 409 when not) and of `hotpair gate
// --json`. Rollout tools read ok (Argo Rollouts: successCondition
// result.ok == true; Flagger: the status code).
type GateAnswer struct {
	OK bool `json:"ok"`
	// Side is the side asked about; Other the side that must have held.
	Side  contract.Side `json:"side"`
	Other contract.Side `json:"other"`
	// Held is the hold asked for.
	Held string `json:"held"`
	// OtherHeld is how long the other side has been healthy on its current
	// build on every service (the shortest over the services), up to the
	// last evaluated window.
	OtherHeld        string  `json:"other_held"`
	OtherHeldSeconds float64 `json:"other_held_seconds"`
	// Reasons say why not, one line each ("rule: service: evidence");
	// empty when ok. Failing holds the same, structured.
	Reasons  []string           `json:"reasons"`
	Failing  []core.GateReason  `json:"failing"`
	Services []core.GateService `json:"services"`
	// CheckedAt is when the gate judged, on the answering clock.
	CheckedAt time.Time `json:"checked_at"`
}

// Gate judges req against a status, the selections as published and the
// overrides, as the monitor holds them (Monitor.Status) or as ZooKeeper
// holds them (ReadStatus), and the registered pipeline instances
// (ReadRegistrations). Both give the same answer for the same state.
func Gate(st Status, registered []contract.Registration, req core.GateRequest) GateAnswer {
	in := core.GateInput{Selections: map[contract.Service]*contract.Selection{}, Overrides: map[contract.Service]*contract.Override{}, Registered: registered}
	for _, ss := range st.Services {
		in.Services = append(in.Services, ss.Service)
		in.Selections[ss.Service], in.Overrides[ss.Service] = ss.Selection, ss.Override
	}
	v := core.Gate(req, in, st.Now)
	a := GateAnswer{OK: v.OK, Side: v.Side, Other: v.Other, Held: v.Hold.String(),
		OtherHeld: v.OtherHeld.Round(time.Second).String(), OtherHeldSeconds: v.OtherHeld.Seconds(),
		Reasons: []string{}, Failing: v.Reasons, Services: v.Services, CheckedAt: st.Now}
	if a.Failing == nil {
		a.Failing = []core.GateReason{}
	}
	for _, r := range v.Reasons {
		a.Reasons = append(a.Reasons, r.String())
	}
	return a
}

// ParseGateQuery reads side, held and max_age (optional) from a query.
func ParseGateQuery(q url.Values) (core.GateRequest, error) {
	var req core.GateRequest
	if s := q.Get("side"); s != "" {
		side, err := contract.ParseSide(s)
		if err != nil {
			return req, fmt.Errorf("side must be %s or %s, got %q", contract.Primary, contract.Standby, s)
		}
		req.Side = side
	}
	for _, d := range []struct {
		key      string
		dst      *time.Duration
		required bool
	}{{"held", &req.Hold, true}, {"max_age", &req.MaxAge, false}} {
		v := q.Get(d.key)
		if v == "" {
			if d.required {
				return core.GateRequest{}, fmt.Errorf("%w: %s is required (e.g. %s=30m)", ErrBadGateRequest, d.key, d.key)
			}
			continue
		}
		x, err := time.ParseDuration(v)
		if err != nil {
			return core.GateRequest{}, fmt.Errorf("%w: %s=%q is not a duration (e.g. 30m)", ErrBadGateRequest, d.key, v)
		}
		*d.dst = x
	}
	if err := req.Validate(); err != nil {
		return core.GateRequest{}, fmt.Errorf("%w: %v", ErrBadGateRequest, err)
	}
	return req, nil
}

// serveGate is GET (or POST, as Flagger's webhooks call) /api/v1/gate?side=S&held=D
// [&max_age=D][&always_200=true]: 200 when side S may be deployed now, 409
// when not, 400 for a bad question, 503 when the registered instances cannot
// be read (no ZooKeeper session). always_200 answers a "no" with 200 too, for
// callers that take any other code for an error (Argo Rollouts' web metrics):
// they read ok from the body.
func (m *Monitor) serveGate(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, msg string) { httpserver.WriteJSON(w, code, map[string]string{"error": msg}) }
	req, err := ParseGateQuery(r.URL.Query())
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	p := m.pub.Load()
	if p == nil || !p.s.Usable() {
		fail(http.StatusServiceUnavailable, "monitor: no ZooKeeper session: cannot read the registered pipeline instances")
		return
	}
	regs, err := ReadRegistrations(p.s.Conn(), m.paths)
	if err != nil {
		fail(http.StatusServiceUnavailable, "monitor: reading the registered pipeline instances: "+err.Error())
		return
	}
	a := Gate(m.Status(), regs, req)
	code := http.StatusOK
	if !a.OK && r.URL.Query().Get("always_200") != "true" {
		code = http.StatusConflict
	}
	httpserver.WriteJSON(w, code, a)
}

// WriteGateText writes the answer for people: the verdict, then every reason.
func WriteGateText(w io.Writer, a GateAnswer) error {
	var b strings.Builder
	if a.OK {
		fmt.Fprintf(&b, "yes: %s may be deployed now: %s has been healthy on its build for %s on every service (hold %s)\n",
			a.Side, a.Other, a.OtherHeld, a.Held)
	} else {
		fmt.Fprintf(&b, "no: %s may not be deployed now (%s has held %s of %s):\n", a.Side, a.Other, a.OtherHeld, a.Held)
		for _, r := range a.Reasons {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
