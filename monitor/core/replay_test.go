package core

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// record runs the engine over a health history the way the monitor does and
// returns what its decision record keeps of every window: the verdicts and
// the state persisted after the window (through the selection document, as
// the record stores it).
func record(t *testing.T, cfg Config, hist []Record) []RecordedWindow {
	t.Helper()
	start := hist[0].At().Truncate(cfg.Window)
	e, err := NewEngine(cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	var out []RecordedWindow
	next := 0
	for tick := start.Add(cfg.Window); !tick.After(hist[len(hist)-1].At()); tick = tick.Add(cfg.Window) {
		for ; next < len(hist) && !hist[next].At().After(tick); next++ {
			e.Observe(&hist[next].Sample, hist[next].At())
		}
		ev, err := e.Tick(tick, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ev.Decisions {
			st, err := StateFromSelection(d.State.Selection())
			if err != nil {
				t.Fatal(err)
			}
			w := RecordedWindow{Service: d.Service, Start: ev.WindowStart, End: ev.WindowEnd, State: st, Verdicts: map[contract.Side]RecordedVerdict{}}
			for _, side := range contract.Sides() {
				v, _ := ev.Verdict(d.Service.Stage(), side)
				w.Verdicts[side] = RecordedVerdict{Healthy: v.Healthy, Reasons: v.ReasonStrings(), CatchingUp: v.CatchingUp, QPS: v.Stats.QPS,
					LagP99Ms: v.Stats.LagP99Ms, AggregatorLagP99Ms: v.Stats.UpstreamLagP99Ms, Build: v.Stats.NewestBuild().Build}
			}
			out = append(out, w)
		}
	}
	return out
}

// Replayed with the thresholds they were decided with, recorded verdicts
// give the monitor's switches again, at the same windows; with another
// grace or failover_after they give what those would have done — the same
// answers as a replay of the health samples, which re-runs the rules too.
func TestReplayVerdictsWhatIf(t *testing.T) {
	hist := flappingHistory()
	cfg := DefaultConfig()
	cfg.Window = time.Minute
	windows := record(t, cfg, hist)

	for _, tc := range []struct {
		name string
		edit func(*DecisionConfig)
		want int
	}{
		{"as recorded", func(*DecisionConfig) {}, 2 * 3},
		{"grace 0: the flip-flop", func(d *DecisionConfig) { d.Grace = 0 }, 2 * 15 * 3},
		{"failover_after 2: never", func(d *DecisionConfig) { d.FailoverAfter = 2 }, 0},
		{"grace 5m", func(d *DecisionConfig) { d.Grace = 5 * time.Minute }, 2 * 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			tc.edit(&c.Decision)
			got, err := ReplayVerdicts(c.Decision, windows)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Simulate(c, hist)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Switches) != tc.want || !reflect.DeepEqual(got.Switches, want.Switches) {
				t.Fatalf("replayed %d switches, want %d as from the samples:\n%+v\n%+v", len(got.Switches), tc.want, got.Switches, want.Switches)
			}
			if got.UnhealthyWindows["budget/primary"] != 15 || got.Windows != 3*59 {
				t.Fatalf("unhealthy %v, windows %d", got.UnhealthyWindows, got.Windows)
			}
		})
	}
}

// The replay starts from the state recorded with its first window: a
// history that begins during a failover continues it (the grace clock
// included) instead of starting on the preferred side.
func TestReplayVerdictsStartsFromTheRecordedState(t *testing.T) {
	hist := flappingHistory()
	cfg := DefaultConfig()
	cfg.Window = time.Minute
	windows := record(t, cfg, hist)
	var late []RecordedWindow
	for _, w := range windows {
		if w.End.After(t0.Add(20 * time.Minute)) { // budget is on standby by then
			late = append(late, w)
		}
	}
	got, err := ReplayVerdicts(cfg.Decision, late)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Switches) != 3 || got.Switches[0].Kind != KindReturn || !got.Switches[0].At.Equal(t0.Add(49*time.Minute)) {
		t.Fatalf("switches %+v; want only the returns at 49m", got.Switches)
	}
}

// A new leader's first window overlaps the old leader's last one: the same
// span judged twice counts once.
func TestReplayVerdictsSkipsOverlappingWindows(t *testing.T) {
	bad := map[contract.Side]RecordedVerdict{contract.Primary: {Reasons: []string{"lag_high: p99 90000 ms > limit 60000 ms"}}, contract.Standby: {Healthy: true, QPS: 10}}
	good := map[contract.Side]RecordedVerdict{contract.Primary: {Healthy: true, QPS: 10}, contract.Standby: {Healthy: true, QPS: 10}}
	st := State{Service: contract.ServiceBudget, Active: contract.Primary, Preferred: contract.Primary, Epoch: 1}
	ws := []RecordedWindow{
		{Service: contract.ServiceBudget, Start: t0, End: t0.Add(time.Minute), Verdicts: good, State: st},
		{Service: contract.ServiceBudget, Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute), Verdicts: bad, State: st},
		// the new leader's first window, 10 s later: the same minute again
		{Service: contract.ServiceBudget, Start: t0.Add(70 * time.Second), End: t0.Add(130 * time.Second), Verdicts: bad, State: st},
	}
	dc := DefaultConfig().Decision
	dc.FailoverAfter = 2
	got, err := ReplayVerdicts(dc, ws)
	if err != nil {
		t.Fatal(err)
	}
	if got.Windows != 1 || len(got.Switches) != 0 {
		t.Fatalf("%d windows, switches %+v: the overlapping window was counted", got.Windows, got.Switches)
	}
	if _, err := ReplayVerdicts(dc, nil); !errors.Is(err, ErrEmptyHistory) {
		t.Fatalf("empty: %v", err)
	}
}

// Overrides recorded as in force are applied where they were.
func TestReplayVerdictsAppliesRecordedOverrides(t *testing.T) {
	good := map[contract.Side]RecordedVerdict{contract.Primary: {Healthy: true, QPS: 10}, contract.Standby: {Healthy: true, QPS: 10}}
	st := State{Service: contract.ServicePacer, Active: contract.Primary, Preferred: contract.Primary, Epoch: 1}
	pinned := st
	pinned.Override = &contract.Override{Side: contract.Standby, Until: t0.Add(time.Hour), By: "alice", Reason: "test"}
	ws := []RecordedWindow{
		{Service: contract.ServicePacer, Start: t0, End: t0.Add(time.Minute), Verdicts: good, State: st},
		{Service: contract.ServicePacer, Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute), Verdicts: good, State: pinned},
	}
	got, err := ReplayVerdicts(DefaultConfig().Decision, ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Switches) != 1 || got.Switches[0].Kind != KindOverride || got.Final[contract.ServicePacer].Active != contract.Standby {
		t.Fatalf("switches %+v", got.Switches)
	}
}

func TestParseReason(t *testing.T) {
	r := Reason{Rule: RuleLagHigh, Detail: "p99 75000 ms > limit 60000 ms"}
	if got := ParseReason(r.String()); got != r {
		t.Fatalf("round trip %+v", got)
	}
	if got := ParseReason("from_the_future: x"); got.Rule != 0 || got.Detail != "from_the_future: x" {
		t.Fatalf("unknown rule %+v", got)
	}
}

// A side that was healthy but catching up (recorded as such) does not run
// its grace clock in the replay either: traffic returns only once it keeps up.
func TestReplayVerdictsKeepsTheGraceClockStoppedWhileCatchingUp(t *testing.T) {
	st := State{Service: contract.ServiceBudget, Active: contract.Standby, Preferred: contract.Primary, Epoch: 2}
	var ws []RecordedWindow
	for i := range 15 {
		primary := RecordedVerdict{Healthy: true, QPS: 10}
		if i < 12 {
			primary.CatchingUp, primary.LagP99Ms = "p99 9000 ms > catch_up_lag 5000 ms", 9000
		}
		ws = append(ws, RecordedWindow{Service: contract.ServiceBudget, Start: t0.Add(time.Duration(i) * time.Minute), End: t0.Add(time.Duration(i+1) * time.Minute),
			Verdicts: map[contract.Side]RecordedVerdict{contract.Primary: primary, contract.Standby: {Healthy: true, QPS: 10}}, State: st})
	}
	dc := DefaultConfig().Decision
	dc.Grace = 2 * time.Minute
	got, err := ReplayVerdicts(dc, ws)
	if err != nil {
		t.Fatal(err)
	}
	// keeps up from the window starting at 12m; healthy for 2m at the end of 14m
	if len(got.Switches) != 1 || got.Switches[0].Kind != KindReturn || !got.Switches[0].At.Equal(t0.Add(14*time.Minute)) {
		t.Fatalf("switches %+v; want one return at 14m", got.Switches)
	}
}
