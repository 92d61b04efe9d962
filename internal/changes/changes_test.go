package changes

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestUntilWakesAtEveryChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f Feed
		var n atomic.Int32
		checks := 0
		done := make(chan error)
		go func() { done <- f.Until(context.Background(), func() bool { checks++; return n.Load() == 3 }) }()
		for range 3 {
			synctest.Wait() // the waiter is blocked on Next
			n.Add(1)
			f.Notify()
		}
		if err := <-done; err != nil || checks != 4 {
			t.Fatalf("Until = %v after %d checks, want nil after 4 (once, then at each change)", err, checks)
		}
	})
}

func TestUntilEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f Feed
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := f.Until(ctx, func() bool { return false })
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("Until = %v after %s", err, time.Since(start))
		}
		f.Notify() // no waiter: nothing to wake, and no panic
	})
}
