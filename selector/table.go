package selector

import (
	"sync"
	"sync/atomic"
	"time"
)

// entry is everything one side holds for one campaign: the latest value of
// each of the three output tables. 48 bytes, no pointers (the garbage
// collector never scans the tables).
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

// table is one side's entries, indexed by keyIndex. Entries live in fixed
// chunks, so the table grows without copying them; a reader takes one
// chunk's read lock for the time of a copy of one entry.
//
// One goroutine (the side's consumer) writes a table; any number read it.
type table struct {
	dir atomic.Pointer[[]*chunk] // replaced (copy on write) when it grows
}

const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

type chunk struct {
	mu sync.RWMutex
	e  [chunkSize]entry
}

// get returns the entry at i; ok is false when the side has no value at all
// for that campaign.
func (t *table) get(i uint32) (entry, bool) {
	d := t.dir.Load()
	ci := int(i >> chunkBits)
	if d == nil || ci >= len(*d) || (*d)[ci] == nil {
		return entry{}, false
	}
	c := (*d)[ci]
	c.mu.RLock()
	e := c.e[i&(chunkSize-1)]
	c.mu.RUnlock()
	return e, !e.has.Empty()
}

// update changes the entry at i with f, creating its chunk if needed.
// Only the table's writer calls it.
func (t *table) update(i uint32, f func(*entry)) {
	c := t.chunkFor(int(i >> chunkBits))
	c.mu.Lock()
	f(&c.e[i&(chunkSize-1)])
	c.mu.Unlock()
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

// dayNumber converts a YYYY-MM-DD day (already validated) to days since 1970.
func dayNumber(t time.Time) int32 { return int32(t.Unix() / 86400) }

// dayTime converts days since 1970 back to a UTC midnight.
func dayTime(d int32) time.Time { return time.Unix(int64(d)*86400, 0).UTC() }
