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

// A window closes when its partition's clock passes its end plus the
// lateness: closedAt says when that was on the wall clock.
func TestWatermarkCloseTimes(t *testing.T) {
	const t0 = int64(1_800_000_000_000) // a window start
	w := newWatermarks(10*time.Second, 10*time.Second, 5*time.Second)
	w.observe(0, t0, t0+50) // the partition's first event starts tracking
	if !w.observe(0, t0+16_000, t0+16_030) {
		t.Fatal("passing two window closes was not reported")
	}
	for _, tc := range []struct {
		name           string
		closeMs, nowMs int64
		want           int64
	}{
		{"passed by an event", t0 + 15_000, t0 + 16_100, t0 + 16_030},
		{"passed by the same event", t0 + 5_000, t0 + 16_100, t0 + 16_030},
		{"passed before tracking began", t0 - 5_000, t0 + 16_100, t0 + 50},
		{"passed by the wall clock once the partition went idle", t0 + 25_000, t0 + 40_000, t0 + 26_030},
	} {
		if got := w.closedAt(0, tc.closeMs, tc.nowMs); got != tc.want {
			t.Errorf("%s: closed at %+d ms, want %+d", tc.name, got-t0, tc.want-t0)
		}
	}
}

// A partition that is behind and busy wakes the panes due for a window of
// its event time, and every backlogWakeInterval those due at the previous
// round; live, or quiet (nothing received for a while and its input read to
// the log end), every due pane at once.
func TestWakeThreshold(t *testing.T) {
	w := newWatermarks(10*time.Second, 10*time.Second, 5*time.Second)
	t0 := time.UnixMilli(1_800_000_000_000)
	window := int64(10_000)
	recv := t0.Add(10 * time.Minute) // ten minutes behind
	w.observe(0, t0.UnixMilli(), recv.UnixMilli())
	if got := w.wakeThreshold(0, recv.Add(10*time.Millisecond)); got != t0.UnixMilli()-window {
		t.Fatalf("a busy partition behind: threshold %+d ms, want its clock less a window", got-t0.UnixMilli())
	}
	// Catching up: 30 s of event time in the next 600 ms.
	clock := t0.Add(30 * time.Second)
	w.observe(0, clock.UnixMilli(), recv.Add(600*time.Millisecond).UnixMilli())
	if got := w.wakeThreshold(0, recv.Add(610*time.Millisecond)); got != clock.UnixMilli()-window {
		t.Fatalf("a busy partition behind, within %s: threshold %+d ms, want its clock less a window",
			backlogWakeInterval, got-t0.UnixMilli())
	}
	// Catching up slowly (2 s of event time in a second), the panes due at
	// the previous round are woken an interval later.
	slow := newWatermarks(10*time.Second, 10*time.Second, 5*time.Second)
	slow.observe(0, t0.UnixMilli(), recv.UnixMilli())
	slow.wakeThreshold(0, recv)
	slow.observe(0, t0.UnixMilli()+2_000, recv.Add(time.Second).UnixMilli())
	if got := slow.wakeThreshold(0, recv.Add(time.Second)); got != t0.UnixMilli() {
		t.Fatalf("a slow catch-up, an interval later: threshold %+d ms, want the clock of the previous round", got-t0.UnixMilli())
	}
	if got := slow.wakeThreshold(0, recv.Add(time.Second+quietAfter+time.Millisecond)); got != t0.UnixMilli()+2_000 {
		t.Fatalf("a quiet partition behind: threshold %+d ms, want its clock", got-t0.UnixMilli())
	}
	// A partition that has received nothing for a while but has not read
	// its input to the log end is waiting for a fetch or a CPU, not quiet.
	lag := newWatermarks(10*time.Second, 10*time.Second, 5*time.Second)
	lag.received(0, 41, recv.UnixMilli())
	lag.observe(0, t0.UnixMilli(), recv.UnixMilli())
	gap := recv.Add(3 * quietAfter)
	if !lag.needEnds(gap) {
		t.Fatal("a partition behind without records for a while does not ask for the log end")
	}
	lag.setEnds(map[int32]int64{0: 100})
	if got := lag.wakeThreshold(0, gap); got != t0.UnixMilli()-window {
		t.Fatalf("a partition behind with unread records: threshold %+d ms, want its clock less a window", got-t0.UnixMilli())
	}
	lag.setEnds(map[int32]int64{0: 42})
	if got := lag.wakeThreshold(0, gap); got != t0.UnixMilli() {
		t.Fatalf("a partition behind that has read to the log end: threshold %+d ms, want its clock", got-t0.UnixMilli())
	}
	live := time.UnixMilli(t0.UnixMilli() + 1_000)
	w.observe(1, t0.UnixMilli(), live.UnixMilli())
	for range 2 {
		if got := w.wakeThreshold(1, live); got != t0.UnixMilli() {
			t.Fatalf("a live partition: threshold %d, want its clock every time", got)
		}
	}
}
