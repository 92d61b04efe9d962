package sandbox

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor"
)

// slowSideLag is how late the slow-side scenario's records reach primary:
// well above the scenarios' lag limit (8 s), short enough to keep the
// scenario under two minutes. The story is the one of a 90 s lag on the
// production defaults.
const slowSideLag = 20 * time.Second

// slowSide: primary's records arrive late. For the first slowSideLag
// nothing arrives (input_rate_low: every service moves to standby); then
// records arrive at the normal rate, each slowSideLag late. Primary's input
// rate is back, but its output is late end to end, so it stays unhealthy
// (lag_high) for as long as the lag lasts: no return at the end of the grace
// period. After the heal it catches up, and traffic returns a grace period
// after it keeps up.
func slowSide(r *run) {
	r.steady("both sides healthy before the fault")
	f := r.inject(FaultSpec{Kind: FaultLag, Side: primary, Lag: slowSideLag.String()})
	start := time.Now()
	// Primary's windows from before the lag still close (by its partitions'
	// idle clock: window + lateness + idle close), then a window without input.
	limit := 2*r.t.AggWindow + r.t.AggLateness + r.switchWithin()
	took, ok := r.waitFor(limit, r.allOn(standby))
	r.check("every service switches to standby", ok, "after %s (limit %s): nothing reaches primary during the first %s of the lag",
		took.Round(100*time.Millisecond), limit, slowSideLag)

	// The late records arrive: primary's rate is back, its output is late.
	limit = slowSideLag + r.switchWithin()
	var seen []string
	_, ok = r.waitFor(limit, func() bool {
		seen = seen[:0]
		for _, svc := range contract.Services() {
			p, okP := r.verdict(svc.String(), primary)
			s, okS := r.verdict(svc.String(), standby)
			if !okP || !okS || !failing(p, "lag_high") || failing(p, "input_rate_low") || p.QPS < 0.5*s.QPS {
				return false
			}
			seen = append(seen, fmt.Sprintf("%s: lag p99 %s, aggregator behind %s, qps %.1f (standby %.1f)",
				svc, ms(p.LagP99Ms), ms(p.AggregatorLagP99Ms), p.QPS, s.QPS))
		}
		return true
	})
	r.check("primary keeps its rate but lags end to end: lag_high on every service", ok, "%s after the fault; %s",
		time.Since(start).Round(100*time.Millisecond), strings.Join(seen, "; "))

	// Held past the moment a monitor blind to the lag (one hop, from
	// emitted_at) would have returned: the records came back, then a grace period.
	hold := r.t.Grace + r.window(2)
	_, ok = r.holds(hold, r.allOn(standby))
	n := 0
	for _, svc := range contract.Services() {
		n += r.switches(svc.String(), start)
	}
	r.check("no return while the lag lasts", ok && n == 3, "every service stayed on standby for %s after primary's records came back %s late (grace %s); %d switch(es) in all",
		hold, slowSideLag, r.t.Grace, n)
	healed := time.Now()
	r.heal(f)
	for _, svc := range contract.Services() {
		r.returnsAfterGrace(svc.String(), healed)
	}
	for _, svc := range contract.Services() {
		r.check(svc.String()+": two switches", r.switches(svc.String(), start) == 2, "%s switched %d times (away and back)", svc, r.switches(svc.String(), start))
	}
}

// overload: both sides' aggregators can process only 1.5 times the usual
// input (slow faults: a CPU-starved container), then upstream traffic rises
// four times (a surge; the pacers soon throttle it, but not under the cap).
// Both sides fall behind together: no switch, every service flagged degraded
// within two windows of its first lag_high. Then traffic drops to a quarter
// (with their spend late, the pacers would otherwise keep the input above
// the cap): the backlogs drain, degraded clears, still without a switch. The
// day curve is slowed down (one simulated day per hour) so that the usual
// input stays under the cap.
func overload(r *run) {
	r.steady("both sides healthy before the overload")
	usual := r.aggregatorRate(r.window(2))
	capRate := math.Round(1.5 * usual)
	for _, side := range contract.Sides() {
		r.inject(FaultSpec{Kind: FaultSlow, Service: contract.StageAggregator.String(), Side: side.String(), Rate: capRate})
	}
	r.event(EventInfo, "", "", "both aggregators capped at %g ad events/s, 1.5 times the usual %.0f/s", capRate, usual)
	_, ok := r.holds(r.window(2), func() bool { return r.allOn(primary)() && !r.anyDegraded() })
	r.check("under the cap both sides keep up", ok, "%s at %.0f ad events/s against a cap of %g/s", r.window(2), usual, capRate)

	start := time.Now()
	written := r.s.ingest.Stats()[contract.Primary].Written
	surge := r.inject(FaultSpec{Kind: FaultTraffic, Factor: 4})
	var peak peaks
	lagHigh, degradedAt := map[string]time.Time{}, map[string]time.Time{}
	_, ok = r.waitFor(time.Minute, func() bool {
		peak.observe(r)
		for _, svc := range contract.Services() {
			for _, side := range contract.Sides() {
				if v, ok := r.verdict(svc.String(), side.String()); ok && failing(v, "lag_high") && lagHigh[svc.String()].IsZero() {
					lagHigh[svc.String()] = time.Now()
				}
			}
			if r.s.Degraded(svc.String()) && degradedAt[svc.String()].IsZero() {
				degradedAt[svc.String()] = time.Now()
			}
		}
		return len(degradedAt) == len(contract.Services())
	})
	in2, within := ok, []string{}
	for _, svc := range contract.Services() {
		took := degradedAt[svc.String()].Sub(lagHigh[svc.String()])
		in2 = in2 && !lagHigh[svc.String()].IsZero() && took <= r.window(2)
		within = append(within, fmt.Sprintf("%s %s after its first lag_high (%s after the surge)", svc,
			took.Round(100*time.Millisecond), degradedAt[svc.String()].Sub(start).Round(100*time.Millisecond)))
	}
	rate := float64(r.s.ingest.Stats()[contract.Primary].Written-written) / time.Since(start).Seconds()
	r.check("degraded flagged on every service within two windows", in2, "%s (limit %s); ad events came at %.0f/s against the cap of %g/s",
		strings.Join(within, "; "), r.window(2), rate, capRate)
	_, ok = r.holds(r.window(2), func() bool { peak.observe(r); return r.allDegraded() && r.allOn(primary)() })
	r.check("stays degraded on primary while overloaded", ok, "for %s more; %s", r.window(2), peak)

	r.heal(surge)
	dropped := time.Now()
	drop := r.inject(FaultSpec{Kind: FaultTraffic, Factor: 0.25})
	took, ok := r.waitFor(time.Minute, func() bool { peak.observe(r); return !r.anyDegraded() })
	r.check("degraded clears once the load drops and the backlogs drain", ok, "%s after the traffic dropped; peak %s",
		took.Round(100*time.Millisecond), peak)
	r.steady(fmt.Sprintf("both sides keep up again (%s after the traffic dropped)", time.Since(dropped).Round(100*time.Millisecond)))
	r.heal(drop)
	n := 0
	for _, svc := range contract.Services() {
		n += r.switches(svc.String(), start)
	}
	r.check("no switch", n == 0 && r.allOn(primary)(), "%d switches in %s of overload and recovery", n, time.Since(start).Round(100*time.Millisecond))
}

// verdict is the leading monitor's latest verdict of (service, side).
func (r *run) verdict(service, side string) (monitor.SideVerdict, bool) {
	m := r.s.monitors.any()
	if m == nil {
		return monitor.SideVerdict{}, false
	}
	for _, svc := range m.Status().Services {
		if svc.Service.String() == service && svc.Local != nil {
			v, ok := svc.Local.Sides[sideOf(side)]
			return v, ok
		}
	}
	return monitor.SideVerdict{}, false
}

func failing(v monitor.SideVerdict, rule string) bool {
	for _, r := range v.Reasons {
		if strings.HasPrefix(r, rule+":") {
			return true
		}
	}
	return false
}

func (r *run) allDegraded() bool {
	for _, svc := range contract.Services() {
		if !r.s.Degraded(svc.String()) {
			return false
		}
	}
	return true
}

func (r *run) anyDegraded() bool {
	for _, svc := range contract.Services() {
		if r.s.Degraded(svc.String()) {
			return true
		}
	}
	return false
}

// aggregatorRate measures primary's aggregator input over d, in events/s.
func (r *run) aggregatorRate(d time.Duration) float64 {
	before := r.s.stageEvents(primary, contract.StageAggregator.String())
	r.sleep(d)
	return (r.s.stageEvents(primary, contract.StageAggregator.String()) - before) / d.Seconds()
}

// peaks are the largest lags the leading monitor reported during a scenario.
type peaks struct{ service, aggregator int64 }

func (p *peaks) observe(r *run) {
	for _, svc := range contract.Services() {
		for _, side := range contract.Sides() {
			if v, ok := r.verdict(svc.String(), side.String()); ok {
				p.service, p.aggregator = max(p.service, v.LagP99Ms), max(p.aggregator, v.AggregatorLagP99Ms)
			}
		}
	}
}

func (p peaks) String() string {
	return fmt.Sprintf("end-to-end lag p99 %s, aggregators behind %s", ms(p.service), ms(p.aggregator))
}

func ms(v int64) string {
	return (time.Duration(v) * time.Millisecond).Round(100 * time.Millisecond).String()
}
