package core

import (
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

func TestCheckStagger(t *testing.T) {
	now := t0.Add(24 * time.Hour)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	old := BuildSeen{"b1", time.Time{}} // running when the monitor started
	for _, tc := range []struct {
		name             string
		period           time.Duration
		primary, standby []BuildSeen
		violated         bool
		detail           string
	}{
		{"both sides on established builds", time.Hour, []BuildSeen{old}, []BuildSeen{old}, false, ""},
		{"one side deployed 5m ago", time.Hour, []BuildSeen{{"b2", ago(5 * time.Minute)}}, []BuildSeen{old}, false, ""},
		{"second side deployed after the period", time.Hour,
			[]BuildSeen{{"b2", ago(61 * time.Minute)}}, []BuildSeen{{"b2", ago(time.Minute)}}, false, ""},
		{"first side's build exactly period old", time.Hour,
			[]BuildSeen{{"b2", ago(time.Hour)}}, []BuildSeen{{"b2", ago(time.Minute)}}, false, ""},
		{"both sides within the period", time.Hour,
			[]BuildSeen{{"b2", ago(20 * time.Minute)}}, []BuildSeen{{"b2", ago(2 * time.Minute)}}, true,
			`both sides took a new build within the stagger period 1h0m0s: primary runs "b2" (first seen 20m0s ago), standby runs "b2" (first seen 2m0s ago)`},
		{"mid rolling deploy on both sides", time.Hour,
			[]BuildSeen{old, {"b2", ago(10 * time.Minute)}}, []BuildSeen{old, {"b3", ago(time.Minute)}}, true,
			`both sides took a new build within the stagger period 1h0m0s: primary runs "b2" (first seen 10m0s ago), standby runs "b3" (first seen 1m0s ago)`},
		{"check off", 0, []BuildSeen{{"b2", ago(time.Minute)}}, []BuildSeen{{"b2", ago(time.Minute)}}, false, ""},
		{"a side with no instances", time.Hour, []BuildSeen{{"b2", ago(time.Minute)}}, nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckStagger(contract.ServiceBudget, tc.period, map[contract.Side][]BuildSeen{contract.Primary: tc.primary, contract.Standby: tc.standby}, now)
			if v.Violated != tc.violated || v.Detail != tc.detail {
				t.Fatalf("got %v %q\nwant %v %q", v.Violated, v.Detail, tc.violated, tc.detail)
			}
		})
	}
}

// End to end through the Engine: the standby deploying 20 minutes after the
// primary is flagged (period 1h); a build running since the start is not new.
func TestEngineFlagsSimultaneousDeploys(t *testing.T) {
	cfg := DefaultConfig()
	e, err := NewEngine(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	p, s := healthyFleet(contract.StageBudget, contract.Primary), healthyFleet(contract.StageBudget, contract.Standby)
	evs := feed(t, e, []fleet{p, s}, t0, t0.Add(10*time.Minute), 10*sec)
	if evs[len(evs)-1].Stagger[0].Violated {
		t.Fatal("builds running at start flagged")
	}
	p.build = "b2"
	evs = feed(t, e, []fleet{p, s}, t0.Add(10*time.Minute), t0.Add(30*time.Minute), 10*sec)
	if last := evs[len(evs)-1].Stagger[0]; last.Violated || last.Newest[0].Build != "b2" {
		t.Fatalf("one side deploying flagged: %+v", last)
	}
	s.build = "b2"
	evs = feed(t, e, []fleet{p, s}, t0.Add(30*time.Minute), t0.Add(32*time.Minute), 10*sec)
	last := evs[len(evs)-1]
	if last.Stagger[0].Service != contract.ServiceBudget || !last.Stagger[0].Violated {
		t.Fatalf("not flagged: %+v", last.Stagger[0])
	}
	// the primary's build is an hour old at 70m: the flag clears
	evs = feed(t, e, []fleet{p, s}, t0.Add(32*time.Minute), t0.Add(72*time.Minute), 10*sec)
	if v := evs[len(evs)-1].Stagger[0]; v.Violated {
		t.Fatalf("still flagged: %+v", v)
	}
}
