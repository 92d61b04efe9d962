package core

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Record is one sample of a recorded health history with the time the
// monitor received it (zero: use the sample's window_end).
type Record struct {
	Sample     contract.HealthSample
	ReceivedAt time.Time
}

// At is the time the record counts at: ReceivedAt, or the sample's window_end.
func (r *Record) At() time.Time {
	if r.ReceivedAt.IsZero() {
		return r.Sample.WindowEnd
	}
	return r.ReceivedAt
}

// Switch is one change of the active side a simulation made.
type Switch struct {
	Service  contract.Service `json:"service"`
	At       time.Time        `json:"at"`
	From     contract.Side    `json:"from"`
	To       contract.Side    `json:"to"`
	Kind     Kind             `json:"-"`
	KindName string           `json:"kind"`
	Epoch    int64            `json:"epoch"`
	Reason   string           `json:"reason"`
}

// SimResult is what a simulation found.
type SimResult struct {
	From, To time.Time // first window start, last window end
	Windows  int
	Counters Counters
	// Switches in time order, every service.
	Switches []Switch
	// DegradedWindows and StaggerWindows count, per service, the windows
	// that ended degraded (both sides unhealthy) or with a stagger violation.
	DegradedWindows map[contract.Service]int
	StaggerWindows  map[contract.Service]int
	// UnhealthyWindows counts, per "service/side", the unhealthy windows.
	UnhealthyWindows map[string]int
	// Final is every service's state after the last window.
	Final map[contract.Service]State
}

// Simulate replays a recorded history through the same Engine the monitor
// runs: samples are observed in the order of their receive time, and a
// window closes at every multiple of cfg.Window (since the Unix epoch) from
// the first sample on, up to the last one that ends by the last sample. A
// window (start, end] holds the samples received after its start up to and
// including its end. A window the history ends within is not judged: it
// does not say what came after its last sample, and a side whose next
// sample was not recorded would read as silent. Every service starts on the preferred side, so a
// failover in the first window counts as a switch. No override is applied.
// The history is not modified.
func Simulate(cfg Config, history []Record) (SimResult, error) {
	recs := make([]*Record, 0, len(history))
	for i := range history {
		if history[i].Sample.Role == contract.RoleLive {
			recs = append(recs, &history[i])
		}
	}
	if len(recs) == 0 {
		return SimResult{}, ErrEmptyHistory
	}
	slices.SortStableFunc(recs, func(a, b *Record) int { return cmp.Compare(a.At().UnixNano(), b.At().UnixNano()) })
	start := recs[0].At().Truncate(cfg.Window)
	e, err := NewEngine(cfg, start)
	if err != nil {
		return SimResult{}, err
	}
	for _, svc := range contract.Services() { // the replay starts on the preferred side
		e.states[svc] = State{Service: svc, Active: cfg.Decision.PreferredSide(), Preferred: cfg.Decision.PreferredSide(), Epoch: 1}
	}
	res := SimResult{From: start, DegradedWindows: map[contract.Service]int{}, StaggerWindows: map[contract.Service]int{},
		UnhealthyWindows: map[string]int{}, Final: map[contract.Service]State{}}
	last := recs[len(recs)-1].At()
	if start.Add(cfg.Window).After(last) {
		return SimResult{}, fmt.Errorf("%w: %s from %s to %s, window %s", ErrShortHistory, last.Sub(recs[0].At()),
			recs[0].At().UTC().Format(time.RFC3339Nano), last.UTC().Format(time.RFC3339Nano), cfg.Window)
	}
	next := 0
	for tick := start.Add(cfg.Window); !tick.After(last); tick = tick.Add(cfg.Window) {
		for ; next < len(recs) && !recs[next].At().After(tick); next++ {
			e.Observe(&recs[next].Sample, recs[next].At())
		}
		ev, err := e.Tick(tick, nil)
		if err != nil {
			return SimResult{}, err
		}
		res.record(ev)
	}
	res.Counters = e.Counters()
	for _, svc := range contract.Services() {
		res.Final[svc] = e.State(svc)
	}
	return res, nil
}

func (r *SimResult) record(ev Evaluation) {
	r.Windows++
	r.To = ev.WindowEnd
	for _, v := range ev.Verdicts {
		if _, svc := v.Service.Service(); !v.Healthy && svc {
			r.UnhealthyWindows[v.Key.String()]++
		}
	}
	for _, d := range ev.Decisions {
		if d.State.Degraded {
			r.DegradedWindows[d.Service]++
		}
		if d.Switched {
			r.Switches = append(r.Switches, Switch{Service: d.Service, At: ev.WindowEnd, From: d.From,
				To: d.State.Active, Kind: d.Kind, KindName: d.Kind.String(), Epoch: d.State.Epoch, Reason: d.Reason})
		}
	}
	for _, s := range ev.Stagger {
		if s.Violated {
			r.StaggerWindows[s.Service]++
		}
	}
}
