package dispatch

import (
	"errors"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

func target(s contract.DarkStrategy, multiplier, rate float64) *contract.DarkTarget {
	return &contract.DarkTarget{V: 1, Name: "cand", Source: contract.Primary, Strategy: s, Multiplier: multiplier, Rate: rate,
		Brokers: []string{"127.0.0.1:1"}, Prefix: contract.DarkPrefix("cand"), Enabled: true}
}

// Every strategy's fraction and every reason to send nothing, as a table.
func TestPlanTarget(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	past := now.Add(-time.Minute)
	expired := target(contract.DarkIdentical, 1, 0)
	expired.Until = &past
	disabled := target(contract.DarkIdentical, 1, 0)
	disabled.Enabled = false
	last := Plan{Name: "cand", Doc: target(contract.DarkRelative, 0.25, 0), Active: true, Fraction: 0.125, Expected: 0.125}
	tests := []struct {
		name     string
		o        Observed
		last     Plan
		fraction float64
		expected float64
		paused   Reason
		sending  bool
	}{
		{"relative: multiplier × dark / live", Observed{Doc: target(contract.DarkRelative, 0.25, 0), Counts: Counts{Live: 4, Dark: 2}}, Plan{}, 0.125, 0.125, "", true},
		{"relative above 1 clones", Observed{Doc: target(contract.DarkRelative, 2, 0), Counts: Counts{Live: 2, Dark: 3}}, Plan{}, 3, 3, "", true},
		{"relative is capped", Observed{Doc: target(contract.DarkRelative, 16, 0), Counts: Counts{Live: 1, Dark: 4}}, Plan{}, contract.MaxDarkMultiplier, contract.MaxDarkMultiplier, "", true},
		{"identical: the multiplier, whatever the counts", Observed{Doc: target(contract.DarkIdentical, 0.25, 0)}, Plan{}, 0.25, 0.25, "", true},
		{"constant: every campaign by default", Observed{Doc: target(contract.DarkConstant, 0, 500)}, Plan{}, 1, 1, "", true},
		{"constant with a multiplier", Observed{Doc: target(contract.DarkConstant, 0.5, 500)}, Plan{}, 0.5, 0.5, "", true},
		{"no live instance: paused, expected stays", Observed{Doc: target(contract.DarkRelative, 0.25, 0), Counts: Counts{Dark: 2}}, last, 0, 0.125, ReasonNoLiveInstances, false},
		{"counts unreadable: paused, expected stays", Observed{Doc: target(contract.DarkRelative, 0.25, 0), Counts: Counts{Err: errors.New("connection lost")}}, last, 0, 0.125, ReasonCountsUnreadable, false},
		{"counts unreadable at start: expected is the multiplier", Observed{Doc: target(contract.DarkRelative, 0.25, 0), Counts: Counts{Err: errors.New("x")}}, Plan{}, 0, 0.25, ReasonCountsUnreadable, false},
		{"no dark instance: nothing to feed", Observed{Doc: target(contract.DarkRelative, 0.25, 0), Counts: Counts{Live: 3}}, Plan{}, 0, 0, ReasonNoDarkInstances, false},
		{"bad document: paused, expected stays", Observed{DocErr: contract.ErrInvalidDocument}, last, 0, 0.125, ReasonBadDocument, false},
		{"disabled", Observed{Doc: disabled}, last, 0, 0, "", false},
		{"expired", Observed{Doc: expired}, last, 0, 0, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Name = "cand"
			p := PlanTarget(tc.o, tc.last, now)
			if p.Fraction != tc.fraction || p.Expected != tc.expected || p.Paused != tc.paused || p.Sending() != tc.sending {
				t.Fatalf("plan = fraction %v expected %v paused %q sending %v, want %v %v %q %v (%s)",
					p.Fraction, p.Expected, p.Paused, p.Sending(), tc.fraction, tc.expected, tc.paused, tc.sending, p.Detail)
			}
		})
	}
}

// ZooKeeper down pauses every active target and keeps its expected fraction.
func TestPausedAllKeepsExpected(t *testing.T) {
	last := map[string]Plan{
		"a": {Name: "a", Doc: target(contract.DarkIdentical, 0.5, 0), Active: true, Fraction: 0.5, Expected: 0.5},
		"b": {Name: "b", Doc: target(contract.DarkIdentical, 0.5, 0)},
	}
	got := PausedAll(last, ReasonZKUnavailable, "down")
	if a := got["a"]; a.Paused != ReasonZKUnavailable || a.Sending() || a.Expected != 0.5 {
		t.Fatalf("active target: %+v", a)
	}
	if b := got["b"]; b.Paused != "" || b.Expected != 0 {
		t.Fatalf("inactive target: %+v", b)
	}
}

// A new sender (and pacer) is built when the brokers or a constant target's
// rate change, not for a new multiplier or a disable.
func TestSenderKey(t *testing.T) {
	base := *target(contract.DarkConstant, 0, 100)
	same := base
	same.Multiplier, same.Enabled = 0.5, false
	faster := base
	faster.Rate = 200
	moved := base
	moved.Brokers = []string{"127.0.0.1:2"}
	if senderKey(base) != senderKey(same) {
		t.Fatal("a multiplier or enabled change rebuilds the sender")
	}
	if senderKey(base) == senderKey(faster) || senderKey(base) == senderKey(moved) {
		t.Fatal("a new rate or new brokers keep the old sender")
	}
}
