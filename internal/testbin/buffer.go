package testbin

import (
	"bytes"
	"sync"

	"github.com/hotpair/hotpair/internal/changes"
)

// Buffer is a bytes.Buffer safe to write from a child process's output
// copier while the test reads it; Changes tells waiters about every write.
type Buffer struct {
	Changes changes.Feed
	mu      sync.Mutex
	b       bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	defer b.Changes.Notify()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
