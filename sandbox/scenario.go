package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Check is one expectation of a scenario.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// Result is a scenario's outcome: passed only if every check held.
type Result struct {
	Scenario string      `json:"scenario"`
	Passed   bool        `json:"passed"`
	Checks   []Check     `json:"checks"`
	Events   []Event     `json:"events"`
	Spend    []SideSpend `json:"spend"`
	Duration string      `json:"duration"`
	// Simulate, with Options.SaveHistory, are the arguments of the hotpair
	// command that replays the saved history through the monitor's decision
	// code with the thresholds the scenario's monitors used.
	Simulate []string `json:"simulate,omitempty"`
}

// scenario is a scripted failure story with its expected outcome.
type scenario struct {
	name, summary string
	// timing adjusts ScenarioTiming; options adjusts the sandbox.
	timing  func(*Timing)
	options func(*Options)
	run     func(r *run)
}

// ScenarioNames lists the scenarios.
func ScenarioNames() []string {
	var names []string
	for _, sc := range scenarios() {
		names = append(names, sc.name)
	}
	return names
}

// HasScenario reports whether name is a scenario.
func HasScenario(name string) bool { return slices.Contains(ScenarioNames(), name) }

// RunScenario starts a sandbox with short windows and grace periods, runs
// the scenario to its end, heals its faults, compares every campaign's spend
// on each side with the load generator's ground truth, and stops the
// sandbox. progress, if set, sees every timeline event as it happens.
func RunScenario(ctx context.Context, name string, o Options, progress func(Event, time.Time), ready func(Addresses)) (Result, error) {
	i := slices.IndexFunc(scenarios(), func(sc scenario) bool { return sc.name == name })
	if i < 0 {
		return Result{}, fmt.Errorf("sandbox: no scenario %q (%s)", name, strings.Join(ScenarioNames(), ", "))
	}
	sc := scenarios()[i]
	o.Timing = ScenarioTiming()
	if o.Campaigns == 0 || o.Campaigns == 40 {
		o.Campaigns = 20
	}
	if o.QPS == 0 || o.QPS == 300 {
		o.QPS = 150
	}
	if sc.timing != nil {
		sc.timing(&o.Timing)
	}
	if sc.options != nil {
		sc.options(&o)
	}
	if o.HTTP == "" {
		o.HTTP = "127.0.0.1:0"
	}
	sb, err := New(o)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	if progress != nil {
		sb.events.notify = func(e Event) { progress(e, start) }
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	up := make(chan struct{})
	go func() {
		done <- sb.Run(sctx, func(a Addresses) {
			if ready != nil {
				ready(a)
			}
			close(up)
		})
	}()
	select {
	case <-up:
	case err := <-done:
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		return Result{}, fmt.Errorf("sandbox did not start: %w", err)
	}

	r := &run{s: sb, ctx: sctx, t: o.Timing}
	r.event(EventInfo, "", "", "scenario %s: %s", sc.name, sc.summary)
	sc.run(r)
	var simulate []string
	if ctx.Err() == nil {
		r.finish()
		if o.SaveHistory != "" {
			if n, until, err := sb.saveHistory(sctx, o.SaveHistory); err != nil {
				r.check("history saved", false, "%s: %v", o.SaveHistory, err)
			} else {
				r.check("history saved", true, "%d health samples of both clusters, up to %s, in %s",
					n, until.UTC().Format("15:04:05.000"), o.SaveHistory)
				simulate = sb.simulateArgs(o.SaveHistory)
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		r.check("sandbox stopped cleanly", false, "%v", err)
	}
	res := Result{Scenario: name, Passed: len(r.checks) > 0, Checks: r.checks, Events: sb.events.since(start),
		Spend: r.spend, Duration: time.Since(start).Round(100 * time.Millisecond).String(), Simulate: simulate}
	for _, c := range r.checks {
		res.Passed = res.Passed && c.Passed
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// run is one scenario's execution against a running sandbox.
type run struct {
	s      *Sandbox
	ctx    context.Context
	t      Timing
	checks []Check
	spend  []SideSpend
}

func (r *run) event(kind, service, side, format string, args ...any) {
	r.s.events.add(Event{Kind: kind, Service: service, Side: side, Detail: fmt.Sprintf(format, args...)})
}

// check records an expectation; it returns whether it held.
func (r *run) check(name string, ok bool, format string, args ...any) bool {
	c := Check{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)}
	r.checks = append(r.checks, c)
	mark := "passed"
	if !ok {
		mark = "FAILED"
	}
	r.event(EventCheck, "", "", "%s %s: %s", name, mark, c.Detail)
	return ok
}

// sleep waits d unless the scenario is cancelled.
func (r *run) sleep(d time.Duration) {
	select {
	case <-r.ctx.Done():
	case <-time.After(d):
	}
}

// waitFor polls cond every 100ms for up to timeout and returns how long it
// took and whether it held.
func (r *run) waitFor(timeout time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > timeout || r.ctx.Err() != nil {
			return time.Since(start), false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// holds checks that cond stays true for d, polling every 100ms; it returns
// how long it held.
func (r *run) holds(d time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < d {
		if !cond() {
			return time.Since(start), false
		}
		if r.ctx.Err() != nil {
			return time.Since(start), false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), true
}

func (r *run) inject(spec FaultSpec) Fault {
	f, err := r.s.Inject(spec)
	if err != nil {
		r.check("inject "+spec.Kind, false, "%v", err)
	}
	return f
}

func (r *run) heal(f Fault) {
	if f.ID == "" {
		return
	}
	if _, err := r.s.Heal(f.ID); err != nil {
		r.check("heal "+f.ID, false, "%v", err)
	}
}

// active is the side the read side uses for service.
func (r *run) active(service string) string { return r.s.Active(service) }

func (r *run) allOn(side string, services ...string) func() bool {
	if len(services) == 0 {
		services = contract.ServiceNames()
	}
	return func() bool {
		for _, svc := range services {
			if r.active(svc) != side {
				return false
			}
		}
		return true
	}
}

// switches counts the read side's switches of service since from, once the
// timeline has recorded what the read side uses now (a few seconds at most).
func (r *run) switches(service string, from time.Time) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.s.timelineCaughtUp(ctx); err != nil {
		r.s.log.Warn("the timeline did not catch up with the read side", "err", err)
	}
	n := 0
	for _, e := range r.s.events.since(from) {
		if e.Kind == EventSwitch && e.Service == service {
			n++
		}
	}
	return n
}

// steady waits until every service reads from primary and the monitor finds
// both sides of every service healthy, and checks that it happened.
func (r *run) steady(what string) {
	took, ok := r.waitFor(90*time.Second, func() bool {
		if !r.allOn(contract.Primary.String())() {
			return false
		}
		// On primary because the read side read each selection, not because
		// primary is the default before it did: a scenario that notes the
		// epochs now would otherwise see a selection appear later.
		snap := r.s.sel.Snapshot()
		for _, svc := range contract.Services() {
			if snap.Selection(svc) == nil {
				return false
			}
		}
		m := r.s.monitors.any()
		if m == nil {
			return false
		}
		for _, svc := range m.Status().Services {
			if svc.Local == nil || len(svc.Local.Sides) < 2 {
				return false
			}
			for _, v := range svc.Local.Sides {
				if !v.Healthy || v.QPS == 0 {
					return false
				}
			}
		}
		return true
	})
	r.check(what, ok, "every service reads from primary, its selection read, and both sides are healthy with traffic (after %s)", took.Round(100*time.Millisecond))
}

// window is one evaluation window.
func (r *run) window(n float64) time.Duration { return time.Duration(n * float64(r.t.Window)) }

// switchWithin is the longest a switch may take after a fault shows: the
// samples that show it arrive up to a sample interval later, the window in
// progress may end before the fault shows in full, the next one catches it,
// then the decision is published (3 s leaves room for a loaded machine).
func (r *run) switchWithin() time.Duration {
	return r.t.SampleInterval + r.window(2) + 3*time.Second
}

// finish heals every fault still in force and compares spend with the
// ground truth once both sides have caught up.
func (r *run) finish() {
	for _, f := range r.s.HealAll() {
		r.event(EventInfo, f.Service, f.Side, "scenario end: healed %s %s", f.ID, f.Kind)
	}
	r.spend = r.s.CheckSpend(r.ctx, 90*time.Second)
	for _, ss := range r.spend {
		name := "spend exact on " + ss.Side
		if ss.LostEvents > 0 {
			name = "spend on " + ss.Side + " equals what was delivered"
		}
		r.check(name, ss.OK(), "%s", ss.String())
	}
}
