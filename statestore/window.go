package statestore

// Pane is the open aggregation of one campaign's ad events in one window.
type Pane struct {
	StartMs    int64  `json:"start"`
	Advertiser string `json:"advertiser"`
	Micros     int64  `json:"micros"`
	Events     int64  `json:"events"`
}

// Windows is the aggregator's state of one campaign: its open panes, oldest
// first, and what was already emitted.
type Windows struct {
	Panes []Pane `json:"panes,omitempty"`
	// ClosedThroughMs is the end (unix ms) of the newest window emitted; an
	// event of a window ending at or before it is late.
	ClosedThroughMs int64 `json:"closed_through"`
	// NextOffset is one past the ad-events offset last applied: a record at a
	// lower offset is a redelivery (restart, rebalance) and changes nothing.
	NextOffset int64 `json:"next_offset"`
	// LatenessMs is the allowed lateness the panes close with, kept so that
	// the wake time is a function of the state alone.
	LatenessMs int64 `json:"lateness"`
	// SizeMs is the window size.
	SizeMs int64 `json:"size"`
	// Late counts events that arrived after their window was emitted.
	Late int64 `json:"late"`
}

// WakeAtMs is when the oldest pane closes.
func (w *Windows) WakeAtMs() int64 {
	if len(w.Panes) == 0 {
		return 0
	}
	return w.Panes[0].StartMs + w.SizeMs + w.LatenessMs
}

// AddResult says what Add did with an event.
type AddResult int

// Results of Add.
const (
	// Added: the event is in its window's pane.
	Added AddResult = 1 + iota
	// Duplicate: a redelivery of an event already applied; nothing changed.
	Duplicate
	// Late: the event's window was already emitted; the caller must emit the
	// event on its own (it is counted, never dropped).
	Late
)

func (r AddResult) String() string {
	switch r {
	case Added:
		return "added"
	case Duplicate:
		return "duplicate"
	case Late:
		return "late"
	}
	return "unset"
}

// WindowStartMs returns the start of the tumbling window of size sizeMs that
// holds tsMs (windows are aligned to the Unix epoch, so every host and both
// sides agree).
func WindowStartMs(tsMs, sizeMs int64) int64 {
	s := tsMs - tsMs%sizeMs
	if tsMs < 0 && tsMs%sizeMs != 0 {
		s -= sizeMs
	}
	return s
}

// Event is an ad event as the windows see it.
type Event struct {
	Offset     int64 // in the ad-events partition
	TsMs       int64 // event time
	Advertiser string
	Micros     int64
	// ClockMs is the partition's clock when the event arrived: an event
	// whose window closed at or before it is late, whether or not its pane
	// was emitted yet, so that when a pane is closed (a wake-up, a later
	// event) never changes what it holds.
	ClockMs int64
}

// Add applies an ad event. sizeMs and latenessMs are the window config,
// taken when no pane is open.
func (w *Windows) Add(e Event, sizeMs, latenessMs int64) AddResult {
	if e.Offset < w.NextOffset {
		return Duplicate
	}
	w.NextOffset = e.Offset + 1
	if len(w.Panes) == 0 {
		w.SizeMs, w.LatenessMs = sizeMs, latenessMs
	}
	start := WindowStartMs(e.TsMs, w.SizeMs)
	if end := start + w.SizeMs; end <= w.ClosedThroughMs || end+w.LatenessMs <= e.ClockMs {
		w.Late++
		return Late
	}
	i := 0
	for i < len(w.Panes) && w.Panes[i].StartMs < start {
		i++
	}
	if i == len(w.Panes) || w.Panes[i].StartMs != start {
		w.Panes = append(w.Panes, Pane{})
		copy(w.Panes[i+1:], w.Panes[i:])
		w.Panes[i] = Pane{StartMs: start, Advertiser: e.Advertiser}
	}
	w.Panes[i].Micros += e.Micros
	w.Panes[i].Events++
	return Added
}

// CloseDue removes and returns, oldest first, the panes whose window end plus
// the allowed lateness is at or before nowMs (wall clock).
func (w *Windows) CloseDue(nowMs int64) []Pane {
	n := 0
	for n < len(w.Panes) && w.Panes[n].StartMs+w.SizeMs+w.LatenessMs <= nowMs {
		n++
	}
	if n == 0 {
		return nil
	}
	closed := append([]Pane(nil), w.Panes[:n]...)
	w.Panes = append(w.Panes[:0], w.Panes[n:]...)
	w.ClosedThroughMs = max(w.ClosedThroughMs, closed[n-1].StartMs+w.SizeMs)
	return closed
}
