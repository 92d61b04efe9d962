package dispatch_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// waitPlan waits until the dispatcher's plan of target satisfies ok and
// returns how long that took.
func waitPlan(t *testing.T, d *dispatch.Dispatcher, target string, within time.Duration, ok func(dispatch.Plan, bool) bool) time.Duration {
	t.Helper()
	start := time.Now()
	var p dispatch.Plan
	var found bool
	until(t, d, within, func() string {
		p, found = plans(d)[target]
		if ok(p, found) {
			return ""
		}
		return fmt.Sprintf("plan of %s: %+v (found %v)", target, p, found)
	})
	return time.Since(start)
}

// until waits until cond returns "", checking it after every round of the
// dispatcher's control loop (at least every second); after within it fails
// the test with cond's last answer.
func until(t *testing.T, d *dispatch.Dispatcher, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		next := d.Changed()
		msg := cond()
		if msg == "" {
			return
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("after %s: %s", within, msg)
		}
	}
}

func plans(d *dispatch.Dispatcher) map[string]dispatch.Plan {
	out := map[string]dispatch.Plan{}
	for _, p := range d.Plans() {
		out[p.Name] = p
	}
	return out
}

func sending(f float64) func(dispatch.Plan, bool) bool {
	return func(p dispatch.Plan, ok bool) bool { return ok && p.Sending() && p.Fraction == f }
}

// waitMetric waits until the counter reaches want, and fails if it went
// beyond.
func waitMetric(t *testing.T, d *dispatch.Dispatcher, reg prometheus.Gatherer, want float64, name string, labels ...string) {
	t.Helper()
	until(t, d, 30*time.Second, func() string {
		if got := metric(reg, name, labels...); got < want {
			return fmt.Sprintf("%s%v = %v, want %v", name, labels, got, want)
		}
		return ""
	})
	if got := metric(reg, name, labels...); got != want {
		t.Fatalf("%s%v = %v, want exactly %v", name, labels, got, want)
	}
}

// Three targets on their own clusters: relative (0.5 × 2 dark / 4 live =
// 0.25), identical at 0.25, and identical at 1.5 (every campaign, half of
// them cloned). Each receives exactly the campaigns the hash chose — every
// event and the budget row — computed here from DarkHash alone; the two at
// 0.25 receive the same records.
func TestDarkTargetsGetExactlyTheSampledCampaigns(t *testing.T) {
	e := newEnv(t)
	e.register(e.liveInstances(), 4)
	e.register(e.darkInstances("rel"), 2)
	targets := map[string]float64{"rel": 0.25, "twin": 0.25, "clone": 1.5}
	brokers := map[string][]string{}
	for name := range targets {
		brokers[name] = darkCluster(t, name)
	}
	e.set(doc("rel", contract.DarkRelative, 0.5, brokers["rel"]))
	e.set(doc("twin", contract.DarkIdentical, 0.25, brokers["twin"]))
	e.set(doc("clone", contract.DarkIdentical, 1.5, brokers["clone"]))

	w := newWorkload(200, 3)
	w.budgets(t, e.live)
	d, reg := e.start(nil)
	for name, f := range targets {
		waitPlan(t, d, name, 10*time.Second, sending(f))
	}
	ids := w.events(t, e.live)
	for name, f := range targets {
		tp := contract.TopicsWithPrefix(contract.DarkPrefix(name))
		wantEv, wantB := expectEvents(ids, f), expectBudgets(w.campaigns, f)
		if len(wantEv) == 0 || len(wantB) == len(w.campaigns) && f < 1 {
			t.Fatalf("%s: a sample of %d events, %d budgets says nothing", name, len(wantEv), len(wantB))
		}
		waitFor(t, kafkatest.Follow(t, brokers[name], tp.AdEvents), wantEv, gotEvents)
		waitFor(t, kafkatest.Follow(t, brokers[name], tp.Budgets), wantB, gotBudgets)
		waitMetric(t, d, reg, float64(len(wantEv)), "hotpair_dark_dispatch_records_total", "target", name, "topic", "ad-events")
	}
	if !slices.Equal(expectEvents(ids, targets["rel"]), expectEvents(ids, targets["twin"])) {
		t.Fatal("relative and identical targets at the same fraction must get the same records")
	}
	if v := metric(reg, "hotpair_dark_dispatch_fraction", "target", "clone"); v != 1.5 {
		t.Fatalf("fraction metric of clone = %v", v)
	}
}

// A change of a target's document applies within one second: a larger
// multiplier (the new campaigns' budget rows follow at once, the earlier
// sample stays inside the larger one), a smaller one (the campaigns that
// leave the sample get a tombstone), disabling, deleting.
func TestConfigChangeAppliesWithinASecond(t *testing.T) {
	e := newEnv(t)
	dark := darkCluster(t, "cand")
	tp := contract.TopicsWithPrefix(contract.DarkPrefix("cand"))
	w := newWorkload(200, 2)
	w.budgets(t, e.live)
	e.set(doc("cand", contract.DarkIdentical, 0.25, dark))
	other := doc("other", contract.DarkIdentical, 1, dark)
	other.Source = contract.Standby // the standby side's dispatcher feeds it
	e.set(other)
	d, reg := e.start(nil)
	waitPlan(t, d, "cand", 10*time.Second, sending(0.25))
	if _, ok := plans(d)["other"]; ok {
		t.Fatal("the primary side's dispatcher plans a target of the standby side")
	}
	first := w.events(t, e.live)
	events := kafkatest.Follow(t, dark, tp.AdEvents)
	waitFor(t, events, expectEvents(first, 0.25), gotEvents)

	e.set(doc("cand", contract.DarkIdentical, 0.5, dark))
	took := waitPlan(t, d, "cand", time.Second, sending(0.5))
	t.Logf("multiplier 0.25 -> 0.5 applied in %s", took)
	waitFor(t, kafkatest.Follow(t, dark, tp.Budgets), expectBudgets(w.campaigns, 0.5), gotBudgets)
	second := w.events(t, e.live)
	want := append(expectEvents(first, 0.25), expectEvents(second, 0.5)...)
	slices.Sort(want)
	waitFor(t, events, want, gotEvents)

	// A smaller multiplier: the campaigns that leave the sample leave the
	// target's budgets topic too (a tombstone each), and get no more events.
	e.set(doc("cand", contract.DarkIdentical, 0.25, dark))
	took = waitPlan(t, d, "cand", time.Second, sending(0.25))
	t.Logf("multiplier 0.5 -> 0.25 applied in %s", took)
	waitFor(t, kafkatest.Follow(t, dark, tp.Budgets), expectBudgets(w.campaigns, 0.25), gotBudgets)
	third := w.events(t, e.live)
	want = append(want, expectEvents(third, 0.25)...)
	slices.Sort(want)
	waitFor(t, events, want, gotEvents)

	off := doc("cand", contract.DarkIdentical, 0.5, dark)
	off.Enabled = false
	e.set(off)
	took = waitPlan(t, d, "cand", time.Second, func(p dispatch.Plan, ok bool) bool { return ok && !p.Sending() && !p.Active })
	t.Logf("disable applied in %s", took)
	sent := metric(reg, "hotpair_dark_dispatch_records_total", "target", "cand", "topic", "ad-events")
	consumed := metric(reg, "hotpair_dark_dispatch_consumed_total", "topic", "ad-events")
	w.events(t, e.live)
	waitMetric(t, d, reg, consumed+float64(len(w.campaigns)*w.perCamp), "hotpair_dark_dispatch_consumed_total", "topic", "ad-events")
	if now := metric(reg, "hotpair_dark_dispatch_records_total", "target", "cand", "topic", "ad-events"); now != sent {
		t.Fatalf("a disabled target received %v records", now-sent)
	}

	if err := dispatch.ClearTarget(e.op, e.paths, "cand"); err != nil {
		t.Fatal(err)
	}
	took = waitPlan(t, d, "cand", time.Second, func(_ dispatch.Plan, ok bool) bool { return !ok })
	t.Logf("clear applied in %s", took)

	// An expiry applies without any ZooKeeper event.
	short := doc("cand", contract.DarkIdentical, 0.5, dark)
	end := time.Now().Add(1500 * time.Millisecond).UTC()
	short.Until = &end
	e.set(short)
	waitPlan(t, d, "cand", time.Second, sending(0.5))
	waitPlan(t, d, "cand", 5*time.Second, func(p dispatch.Plan, ok bool) bool { return ok && !p.Active })
	if late := time.Since(end); late > 1500*time.Millisecond || late < 0 {
		t.Fatalf("the target stopped %s after its expiry", late)
	}
}

// Instance counts that cannot be used (no live aggregator registered) or a
// document that does not decode: nothing is sent, the paused metric names
// the reason, the expected rate stays above zero (so the alert fires); once
// the registry and the document are right again, the copy resumes.
func TestUnreadableCountsSendNothing(t *testing.T) {
	e := newEnv(t)
	dark := darkCluster(t, "rel")
	tp := contract.TopicsWithPrefix(contract.DarkPrefix("rel"))
	e.register(e.darkInstances("rel"), 1)
	e.set(doc("rel", contract.DarkRelative, 1, dark))
	w := newWorkload(50, 4)
	w.budgets(t, e.live)
	d, reg := e.start(nil)
	waitPlan(t, d, "rel", 10*time.Second, func(p dispatch.Plan, ok bool) bool { return ok && p.Paused == dispatch.ReasonNoLiveInstances })
	if v := metric(reg, "hotpair_dark_dispatch_paused", "target", "rel", "reason", "no_live_instances"); v != 1 {
		t.Fatalf("paused{no_live_instances} = %v", v)
	}
	for range 3 {
		w.events(t, e.live)
	}
	waitMetric(t, d, reg, float64(3*len(w.campaigns)*w.perCamp), "hotpair_dark_dispatch_consumed_total", "topic", "ad-events")
	until(t, d, 30*time.Second, func() string {
		if metric(reg, "hotpair_dark_dispatch_expected_rate", "target", "rel") <= 0 {
			return "the expected rate of a paused target stays 0: the alert could not fire"
		}
		return ""
	})
	if got := kafkatest.UpToEnd(t, dark, tp.AdEvents); len(got) != 0 {
		t.Fatalf("a paused target received %d events", len(got))
	}
	if got := kafkatest.UpToEnd(t, dark, tp.Budgets); len(got) != 0 {
		t.Fatalf("a paused target received %d budget rows", len(got))
	}

	if _, err := e.op.Set(e.paths.Dark("rel"), []byte(`{"v":1,"name":"rel","strategy":"sometimes"}`), -1); err != nil {
		t.Fatal(err)
	}
	waitPlan(t, d, "rel", time.Second, func(p dispatch.Plan, ok bool) bool { return ok && p.Paused == dispatch.ReasonBadDocument })
	if v := metric(reg, "hotpair_dark_dispatch_paused", "target", "rel", "reason", "bad_document"); v != 1 {
		t.Fatalf("paused{bad_document} = %v", v)
	}

	e.register(e.liveInstances(), 2)
	e.set(doc("rel", contract.DarkRelative, 1, dark))
	waitPlan(t, d, "rel", time.Second, sending(0.5))
	ids := w.events(t, e.live)
	waitFor(t, kafkatest.Follow(t, dark, tp.AdEvents), expectEvents(ids, 0.5), gotEvents)
	waitFor(t, kafkatest.Follow(t, dark, tp.Budgets), expectBudgets(w.campaigns, 0.5), gotBudgets)
	for _, r := range dispatch.PauseReasons() {
		if v := metric(reg, "hotpair_dark_dispatch_paused", "target", "rel", "reason", string(r)); v != 0 {
			t.Fatalf("paused{%s} = %v after resuming", r, v)
		}
	}
}

// A campaign that leaves the sample (a smaller multiplier) gets a
// tombstone on the target's budgets topic whether or not it has a budget
// row, once: the comparator learns from it when its copy ended.
func TestCampaignsLeavingTheSampleGetATombstone(t *testing.T) {
	e := newEnv(t)
	dark := darkCluster(t, "cand")
	tp := contract.TopicsWithPrefix(contract.DarkPrefix("cand"))
	w := newWorkload(200, 1)
	budgeted := &workload{perCamp: 1}
	for i, c := range w.campaigns {
		if i%2 == 0 {
			budgeted.campaigns = append(budgeted.campaigns, c)
		}
	}
	budgeted.budgets(t, e.live)
	e.set(doc("cand", contract.DarkIdentical, 0.5, dark))
	d, _ := e.start(nil)
	waitPlan(t, d, "cand", 10*time.Second, sending(0.5))
	events := kafkatest.Follow(t, dark, tp.AdEvents)
	waitFor(t, events, expectEvents(w.events(t, e.live), 0.5), gotEvents)

	e.set(doc("cand", contract.DarkIdentical, 0.25, dark))
	waitPlan(t, d, "cand", time.Second, sending(0.25))
	w.events(t, e.live) // the consumer's next poll sees the smaller sample
	var want []string
	for _, c := range w.campaigns {
		if contract.DarkCopies(c, 0.5) > contract.DarkCopies(c, 0.25) {
			want = append(want, c)
		}
	}
	kafkatest.Follow(t, dark, tp.Budgets).Until(t, 30*time.Second, func(recs []*kgo.Record) string {
		var gone []string
		for _, r := range recs {
			if r.Value == nil {
				gone = append(gone, string(r.Key))
			}
		}
		slices.Sort(gone)
		if slices.Equal(gone, want) {
			return ""
		}
		return fmt.Sprintf("%d tombstones, want %d (%s)", len(gone), len(want), firstDiff(gone, want))
	})
}
