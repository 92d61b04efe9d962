package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Evaluate judges one (service, side) over a closed window: every rule is
// checked, every failing one is kept with its numbers, in order of
// severity. other is the same service's window on the other side (the input
// rate is judged against it).
func Evaluate(r Rules, k Key, self, other WindowStats) Verdict {
	v := Verdict{Key: k, WindowStart: self.Start, WindowEnd: self.End, Stats: self}
	checks := []func() (Reason, bool){
		func() (Reason, bool) { return noHeartbeat(r, self) },
		func() (Reason, bool) { return partitionsUncovered(r, self) },
		func() (Reason, bool) { return inputRateLow(r, self, other, k.Side.Other()) },
		func() (Reason, bool) { return lagHigh(r, self) },
	}
	for _, check := range checks {
		if reason, failing := check(); failing {
			v.Reasons = append(v.Reasons, reason)
		}
	}
	v.Healthy = len(v.Reasons) == 0
	v.CatchingUp, _ = catchingUp(r, self)
	return v
}

// catchingUp: the side is behind — its end-to-end p99 lag, or its
// aggregator's, is above CatchUpLag — so it is draining a backlog or falling
// behind. Not a failing rule on its own (lag_high judges how far behind is
// too far), but such a side is no reference for the other side's input
// rate, does not count as healthy for the grace clock, and is no failover
// target for a side that only lags too (see Step). It returns the evidence,
// "" when the side keeps up.
func catchingUp(r Rules, s WindowStats) (string, bool) {
	limit := r.CatchUpLag.Milliseconds()
	if limit <= 0 || max(s.LagP99Ms, s.UpstreamLagP99Ms) <= limit {
		return "", false
	}
	if s.UpstreamLagP99Ms > s.LagP99Ms {
		return fmt.Sprintf("aggregator lag p99 %s > catch_up_lag %d ms (own %s)",
			formatLag(s.UpstreamLagP99Ms), limit, formatLag(s.LagP99Ms)), true
	}
	return fmt.Sprintf("lag p99 %s > catch_up_lag %d ms", formatLag(s.LagP99Ms), limit), true
}

// noHeartbeat: no sample arrived for HeartbeatMissed × SampleInterval
// before the window's end.
func noHeartbeat(r Rules, s WindowStats) (Reason, bool) {
	limit := r.HeartbeatTimeout()
	if s.LastSample.IsZero() {
		return Reason{RuleNoHeartbeat, fmt.Sprintf("no sample received yet (limit %s = %d × %s)",
			limit, r.HeartbeatMissed, r.SampleInterval)}, true
	}
	if silent := s.End.Sub(s.LastSample); silent > limit {
		return Reason{RuleNoHeartbeat, fmt.Sprintf("last sample %s ago > limit %s (%d × %s)",
			silent.Round(time.Millisecond), limit, r.HeartbeatMissed, r.SampleInterval)}, true
	}
	return Reason{}, false
}

// partitionsUncovered: the live instances' assigned partitions have left
// some input partitions out for longer than PartitionGrace. A normal goka
// rebalance unassigns partitions for 5-16 s and so stays under the grace.
func partitionsUncovered(r Rules, s WindowStats) (Reason, bool) {
	if s.UnassignedCount == 0 || s.UnassignedSince.IsZero() {
		return Reason{}, false
	}
	gap := s.End.Sub(s.UnassignedSince)
	if gap <= r.PartitionGrace {
		return Reason{}, false
	}
	return Reason{RulePartitionsUncovered, fmt.Sprintf("%d of %d partitions unassigned for %s > grace %s (partitions %s)",
		s.UnassignedCount, s.TopicPartitions, gap.Round(time.Millisecond), r.PartitionGrace,
		partitionList(s.Unassigned, s.UnassignedCount))}, true
}

// inputRateLow: the side's QPS is below RateRatio × the other side's QPS,
// judged only when the other side has at least RateReference QPS. Both
// sides low together is a change of upstream traffic, not a fault. A side
// catching up after a stall or an outage runs above the input rate for a
// while, which says nothing about the other side: while the other side is
// catching up (its p99 lag, or its aggregator's, above CatchUpLag) only a
// side with next to no input (under RateReference) is low — a stalled side
// must not look healthy because the other one drains a backlog.
//
// Traffic starting or stopping upstream is not judged either: when both
// sides' rates fell below RateRatio × their previous window's, or both rose
// from under RateReference, the sides see the last or first burst of it up
// to a window apart (a service's input arrives in bursts, one per aggregator
// window close, and a monitor window's boundary may fall between the two
// sides' bursts). A side that really lost its input in such a window is
// judged in the next one. A stalled side does not escape: its rate was
// already low, so it does not fall with the other side's.
func inputRateLow(r Rules, self, other WindowStats, otherName contract.Side) (Reason, bool) {
	if other.QPS < r.RateReference {
		return Reason{}, false
	}
	if upstreamChange(r, self, other) {
		return Reason{}, false
	}
	if _, behind := catchingUp(r, other); behind && self.QPS >= r.RateReference {
		return Reason{}, false
	}
	if threshold := r.RateRatio * other.QPS; self.QPS < threshold {
		return Reason{RuleInputRateLow, fmt.Sprintf("qps %s < %g × %s qps %s",
			formatQPS(self.QPS), r.RateRatio, otherName, formatQPS(other.QPS))}, true
	}
	return Reason{}, false
}

// upstreamChange: both sides' input fell by more than a factor 1/RateRatio
// since their previous window, or both started from under RateReference.
func upstreamChange(r Rules, a, b WindowStats) bool {
	if !a.HasPrev || !b.HasPrev {
		return false
	}
	fell := func(s WindowStats) bool { return s.QPS < r.RateRatio*s.PrevQPS }
	started := func(s WindowStats) bool { return s.PrevQPS < r.RateReference }
	return fell(a) && fell(b) || started(a) && started(b)
}

// lagHigh: the merged p99 end-to-end event lag is above LagLimit.
func lagHigh(r Rules, s WindowStats) (Reason, bool) {
	limit := r.LagLimit.Milliseconds()
	if s.LagP99Ms <= limit {
		return Reason{}, false
	}
	return Reason{RuleLagHigh, fmt.Sprintf("p99 %s > limit %d ms", formatLag(s.LagP99Ms), limit)}, true
}

// formatLag writes a merged p99 lag in milliseconds ("75000 ms"), or says
// it is beyond the histogram's last bound.
func formatLag(ms int64) string {
	if ms == math.MaxInt64 {
		return fmt.Sprintf("above %d ms", contract.LagBounds[len(contract.LagBounds)-1])
	}
	return strconv.FormatInt(ms, 10) + " ms"
}

func formatQPS(q float64) string { return strconv.FormatFloat(q, 'f', 2, 64) }

func partitionList(ps []int32, total int) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(p)))
	}
	if total > len(ps) {
		fmt.Fprintf(&b, ",… %d more", total-len(ps))
	}
	return b.String()
}
