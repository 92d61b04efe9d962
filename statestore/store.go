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
	"errors"
	"fmt"
	"io/fs"
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

// A local store can hold state the changelog does not: goka writes the
// store first and the changelog after, so a processor that fails or dies
// with table writes unacknowledged leaves its store ahead of the changelog —
// for the aggregator, a window marked closed whose SpendEvent was never
// written (hotpair's producer writes a state only after the outputs before
// it, see kgoka, so the changelog never runs ahead). A store is therefore
// kept only across clean stops. A leveldb directory is marked in use
// (inUseFile) while a processor may write it: found marked at the next
// Builder, it is emptied and its state recovered from the changelog alone;
// Release unmarks it after a clean stop, or empties it after a failure. A
// memory store lives with its builder, which the stage drops after a
// failure.

// dir is the leveldb directory of one stage of one side.
func (c Config) dir(side, stage string) string { return filepath.Join(c.Dir, side, stage) }

// inUseFile marks a stage's leveldb directory as open for writing.
const inUseFile = "IN-USE"

// claim prepares dir for a processor: emptied if the last one did not
// release it cleanly, then marked in use.
func claim(dir string) error {
	marker := filepath.Join(dir, inUseFile)
	if _, err := os.Stat(marker); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o644)
}

// InUse reports whether the stage's leveldb directory is still marked in
// use: the last processor to write it did not stop cleanly (killed, or
// failed), and the next Builder empties it.
func (c Config) InUse(side, stage string) bool {
	if c.Backend == BackendMemory {
		return false
	}
	_, err := os.Stat(filepath.Join(c.dir(side, stage), inUseFile))
	return err == nil
}

// Release ends a processor's use of the stage's store: after a clean stop
// (every state write acknowledged) a leveldb directory is kept for the next
// run, after a failure it is emptied. A memory store goes with its builder.
func (c Config) Release(side, stage string, clean bool) error {
	if c.Backend == BackendMemory {
		return nil
	}
	dir := c.dir(side, stage)
	if !clean {
		return os.RemoveAll(dir)
	}
	err := os.Remove(filepath.Join(dir, inUseFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
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
		dir := c.dir(side, stage)
		if err := claim(dir); err != nil {
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
