package core

import (
	"slices"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

const sec = time.Second

// addAll adds samples received at at.
func addAll(a *Aggregator, ss []contract.HealthSample, at time.Time) {
	for i := range ss {
		a.Add(&ss[i], at)
	}
}

// run feeds fleets into a from t0 for d, one sample window per 10 s, each
// received at its end.
func run(a *Aggregator, fleets []fleet, from time.Time, d time.Duration) {
	for ws := from; ws.Before(from.Add(d)); ws = ws.Add(10 * sec) {
		for _, f := range fleets {
			addAll(a, f.samples(ws, ws.Add(10*sec)), ws.Add(10*sec))
		}
	}
}

var budgetPrimary = Key{contract.StageBudget, contract.Primary}

func TestWindowMergesInstances(t *testing.T) {
	cfg := DefaultConfig()
	a := NewAggregator(cfg, t0)
	f := healthyFleet(contract.StageBudget, contract.Primary)
	f.instances, f.qps, f.lagMs = 4, 200, 75_000
	run(a, []fleet{f}, t0, 2*time.Minute)
	s := a.Close(t0.Add(2 * time.Minute))[budgetPrimary]

	if s.Samples != 4*12 || s.Events != 200*120 || s.QPS != 200 {
		t.Fatalf("samples %d events %d qps %v", s.Samples, s.Events, s.QPS)
	}
	if s.Lag.Total() != s.Events {
		t.Fatalf("histograms not merged: %d lags for %d events", s.Lag.Total(), s.Events)
	}
	// every lag is 75 s: the bucket says <= 120 s, the max caps it at 75 s.
	if s.LagMaxMs != 75_000 || s.LagP99Ms != 75_000 {
		t.Fatalf("p99 %d max %d", s.LagP99Ms, s.LagMaxMs)
	}
	if s.Instances != 4 || s.UnassignedCount != 0 || s.TopicPartitions != 8 || !s.LastSample.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("instances %d unassigned %d/%d last %v", s.Instances, s.UnassignedCount, s.TopicPartitions, s.LastSample)
	}
	// the next window starts empty but remembers instances and the last sample
	n := a.Close(t0.Add(3 * time.Minute))[budgetPrimary]
	if n.Samples != 0 || n.Events != 0 || n.Lag.Total() != 0 || !n.LastSample.Equal(s.LastSample) || !n.Start.Equal(s.End) {
		t.Fatalf("next window %+v", n)
	}
}

func TestWindowP99FromMergedHistograms(t *testing.T) {
	for _, tc := range []struct {
		name        string
		slow        int64 // events at 75 s out of 1000, the rest at 50 ms
		wantP99     int64
		wantHealthy bool
	}{
		{"1% slow is within p99", 10, 50, true},
		{"1.1% slow moves p99", 11, 75_000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAggregator(DefaultConfig(), t0)
			fast := contract.HealthSample{V: 1, Service: contract.StageBudget, Side: contract.Primary, Role: contract.RoleLive, Instance: "a",
				WindowStart: t0, WindowEnd: t0.Add(10 * sec), Events: 1000 - tc.slow, LagMsMax: 50}
			observeN(&fast.LagMs, 50, 1000-tc.slow)
			slow := fast
			slow.Instance, slow.Events, slow.LagMsMax, slow.LagMs = "b", tc.slow, 75_000, contract.LagHistogram{}
			observeN(&slow.LagMs, 75_000, tc.slow)
			a.Add(&fast, t0.Add(10*sec))
			a.Add(&slow, t0.Add(10*sec))
			s := a.Close(t0.Add(20 * sec))[budgetPrimary]
			if s.LagP99Ms != tc.wantP99 {
				t.Fatalf("p99 %d, want %d", s.LagP99Ms, tc.wantP99)
			}
			if v := Evaluate(DefaultConfig().Rules, budgetPrimary, s, s); v.Failing(RuleLagHigh) == tc.wantHealthy {
				t.Fatalf("verdict %s", v.Summary())
			}
		})
	}
}

// A consumer that reconnects re-reads samples it already delivered: they
// must not count twice, in the same window or the next.
func TestWindowDropsDuplicates(t *testing.T) {
	a := NewAggregator(DefaultConfig(), t0)
	f := healthyFleet(contract.StageBudget, contract.Primary)
	var sent []contract.HealthSample
	for ws := t0; ws.Before(t0.Add(2 * time.Minute)); ws = ws.Add(10 * sec) {
		ss := f.samples(ws, ws.Add(10*sec))
		addAll(a, ss, ws.Add(10*sec))
		sent = append(sent, ss...)
	}
	addAll(a, sent[len(sent)-6:], t0.Add(2*time.Minute)) // re-read of the last 30 s
	w1 := a.Close(t0.Add(2 * time.Minute))[budgetPrimary]
	addAll(a, sent, t0.Add(2*time.Minute+sec)) // re-read of everything, next window
	w2 := a.Close(t0.Add(4 * time.Minute))[budgetPrimary]

	if w1.Events != 100*120 || w1.Samples != 24 || w1.Duplicates != 6 {
		t.Fatalf("window 1: events %d samples %d dups %d", w1.Events, w1.Samples, w1.Duplicates)
	}
	if w2.Events != 0 || w2.Samples != 0 || w2.Duplicates != 24 {
		t.Fatalf("window 2: events %d samples %d dups %d", w2.Events, w2.Samples, w2.Duplicates)
	}
	c := a.Counters()
	if c.Steps != 24+6+24 || c.Merged != 24 || c.Duplicates != 30 || c.Ignored != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestWindowAcceptsOutOfOrderOnce(t *testing.T) {
	a := NewAggregator(DefaultConfig(), t0)
	f := healthyFleet(contract.StageBudget, contract.Primary)
	f.instances = 1
	late := f.samples(t0, t0.Add(10*sec))
	late[0].Partitions, late[0].Build = nil, "b0" // stale assignment and build
	addAll(a, f.samples(t0.Add(10*sec), t0.Add(20*sec)), t0.Add(20*sec))
	if got := a.Add(&late[0], t0.Add(21*sec)); got != OutcomeMerged {
		t.Fatalf("late sample: %v", got)
	}
	if got := a.Add(&late[0], t0.Add(22*sec)); got != OutcomeDuplicate {
		t.Fatalf("its duplicate: %v", got)
	}
	s := a.Close(t0.Add(30 * sec))[budgetPrimary]
	if s.Events != 2000 {
		t.Fatalf("events %d", s.Events)
	}
	// the late sample did not move the instance back to its old state
	if s.UnassignedCount != 0 || len(s.Builds) != 1 || s.Builds[0].Build != "b1" || !s.LastSample.Equal(t0.Add(21*sec)) {
		t.Fatalf("unassigned %d builds %v last %v", s.UnassignedCount, s.Builds, s.LastSample.Sub(t0))
	}
}

// Pinterest's loop: the aggregation fed its own results back into the store
// that triggered it. Here N samples make exactly N steps however many
// windows close, and closing windows makes none.
func TestNSamplesMakeNAggregationSteps(t *testing.T) {
	e, err := NewEngine(DefaultConfig(), t0)
	if err != nil {
		t.Fatal(err)
	}
	var fleets []fleet
	for _, svc := range contract.Stages() {
		for _, side := range contract.Sides() {
			fleets = append(fleets, healthyFleet(svc, side))
		}
	}
	evs := feed(t, e, fleets, t0, t0.Add(20*time.Minute), 10*sec)
	const n = 8 * 2 * 120 // fleets × instances × sample windows
	if c := e.Counters(); c.Steps != n || c.Merged != n {
		t.Fatalf("%d samples made %+v", n, c)
	}
	if len(evs) != 10 {
		t.Fatalf("%d windows", len(evs))
	}
	for range 5 {
		e.Tick(e.WindowStart().Add(time.Minute), nil)
	}
	if c := e.Counters(); c.Steps != n {
		t.Fatalf("ticks made steps: %+v", c)
	}
	var merged int
	for _, ev := range evs {
		for _, v := range ev.Verdicts {
			merged += v.Stats.Samples
		}
	}
	if merged != n {
		t.Fatalf("windows merged %d samples, want %d", merged, n)
	}
}

func TestWindowIgnoresDarkAndUnknown(t *testing.T) {
	a := NewAggregator(DefaultConfig(), t0)
	f := healthyFleet(contract.StageBudget, contract.Primary)
	ss := f.samples(t0, t0.Add(10*sec))
	dark := ss[0]
	dark.Role = contract.RoleDark
	odd := ss[1]
	odd.Side = contract.Side(9)
	if a.Add(&dark, t0) != OutcomeIgnored || a.Add(&odd, t0) != OutcomeIgnored {
		t.Fatal("not ignored")
	}
	if _, ok := a.Close(t0.Add(sec))[budgetPrimary]; ok {
		t.Fatal("a dark sample made a live series")
	}
}

// A goka rebalance leaves partitions unassigned for 5-16 s: never a verdict.
// An instance that dies and whose partitions nobody takes is one, once the
// gap outlasts the grace.
func TestCoverageRebalanceVersusLoss(t *testing.T) {
	cfg := DefaultConfig()
	sample := func(inst string, ws time.Time, parts ...int32) contract.HealthSample {
		return contract.HealthSample{V: 1, Service: contract.StageBudget, Side: contract.Primary, Role: contract.RoleLive, Instance: inst, Build: "b1",
			Partitions: parts, TopicPartitions: 4, WindowStart: ws, WindowEnd: ws.Add(10 * sec), Events: 1000}
	}
	t.Run("rebalance after a kill", func(t *testing.T) {
		a := NewAggregator(cfg, t0)
		for ws := t0; ws.Before(t0.Add(2 * time.Minute)); ws = ws.Add(10 * sec) {
			at := ws.Add(10 * sec)
			switch {
			case ws.Before(t0.Add(30 * sec)): // a: 0,1  b: 2,3
				addAll(a, []contract.HealthSample{sample("a", ws, 0, 1), sample("b", ws, 2, 3)}, at)
			case ws.Before(t0.Add(40 * sec)): // b killed; a in goka's rebalance: nothing assigned
				addAll(a, []contract.HealthSample{sample("a", ws)}, at)
			default: // a took everything 16 s after the kill
				addAll(a, []contract.HealthSample{sample("a", ws, 0, 1, 2, 3)}, at)
			}
		}
		s := a.Close(t0.Add(2 * time.Minute))[budgetPrimary]
		if v := Evaluate(cfg.Rules, budgetPrimary, s, s); !v.Healthy {
			t.Fatalf("rebalance judged a failure: %s", v.Summary())
		}
		if s.Instances != 1 {
			t.Fatalf("instances %d", s.Instances)
		}
	})
	t.Run("window closes in the middle of a rebalance", func(t *testing.T) {
		a := NewAggregator(cfg, t0)
		addAll(a, []contract.HealthSample{sample("a", t0, 0, 1), sample("b", t0, 2, 3)}, t0.Add(10*sec))
		addAll(a, []contract.HealthSample{sample("a", t0.Add(10*sec)), sample("b", t0.Add(10*sec))}, t0.Add(20*sec))
		s := a.Close(t0.Add(36 * sec))[budgetPrimary]
		if s.UnassignedCount != 4 || !s.UnassignedSince.Equal(t0.Add(20*sec)) {
			t.Fatalf("unassigned %d since %v", s.UnassignedCount, s.UnassignedSince.Sub(t0))
		}
		if v := Evaluate(cfg.Rules, budgetPrimary, s, s); !v.Healthy {
			t.Fatalf("16 s into a rebalance: %s", v.Summary())
		}
	})
	t.Run("partitions of a dead instance never move", func(t *testing.T) {
		a := NewAggregator(cfg, t0)
		for ws := t0; ws.Before(t0.Add(2 * time.Minute)); ws = ws.Add(10 * sec) {
			ss := []contract.HealthSample{sample("a", ws, 0, 1)}
			if ws.Before(t0.Add(30 * sec)) {
				ss = append(ss, sample("b", ws, 2, 3))
			}
			addAll(a, ss, ws.Add(10*sec))
		}
		s := a.Close(t0.Add(2 * time.Minute))[budgetPrimary]
		// b's last sample arrived at 30 s; it stops counting 30 s later.
		if !s.UnassignedSince.Equal(t0.Add(60*sec)) || !slices.Equal(s.Unassigned, []int32{2, 3}) {
			t.Fatalf("unassigned %v since %v", s.Unassigned, s.UnassignedSince.Sub(t0))
		}
		v := Evaluate(cfg.Rules, budgetPrimary, s, s)
		if !v.Failing(RulePartitionsUncovered) || v.ReasonStrings()[0] != "partitions_uncovered: 2 of 4 partitions unassigned for 1m0s > grace 45s (partitions 2,3)" {
			t.Fatalf("verdict %s", v.Summary())
		}
	})
	t.Run("a live instance that drops partitions", func(t *testing.T) {
		a := NewAggregator(cfg, t0)
		for ws := t0; ws.Before(t0.Add(2 * time.Minute)); ws = ws.Add(10 * sec) {
			parts := []int32{2, 3}
			if !ws.Before(t0.Add(60 * sec)) {
				parts = []int32{2}
			}
			addAll(a, []contract.HealthSample{sample("a", ws, 0, 1), sample("b", ws, parts...)}, ws.Add(10*sec))
		}
		s := a.Close(t0.Add(2 * time.Minute))[budgetPrimary]
		if !s.UnassignedSince.Equal(t0.Add(70*sec)) || s.UnassignedCount != 1 || s.Instances != 2 {
			t.Fatalf("unassigned %v since %v", s.Unassigned, s.UnassignedSince.Sub(t0))
		}
		if v := Evaluate(cfg.Rules, budgetPrimary, s, s); !v.Failing(RulePartitionsUncovered) {
			t.Fatalf("verdict %s", v.Summary())
		}
	})
}

// Builds running when the monitor starts have an unknown age; a build that
// shows up later is first seen when its first sample arrives.
func TestWindowBuildsFirstSeen(t *testing.T) {
	a := NewAggregator(DefaultConfig(), t0)
	f := healthyFleet(contract.StageBudget, contract.Primary)
	run(a, []fleet{f}, t0, time.Minute)
	// a rolling deploy: instance 0 restarts with b2 at 60 s, instance 1 at 80 s
	for ws := t0.Add(time.Minute); ws.Before(t0.Add(2 * time.Minute)); ws = ws.Add(10 * sec) {
		ss := f.samples(ws, ws.Add(10*sec))
		ss[0].Build = "b2"
		if !ws.Before(t0.Add(80 * sec)) {
			ss[1].Build = "b2"
		}
		addAll(a, ss, ws.Add(10*sec))
		if ws.Equal(t0.Add(70 * sec)) {
			s := a.Close(ws.Add(10 * sec))[budgetPrimary]
			want := []BuildSeen{{"b1", time.Time{}}, {"b2", t0.Add(70 * sec)}}
			if !slices.Equal(s.Builds, want) {
				t.Fatalf("mid-deploy builds %v", s.Builds)
			}
		}
	}
	s := a.Close(t0.Add(2 * time.Minute))[budgetPrimary]
	if want := []BuildSeen{{"b2", t0.Add(70 * sec)}}; !slices.Equal(s.Builds, want) || s.NewestBuild() != want[0] {
		t.Fatalf("builds %v", s.Builds)
	}
}

// A build back after not running for longer than the stagger period is a new
// deploy; back sooner (a quick rollback), it keeps its first-seen time.
func TestWindowBuildComesBack(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Stagger.Period = 10 * time.Minute
	a := NewAggregator(cfg, t0)
	f := healthyFleet(contract.StageBudget, contract.Primary)
	deploy := func(build string, from, to time.Duration) (last WindowStats) {
		f.build = build
		for at := from; at < to; at += time.Minute {
			run(a, []fleet{f}, t0.Add(at), time.Minute)
			last = a.Close(t0.Add(at + time.Minute))[budgetPrimary]
		}
		return last
	}
	deploy("b1", 0, time.Minute)
	deploy("b2", time.Minute, 3*time.Minute)
	if s := deploy("b1", 3*time.Minute, 4*time.Minute); !s.NewestBuild().FirstSeen.IsZero() {
		t.Fatalf("rollback after 2m: %+v", s.Builds)
	}
	deploy("b2", 4*time.Minute, 20*time.Minute)
	s := deploy("b1", 20*time.Minute, 21*time.Minute)
	if got := s.NewestBuild(); got.Build != "b1" || !got.FirstSeen.Equal(t0.Add(20*time.Minute+10*sec)) || len(s.Builds) != 1 {
		t.Fatalf("b1 back after 16m: %+v", s.Builds)
	}
}
