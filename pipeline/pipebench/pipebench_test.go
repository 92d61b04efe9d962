package pipebench

import (
	"context"
	"testing"
	"time"
)

// The workload's event-time rate sets how many windows, so SpendEvents,
// the pipeline pays per ad event: every one of them is emitted and applied
// exactly once (Run fails on any campaign's spend that is not exact).
func TestEventRateSetsWindowsPerEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline twice on an in-process cluster")
	}
	const campaigns, events = 100, 5_000
	for _, tc := range []struct {
		name     string
		rate     float64
		min, max float64 // windows per ad event
	}{
		// 5,000 events over two minutes: a campaign has an event every
		// 2.4 s, about four per 10 s window.
		{"sparse (default)", 0, 0.2, 0.3},
		// 5,000 events in one second: a campaign's 50 events fall in one
		// window, or two where the second crosses a window's end.
		{"dense", 5_000, 0.02, 0.04},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Campaigns: campaigns, Events: events, EventRate: tc.rate, Partitions: 2,
				SteadyFor: 300 * time.Millisecond, Probes: 3, Timeout: time.Minute}
			r, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			if r.WindowsPerEvent < tc.min || r.WindowsPerEvent > tc.max {
				t.Errorf("%.3f windows per ad event at %v events per second of event time, want %.2f–%.2f",
					r.WindowsPerEvent, r.EventRate, tc.min, tc.max)
			}
			if r.Idle.StatusHop.N != cfg.Probes {
				t.Errorf("the idle status hop holds %d statuses, want the %d probes' alone", r.Idle.StatusHop.N, cfg.Probes)
			}
			if r.EventRate != cfg.EventRate {
				t.Errorf("result's event rate %v, configured %v", r.EventRate, cfg.EventRate)
			}
		})
	}
}

func TestEventRateOutOfRange(t *testing.T) {
	for _, rate := range []float64{0.5, -3, 2e6} {
		if _, err := Run(context.Background(), Config{EventRate: rate}); err == nil {
			t.Errorf("EventRate %v: no error", rate)
		}
	}
}

// The record floor reads the pipeline's backlog and passes on one record
// per campaign and window but each campaign's first — the SpendEvents the
// pipeline emits for it, less those of each campaign's last window — on the
// same cluster, against the same bare goka.
func TestRecordFloorPassesThePipelinesRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline and the floor on an in-process cluster")
	}
	cfg := Config{Campaigns: 50, Events: 2_000, Partitions: 2, SteadyFor: 300 * time.Millisecond, Probes: 3,
		Timeout: time.Minute, Floor: true}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := r.Floor
	if f == nil {
		t.Fatal("Config.Floor set, no record floor in the result")
	}
	if want := r.Windows - r.Campaigns; f.Passed != want {
		t.Errorf("the floor passed %d records on; the pipeline emitted %d windows for %d campaigns, so want %d",
			f.Passed, r.Windows, r.Campaigns, want)
	}
	if f.EventsPerSec <= 0 || f.Ratio != f.EventsPerSec/r.Goka.EventsPerSec {
		t.Errorf("floor %v ev/s, ratio %v; bare goka %v ev/s", f.EventsPerSec, f.Ratio, r.Goka.EventsPerSec)
	}
}

// The fused floor (both stages in one processor) emits a window's record
// and status for the same windows as the two-processor floor: its workload
// is laid out anew from the clock, so each campaign's windows may shift by
// one, no more.
func TestFusedFloorPassesTheSameWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs goka processors on an in-process cluster")
	}
	cfg := Config{Campaigns: 50, Events: 2_000, Partitions: 2, Timeout: time.Minute}
	two, err := Floor(context.Background(), cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	fused, err := Floor(context.Background(), cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	if d := fused.Floor.Passed - two.Floor.Passed; !fused.Fused || two.Floor.Passed < 10*cfg.Campaigns || d < -cfg.Campaigns || d > cfg.Campaigns {
		t.Errorf("fused floor passed %d records on, the two-processor floor %d (want within %d of each other, at least %d)",
			fused.Floor.Passed, two.Floor.Passed, cfg.Campaigns, 10*cfg.Campaigns)
	}
	for _, r := range []FloorResult{two, fused} {
		if r.Floor.Ratio != r.Floor.EventsPerSec/r.Goka.EventsPerSec {
			t.Errorf("fused=%v: ratio %v, floor %v ev/s, bare goka %v ev/s", r.Fused, r.Floor.Ratio, r.Floor.EventsPerSec, r.Goka.EventsPerSec)
		}
	}
}
