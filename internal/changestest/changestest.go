// Package changestest waits on a changes.Feed in tests. It is imported by
// tests only, so the binary never links package testing.
package changestest

import (
	"context"
	"testing"
	"time"

	"github.com/hotpair/hotpair/internal/changes"
)

// WaitFor waits until cond holds, checking it now and at every change of
// feed, or fails the test after timeout naming what it waited for.
func WaitFor(t testing.TB, feed *changes.Feed, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := feed.Until(ctx, cond); err != nil {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}
