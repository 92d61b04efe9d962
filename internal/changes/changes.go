// Package changes tells whoever waits that a component's state changed, so
// that a waiter checks its condition again at every change instead of
// polling it with sleeps.
package changes

import (
	"context"
	"sync"
)

// Feed is a broadcast of "something changed". The zero value is ready.
type Feed struct {
	mu   sync.Mutex
	next chan struct{}
}

// Next returns a channel that is closed at the next Notify.
func (f *Feed) Next() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next == nil {
		f.next = make(chan struct{})
	}
	return f.next
}

// Notify wakes every waiter of Next. It never blocks.
func (f *Feed) Notify() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next != nil {
		close(f.next)
		f.next = nil
	}
}

// Until waits until cond holds, checking it now and after every change,
// or until ctx ends (then it returns the context's cause).
func (f *Feed) Until(ctx context.Context, cond func() bool) error {
	for {
		next := f.Next()
		if cond() {
			return nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
