package dispatch_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

const gapMetric = "hotpair_dark_dispatch_gap_partitions_total"

// Two static replicas, a and b, share the live partitions. b "crashes" (a
// static member does not leave the group when it stops, so its partitions
// wait out the group session timeout); a takes them over and sends again
// the budget rows of the sampled campaigns of exactly those partitions.
// Every replica reads the whole budgets table and sends every sampled row
// once when it starts, so before the crash the target holds each sampled
// campaign's row twice (once per replica); the crash adds one more row for
// each of b's sampled campaigns and none for a's.
//
// Then a clean handover: c, a dynamic member, joins (taking some of a's
// partitions at its first assignment) and leaves cleanly (a gets them back
// within the rebalance). Neither counts as a takeover, and no row is sent
// again beyond c's own start-up rows.
func TestTakeOverResendsTheRowsOfTheCrashedReplicasCampaigns(t *testing.T) {
	const (
		group    = "dispatch-takeover"
		session  = time.Second
		f        = 0.5
		liveN    = 4 // createTopics' partition count
		darkName = "cand"
	)
	e := newZKEnv(t)
	e.live = kafkatest.Cluster(t, kfake.GroupMinSessionTimeout(100*time.Millisecond)).ListenAddrs()
	createTopics(t, e.live, "")
	dark := darkCluster(t, darkName)
	tp := contract.TopicsWithPrefix(contract.DarkPrefix(darkName))
	e.set(doc(darkName, contract.DarkIdentical, f, dark))
	w := newWorkload(60, 1)
	sampled := expectBudgets(w.campaigns, f)
	if len(sampled) == 0 || len(sampled) == len(w.campaigns) {
		t.Fatalf("a sample of %d of %d campaigns says nothing", len(sampled), len(w.campaigns))
	}

	replica := func(id string) func(*dispatch.Config) {
		return func(c *dispatch.Config) {
			c.Group, c.GroupInstanceID, c.GroupSessionTimeout, c.GapAfter = group, id, session, session/2
		}
	}
	a, regA, _ := e.startStoppable(replica("a"))
	waitPlan(t, a, darkName, 10*time.Second, sending(f))
	b, regB, crashB := e.startStoppable(replica("b"))
	waitPlan(t, b, darkName, 10*time.Second, sending(f))
	before := groupAssignment(t, a, e.live, group, []string{"a", "b"}, liveN)
	t.Logf("before the crash: %v", before)
	bParts := before["b"]

	// The budgets table is written once both replicas send to the target:
	// each sends every sampled row once, from its budgets consumer.
	w.budgets(t, e.live)
	waitMetric(t, a, regA, float64(len(sampled)), "hotpair_dark_dispatch_records_total", "target", darkName, "topic", "budgets")
	waitMetric(t, b, regB, float64(len(sampled)), "hotpair_dark_dispatch_records_total", "target", darkName, "topic", "budgets")
	rows := kafkatest.Follow(t, dark, tp.Budgets)
	want := map[string]int{}
	for _, c := range sampled {
		want[c] = 2
	}
	waitRows(t, rows, want)

	events := kafkatest.Follow(t, dark, tp.AdEvents)
	var ids []map[string][]string
	ids = append(ids, w.events(t, e.live))
	waitFor(t, events, expectAllEvents(ids, f), gotEvents)
	for _, r := range kafkatest.UpToEnd(t, e.live, "ad-events") {
		if p := kafka.PartitionFor(string(r.Key), liveN); p != r.Partition {
			t.Fatalf("campaign %s is on live partition %d, kafka.PartitionFor says %d", r.Key, r.Partition, p)
		}
	}
	for _, r := range []struct {
		name string
		d    *dispatch.Dispatcher
		reg  *prometheus.Registry
	}{{"a", a, regA}, {"b", b, regB}} {
		until(t, r.d, 10*time.Second, func() string {
			if v := metric(r.reg, "hotpair_dark_dispatch_records_total", "target", darkName, "topic", "ad-events"); v == 0 {
				return "replica " + r.name + " copied no event"
			}
			return ""
		})
	}

	// b got its partitions from a in a clean rebalance when it joined: no
	// takeover, on either side.
	for name, v := range map[string]float64{"a": metric(regA, gapMetric), "b": metric(regB, gapMetric)} {
		if v != 0 {
			t.Fatalf("%s of %s = %v before any crash", gapMetric, name, v)
		}
	}

	var bSampled []string
	for _, c := range sampled {
		if slices.Contains(bParts, kafka.PartitionFor(c, liveN)) {
			bSampled = append(bSampled, c)
		}
	}
	if len(bSampled) == 0 || len(bSampled) == len(sampled) {
		t.Fatalf("b's partitions %v hold %d of the %d sampled campaigns: the test says nothing", bParts, len(bSampled), len(sampled))
	}

	// The crash: b stops without leaving the group. Live traffic goes on
	// until a has taken b's partitions over.
	crashed := time.Now()
	crashB()
	// A round of live events per round of a's control loop (every second).
	until(t, a, 15*time.Second, func() string {
		if v := metric(regA, gapMetric); v < float64(len(bParts)) {
			ids = append(ids, w.events(t, e.live))
			return fmt.Sprintf("%s = %v after b crashed, want %d (b's partitions %v)", gapMetric, v, len(bParts), bParts)
		}
		return ""
	})
	t.Logf("a took over b's partitions %s after b stopped", time.Since(crashed).Round(time.Millisecond))
	if v, ok := metricvalue.Get(regA, gapMetric); !ok || v != float64(len(bParts)) {
		t.Fatalf("%s of a = %v (found %v), want %d: b's partitions %v", gapMetric, v, ok, len(bParts), bParts)
	}
	after := groupAssignment(t, a, e.live, group, []string{"a"}, liveN)
	if !slices.Equal(after["a"], []int32{0, 1, 2, 3}) {
		t.Fatalf("after the crash a holds %v", after["a"])
	}
	waitMetric(t, a, regA, float64(len(sampled)+len(bSampled)), "hotpair_dark_dispatch_records_total", "target", darkName, "topic", "budgets")
	for _, c := range bSampled {
		want[c] = 3
	}
	waitRows(t, rows, want)
	// Why each row was sent: the rows each replica relayed from the live
	// table say update, the rows sent again for b's campaigns gap (what the
	// comparator acts on).
	rows.Until(t, 10*time.Second, func(recs []*kgo.Record) string {
		gaps := map[string]int{}
		for _, r := range recs {
			reason := ""
			for _, h := range r.Headers {
				if h.Key == contract.HeaderDarkRow {
					reason = string(h.Value)
				}
			}
			switch reason {
			case string(contract.DarkRowGap):
				gaps[string(r.Key)]++
			case string(contract.DarkRowUpdate):
			default:
				return fmt.Sprintf("row of %s with reason %q", r.Key, reason)
			}
		}
		wantGaps := map[string]int{}
		for _, c := range bSampled {
			wantGaps[c] = 1
		}
		if !maps.Equal(gaps, wantGaps) {
			return fmt.Sprintf("rows with reason gap %v, want one for each of b's sampled campaigns %v", gaps, bSampled)
		}
		return ""
	})
	// Every sampled event is on the target once: a copied b's partitions on
	// from b's committed offsets.
	waitFor(t, events, expectAllEvents(ids, f), gotEvents)

	// A clean handover in both directions: c joins (its first assignment
	// takes partitions a had) and leaves (a gets them back within the
	// rebalance, at records younger than half the session timeout).
	c, regC, stopC := e.startStoppable(replica(""))
	waitPlan(t, c, darkName, 10*time.Second, sending(f))
	withC := groupAssignment(t, a, e.live, group, []string{"a", ""}, liveN)
	t.Logf("with c: %v", withC)
	waitMetric(t, c, regC, float64(len(sampled)), "hotpair_dark_dispatch_records_total", "target", darkName, "topic", "budgets")
	for _, camp := range sampled {
		want[camp]++ // c's start-up rows
	}
	waitRows(t, rows, want)
	ids = append(ids, w.events(t, e.live))
	waitFor(t, events, expectAllEvents(ids, f), gotEvents)
	until(t, c, 10*time.Second, func() string {
		if v := metric(regC, "hotpair_dark_dispatch_records_total", "target", darkName, "topic", "ad-events"); v == 0 {
			return "c copied no event"
		}
		return ""
	})
	stopC()
	groupAssignment(t, a, e.live, group, []string{"a"}, liveN)
	ids = append(ids, w.events(t, e.live))
	// Once a copied them, it resumed c's partitions (and decided on a
	// takeover, which counts synchronously, before copying).
	waitFor(t, events, expectAllEvents(ids, f), gotEvents)
	if v := metric(regC, gapMetric); v != 0 {
		t.Fatalf("%s of c = %v: partitions a joining replica gets in a clean rebalance are no takeover", gapMetric, v)
	}
	if v := metric(regA, gapMetric); v != float64(len(bParts)) {
		t.Fatalf("%s of a = %v after a clean handover, want still %d", gapMetric, v, len(bParts))
	}
	if v := metric(regA, "hotpair_dark_dispatch_records_total", "target", darkName, "topic", "budgets"); v != float64(len(sampled)+len(bSampled)) {
		t.Fatalf("a sent %v budget rows, want still %d: a clean handover sent rows again", v, len(sampled)+len(bSampled))
	}
	waitRows(t, rows, want)
}

// expectAllEvents is expectEvents of every round.
func expectAllEvents(rounds []map[string][]string, f float64) []string {
	var out []string
	for _, ids := range rounds {
		out = append(out, expectEvents(ids, f)...)
	}
	slices.Sort(out)
	return out
}

// waitRows waits until the target's budgets topic holds exactly want[c]
// rows of each campaign c (and no tombstone, no other campaign).
func waitRows(t *testing.T, f *kafkatest.Follower, want map[string]int) {
	t.Helper()
	f.Until(t, 30*time.Second, func(recs []*kgo.Record) string {
		got := map[string]int{}
		for _, r := range recs {
			if r.Value == nil {
				got["tombstone of "+string(r.Key)]++
				continue
			}
			got[string(r.Key)]++
		}
		if maps.Equal(got, want) {
			return ""
		}
		keys := maps.Clone(want)
		maps.Copy(keys, got)
		var diffs []string
		for _, c := range slices.Sorted(maps.Keys(keys)) {
			if got[c] != want[c] {
				diffs = append(diffs, fmt.Sprintf("%s: %d rows, want %d", c, got[c], want[c]))
			}
		}
		return fmt.Sprintf("%d rows; %s", len(recs), strings.Join(diffs, "; "))
	})
}

// groupAssignment waits until the group is stable with exactly the members
// of the given instance ids ("" for one dynamic member), each holding
// partitions of ad-events and all n of them assigned, and returns each
// member's partitions by instance id.
// It looks again after each round of d's control loop (d runs meanwhile).
func groupAssignment(t *testing.T, d *dispatch.Dispatcher, brokers []string, group string, members []string, n int32) map[string][]int32 {
	t.Helper()
	adm := kadm.NewClient(kafkatest.Client(t, brokers))
	var owners map[string][]int32
	until(t, d, 30*time.Second, func() string {
		var msg string
		owners, msg = describeAssignment(adm, group, members, n)
		if msg != "" {
			return "group " + group + ": " + msg
		}
		return ""
	})
	return owners
}

func describeAssignment(adm *kadm.Client, group string, members []string, n int32) (map[string][]int32, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gs, err := adm.DescribeGroups(ctx, group)
	if err == nil {
		err = gs.Error()
	}
	if err != nil {
		return nil, err.Error()
	}
	g := gs[group]
	owners := map[string][]int32{}
	var all []int32
	for _, m := range g.Members {
		id := ""
		if m.InstanceID != nil {
			id = *m.InstanceID
		}
		owners[id] = nil
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				if tp.Topic == "ad-events" {
					owners[id] = append(owners[id], tp.Partitions...)
				}
			}
		}
		slices.Sort(owners[id])
		all = append(all, owners[id]...)
	}
	slices.Sort(all)
	switch {
	case g.State != "Stable":
		return nil, fmt.Sprintf("state %s, members %v", g.State, owners)
	case len(g.Members) != len(members) || !slices.Equal(slices.Sorted(maps.Keys(owners)), slices.Sorted(slices.Values(members))):
		return nil, fmt.Sprintf("members %v, want %q", owners, members)
	case len(all) != int(n) || len(slices.Compact(all)) != int(n):
		return nil, fmt.Sprintf("assigned %v, want each of %d partitions once", owners, n)
	}
	for id, ps := range owners {
		if len(ps) == 0 {
			return nil, fmt.Sprintf("member %q holds no partition: %v", id, owners)
		}
	}
	return owners, ""
}
