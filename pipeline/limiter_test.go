package pipeline

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The limiter caps a stage at rate records per second however many
// partitions (goroutines) feed it, and a zero rate lifts the cap.
func TestLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l limiter
		l.set(100) // one record every 10 ms
		start := time.Now()
		var wg sync.WaitGroup
		for range 4 { // four partitions, 50 records each
			wg.Go(func() {
				for range 50 {
					l.wait(context.Background())
				}
			})
		}
		wg.Wait()
		// 200 records at 100/s: the first slot is now, the last 1.99 s later.
		if took := time.Since(start); took != 1990*time.Millisecond {
			t.Fatalf("200 records took %s at 100/s, want 1.99s", took)
		}
		l.set(0)
		start = time.Now()
		for range 1000 {
			l.wait(context.Background())
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("without a cap 1000 records waited %s", took)
		}
		// A cancelled stage does not wait for its slot.
		l.set(0.001)
		l.wait(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Second); cancel() }()
		start = time.Now()
		l.wait(ctx)
		if took := time.Since(start); took != time.Second {
			t.Fatalf("a cancelled wait returned after %s, want 1s", took)
		}
	})
}
