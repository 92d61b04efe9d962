package statestore

import (
	"fmt"
	"testing"

	"github.com/lovoo/goka/storage"
)

// BenchmarkSetNewKey inserts new keys into a store that already holds n keys:
// the cost a service pays for every campaign it sees for the first time.
// goka's own memory storage is the baseline (it re-sorts every key on each
// new key); it is measured at 100k keys because filling it to 1M takes
// minutes. Compare the ns/op of the two at 100k.
func BenchmarkSetNewKey(b *testing.B) {
	value := make([]byte, 120)
	for _, tc := range []struct {
		name string
		n    int
		new  func() storage.Storage
	}{
		{"goka-memory/keys=100k", 100_000, storage.NewMemory},
		{"hotpair-memory/keys=100k", 100_000, NewMemory},
		{"hotpair-memory/keys=1M", 1_000_000, NewMemory},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := tc.new()
			for i := range tc.n {
				_ = s.Set(fmt.Sprintf("campaign-%09d", i), value)
			}
			b.ResetTimer()
			for i := range b.N {
				_ = s.Set(fmt.Sprintf("new-%09d", i), value)
			}
		})
	}
}

// BenchmarkGetSet is the steady state of a service: read and rewrite the
// state of an existing key, in a store of 1M keys.
func BenchmarkGetSet(b *testing.B) {
	s := NewMemory()
	value := make([]byte, 120)
	keys := make([]string, 1_000_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("campaign-%09d", i)
		_ = s.Set(keys[i], value)
	}
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%len(keys)]
		v, _ := s.Get(k)
		_ = s.Set(k, v)
	}
}
