package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fleet describes the live instances of one (service, side) and how they
// behave; samples makes the samples they would send for one sample window.
type fleet struct {
	service    contract.Stage
	side       contract.Side
	instances  int
	partitions int32
	build      string
	// rolled > 0: only instances below it run build, the others prevBuild
	// (a deploy rolling out).
	rolled        int
	prevBuild     string
	qps           float64 // total events/s of the fleet
	lagMs         int64   // every event's lag
	silent        bool    // no samples at all
	dropInstance0 bool    // instance 0 reports no partitions (its share stays uncovered)
}

func healthyFleet(service contract.Stage, side contract.Side) fleet {
	return fleet{service: service, side: side, instances: 2, partitions: 8, build: "b1", qps: 100, lagMs: 50}
}

// samples returns one sample per instance for the sample window [ws, we).
func (f fleet) samples(ws, we time.Time) []contract.HealthSample {
	if f.silent {
		return nil
	}
	out := make([]contract.HealthSample, 0, f.instances)
	perInstance := int64(f.qps * we.Sub(ws).Seconds() / float64(f.instances))
	for i := range f.instances {
		s := contract.HealthSample{
			V: contract.SchemaVersion, Service: f.service, Side: f.side, Role: contract.RoleLive,
			Instance: fmt.Sprintf("%s-%s-%d", f.service, f.side, i), Build: f.buildOf(i),
			TopicPartitions: f.partitions, WindowStart: ws, WindowEnd: we, Events: perInstance,
		}
		if !(i == 0 && f.dropInstance0) {
			for p := int32(i); p < f.partitions; p += int32(f.instances) {
				s.Partitions = append(s.Partitions, p)
			}
		}
		observeN(&s.LagMs, f.lagMs, perInstance)
		if perInstance > 0 {
			s.LagMsMax = f.lagMs
		}
		out = append(out, s)
	}
	return out
}

// buildOf is the build instance i runs.
func (f fleet) buildOf(i int) string {
	if f.rolled > 0 && i >= f.rolled {
		return f.prevBuild
	}
	return f.build
}

// observeN adds n lags of lagMs to h.
func observeN(h *contract.LagHistogram, lagMs, n int64) {
	var one contract.LagHistogram
	one.Observe(lagMs)
	for i, c := range one.Counts {
		h.Counts[i] += c * n
	}
}

// feed sends the fleets' samples every interval over [from, to) into e, each
// received at the end of its sample window; a window closes (Tick) once the
// samples received at its end are in, as in Simulate.
func feed(t *testing.T, e *Engine, fleets []fleet, from, to time.Time, interval time.Duration) []Evaluation {
	t.Helper()
	var evs []Evaluation
	for ws := from; ws.Before(to); ws = ws.Add(interval) {
		we := ws.Add(interval)
		for _, f := range fleets {
			for _, s := range f.samples(ws, we) {
				e.Observe(&s, we)
			}
		}
		for end := e.WindowStart().Add(e.Config().Window); !we.Before(end); end = e.WindowStart().Add(e.Config().Window) {
			ev, err := e.Tick(end, nil)
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
	}
	return evs
}
