package monitor

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// Point is one evaluation window of one service, as the on-call page charts it.
type Point struct {
	At      time.Time     `json:"at"` // the window's end
	Active  contract.Side `json:"active"`
	Primary SidePoint     `json:"primary"`
	Standby SidePoint     `json:"standby"`
}

// SidePoint is one side's numbers in a Point.
type SidePoint struct {
	Healthy  bool    `json:"healthy"`
	QPS      float64 `json:"qps"`
	LagP99Ms int64   `json:"lag_p99_ms"`
	// AggregatorLagP99Ms is how far behind the side's aggregator was.
	AggregatorLagP99Ms int64 `json:"aggregator_lag_p99_ms"`
}

// Switch is one change of the active side with the evidence behind it.
type Switch struct {
	Service contract.Service `json:"service"`
	At      time.Time        `json:"at"`
	From    contract.Side    `json:"from"`
	To      contract.Side    `json:"to"`
	// Kind is the rule that switched: failover, return, override or initial.
	Kind   string `json:"kind"`
	Epoch  int64  `json:"epoch"`
	Reason string `json:"reason"`
	// Sides are both sides' verdicts and numbers as published with it.
	Sides map[contract.Side]contract.SideState `json:"sides"`
	// Override is the operator override behind it, if any.
	Override *contract.Override `json:"override,omitempty"`
	// Writer is the monitor replica that recorded it.
	Writer string `json:"writer"`
}

// history is a replica's copy of the recent decision record (fed by the
// record's readers, one per cluster): the window entries of the last
// HistoryConfig.Retention per service, for the charts, and the latest
// decisions (switches, degraded, overrides, stagger). Entries arrive from
// both clusters and in any order; each id is kept once (the copy recorded
// first, as decisions.Merge does).
type history struct {
	mu           sync.Mutex
	retention    time.Duration
	maxPoints    int
	maxDecisions int
	windows      map[contract.Service][]decisions.Entry // by service, in time order
	decided      []decisions.Entry                      // every service, in time order
	held         map[string]time.Time                   // id → RecordedAt of the copy held
	// onDecision, if set, sees every decision added (metrics).
	onDecision func(e *decisions.Entry)
}

func newHistory(c HistoryConfig) *history {
	return &history{retention: c.Retention, maxPoints: c.MaxPoints, maxDecisions: c.Switches,
		windows: map[contract.Service][]decisions.Entry{}, held: map[string]time.Time{}}
}

// add keeps e and reports whether it changed the history: false for a copy
// of an entry already held (unless it was recorded earlier: then it
// replaces the one held) and for a window older than the retention.
func (h *history) add(e decisions.Entry) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if at, ok := h.held[e.ID]; ok && !e.RecordedAt.Before(at) {
		return false
	}
	h.held[e.ID] = e.RecordedAt
	if e.Kind == decisions.KindWindow {
		h.windows[e.Service] = h.pruneWindows(insert(h.windows[e.Service], e))
	} else {
		h.decided = h.pruneDecisions(insert(h.decided, e))
		if h.onDecision != nil {
			h.onDecision(&e)
		}
	}
	_, kept := h.held[e.ID]
	return kept
}

// insert puts e into a list in time order, in place of an entry of its id.
func insert(list []decisions.Entry, e decisions.Entry) []decisions.Entry {
	list = slices.DeleteFunc(list, func(x decisions.Entry) bool { return x.ID == e.ID })
	i, _ := slices.BinarySearchFunc(list, e, decisions.Compare)
	return slices.Insert(list, i, e)
}

// pruneWindows drops the oldest windows beyond MaxPoints and those older
// than the retention before the newest.
func (h *history) pruneWindows(ws []decisions.Entry) []decisions.Entry {
	drop := max(len(ws)-h.maxPoints, 0)
	for drop < len(ws) && ws[len(ws)-1].At.Sub(ws[drop].At) > h.retention {
		drop++
	}
	return h.forget(ws, drop)
}

// pruneDecisions keeps the newest MaxDecisions.
func (h *history) pruneDecisions(ds []decisions.Entry) []decisions.Entry {
	return h.forget(ds, max(len(ds)-h.maxDecisions, 0))
}

// forget drops the first n entries of list.
func (h *history) forget(list []decisions.Entry, n int) []decisions.Entry {
	if n == 0 {
		return list
	}
	for _, e := range list[:n] {
		delete(h.held, e.ID)
	}
	return slices.Clone(list[n:])
}

// pointsOf returns the service's windows as chart points, oldest first.
func (h *history) pointsOf(service contract.Service) []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.windows[service]
	out := make([]Point, 0, len(ws))
	for i := range ws {
		out = append(out, pointOf(&ws[i]))
	}
	return out
}

func pointOf(e *decisions.Entry) Point {
	side := func(s contract.Side) SidePoint {
		v := e.Window.Verdicts[s]
		return SidePoint{Healthy: v.Healthy, QPS: v.QPS, LagP99Ms: v.LagP99Ms, AggregatorLagP99Ms: v.AggregatorLagP99Ms}
	}
	return Point{At: e.At, Active: e.Selection.Active, Primary: side(contract.Primary), Standby: side(contract.Standby)}
}

// recentDecisions returns the decisions held, newest first.
func (h *history) recentDecisions() []decisions.Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.decided)
	slices.Reverse(out)
	return out
}

// recentSwitches returns the switches held, newest first.
func (h *history) recentSwitches() []Switch {
	var out []Switch
	for _, e := range h.recentDecisions() {
		if e.Kind == decisions.KindSwitch {
			out = append(out, Switch{Service: e.Service, At: e.At, From: e.From, To: e.To, Kind: e.Cause, Epoch: e.Epoch,
				Reason: e.Selection.Reason, Sides: e.Selection.Sides, Override: e.Selection.Override, Writer: e.RecordedBy})
		}
	}
	return out
}

// entries returns the windows and decisions held that pass f, in time order.
func (h *history) entries(f decisions.Filter) []decisions.Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := f.Apply(h.decided)
	for _, svc := range contract.Services() {
		out = append(out, f.Apply(h.windows[svc])...)
	}
	decisions.Sort(out)
	return out
}

// oldest is the time of the oldest entry held (zero when empty).
func (h *history) oldest() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var t time.Time
	for _, l := range append([][]decisions.Entry{h.decided}, slices.Collect(maps.Values(h.windows))...) {
		if len(l) > 0 && (t.IsZero() || l[0].At.Before(t)) {
			t = l[0].At
		}
	}
	return t
}
