package pipeline

import (
	"testing"
	"time"
)

func TestWatermarks(t *testing.T) {
	w := newWatermarks(10*time.Second, 10*time.Second, 5*time.Second)
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ms := func(t time.Time) int64 { return t.UnixMilli() }

	// A partition seen for the first time waits IdleClose before it falls
	// back to the wall clock (a restarted instance may have a backlog).
	if got := w.at(0, t0); got != 0 {
		t.Fatalf("new partition: %d, want 0 (no event time yet)", got)
	}
	if got := w.at(0, t0.Add(10*time.Second)); got != ms(t0.Add(10*time.Second)) {
		t.Fatalf("idle partition: %d, want the wall clock", got)
	}
	// While events arrive, the clock is the newest event time: a backlog
	// two minutes behind closes windows two minutes behind.
	w.observe(1, ms(t0.Add(-2*time.Minute)), ms(t0))
	w.observe(1, ms(t0.Add(-3*time.Minute)), ms(t0)) // out of order: no step back
	if got := w.at(1, t0.Add(time.Second)); got != ms(t0.Add(-2*time.Minute)) {
		t.Fatalf("lagging partition: %v, want its newest event time", time.UnixMilli(got).UTC())
	}
	// An event time ahead of the wall clock never closes windows early.
	w.observe(2, ms(t0.Add(30*time.Minute)), ms(t0))
	if got := w.at(2, t0.Add(time.Second)); got != ms(t0.Add(time.Second)) {
		t.Fatalf("future event time: %v, want the wall clock", time.UnixMilli(got).UTC())
	}
	// Partitions are independent.
	if got := w.at(1, t0.Add(11*time.Second)); got != ms(t0.Add(11*time.Second)) {
		t.Fatalf("partition 1 idle for 11s: %v, want the wall clock", time.UnixMilli(got).UTC())
	}
}
