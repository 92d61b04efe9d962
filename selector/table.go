package selector

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// entry is everything one side holds for one campaign: the latest value of
// each of the three output tables.
type entry struct {
	rate       float64 // Pacing.Rate
	multiplier float64 // BidMultiplier.Multiplier
	statusAt   int64   // BudgetStatus.UpdatedAt, Unix ns
	pacingAt   int64   // Pacing.UpdatedAt, Unix ns
	multAt     int64   // BidMultiplier.UpdatedAt, Unix ns
	day        int32   // BudgetStatus.Day, days since 1970-01-01
	status     BudgetState
	has        ServiceSet // which services' values are present
}

// slot stores an entry in 48 bytes without pointers (the garbage collector
// never scans a table) and without a lock: it is a seqlock. The one writer
// makes seq odd, stores the fields and makes seq even again; a reader
// retries when seq was odd or changed while it read. Every field is
// accessed atomically, so readers never block and never race.
type slot struct {
	seq        atomic.Uint32
	meta       atomic.Uint32 // day<<8 | status<<4 | has
	rate       atomic.Uint64 // float64 bits
	multiplier atomic.Uint64 // float64 bits
	statusAt   atomic.Int64
	pacingAt   atomic.Int64
	multAt     atomic.Int64
}

func (s *slot) load() entry {
	for spins := 0; ; spins++ {
		if spins > 16 {
			runtime.Gosched() // the writer was descheduled mid-update: let it finish
		}
		seq := s.seq.Load()
		if seq&1 != 0 {
			continue // the writer is in the middle of an update (a few ns)
		}
		meta := s.meta.Load()
		e := entry{
			rate:       math.Float64frombits(s.rate.Load()),
			multiplier: math.Float64frombits(s.multiplier.Load()),
			statusAt:   s.statusAt.Load(),
			pacingAt:   s.pacingAt.Load(),
			multAt:     s.multAt.Load(),
			day:        int32(meta >> 8),
			status:     BudgetState(meta >> 4 & 0xf),
			has:        ServiceSet(meta & 0xf),
		}
		if s.seq.Load() == seq {
			return e
		}
	}
}

// store writes e; only the table's one writer calls it.
func (s *slot) store(e entry) {
	s.seq.Add(1)
	s.meta.Store(uint32(e.day)<<8 | uint32(e.status&0xf)<<4 | uint32(e.has&0xf))
	s.rate.Store(math.Float64bits(e.rate))
	s.multiplier.Store(math.Float64bits(e.multiplier))
	s.statusAt.Store(e.statusAt)
	s.pacingAt.Store(e.pacingAt)
	s.multAt.Store(e.multAt)
	s.seq.Add(1)
}

// table is one side's entries, indexed by keyIndex. Slots live in fixed
// chunks, so the table grows without moving them; the chunk directory is
// replaced (copy on write) when it grows.
//
// One goroutine (the side's consumer) writes a table; any number read it
// without locks.
type table struct {
	dir atomic.Pointer[[]*chunk]
}

const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

type chunk [chunkSize]slot

// get returns the entry at i; ok is false when the side has no value at all
// for that campaign.
func (t *table) get(i uint32) (entry, bool) {
	d := t.dir.Load()
	ci := int(i >> chunkBits)
	if d == nil || ci >= len(*d) || (*d)[ci] == nil {
		return entry{}, false
	}
	e := (*d)[ci][i&(chunkSize-1)].load()
	return e, !e.has.Empty()
}

// update replaces the entry at i with f of it, creating its chunk if
// needed. Only the table's writer calls it.
func (t *table) update(i uint32, f func(entry) entry) {
	s := &t.chunkFor(int(i >> chunkBits))[i&(chunkSize-1)]
	s.store(f(s.load()))
}

func (t *table) chunkFor(ci int) *chunk {
	var d []*chunk
	if p := t.dir.Load(); p != nil {
		d = *p
	}
	if ci < len(d) && d[ci] != nil {
		return d[ci]
	}
	size := len(d)
	if ci >= size {
		size = max(ci+1, 2*size)
	}
	n := make([]*chunk, size)
	copy(n, d)
	n[ci] = new(chunk)
	t.dir.Store(&n)
	return n[ci]
}

// maxDay is the last day a slot can hold (day has 24 bits).
const maxDay = 1<<24 - 1

// dayNumber converts a YYYY-MM-DD day (already validated) to days since 1970.
func dayNumber(t time.Time) int32 { return int32(min(max(t.Unix()/86400, 0), maxDay)) }

// dayTime converts days since 1970 back to a UTC midnight.
func dayTime(d int32) time.Time { return time.Unix(int64(d)*86400, 0).UTC() }
