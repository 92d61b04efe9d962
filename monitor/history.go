package monitor

import (
	"slices"
	"sync"
	"time"

	"github.com/hotpair/hotpair/internal/znode"
)

// Point is one evaluation window of one service, as the on-call page charts it.
type Point struct {
	At      time.Time `json:"at"` // the window's end
	Active  string    `json:"active"`
	Primary SidePoint `json:"primary"`
	Standby SidePoint `json:"standby"`
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
	Service string    `json:"service"`
	At      time.Time `json:"at"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	// Kind is the rule that switched: failover, return, override or initial.
	Kind   string `json:"kind"`
	Epoch  int64  `json:"epoch"`
	Reason string `json:"reason"`
	// Sides are both sides' verdicts and numbers as published with it.
	Sides map[string]znode.SideState `json:"sides"`
	// Override is the operator override behind it, if any.
	Override *znode.Override `json:"override,omitempty"`
	// Writer says who published it: "this replica" or "the leader" (seen
	// by a follower).
	Writer string `json:"writer"`
}

// history is the in-memory record of the last hours: one ring of window
// points per service and one ring of switches. It is what a replica saw
// since it started; the selection znode keeps only the latest decision.
type history struct {
	mu        sync.Mutex
	retention time.Duration
	maxPoints int
	maxSw     int
	points    map[string][]Point
	switches  []Switch
}

func newHistory(c HistoryConfig) *history {
	return &history{retention: c.Retention, maxPoints: c.MaxPoints, maxSw: c.Switches, points: map[string][]Point{}}
}

func (h *history) addPoint(service string, p Point) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := append(h.points[service], p)
	drop := max(len(ps)-h.maxPoints, 0)
	for drop < len(ps) && p.At.Sub(ps[drop].At) > h.retention {
		drop++
	}
	if drop > 0 {
		ps = append(ps[:0:0], ps[drop:]...)
	}
	h.points[service] = ps
}

func (h *history) addSwitch(s Switch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.switches = append(h.switches, s)
	if over := len(h.switches) - h.maxSw; over > 0 {
		h.switches = append(h.switches[:0:0], h.switches[over:]...)
	}
}

// pointsOf returns a copy of the service's points, oldest first.
func (h *history) pointsOf(service string) []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.points[service])
}

// recentSwitches returns a copy of the switches, newest first.
func (h *history) recentSwitches() []Switch {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.switches)
	slices.Reverse(out)
	return out
}
