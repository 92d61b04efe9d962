package statestore

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/lovoo/goka/storage"
)

// memory is a goka storage kept in a hash map. Unlike goka's own memory
// storage, which re-sorts every key on each new key (O(n log n) per insert,
// about 1.7k inserts/s at 1M keys), Set is O(1); keys are sorted only when an
// iterator is asked for, which the services never do on their hot path.
//
// Close keeps the data: a store opened again (by the same builder, see
// memoryPool) carries on from its offset, as a leveldb directory does.
type memory struct {
	mu     sync.RWMutex
	data   map[string][]byte
	offset int64
	hasOff bool
	closed bool
}

// NewMemory returns an empty in-memory storage.
func NewMemory() storage.Storage { return &memory{data: make(map[string][]byte)} }

var errClosed = errors.New("statestore: storage is closed")

func (m *memory) Open() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = false
	return nil
}

func (m *memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// memoryPool hands out one memory store per topic and partition for as long
// as it lives. goka opens a partition's store when a group session assigns
// the partition to the instance and closes it when the session ends, at
// every rebalance: reusing the store, goka recovers only what was written to
// the changelog since (by this instance or another), not the whole state.
// It is what lets a hot standby keep memory state current across sessions.
type memoryPool struct {
	mu     sync.Mutex
	stores map[string]*memory
}

func (p *memoryPool) build(topic string, partition int32) (storage.Storage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := topic + "/" + strconv.Itoa(int(partition))
	m := p.stores[k]
	if m == nil {
		m = NewMemory().(*memory)
		p.stores[k] = m
	}
	return m, nil
}

func (m *memory) Has(key string) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.data[key]
	return ok, nil
}

func (m *memory) Get(key string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.data[key], nil
}

func (m *memory) Set(key string, value []byte) error {
	if value == nil {
		return errors.New("statestore: cannot store a nil value")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	m.data[key] = value
	return nil
}

func (m *memory) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, key)
	return nil
}

func (m *memory) GetOffset(def int64) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.hasOff {
		return def, nil
	}
	return m.offset, nil
}

func (m *memory) SetOffset(offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offset, m.hasOff = offset, true
	return nil
}

func (m *memory) MarkRecovered() error { return nil }

// Iterator returns the keys in order, as of the call; values are read when
// the iterator reaches them.
func (m *memory) Iterator() (storage.Iterator, error) { return m.IteratorWithRange(nil, nil) }

// IteratorWithRange iterates keys in [start, limit), or with prefix start
// when limit is empty, as goka's leveldb storage does.
func (m *memory) IteratorWithRange(start, limit []byte) (storage.Iterator, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, errClosed
	}
	keys := make([]string, 0, len(m.data))
	for k := range m.data {
		kb := []byte(k)
		switch {
		case len(limit) > 0 && (bytes.Compare(kb, start) < 0 || bytes.Compare(kb, limit) >= 0):
			continue
		case len(limit) == 0 && !bytes.HasPrefix(kb, start):
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return &memIter{m: m, keys: keys, i: -1}, nil
}

type memIter struct {
	m    *memory
	keys []string
	i    int
}

func (it *memIter) Next() bool {
	it.i++
	return it.i < len(it.keys)
}

func (it *memIter) Err() error { return nil }

func (it *memIter) Key() []byte {
	if it.i < 0 || it.i >= len(it.keys) {
		return nil
	}
	return []byte(it.keys[it.i])
}

func (it *memIter) Value() ([]byte, error) {
	k := it.Key()
	if k == nil {
		return nil, nil
	}
	return it.m.Get(string(k))
}

func (it *memIter) Release() { it.i = len(it.keys) }

func (it *memIter) Seek(key []byte) bool {
	i, _ := slices.BinarySearch(it.keys, string(key))
	it.i = i
	return it.i < len(it.keys)
}
