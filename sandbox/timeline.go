package sandbox

import (
	"fmt"
	"sync"
	"time"
)

// Event is one line of the sandbox's timeline: a fault injected or healed,
// a verdict of the leading monitor that changed, a switch the selector saw,
// a scenario check.
type Event struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"` // fault, heal, verdict, switch, check, info
	Service string    `json:"service,omitempty"`
	Side    string    `json:"side,omitempty"`
	Detail  string    `json:"detail"`
}

// Event kinds.
const (
	EventFault   = "fault"
	EventHeal    = "heal"
	EventVerdict = "verdict"
	EventSwitch  = "switch"
	EventCheck   = "check"
	EventInfo    = "info"
	EventStagger = "stagger" // a monitor flagged both sides of a service as on new builds
)

// String formats an event as one timeline line, relative to start.
func (e Event) String(start time.Time) string {
	where := e.Service
	if e.Side != "" {
		if where != "" {
			where += "/"
		}
		where += e.Side
	}
	if where != "" {
		where = " " + where
	}
	return fmt.Sprintf("%7.1fs  %-7s%s: %s", e.At.Sub(start).Seconds(), e.Kind, where, e.Detail)
}

// timeline keeps the newest events, up to a bound.
type timeline struct {
	mu     sync.Mutex
	events []Event
	notify func(Event)
}

const maxEvents = 5000

func (t *timeline) add(e Event) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	t.mu.Lock()
	t.events = append(t.events, e)
	if len(t.events) > maxEvents {
		t.events = append(t.events[:0:0], t.events[len(t.events)-maxEvents:]...)
	}
	notify := t.notify
	t.mu.Unlock()
	if notify != nil {
		notify(e)
	}
}

// since returns the events at or after from.
func (t *timeline) since(from time.Time) []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Event
	for _, e := range t.events {
		if !e.At.Before(from) {
			out = append(out, e)
		}
	}
	return out
}
