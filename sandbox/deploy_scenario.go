package sandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/monitor"
)

// gateAnswer is what the rollout gate said over HTTP, as a rollout tool asks it.
type gateAnswer struct {
	code int
	monitor.GateAnswer
}

func (g gateAnswer) rules() []string {
	var out []string
	for _, f := range g.Failing {
		if r := f.Rule.String(); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func (g gateAnswer) String() string {
	if g.OK {
		return fmt.Sprintf("%d ok: %s held %s", g.code, g.Other, g.OtherHeld)
	}
	return fmt.Sprintf("%d not ok (%s held %s): %s", g.code, g.Other, g.OtherHeld, strings.Join(g.Reasons, "; "))
}

// gate asks GET /api/v1/gate on the sandbox's HTTP address.
func (r *run) gate(side string, hold time.Duration) gateAnswer {
	url := fmt.Sprintf("http://%s/api/v1/gate?side=%s&held=%s", r.s.httpAddr, side, hold)
	resp, err := http.Get(url)
	if err != nil {
		return gateAnswer{GateAnswer: monitor.GateAnswer{Reasons: []string{err.Error()}}}
	}
	defer resp.Body.Close()
	a := gateAnswer{code: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&a.GateAnswer); err != nil {
		a.Reasons = []string{"undecodable answer: " + err.Error()}
	}
	return a
}

// gateConsistent: 200 exactly when ok.
func (g gateAnswer) consistent() bool {
	return (g.code == http.StatusOK) == g.OK && (g.code == http.StatusOK || g.code == http.StatusConflict)
}

func staggeredDeploy(r *run) {
	r.steady("both sides healthy before the deploy")
	hold := r.t.Hold
	start := time.Now()
	// Both sides run the binary's build since the start: once the standby
	// has held, the primary may go first.
	var a gateAnswer
	took, ok := r.waitFor(hold+r.window(4), func() bool { a = r.gate(primary, hold); return a.OK })
	r.check("the gate lets the primary go first", ok && a.consistent(), "after %s: %s", took.Round(100*time.Millisecond), a)

	deployed := time.Now()
	r.inject(FaultSpec{Kind: FaultDeploy, Side: primary, Build: "v2"})
	// The new instances register in ZooKeeper as they start: the gate sees
	// the deploy from then on, before the monitor's next window judges it.
	took, ok = r.waitFor(5*time.Second, func() bool { a = r.gate(standby, hold); return !a.OK })
	r.check("the standby is held back as soon as the primary's new instances run", ok && a.code == http.StatusConflict && len(a.Reasons) > 0,
		"after %s: %s", took.Round(100*time.Millisecond), a)

	limit := hold + r.t.Grace + r.window(6)
	_, ok = r.waitFor(limit, func() bool { a = r.gate(standby, hold); return a.OK })
	opened := time.Since(deployed)
	r.check("the gate opens for the standby once the primary has held on v2", ok && a.consistent() && opened >= hold,
		"%s after the deploy (hold %s, limit %s): %s", opened.Round(100*time.Millisecond), hold, limit, a)
	primaryOnV2 := ok
	var seen []string
	for _, svc := range a.Services {
		primaryOnV2 = primaryOnV2 && svc.OtherBuild == "v2" && !svc.OtherHeldSince.Before(deployed)
		seen = append(seen, fmt.Sprintf("%s: %s since +%s", svc.Service, svc.OtherBuild, svc.OtherHeldSince.Sub(deployed).Round(100*time.Millisecond)))
	}
	r.check("the hold counted from the new build", primaryOnV2, "the gate saw the primary's hold start after the deploy: %s", strings.Join(seen, ", "))

	r.inject(FaultSpec{Kind: FaultDeploy, Side: standby, Build: "v2"})
	_, ok = r.waitFor(5*time.Second, func() bool { a = r.gate(primary, hold); return !a.OK })
	r.check("the primary is held back in turn", ok && a.code == http.StatusConflict && slices.ContainsFunc(a.rules(), func(rule string) bool {
		return rule == "other_side_build_unjudged" || rule == "hold_too_short" || rule == "other_side_unhealthy"
	}), "%s", a)

	// Let the monitors judge the standby's new build for a while, then make
	// sure no replica ever flagged both sides as new at once.
	r.sleep(r.window(3))
	flagged := ""
	for _, e := range r.s.events.since(start) {
		if e.Kind == EventStagger {
			flagged = e.Detail
		}
	}
	r.check("no stagger violation", flagged == "", "stagger period %s = the hold; flagged: %q", hold, flagged)
	_, ok = r.waitFor(r.t.Grace+r.window(4), r.allOn(primary))
	r.check("the read side ends on primary", ok, "every service reads from primary")
}
