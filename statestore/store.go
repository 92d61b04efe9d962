// Package statestore holds the per-campaign state types the pipeline services
// run on and the goka storage backends that keep them, chosen by config:
// leveldb on disk, one directory per side and stage, or an in-memory hash map
// that stays fast at millions of keys.
//
// The rule of this package: a processor never writes into the store it is
// triggered from. A stage is triggered by its input streams and its own loop
// topic; it writes only its group table (and, through goka, that table's
// changelog). Timer actions go through Wakeups, which reads the store's writes
// and never writes the store.
package statestore

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lovoo/goka/storage"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// Backends.
const (
	BackendLevelDB = "leveldb"
	BackendMemory  = "memory"
)

// Config chooses the storage backend.
type Config struct {
	// Backend is "leveldb" (default) or "memory".
	Backend string `yaml:"backend"`
	// Dir is the leveldb root; each side and stage gets <dir>/<side>/<stage>.
	// leveldb locks its directory, so two sides or instances never share one.
	Dir string `yaml:"dir"`
}

// Validate checks the config; errors name the YAML key.
func (c Config) Validate() error {
	switch c.Backend {
	case BackendMemory:
		return nil
	case BackendLevelDB, "":
		if c.Dir == "" {
			return fmt.Errorf("storage.dir is required with the leveldb backend (or set storage.backend: memory)")
		}
		return nil
	}
	return fmt.Errorf("storage.backend: %q is not a backend; use leveldb or memory", c.Backend)
}

// Builder returns the goka storage builder of one stage of one side. When
// wake is not nil, writes to the group table are indexed in it. A memory
// builder keeps each partition's store for as long as it is used (see
// memoryPool): build a new one to start from the changelog alone.
func (c Config) Builder(side, stage, groupTable string, wake *Wakeups) (storage.Builder, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var base storage.Builder
	if c.Backend == BackendMemory {
		pool := &memoryPool{stores: make(map[string]*memory)}
		base = pool.build
	} else {
		dir := filepath.Join(c.Dir, side, stage)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("statestore: storage.dir: %w", err)
		}
		base = storage.BuilderWithOptions(dir, &opt.Options{
			BlockCacheCapacity: 8 << 20,
			WriteBuffer:        4 << 20,
		})
	}
	if wake == nil {
		return base, nil
	}
	return func(topic string, partition int32) (storage.Storage, error) {
		s, err := base(topic, partition)
		if err != nil || topic != groupTable {
			return s, err
		}
		return &indexed{Storage: s, partition: partition, w: wake}, nil
	}, nil
}
