package monitor

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/monitor/core"
)

// TestWindowsEndOnTheSchedule: ticks that come late by different amounts
// (microseconds, a loaded machine's milliseconds, most of a window for a
// paused process) still close windows exactly one window long, so a side
// healthy for n windows is healthy for exactly n windows and a grace of n
// windows returns traffic to it after n, not n+1.
func TestWindowsEndOnTheSchedule(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = 2 * time.Minute
	begin := time.Date(2026, 12, 1, 6, 0, 0, 123_456_789, time.UTC)
	engine, err := core.NewEngine(cfg.Config, begin)
	if err != nil {
		t.Fatal(err)
	}
	e := &evaluator{m: &Monitor{cfg: cfg}, engine: engine}
	for i, late := range []time.Duration{3 * time.Millisecond, 40 * time.Microsecond, 900 * time.Millisecond, time.Microsecond, 90 * time.Second} {
		n := time.Duration(i + 1)
		end := e.windowEnd(begin.Add(n*cfg.Window + late))
		if want := begin.Add(n * cfg.Window); !end.Equal(want) {
			t.Fatalf("a tick %s late after %d windows ends the window at %s, want %s", late, n, end.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
		}
		ev, err := engine.Tick(end, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.WindowEnd.Sub(ev.WindowStart); got != cfg.Window {
			t.Fatalf("window %d is %s long, want %s", n, got, cfg.Window)
		}
	}
	// A tick less than a window after the current start is taken
	// as it comes (the engine then refuses nothing it would not have).
	start := engine.WindowStart()
	if tick := start.Add(time.Minute); !e.windowEnd(tick).Equal(tick) {
		t.Fatalf("a tick within the current window was moved to %s", e.windowEnd(tick))
	}
}
