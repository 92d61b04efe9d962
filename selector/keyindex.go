package selector

import (
	"hash/maphash"
	"sync"
)

// keyIndex interns campaign ids: each id gets a small dense index, shared by
// both sides' tables, so an id is stored once however many sides and topics
// hold values for it, and the retriever finds all of a campaign's values
// with one map lookup.
//
// It is sharded so that the two sides' consumers and many readers rarely
// meet on one lock; a lock is only ever held for one map operation, never
// across I/O, so a dead cluster's consumer cannot hold up the other side.
type keyIndex struct {
	seed   maphash.Seed
	mu     sync.Mutex // serialises index assignment
	next   uint32
	shards [keyShards]keyShard
}

const keyShards = 64

type keyShard struct {
	mu sync.RWMutex
	m  map[string]uint32
	_  [64 - 8 - 24]byte // keep shards on separate cache lines
}

func newKeyIndex() *keyIndex {
	k := &keyIndex{seed: maphash.MakeSeed()}
	for i := range k.shards {
		k.shards[i].m = make(map[string]uint32)
	}
	return k
}

func (k *keyIndex) shard(h uint64) *keyShard { return &k.shards[h%keyShards] }

// lookup returns the index of key, if it has one.
func (k *keyIndex) lookup(key string) (uint32, bool) {
	sh := k.shard(maphash.String(k.seed, key))
	sh.mu.RLock()
	i, ok := sh.m[key]
	sh.mu.RUnlock()
	return i, ok
}

// intern returns the index of key, assigning the next one to a new key.
func (k *keyIndex) intern(key []byte) uint32 {
	sh := k.shard(maphash.Bytes(k.seed, key))
	sh.mu.RLock()
	i, ok := sh.m[string(key)]
	sh.mu.RUnlock()
	if ok {
		return i
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if i, ok := sh.m[string(key)]; ok {
		return i
	}
	k.mu.Lock()
	i = k.next
	k.next++
	k.mu.Unlock()
	sh.m[string(key)] = i
	return i
}

// len returns how many keys have an index.
func (k *keyIndex) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return int(k.next)
}
