package statestore

import (
	"container/heap"
	"sync"
	"time"

	"github.com/lovoo/goka/storage"
)

// Wakeups indexes, per partition, the keys whose state asks for a timer
// action, by the wake time in the state envelope. The store feeds it on every
// write — including the writes of a changelog recovery, so a restarted
// instance knows every pending wake-up of the partitions it took over — and
// forgets a partition when goka closes its storage.
//
// A driver pops the due keys and sends each a wake-up message through the
// processor's loop topic; the processor acts (closes a window, rolls the
// day) and writes the new state, whose envelope carries the next wake time.
// That is a timer, not a feedback loop: a wake-up fires only once its time
// has passed, and the action always moves the key's wake time forward or
// clears it. Nothing here writes to the store.
//
// Only the partitions assigned to the instance have their wake-ups sent (see
// Assign): with a hot standby, the stores of the other partitions are kept
// current, and indexed, too.
type Wakeups struct {
	mu       sync.Mutex
	parts    map[int32]*wakeHeap
	assigned map[int32]bool // nil: every partition
}

// NewWakeups returns an empty index.
func NewWakeups() *Wakeups { return &Wakeups{parts: make(map[int32]*wakeHeap)} }

// Assign limits Due to the given partitions, the instance's current assignment.
func (w *Wakeups) Assign(partitions []int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.assigned = make(map[int32]bool, len(partitions))
	for _, p := range partitions {
		w.assigned[p] = true
	}
}

// Set records that key on partition wants a wake-up at atMs (0 = none).
func (w *Wakeups) Set(partition int32, key string, atMs int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.parts[partition]
	if h == nil {
		if atMs == 0 {
			return
		}
		h = &wakeHeap{at: make(map[string]int64)}
		w.parts[partition] = h
	}
	h.set(key, atMs)
}

// DropPartition forgets every key of a partition.
func (w *Wakeups) DropPartition(partition int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.parts, partition)
}

// Due pops up to limit keys whose wake time is at or before the threshold of
// their partition (unix ms; e.g. the wall clock, or the partition's event-time
// watermark). Each popped key is re-armed at now+retry, so a wake-up message
// that gets lost is sent again; the processor's write of the new state
// replaces that.
func (w *Wakeups) Due(now time.Time, threshold func(partition int32) int64, retry time.Duration, limit int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	nowMs := now.UnixMilli()
	var keys []string
	for p, h := range w.parts {
		if w.assigned != nil && !w.assigned[p] {
			continue
		}
		th := threshold(p)
		for len(keys) < limit {
			k, ok := h.popDue(th)
			if !ok {
				break
			}
			keys = append(keys, k)
			h.set(k, nowMs+retry.Milliseconds())
		}
	}
	return keys
}

// Len is the number of keys of the assigned partitions with a pending wake-up.
func (w *Wakeups) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for p, h := range w.parts {
		if w.assigned == nil || w.assigned[p] {
			n += len(h.at)
		}
	}
	return n
}

// wakeHeap is a min-heap of (time, key) with lazy deletion: at holds each
// key's current time, and heap entries that disagree with it are stale.
type wakeHeap struct {
	at    map[string]int64
	items []wakeItem
}

type wakeItem struct {
	at  int64
	key string
}

func (h *wakeHeap) set(key string, at int64) {
	if at == 0 {
		delete(h.at, key)
		return
	}
	if old, ok := h.at[key]; ok && old == at {
		return
	}
	h.at[key] = at
	heap.Push((*wakeItems)(h), wakeItem{at, key})
	if len(h.items) > 4*len(h.at)+64 {
		h.compact()
	}
}

func (h *wakeHeap) popDue(nowMs int64) (string, bool) {
	for len(h.items) > 0 && h.items[0].at <= nowMs {
		it := heap.Pop((*wakeItems)(h)).(wakeItem)
		if cur, ok := h.at[it.key]; ok && cur == it.at {
			delete(h.at, it.key)
			return it.key, true
		}
	}
	return "", false
}

func (h *wakeHeap) compact() {
	h.items = h.items[:0]
	for k, at := range h.at {
		h.items = append(h.items, wakeItem{at, k})
	}
	heap.Init((*wakeItems)(h))
}

type wakeItems wakeHeap

func (h *wakeItems) Len() int           { return len(h.items) }
func (h *wakeItems) Less(i, j int) bool { return h.items[i].at < h.items[j].at }
func (h *wakeItems) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *wakeItems) Push(x any)         { h.items = append(h.items, x.(wakeItem)) }
func (h *wakeItems) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}

// indexed wraps a partition's storage and reports its writes to a Wakeups.
type indexed struct {
	storage.Storage
	partition int32
	w         *Wakeups
}

func (s *indexed) Set(key string, value []byte) error {
	if err := s.Storage.Set(key, value); err != nil {
		return err
	}
	s.w.Set(s.partition, key, WakeAtOf(value))
	return nil
}

func (s *indexed) Delete(key string) error {
	if err := s.Storage.Delete(key); err != nil {
		return err
	}
	s.w.Set(s.partition, key, 0)
	return nil
}

func (s *indexed) Close() error {
	s.w.DropPartition(s.partition)
	return s.Storage.Close()
}

// Open opens the storage and indexes the wake times already in it: a leveldb
// store reopened after a restart holds states that goka will not write again.
func (s *indexed) Open() error {
	if err := s.Storage.Open(); err != nil {
		return err
	}
	it, err := s.Storage.Iterator()
	if err != nil {
		return err
	}
	defer it.Release()
	for it.Next() {
		v, err := it.Value()
		if err != nil {
			return err
		}
		if at := WakeAtOf(v); at != 0 {
			s.w.Set(s.partition, string(it.Key()), at)
		}
	}
	return it.Err()
}
