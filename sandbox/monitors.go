package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor"
)

// replicas are the sandbox's two monitor replicas. A killed replica is
// replaced by a new one with the same config when its fault heals (a Monitor
// runs once), as a process supervisor would restart it.
type replicas struct {
	s    *Sandbox
	mu   sync.Mutex
	runs [2]*replicaRun
}

type replicaRun struct {
	m    *monitor.Monitor
	done chan struct{}
	stop context.CancelFunc
}

func newReplicas(s *Sandbox) *replicas { return &replicas{s: s} }

func (r *replicas) start(ctx context.Context) error {
	for i := range r.runs {
		if err := r.startReplica(i); err != nil {
			return err
		}
	}
	r.s.onStop(r.stopAll)
	return nil
}

func (r *replicas) startReplica(i int) error {
	s := r.s
	cfg := s.monitorConfig(i)
	// Both replicas register the same metrics in one process: the sandbox's
	// /metrics tells them apart by instance, as a scrape of two processes would.
	reg := s.regs.add(fmt.Sprintf("monitor-%d", i+1))
	m, err := monitor.New(monitor.Options{Config: cfg, Logger: s.log,
		Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"instance": cfg.ID}, reg), Gatherer: reg})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.ctx))
	run := &replicaRun{m: m, done: make(chan struct{}), stop: cancel}
	go func() {
		defer close(run.done)
		if err := m.Run(ctx); err != nil && !errors.Is(err, monitor.ErrKilled) && ctx.Err() == nil {
			s.log.Error("sandbox: monitor replica stopped", "replica", cfg.ID, "err", err)
		}
	}()
	r.mu.Lock()
	r.runs[i] = run
	r.mu.Unlock()
	return nil
}

func (r *replicas) stopAll() {
	r.mu.Lock()
	runs := r.runs
	r.mu.Unlock()
	for _, run := range runs {
		if run != nil {
			run.stop()
			<-run.done
		}
	}
}

// leader returns the index and monitor of the replica that leads, or -1.
func (r *replicas) leader() (int, *monitor.Monitor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, run := range r.runs {
		if run != nil && !stopped(run) && run.m.IsLeader() {
			return i, run.m
		}
	}
	return -1, nil
}

// any returns the leader, else any running replica (for the page).
func (r *replicas) any() *monitor.Monitor {
	if _, m := r.leader(); m != nil {
		return m
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, run := range r.runs {
		if run != nil && !stopped(run) {
			return run.m
		}
	}
	return nil
}

func stopped(run *replicaRun) bool {
	select {
	case <-run.done:
		return true
	default:
		return false
	}
}

// killLeader crashes the leading replica (its ZooKeeper session stays until
// it expires) and returns which replica it was.
func (r *replicas) killLeader() (int, error) {
	i, m := r.leader()
	if m == nil {
		return -1, errors.New("no monitor replica leads right now")
	}
	m.Kill()
	return i, nil
}

// restart replaces a stopped replica with a new one.
func (r *replicas) restart(i int) error {
	r.mu.Lock()
	run := r.runs[i]
	r.mu.Unlock()
	if run != nil {
		run.stop()
		select {
		case <-run.done:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("monitor replica %d did not stop", i+1)
		}
	}
	return r.startReplica(i)
}

// restartAll stops every replica, then starts new ones: no replica keeps
// anything in memory across it.
func (r *replicas) restartAll() error {
	r.stopAll()
	for i := range r.runs {
		if err := r.startReplica(i); err != nil {
			return err
		}
	}
	return nil
}

// handler serves the leading replica's page and API (any replica's while
// none leads, e.g. during a takeover).
func (r *replicas) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		m := r.any()
		if m == nil {
			http.Error(w, "no monitor replica is running", http.StatusServiceUnavailable)
			return
		}
		m.Handler().ServeHTTP(w, req)
	})
}

// watchVerdicts records in the timeline every change of the leading
// replica's verdict of a side, with the reasons, and of the degraded flag
// of the published selections (which changes no request tag, so the
// selection watcher does not see it).
func (s *Sandbox) watchVerdicts(ctx context.Context) error {
	type key struct{ service, side string }
	last := map[key]string{}
	stagger := map[string]string{}
	degraded := map[string]bool{}
	tick := time.NewTicker(s.opts.Timing.Window / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		snap := s.sel.Snapshot()
		for _, svc := range contract.Services() {
			if d := degradedOf(snap, svc); d != degraded[svc.String()] {
				degraded[svc.String()] = d
				detail := "no longer degraded"
				if d {
					detail = "degraded: " + snap.Selection(svc).Reason
				}
				s.events.add(Event{Kind: EventInfo, Service: svc.String(), Side: snap.Active(svc).String(), Detail: detail})
			}
		}
		_, m := s.monitors.leader()
		if m == nil {
			continue
		}
		for _, svc := range m.Status().Services {
			if svc.Local == nil {
				continue
			}
			if v := svc.Local.StaggerViolation; v != stagger[svc.Service.String()] {
				stagger[svc.Service.String()] = v
				if v != "" {
					s.events.add(Event{Kind: EventStagger, Service: svc.Service.String(), Detail: v})
				}
			}
			for _, side := range contract.Sides() {
				v, ok := svc.Local.Sides[side]
				if !ok {
					continue
				}
				verdict := fmt.Sprintf("healthy (qps %.1f, lag p99 %d ms, aggregator %d ms)", v.QPS, v.LagP99Ms, v.AggregatorLagP99Ms)
				if !v.Healthy {
					verdict = fmt.Sprintf("unhealthy: %s (qps %.1f, aggregator %d ms)", strings.Join(v.Reasons, "; "), v.QPS, v.AggregatorLagP99Ms)
				}
				state := ruleNames(v.Healthy, v.Reasons)
				if v.CatchingUp != "" {
					verdict += ", catching up: " + v.CatchingUp
					state += ",catching_up"
				}
				k := key{svc.Service.String(), side.String()}
				if last[k] == state {
					continue
				}
				last[k] = state
				s.events.add(Event{Kind: EventVerdict, Service: svc.Service.String(), Side: side.String(), Detail: verdict})
			}
		}
	}
}

// ruleNames is a verdict without its numbers: healthy, or the failing rules.
func ruleNames(healthy bool, reasons []string) string {
	if healthy {
		return "healthy"
	}
	names := make([]string, 0, len(reasons))
	for _, r := range reasons {
		name, _, _ := strings.Cut(r, ":")
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
