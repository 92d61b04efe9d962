package replay

import (
	"math"
	"time"
)

// DefaultCatchUp is how far behind schedule a player still catches up by
// sending without waiting; a longer stall shifts the schedule instead.
const DefaultCatchUp = 250 * time.Millisecond

// Pacer decides when each record is due. It is pure: no goroutines, no
// clock; the caller passes now. The driver loop is
//
//	due := p.Due(now, rec.Timestamp) // anchors the schedule on the first call
//	sleep until due (not at all when due <= now)
//	send rec to every target (may block: backpressure)
//	p.Released(time.Now())
//
// Three modes: a fixed rate (record n is due at start + n/rate), the
// recorded timestamps (due at start + (ts - first ts)), or unpaced (always
// due now). Records are never reordered: a record whose timestamp is older
// than its predecessor's is due at once.
type Pacer struct {
	rate    float64 // > 0 fixed rate; 0 recorded timestamps; +Inf unpaced
	catchUp time.Duration

	started bool
	start   time.Time     // wall time of the schedule origin
	origin  time.Time     // recorded timestamp mapped to start (timestamps mode)
	shift   time.Duration // accumulated shift from stalls
	n       int64         // records released
	due     time.Time     // due time of the record being released
	lastDue time.Time     // due time of the previous record

	// timestamps mode, for --loop: the span of one pass and its records
	passFirst, passLast time.Time
	passN               int64
	rewound             bool

	stalls     int64
	stallTotal time.Duration
}

// NewFixedRate returns a Pacer that releases rate records per second.
func NewFixedRate(rate float64, catchUp time.Duration) *Pacer {
	return &Pacer{rate: rate, catchUp: catchUp}
}

// NewRecordedPace returns a Pacer that follows the records' timestamps.
func NewRecordedPace(catchUp time.Duration) *Pacer { return &Pacer{catchUp: catchUp} }

// NewUnpaced returns a Pacer that releases every record at once: the player
// goes as fast as its targets take records.
func NewUnpaced() *Pacer { return &Pacer{rate: math.Inf(1)} }

// Due returns when the next record, recorded at ts, is due. The first call
// anchors the schedule at now. Calling Due again before Released returns
// the same time.
func (p *Pacer) Due(now, ts time.Time) time.Time {
	if !p.started {
		p.started, p.start, p.origin, p.lastDue = true, now, ts, now
	}
	switch {
	case math.IsInf(p.rate, 1):
		p.due = now
	case p.rate > 0:
		p.due = p.start.Add(p.shift + time.Duration(float64(p.n)*float64(time.Second)/p.rate))
	default:
		p.due = p.recordedDue(ts)
	}
	if p.due.Before(p.lastDue) {
		p.due = p.lastDue
	}
	return p.due
}

func (p *Pacer) recordedDue(ts time.Time) time.Time {
	if p.rewound {
		// A new pass starts one mean interval after the previous pass's last record.
		gap := time.Duration(0)
		if p.passN > 1 {
			gap = p.passLast.Sub(p.passFirst) / time.Duration(p.passN-1)
		}
		p.origin = ts.Add(-p.lastDue.Add(gap).Sub(p.start.Add(p.shift)))
		p.rewound, p.passN = false, 0
	}
	if p.passN == 0 {
		p.passFirst = ts
	}
	if ts.After(p.passLast) || p.passN == 0 {
		p.passLast = ts
	}
	return p.start.Add(p.shift + ts.Sub(p.origin))
}

// Released tells the pacer the record asked about last went out at now. If
// that was more than the catch-up allowance after its due time (a target
// applied backpressure, or the host stalled), the schedule shifts by the
// delay: the player slows down rather than bursting to catch up.
func (p *Pacer) Released(now time.Time) {
	if late := now.Sub(p.due); late > p.catchUp && !math.IsInf(p.rate, 1) {
		p.shift += late
		p.stalls++
		p.stallTotal += late
	}
	p.lastDue = p.due
	p.n++
	p.passN++
}

// Rewind starts a new pass over the recording (--loop): in timestamps mode
// the next record is due one mean interval after the last one.
func (p *Pacer) Rewind() { p.rewound = true }

// Start returns the wall time the schedule is anchored at (zero before the first Due).
func (p *Pacer) Start() time.Time { return p.start }

// Stalls returns how often the schedule was shifted, and by how much in total.
func (p *Pacer) Stalls() (int64, time.Duration) { return p.stalls, p.stallTotal }
