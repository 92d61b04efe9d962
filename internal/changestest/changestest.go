// Package changestest waits on a changes.Feed in tests. It is imported by
// tests only, so the binary never links package testing.
package changestest

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/internal/changes"
)

// WaitFor waits until cond holds, checking it now and at every change of
// feed, or fails the test after timeout naming what it waited for.
func WaitFor(t testing.TB, feed *changes.Feed, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	WaitForNext(t, feed.Next, timeout, what, cond)
}

// WaitForNext is WaitFor on a component that exports its changes as a
// channel closed at the next one (next is e.g. monitor.Monitor.Changed).
func WaitForNext(t testing.TB, next func() <-chan struct{}, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		changed := next()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}
