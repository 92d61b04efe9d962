package core

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// window returns healthy stats of a 2-minute window ending at t0+2m.
func window() WindowStats {
	end := t0.Add(2 * time.Minute)
	return WindowStats{Start: t0, End: end, Samples: 24, Events: 12000, QPS: 100,
		LastSample: end.Add(-5 * time.Second), Instances: 2, TopicPartitions: 8, LagP99Ms: 200, LagMaxMs: 300}
}

func TestRuleNoHeartbeat(t *testing.T) {
	r := DefaultConfig().Rules
	for _, tc := range []struct {
		name   string
		silent time.Duration // since the last sample, at the window's end; <0: never
		fails  bool
		detail string
	}{
		{"sample 5s ago", 5 * time.Second, false, ""},
		{"exactly at the limit", 30 * time.Second, false, ""},
		{"just over the limit", 30*time.Second + time.Millisecond, true, "last sample 30.001s ago > limit 30s (3 × 10s)"},
		{"silent a whole window", 2 * time.Minute, true, "last sample 2m0s ago > limit 30s (3 × 10s)"},
		{"never seen", -1, true, "no sample received yet (limit 30s = 3 × 10s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := window()
			s.LastSample = s.End.Add(-tc.silent)
			if tc.silent < 0 {
				s.LastSample = time.Time{}
			}
			reason, fails := noHeartbeat(r, s)
			if fails != tc.fails || reason.Detail != tc.detail {
				t.Fatalf("got %v %q, want %v %q", fails, reason.Detail, tc.fails, tc.detail)
			}
		})
	}
}

func TestRulePartitionsUncovered(t *testing.T) {
	r := DefaultConfig().Rules // grace 45s
	for _, tc := range []struct {
		name    string
		missing []int32
		for_    time.Duration
		fails   bool
		detail  string
	}{
		{"all assigned", nil, 0, false, ""},
		{"goka rebalance, 16s gap", []int32{0, 1, 2, 3}, 16 * time.Second, false, ""},
		{"gap exactly the grace", []int32{3}, 45 * time.Second, false, ""},
		{"gap outlasts the grace", []int32{3, 5}, 46 * time.Second, true, "2 of 8 partitions unassigned for 46s > grace 45s (partitions 3,5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := window()
			s.Unassigned, s.UnassignedCount = tc.missing, len(tc.missing)
			if len(tc.missing) > 0 {
				s.UnassignedSince = s.End.Add(-tc.for_)
			}
			reason, fails := partitionsUncovered(r, s)
			if fails != tc.fails || reason.Detail != tc.detail {
				t.Fatalf("got %v %q, want %v %q", fails, reason.Detail, tc.fails, tc.detail)
			}
		})
	}
	t.Run("long list is cut", func(t *testing.T) {
		s := window()
		s.TopicPartitions, s.UnassignedCount, s.UnassignedSince = 64, 20, s.End.Add(-time.Minute)
		for p := range int32(16) {
			s.Unassigned = append(s.Unassigned, p)
		}
		reason, _ := partitionsUncovered(r, s)
		if !strings.HasSuffix(reason.Detail, "(partitions 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,… 4 more)") {
			t.Fatal(reason.Detail)
		}
	})
}

func TestRuleInputRateLow(t *testing.T) {
	r := DefaultConfig().Rules // ratio 0.5, reference 1 ev/s
	for _, tc := range []struct {
		name        string
		self, other float64
		otherLagMs  int64
		upstreamMs  int64
		fails       bool
		detail      string
	}{
		{"equal", 100, 100, 0, 0, false, ""},
		{"exactly half", 50, 100, 0, 0, false, ""},
		{"below half", 49.5, 100, 0, 0, true, "qps 49.50 < 0.5 × standby qps 100.00"},
		{"stopped", 0, 100, 0, 0, true, "qps 0.00 < 0.5 × standby qps 100.00"},
		{"both dropped together (upstream)", 10, 12, 0, 0, false, ""},
		{"other side below the reference", 0, 0.9, 0, 0, false, ""},
		{"other side at the reference", 0.4, 1, 0, 0, true, "qps 0.40 < 0.5 × standby qps 1.00"},
		{"other side dead", 100, 0, 0, 0, false, ""},
		{"other side draining a backlog (catch-up burst)", 40, 100, 5400, 0, false, ""},
		{"other side lagging but within catch_up_lag", 40, 100, 5000, 0, true, "qps 40.00 < 0.5 × standby qps 100.00"},
		{"other side's aggregator draining a backlog", 40, 100, 5, 9000, false, ""},
		{"other side draining a backlog, this side has no input at all", 0, 100, 14_000, 0, true, "qps 0.00 < 0.5 × standby qps 100.00"},
		{"other side draining a backlog, this side just under the reference", 0.9, 100, 14_000, 0, true, "qps 0.90 < 0.5 × standby qps 100.00"},
		{"other side draining a backlog, this side at the reference", 1, 100, 14_000, 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self, other := window(), window()
			self.QPS, other.QPS, other.LagP99Ms, other.UpstreamLagP99Ms = tc.self, tc.other, tc.otherLagMs, tc.upstreamMs
			reason, fails := inputRateLow(r, self, other, contract.Standby)
			if fails != tc.fails || reason.Detail != tc.detail {
				t.Fatalf("got %v %q, want %v %q", fails, reason.Detail, tc.fails, tc.detail)
			}
		})
	}
}

// TestRuleInputRateLowUpstreamChange: a window in which traffic stops or
// starts upstream of both sides is not judged (their bursts may land a
// window apart); a side that lost its input while the other's is steady,
// or that was already stalled, is.
func TestRuleInputRateLowUpstreamChange(t *testing.T) {
	r := DefaultConfig().Rules // ratio 0.5, reference 1 ev/s
	for _, tc := range []struct {
		name                             string
		selfPrev, self, otherPrev, other float64
		fails                            bool
	}{
		{"both fell: the standby's last burst a window late", 40, 0, 40, 6.7, false},
		{"both started: the primary's first burst a window late", 0, 0, 0, 6.7, false},
		{"both started from under the reference", 0.5, 0, 0.9, 100, false},
		{"only this side fell, the other is steady", 40, 0, 40, 40, true},
		{"this side was stalled already, the other fell", 0, 0, 120, 40, true},
		{"this side fell, the other started", 40, 0, 0, 40, true},
		{"this side fell, the other rose (a surge)", 40, 0, 40, 120, true},
		{"both fell, but this side is still far below the other", 40, 2, 40, 19, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self, other := window(), window()
			self.PrevQPS, self.QPS, self.HasPrev = tc.selfPrev, tc.self, true
			other.PrevQPS, other.QPS, other.HasPrev = tc.otherPrev, tc.other, true
			if _, fails := inputRateLow(r, self, other, contract.Standby); fails != tc.fails {
				t.Fatalf("input_rate_low %v, want %v", fails, tc.fails)
			}
			// Without a previous window (a monitor just started) every such
			// window is judged as before.
			self.HasPrev, other.HasPrev = false, false
			_, fails := inputRateLow(r, self, other, contract.Standby)
			if want := tc.self < r.RateRatio*tc.other; fails != want {
				t.Fatalf("without a previous window: input_rate_low %v, want %v", fails, want)
			}
		})
	}
}

func TestRuleLagHigh(t *testing.T) {
	r := DefaultConfig().Rules // 60s
	for _, tc := range []struct {
		name   string
		p99    int64
		fails  bool
		detail string
	}{
		{"low", 200, false, ""},
		{"at the limit", 60_000, false, ""},
		{"over", 75_000, true, "p99 75000 ms > limit 60000 ms"},
		{"beyond every bucket", math.MaxInt64, true, "p99 above 1800000 ms > limit 60000 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := window()
			s.LagP99Ms = tc.p99
			reason, fails := lagHigh(r, s)
			if fails != tc.fails || reason.Detail != tc.detail {
				t.Fatalf("got %v %q, want %v %q", fails, reason.Detail, tc.fails, tc.detail)
			}
		})
	}
}

func TestCatchingUp(t *testing.T) {
	r := DefaultConfig().Rules // catch_up_lag 5s
	for _, tc := range []struct {
		name        string
		lagMs, upMs int64
		catchUpLag  time.Duration
		behind      bool
		detail      string
	}{
		{"keeps up", 50, 40, r.CatchUpLag, false, ""},
		{"at the threshold", 5000, 5000, r.CatchUpLag, false, ""},
		{"its own lag above", 30_000, 100, r.CatchUpLag, true, "lag p99 30000 ms > catch_up_lag 5000 ms"},
		{"its aggregator behind", 6000, 9000, r.CatchUpLag, true, "aggregator lag p99 9000 ms > catch_up_lag 5000 ms (own 6000 ms)"},
		{"off", 30_000, 30_000, 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := r
			rr.CatchUpLag = tc.catchUpLag
			s := window()
			s.LagP99Ms, s.UpstreamLagP99Ms = tc.lagMs, tc.upMs
			detail, behind := catchingUp(rr, s)
			if behind != tc.behind || detail != tc.detail {
				t.Fatalf("got %v %q, want %v %q", behind, detail, tc.behind, tc.detail)
			}
			if v := Evaluate(rr, Key{contract.StageBudget, contract.Primary}, s, window()); v.CatchingUp != tc.detail || !v.Healthy {
				t.Fatalf("verdict: healthy=%v catching up %q, want healthy and %q", v.Healthy, v.CatchingUp, tc.detail)
			}
		})
	}
}

func TestEvaluateVerdict(t *testing.T) {
	r := DefaultConfig().Rules
	k := Key{contract.StageBudget, contract.Primary}
	for _, tc := range []struct {
		name    string
		breaks  func(*WindowStats)
		reasons []string
	}{
		{"healthy", func(*WindowStats) {}, nil},
		{"lag only", func(s *WindowStats) { s.LagP99Ms = 75_000 },
			[]string{"lag_high: p99 75000 ms > limit 60000 ms"}},
		{"dead side keeps every reason, most severe first", func(s *WindowStats) {
			s.LastSample = s.End.Add(-2 * time.Minute)
			s.QPS, s.Instances = 0, 0
			s.Unassigned, s.UnassignedCount, s.UnassignedSince = []int32{0, 1, 2, 3, 4, 5, 6, 7}, 8, s.End.Add(-90*time.Second)
			s.LagP99Ms = 120_000
		}, []string{
			"no_heartbeat: last sample 2m0s ago > limit 30s (3 × 10s)",
			"partitions_uncovered: 8 of 8 partitions unassigned for 1m30s > grace 45s (partitions 0,1,2,3,4,5,6,7)",
			"input_rate_low: qps 0.00 < 0.5 × standby qps 100.00",
			"lag_high: p99 120000 ms > limit 60000 ms",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self := window()
			tc.breaks(&self)
			v := Evaluate(r, k, self, window())
			if v.Healthy != (len(tc.reasons) == 0) {
				t.Fatalf("healthy=%v with %v", v.Healthy, v.ReasonStrings())
			}
			if got := strings.Join(v.ReasonStrings(), "\n"); got != strings.Join(tc.reasons, "\n") {
				t.Fatalf("reasons:\n%s\nwant:\n%s", got, strings.Join(tc.reasons, "\n"))
			}
			if v.Key != k || !v.WindowStart.Equal(t0) {
				t.Fatalf("verdict of %v from %v", v.Key, v.WindowStart)
			}
		})
	}
}

func TestRuleAndKindNames(t *testing.T) {
	var names []string
	for _, r := range AllRules() {
		names = append(names, r.String())
	}
	if got := strings.Join(names, ","); got != "no_heartbeat,partitions_uncovered,input_rate_low,lag_high" {
		t.Fatal(got)
	}
	if Rule(0).String() != "unknown" || Kind(0).String() != "unknown" || Outcome(0).String() != "unknown" {
		t.Fatal("zero enums must read as unknown")
	}
	if KindFailover.String() != "failover" || KindReturn.String() != "return" || OutcomeDuplicate.String() != "duplicate" {
		t.Fatal("names drifted")
	}
}
