package statestore

import "slices"

// MaxLateIDs is how many late SpendEvent ids a Ledger remembers. A late
// SpendEvent redelivered after more than this many newer late events of the
// same campaign would count twice; late events are rare (one per ad event that
// arrived after its window closed), so the bound is far from reach.
const MaxLateIDs = 256

// Ledger is one campaign's spend, counted exactly once per SpendEvent id. The
// budget enforcer, the pacer and the bidder each keep one.
//
// Regular SpendEvents (id campaign/window_start_ms) of a campaign are emitted
// by the aggregator in strictly increasing window order, so a regular event
// whose window starts at or before Through was applied before. Late
// SpendEvents (one per late ad event, id .../late/<event id>) can be of any
// window, so their ids are remembered in Late.
type Ledger struct {
	// Day is the campaign-local date (YYYY-MM-DD) SpentToday is for.
	Day           string `json:"day"`
	SpentToday    int64  `json:"spent_today"`
	SpentLifetime int64  `json:"spent_lifetime"`
	// Through is the window start (unix ms) of the newest regular
	// SpendEvent applied.
	Through int64 `json:"through"`
	// Late holds the ids of the newest late SpendEvents applied, oldest first.
	Late []string `json:"late,omitempty"`
	// Applied counts SpendEvents applied; Duplicates counts those ignored.
	Applied    int64 `json:"applied"`
	Duplicates int64 `json:"duplicates"`
}

// Spend is one SpendEvent as the ledger needs it.
type Spend struct {
	ID            string
	Late          bool
	WindowStartMs int64
	// Day is the campaign-local date of the window start.
	Day    string
	Micros int64
}

// Apply adds s unless it was applied before, and reports whether it did.
// Spend of a day after Day starts that day; spend of an earlier day counts
// towards the lifetime only.
func (l *Ledger) Apply(s Spend) bool {
	if l.seen(s) {
		l.Duplicates++
		return false
	}
	l.remember(s)
	l.Applied++
	l.SpentLifetime += s.Micros
	switch {
	case s.Day > l.Day:
		l.Day, l.SpentToday = s.Day, s.Micros
	case s.Day == l.Day:
		l.SpentToday += s.Micros
	}
	return true
}

// Roll starts day when it is after Day (the campaign's midnight passed) and
// reports whether it did.
func (l *Ledger) Roll(day string) bool {
	if day <= l.Day {
		return false
	}
	l.Day, l.SpentToday = day, 0
	return true
}

func (l *Ledger) seen(s Spend) bool {
	if s.Late {
		return slices.Contains(l.Late, s.ID)
	}
	return s.WindowStartMs <= l.Through
}

func (l *Ledger) remember(s Spend) {
	if !s.Late {
		l.Through = max(l.Through, s.WindowStartMs)
		return
	}
	l.Late = append(l.Late, s.ID)
	if over := len(l.Late) - MaxLateIDs; over > 0 {
		l.Late = slices.Delete(l.Late, 0, over)
	}
}
