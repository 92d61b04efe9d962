package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Fault kinds.
const (
	FaultStall         = "stall"                    // a stage on a side stops consuming
	FaultLag           = "lag"                      // a side's records arrive late by Lag
	FaultCutIngest     = "cut-ingest"               // the load generator's link to a side is down
	FaultStopCluster   = "stop-cluster"             // a side's Kafka cluster goes away
	FaultFlap          = "flap"                     // a stage alternates stalled/healthy every Period
	FaultStopZK        = "stop-zk"                  // ZooKeeper goes away
	FaultWipeZK        = "wipe-zk"                  // ZooKeeper restarts empty, as an ensemble rebuilt after losing its disks
	FaultKillLeader    = "kill-monitor-leader"      // the leading monitor replica crashes
	FaultKillInstance  = "kill-instance"            // a stage's instance dies abruptly and restarts
	FaultDeploy        = "deploy"                   // a side's pipelines restart on a new build label
	FaultSlow          = "slow"                     // a stage processes at most Rate records/s
	FaultTraffic       = "traffic"                  // upstream traffic changes Factor times (a surge or a drop)
	FaultRestartMons   = "restart-monitors"         // both monitor replicas stop and start again, their memory gone
	FaultStopDark      = "stop-dark"                // the dark target's Kafka cluster goes away (with a dark target)
	FaultCrashDispatch = "crash-dispatcher"         // the dark dispatcher dies and starts again (after --for D), its last seconds' reads uncommitted
	FaultCrashReplica  = "crash-dispatcher-replica" // one of several dark dispatcher replicas dies; the others take its partitions after the session timeout
)

// crashUncommitted is how much of what the dispatcher read before a
// crash-dispatcher fault counts as not committed: two of franz-go's
// autocommit intervals.
const crashUncommitted = 10 * time.Second

// FaultKinds lists every kind.
func FaultKinds() []string {
	return []string{FaultStall, FaultLag, FaultCutIngest, FaultStopCluster, FaultFlap, FaultStopZK, FaultWipeZK, FaultKillLeader,
		FaultKillInstance, FaultDeploy, FaultSlow, FaultTraffic, FaultRestartMons, FaultStopDark, FaultCrashDispatch, FaultCrashReplica}
}

// FaultSpec is what to inject. Durations are Go duration strings ("30s").
type FaultSpec struct {
	Kind    string `json:"kind"`
	Service string `json:"service,omitempty"` // a stage: aggregator, budget, pacer, bidder
	Side    string `json:"side,omitempty"`
	// For heals the fault by itself after this long ("" = until healed).
	For string `json:"for,omitempty"`
	// Period is the flap period (default: the monitor window).
	Period string `json:"period,omitempty"`
	// Lag is how late a lag fault makes records arrive.
	Lag string `json:"lag,omitempty"`
	// Build is the build label a deploy restarts the side's pipelines on.
	Build string `json:"build,omitempty"`
	// Rate is the most input records per second a slow stage processes.
	Rate float64 `json:"rate,omitempty"`
	// Factor multiplies the load generator's ad requests while a traffic
	// fault lasts: 4 is a surge, 0.25 a drop.
	Factor float64 `json:"factor,omitempty"`
}

// Fault is an injected fault.
type Fault struct {
	ID string `json:"id"`
	FaultSpec
	Started time.Time  `json:"started"`
	Healed  *time.Time `json:"healed,omitempty"`
	// Detail says what the fault did, e.g. which monitor replica it killed.
	Detail string `json:"detail,omitempty"`

	heal func() error
	stop chan struct{} // closed when healed: ends timers and flap loops
}

// Active reports whether the fault is in force.
func (f *Fault) Active() bool { return f.Healed == nil }

// Errors of fault injection.
var (
	ErrBadFault    = errors.New("sandbox: bad fault")
	ErrNoSuchFault = errors.New("sandbox: no such fault")
)

type faults struct {
	s    *Sandbox
	mu   sync.Mutex
	next int
	all  []*Fault
}

func newFaults(s *Sandbox) *faults { return &faults{s: s} }

type parsedSpec struct {
	FaultSpec
	dur, period, lag time.Duration
}

func parseSpec(spec FaultSpec, window time.Duration) (parsedSpec, error) {
	p := parsedSpec{FaultSpec: spec, period: window}
	bad := func(format string, args ...any) (parsedSpec, error) {
		return parsedSpec{}, fmt.Errorf("%w: %s", ErrBadFault, fmt.Sprintf(format, args...))
	}
	if !slices.Contains(FaultKinds(), spec.Kind) {
		return bad("kind %q is not one of %v", spec.Kind, FaultKinds())
	}
	for _, d := range []struct {
		name, v string
		dst     *time.Duration
	}{{"for", spec.For, &p.dur}, {"period", spec.Period, &p.period}, {"lag", spec.Lag, &p.lag}} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil || v <= 0 {
			return bad("%s %q is not a positive duration (e.g. 30s)", d.name, d.v)
		}
		*d.dst = v
	}
	needsSide := map[string]bool{FaultStall: true, FaultLag: true, FaultCutIngest: true, FaultStopCluster: true, FaultFlap: true,
		FaultKillInstance: true, FaultDeploy: true, FaultSlow: true}
	needsService := map[string]bool{FaultStall: true, FaultFlap: true, FaultKillInstance: true, FaultSlow: true}
	switch {
	case needsSide[spec.Kind] && sideOf(spec.Side) == 0:
		return bad("%s needs --side primary or standby, got %q", spec.Kind, spec.Side)
	case needsService[spec.Kind] && stageOf(spec.Service) == 0:
		return bad("%s needs --service, one of %v, got %q", spec.Kind, contract.StageNames(), spec.Service)
	case spec.Kind == FaultLag && p.lag == 0:
		return bad("lag needs --lag, e.g. 90s")
	case spec.Kind == FaultDeploy && strings.TrimSpace(spec.Build) == "":
		return bad("deploy needs --build, e.g. v2")
	case spec.Kind != FaultDeploy && spec.Build != "":
		return bad("%s takes no --build", spec.Kind)
	case spec.Kind == FaultSlow && !(spec.Rate > 0):
		return bad("slow needs --rate, the most records per second the stage processes, e.g. 500")
	case spec.Kind == FaultTraffic && !(spec.Factor > 0 && spec.Factor <= 100 && spec.Factor != 1):
		return bad("traffic needs --factor, above 0 and at most 100 but not 1, e.g. 4 (a surge) or 0.25 (a drop)")
	case spec.Kind != FaultSlow && spec.Rate != 0, spec.Kind != FaultTraffic && spec.Factor != 0:
		return bad("--rate applies to slow only, --factor to traffic only")
	case !needsSide[spec.Kind] && spec.Side != "", !needsService[spec.Kind] && spec.Service != "":
		return bad("%s takes no --side or --service", spec.Kind)
	}
	return p, nil
}

// Inject applies a fault and returns it.
func (s *Sandbox) Inject(spec FaultSpec) (Fault, error) {
	return s.faults.inject(spec)
}

// Heal ends a fault.
func (s *Sandbox) Heal(id string) (Fault, error) { return s.faults.heal(id) }

// HealAll ends every active fault.
func (s *Sandbox) HealAll() []Fault {
	var out []Fault
	for _, f := range s.Faults() {
		if f.Active() {
			if h, err := s.Heal(f.ID); err == nil {
				out = append(out, h)
			}
		}
	}
	return out
}

// Faults lists every fault, oldest first.
func (s *Sandbox) Faults() []Fault {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	out := make([]Fault, 0, len(s.faults.all))
	for _, f := range s.faults.all {
		out = append(out, *f)
	}
	return out
}

func (fs *faults) inject(spec FaultSpec) (Fault, error) {
	p, err := parseSpec(spec, fs.s.opts.Timing.Window)
	if err != nil {
		return Fault{}, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.all {
		if f.Active() && f.Kind == spec.Kind && f.Side == spec.Side && f.Service == spec.Service {
			return Fault{}, fmt.Errorf("%w: %s is already in force (%s)", ErrBadFault, spec.Kind, f.ID)
		}
	}
	fs.next++
	f := &Fault{ID: "f" + strconv.Itoa(fs.next), FaultSpec: spec, Started: time.Now(), stop: make(chan struct{})}
	if err := fs.apply(f, p); err != nil {
		return Fault{}, err
	}
	fs.all = append(fs.all, f)
	fs.s.events.add(Event{Kind: EventFault, Service: spec.Service, Side: spec.Side, Detail: describe(f, p)})
	if f.heal == nil { // instantaneous: done at once
		now := time.Now()
		f.Healed = &now
		return *f, nil
	}
	if p.dur > 0 {
		go func() {
			select {
			case <-time.After(p.dur):
				_, _ = fs.heal(f.ID)
			case <-f.stop:
			}
		}()
	}
	return *f, nil
}

func describe(f *Fault, p parsedSpec) string {
	d := f.ID + " " + f.Kind
	if p.Kind == FaultLag {
		d += " by " + p.lag.String()
	}
	if p.Kind == FaultFlap {
		d += " every " + p.period.String()
	}
	if p.Kind == FaultDeploy {
		d += " of build " + p.Build
	}
	if p.Kind == FaultSlow {
		d += fmt.Sprintf(" to %g records/s", p.Rate)
	}
	if p.Kind == FaultTraffic {
		d += fmt.Sprintf(" ×%g", p.Factor)
	}
	if p.dur > 0 {
		d += " for " + p.dur.String()
	}
	if f.Detail != "" {
		d += ": " + f.Detail
	}
	return d
}

// apply carries out the fault and sets f.heal (nil for a fault that is over
// as soon as it happened).
func (fs *faults) apply(f *Fault, p parsedSpec) error {
	s := fs.s
	switch p.Kind {
	case FaultStall:
		pipe := s.pipe(p.Side)
		if err := pipe.Pause(p.Service, true); err != nil {
			return err
		}
		f.heal = func() error { return pipe.Pause(p.Service, false) }
	case FaultFlap:
		pipe := s.pipe(p.Side)
		pause := func(paused bool) error { return pipe.Pause(p.Service, paused) }
		if err := pause(true); err != nil {
			return err // the first stall did not happen: no fault
		}
		go flap(pause, p.period, f.stop, func(err error) { fs.flapFailed(f, err) })
		f.heal = func() error { return pause(false) }
	case FaultLag:
		if err := s.ingest.SetDelay(sideOf(p.Side), p.lag); err != nil {
			return err
		}
		f.heal = func() error { return s.ingest.SetDelay(sideOf(p.Side), 0) }
	case FaultCutIngest:
		if err := s.ingest.Cut(sideOf(p.Side), true); err != nil {
			return err
		}
		f.heal = func() error { return s.ingest.Cut(sideOf(p.Side), false) }
	case FaultStopCluster:
		c := s.clusters[p.Side]
		c.stop()
		f.heal = c.start
	case FaultStopDark:
		c := s.clusters[darkCluster]
		if c == nil {
			return fmt.Errorf("%w: stop-dark needs a dark target (hotpair sandbox --dark)", ErrBadFault)
		}
		c.stop()
		f.Detail = "the dark pipeline and the dispatcher lose their target; live goes on"
		f.heal = c.start
	case FaultStopZK:
		if s.zk == nil {
			return errNoLocalZK
		}
		s.zk.Kill()
		f.heal = func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return s.zk.Restart(ctx)
		}
	case FaultWipeZK:
		if s.zk == nil {
			return errNoLocalZK
		}
		s.zk.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.zk.RestartEmpty(ctx); err != nil {
			return err
		}
		f.Detail = "ZooKeeper restarted empty: every znode and session is gone; the daemons open new sessions and " +
			"write theirs again (overrides and dark targets must be set again)"
	case FaultKillLeader:
		i, err := s.monitors.killLeader()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadFault, err)
		}
		f.Detail = fmt.Sprintf("killed sandbox-monitor-%d; it restarts when the fault heals", i+1)
		f.heal = func() error { return s.monitors.restart(i) }
	case FaultSlow:
		pipe := s.pipe(p.Side)
		if err := pipe.Throttle(p.Service, p.Rate); err != nil {
			return err
		}
		f.heal = func() error { return pipe.Throttle(p.Service, 0) }
	case FaultTraffic:
		g := s.loadGen()
		g.setTraffic(p.Factor)
		f.heal = func() error { g.setTraffic(1); return nil }
	case FaultKillInstance:
		if err := s.pipe(p.Side).RestartStage(p.Service); err != nil {
			return err
		}
		f.Detail = "the instance died and restarts, recovering its state from its changelog"
	case FaultDeploy:
		if err := s.deploy(p.Side, p.Build); err != nil {
			return err
		}
		f.Detail = "every stage stopped and started again on the new build, recovering its state from its changelog"
	case FaultCrashDispatch:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n, err := s.crashDispatcher(ctx, crashUncommitted)
		if err != nil {
			return err
		}
		f.Detail = fmt.Sprintf("the dispatcher stopped; its group's offsets went back by what it read in the last %s (up to %d records "+
			"a partition), as after a crash between two commits", crashUncommitted, n)
		if p.dur == 0 {
			f.Detail += "; a new one started"
			return s.runDispatcher()
		}
		// --for D: down until healed, as a process that takes D to come back.
		f.Detail += "; a new one starts when the fault heals"
		f.heal = s.runDispatcher
	case FaultCrashReplica:
		id, err := s.crashDispatcherReplica()
		if err != nil {
			return err
		}
		f.Detail = fmt.Sprintf("dispatcher replica %s died without leaving its group; its partitions are not copied until the group's session timeout (%s) moves them to the others",
			id, dispatcherSessionTimeout(s.opts.Timing))
	case FaultRestartMons:
		if err := s.monitors.restartAll(); err != nil {
			return err
		}
		f.Detail = "both replicas stopped and started again: what they show comes back from ZooKeeper and the decision record"
	}
	return nil
}

// flap resumes and pauses a stage (paused when it starts) every period
// until stop is closed. A pause or resume that fails ends the flapping and
// goes to failed: the fault no longer does what it says.
func flap(pause func(paused bool) error, period time.Duration, stop <-chan struct{}, failed func(error)) {
	paused := true
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			paused = !paused
			if err := pause(paused); err != nil {
				failed(err)
				return
			}
		}
	}
}

// flapFailed reports a flap that stopped flapping, in the log and on the
// timeline.
func (fs *faults) flapFailed(f *Fault, err error) {
	fs.s.log.Error("sandbox: flap fault stopped flapping", "fault", f.ID, "service", f.Service, "side", f.Side, "err", err)
	fs.s.events.add(Event{Kind: EventFault, Service: f.Service, Side: f.Side, Detail: f.ID + " flap stopped: " + err.Error()})
}

func (fs *faults) heal(id string) (Fault, error) {
	fs.mu.Lock()
	var f *Fault
	for _, x := range fs.all {
		if x.ID == id {
			f = x
		}
	}
	if f == nil {
		fs.mu.Unlock()
		return Fault{}, fmt.Errorf("%w: %q", ErrNoSuchFault, id)
	}
	if !f.Active() {
		fs.mu.Unlock()
		return *f, nil
	}
	now := time.Now()
	f.Healed = &now
	close(f.stop)
	heal := f.heal
	fs.mu.Unlock()
	var err error
	if heal != nil {
		err = heal()
	}
	detail := f.ID + " " + f.Kind + " healed"
	if err != nil {
		detail += ": " + err.Error()
	}
	fs.s.events.add(Event{Kind: EventHeal, Service: f.Service, Side: f.Side, Detail: detail})
	return *f, err
}

// stopAll heals every fault when the sandbox stops, so nothing it started
// (a ZooKeeper killed by stop-zk) is left in a state its cleanup misses.
func (fs *faults) stopAll() {
	fs.mu.Lock()
	var active []string
	for _, f := range fs.all {
		if f.Active() {
			active = append(active, f.ID)
		}
	}
	fs.mu.Unlock()
	for _, id := range active {
		_, _ = fs.heal(id)
	}
}

// sideOf is the side named name (unset for anything else).
func sideOf(name string) contract.Side {
	side, _ := contract.ParseSide(name)
	return side
}

// stageOf is the stage named name (unset for anything else).
func stageOf(name string) contract.Stage {
	st, _ := contract.ParseStage(name)
	return st
}
