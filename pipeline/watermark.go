package pipeline

import (
	"sync"
	"time"

	"github.com/hotpair/hotpair/statestore"
)

// watermarks keeps, per input partition, the clock the aggregator closes
// windows by (see aggregator), and when that clock passed each recent window
// close: the moment a window closed, from which its output latency counts.
type watermarks struct {
	idleMs     int64
	windowMs   int64
	latenessMs int64
	mu         sync.Mutex
	parts      map[int32]*watermark
}

type watermark struct {
	maxTsMs, lastRecvMs int64
	// While the partition is behind and busy (see wakeThreshold): when the
	// last round of wake-ups of the panes due for an interval went out
	// (wall ms), the clock then, and the threshold that round used.
	lastWakeMs, lastWakeClockMs, intervalDueMs int64
	// sinceMs is when this instance began to track the partition.
	sinceMs int64
	// nextOffset is one past the newest input offset received; endOffset
	// the input's log end when last listed (endKnown): a partition that
	// has not read up to it is not quiet, however long since its last
	// record (its consumer waits for a fetch, or for a CPU).
	nextOffset, endOffset int64
	endKnown              bool
	// crossed holds the wall time at which the newest event time passed each
	// of the most recent window closes (window end + lateness), oldest first.
	crossed []crossing
}

type crossing struct{ closeMs, wallMs int64 }

// maxCrossings bounds the crossings kept per partition: with 10 s windows,
// the closes of the last ten minutes.
const maxCrossings = 64

func newWatermarks(idle, window, lateness time.Duration) *watermarks {
	return &watermarks{idleMs: idle.Milliseconds(), windowMs: window.Milliseconds(),
		latenessMs: lateness.Milliseconds(), parts: make(map[int32]*watermark)}
}

// observe records an event of time tsMs received at recvMs. It reports
// whether the partition's event time passed a window close, so that the
// wake-ups of the panes due now can be sent at once.
func (w *watermarks) observe(p int32, tsMs, recvMs int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.mark(p, recvMs)
	m.lastRecvMs = recvMs
	if tsMs <= m.maxTsMs {
		return false
	}
	old := m.maxTsMs
	m.maxTsMs = tsMs
	if old == 0 {
		return false // the first event: closes before it count from sinceMs
	}
	first := w.closeAfter(old)
	if first > tsMs {
		return false
	}
	first = max(first, w.closeAfter(tsMs-maxCrossings*w.windowMs))
	for x := first; x <= tsMs; x += w.windowMs {
		m.crossed = append(m.crossed, crossing{closeMs: x, wallMs: recvMs})
	}
	if n := len(m.crossed); n > maxCrossings {
		m.crossed = append(m.crossed[:0], m.crossed[n-maxCrossings:]...)
	}
	return true
}

// received records that the partition's input record at offset arrived.
func (w *watermarks) received(p int32, offset, recvMs int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.mark(p, recvMs)
	m.nextOffset = max(m.nextOffset, offset+1)
}

// needEnds reports whether a partition is behind and has received nothing
// for quietAfter: whether it is quiet depends on the input's log end.
func (w *watermarks) needEnds(now time.Time) bool {
	nowMs := now.UnixMilli()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.parts {
		if w.behind(m, nowMs) && nowMs-m.lastRecvMs >= quietAfter.Milliseconds() {
			return true
		}
	}
	return false
}

// setEnds records the input's log end offsets by partition, listed now.
func (w *watermarks) setEnds(ends map[int32]int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, end := range ends {
		if m := w.parts[p]; m != nil {
			m.endOffset, m.endKnown = end, true
		}
	}
}

// behind reports whether the partition's clock is more than a window
// behind the wall clock (a backlog, catching up).
func (w *watermarks) behind(m *watermark, nowMs int64) bool {
	return nowMs-w.clockOf(m, nowMs) > w.windowMs
}

// closeAfter returns the first window close (end + lateness) after tsMs.
func (w *watermarks) closeAfter(tsMs int64) int64 {
	end := statestore.WindowStartMs(tsMs-w.latenessMs, w.windowMs) + w.windowMs
	return end + w.latenessMs
}

// at returns the partition's clock at wall time now (unix ms).
func (w *watermarks) at(p int32, now time.Time) int64 {
	nowMs := now.UnixMilli()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clockOf(w.mark(p, nowMs), nowMs)
}

func (w *watermarks) clockOf(m *watermark, nowMs int64) int64 {
	if nowMs-m.lastRecvMs >= w.idleMs {
		return nowMs
	}
	return min(m.maxTsMs, nowMs)
}

// backlogWakeInterval is how long a pane of a partition that is behind and
// busy may stay due before a wake-up closes it (see wakeThreshold).
const backlogWakeInterval = time.Second

// quietAfter is how long a partition that has read its input to the log end
// receives nothing before its due panes no longer wait for their campaigns'
// own events.
const quietAfter = 100 * time.Millisecond

// wakeThreshold is the clock the wake-ups of a partition are due by at wall
// time now. Live, or quiet (nothing received for quietAfter and, when the
// log end has been listed, its input read to it), it is the partition's
// clock: every due pane is woken at once. A partition that is behind (its clock more than a window
// behind the wall clock: a backlog, catching up) and busy wakes only the
// panes that have been due for a while: those due for a whole window of its
// event time (their campaigns have stopped; catching up fast, that is a
// fraction of a second) and, every backlogWakeInterval, those that were due
// at the previous such round (so none waits more than two intervals). The
// campaigns' own events close the other panes sooner and at no extra cost,
// while every wake-up is a record through the loop topic and a state write;
// and the panes close spread out as their events come, not in a burst of
// one SpendEvent per campaign every interval that the services must absorb.
// When a pane is emitted never changes what it holds (lateness is decided
// by the clock at arrival).
func (w *watermarks) wakeThreshold(p int32, now time.Time) int64 {
	clock := w.at(p, now)
	nowMs := now.UnixMilli()
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.mark(p, nowMs)
	behind := nowMs-clock > w.windowMs
	unread := m.endKnown && m.nextOffset > 0 && m.nextOffset < m.endOffset
	busy := nowMs-m.lastRecvMs < quietAfter.Milliseconds() || unread
	if !behind || !busy {
		m.lastWakeMs, m.lastWakeClockMs, m.intervalDueMs = nowMs, clock, clock
		return clock
	}
	if nowMs-m.lastWakeMs >= backlogWakeInterval.Milliseconds() {
		m.intervalDueMs = m.lastWakeClockMs
		m.lastWakeMs, m.lastWakeClockMs = nowMs, clock
	}
	return max(clock-w.windowMs, m.intervalDueMs)
}

// closedAt returns the wall time (unix ms) at which the partition's clock
// passed closeMs, a window's end plus its lateness: when an event time at or
// past it arrived, or when the partition went idle and its clock became the
// wall clock; never before closeMs itself, and never before this instance
// began to track the partition.
func (w *watermarks) closedAt(p int32, closeMs, nowMs int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.mark(p, nowMs)
	if closeMs > m.maxTsMs { // passed by the wall clock, the partition idle
		return max(closeMs, m.lastRecvMs+w.idleMs, m.sinceMs)
	}
	for i := len(m.crossed) - 1; i >= 0 && m.crossed[i].closeMs >= closeMs; i-- {
		if m.crossed[i].closeMs == closeMs {
			return max(closeMs, m.crossed[i].wallMs)
		}
	}
	return max(closeMs, m.sinceMs)
}

// mark returns the partition's watermark; a partition seen for the first
// time (just assigned, or after a restart) starts its idle timer now.
func (w *watermarks) mark(p int32, nowMs int64) *watermark {
	m := w.parts[p]
	if m == nil {
		m = &watermark{lastRecvMs: nowMs, sinceMs: nowMs}
		w.parts[p] = m
	}
	return m
}
