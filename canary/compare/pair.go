package compare

import (
	"fmt"
	"math"
	"time"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
)

// pairState is what the comparison of two pipelines (dark and live, or
// primary and standby) keeps per campaign between rounds.
//
// Two pipelines' states of a campaign are in sync when their spend today
// is equal. A dark copy that began (or was paused) mid-day is not: its
// spend lacks what live spent before, by a constant, until the campaign's
// next day. So spend
// is compared by increments (what each update added since the last
// compared one: both pipelines apply the same spend windows), and status,
// day, pacing and bid multiplier, which follow from the spend, only while
// the campaign is in sync.
type pairState struct {
	// last are the versions of each row last compared: a row counts again
	// only when one of its values changed.
	last map[outputKey][2]uint64
	// spend is each campaign's last compared spend on both pipelines.
	spend map[string]spendMark
	// synced says whether the campaign's spend today was equal then.
	synced map[string]bool
	// resumed are the campaigns whose copy resumed after a gap, with the
	// campaign-local day it did: their pacing and bids are not compared
	// through that day (targetState.sample).
	resumed map[string]string
	// diffs are each row's differences at its last compared point.
	diffs map[outputKey][]outdiff.Diff
	// pending are the baseline's values of sampled campaigns the other
	// pipeline has not matched yet; judged the last judged value's seq,
	// lacks whether the other pipeline lacked it.
	pending map[outputKey]*pendingMiss
	judged  map[outputKey]uint64
	lacks   map[outputKey]bool
	// from is when the comparison (re)started: values before it are
	// neither compared nor judged missing (a target compared afresh: see
	// targetState.again and before).
	from time.Time
}

type spendMark struct {
	dayA, dayB           string
	todayA, todayB       int64
	lifetimeA, lifetimeB int64
	nA, nB               uint64 // the rows' value counts (version.n)
}

func newPairState() *pairState {
	return &pairState{last: map[outputKey][2]uint64{}, spend: map[string]spendMark{}, synced: map[string]bool{}, resumed: map[string]string{},
		diffs: map[outputKey][]outdiff.Diff{}, pending: map[outputKey]*pendingMiss{}, judged: map[outputKey]uint64{},
		lacks: map[outputKey]bool{}}
}

// point compares row k of a (the baseline) with b's when both are aligned
// and one of them changed since the last point. since is when k's campaign
// went dark (zero: b gets every campaign). It returns the differences and
// the fields compared (none when the row is no point now).
func (ps *pairState) point(a, b *table, k outputKey, since, now time.Time, r Rules, tol outdiff.Tolerances) ([]outdiff.Diff, []string) {
	va, vb, ok := aligned(a, b, k, now, r)
	pair := [2]uint64{va.seq, vb.seq}
	if !ok || ps.last[k] == pair || ps.before(va, since, r) || ps.before(vb, since, r) {
		return nil, nil
	}
	var ds []outdiff.Diff
	var fields []string
	if k.output == outdiff.BudgetStatus {
		ds, fields = ps.status(k.campaign, a.out.Status[k.campaign], b.out.Status[k.campaign], va.n, vb.n)
	} else if ps.synced[k.campaign] && !ps.resumedToday(k.campaign) {
		ds, fields = diffs(a, b, k, tol), []string{valueField(k.output)}
	} else {
		return nil, nil // not in sync: compared once it is (the row is examined again)
	}
	ps.last[k], ps.diffs[k] = pair, ds
	return ds, fields
}

// status compares two budget statuses: status and day while the campaign
// is in sync, the spends by what they added since the last point. nA and
// nB count each row's values, one per spend window and budget row applied:
// when the two wrote different numbers since the last point, they applied
// different inputs in between — a dark copy paused (cleared and set again,
// or dead for a while: the missing values say whether it lacks windows
// while it writes others), or resumed with its budget rows sent again — so
// the spends they added are not the same windows: that update is the new
// starting point, and the next ones are compared again.
func (ps *pairState) status(campaign string, x, y contract.BudgetStatus, nA, nB uint64) ([]outdiff.Diff, []string) {
	var ds []outdiff.Diff
	var fields []string
	synced := x.SpentTodayMicros == y.SpentTodayMicros
	if synced {
		fields = append(fields, "status", "day")
		for _, d := range outdiff.StatusDiffs(x, y) {
			if d.Field == "status" || d.Field == "day" {
				ds = append(ds, d)
			}
		}
	}
	if prev, ok := ps.spend[campaign]; ok && prev.fedAlike(nA, nB) {
		fields = append(fields, "spent_lifetime_micros")
		ds = append(ds, increment(campaign, "spent_lifetime_micros", x.SpentLifetimeMicros-prev.lifetimeA, y.SpentLifetimeMicros-prev.lifetimeB)...)
		if prev.dayA == x.Day && prev.dayB == y.Day {
			fields = append(fields, "spent_today_micros")
			ds = append(ds, increment(campaign, "spent_today_micros", x.SpentTodayMicros-prev.todayA, y.SpentTodayMicros-prev.todayB)...)
		}
	}
	ps.spend[campaign] = spendMark{dayA: x.Day, dayB: y.Day, todayA: x.SpentTodayMicros, todayB: y.SpentTodayMicros,
		lifetimeA: x.SpentLifetimeMicros, lifetimeB: y.SpentLifetimeMicros, nA: nA, nB: nB}
	ps.synced[campaign] = synced
	return ds, fields
}

// resumedToday reports whether campaign's copy resumed after a gap on its
// current day (live's, at its last compared status; unknown counts as the
// same day), and forgets the gap once that day is over.
func (ps *pairState) resumedToday(campaign string) bool {
	day, ok := ps.resumed[campaign]
	if !ok {
		return false
	}
	if cur := ps.spend[campaign].dayA; cur > day {
		delete(ps.resumed, campaign)
		return false
	}
	return true
}

// resumedNow counts the campaigns whose pacing and bids wait for their
// next day (resumedToday), forgetting those whose day is over.
func (ps *pairState) resumedNow() int {
	n := 0
	for c := range ps.resumed {
		if ps.resumedToday(c) {
			n++
		}
	}
	return n
}

// before reports whether v follows from what a copy may lack: input from
// before the comparison (re)started (ps.from: a target set again, or back
// from a silence) or before v's campaign went dark (since: a target started,
// or its multiplier raised, mid-stream; zero for a pipeline that gets every
// campaign). Such a value is neither compared nor judged missing, and the
// spend's increments start from the first value after it.
//
// A value that says its window follows from input before t when that
// window began before t + max_skew (a window beginning half a window after
// the copy started is copied whole). One that does not (a build before
// last_window_start, or no spend yet) is judged by when it was written,
// against ps.from alone: before ps.from + 3 × max_skew, a window and its
// lateness by default (shorter when the lateness is above half a window).
func (ps *pairState) before(v version, since time.Time, r Rules) bool {
	if !v.window.IsZero() {
		start := ps.from
		if since.After(start) {
			start = since
		}
		return !start.IsZero() && v.window.Before(start.Add(r.MaxSkew))
	}
	return !ps.from.IsZero() && v.updated.Before(ps.from.Add(3*r.MaxSkew))
}

// fedAlike reports whether both pipelines wrote as many values of the row
// since m (counts that went back, a row forgotten and read again, start
// over).
func (m spendMark) fedAlike(nA, nB uint64) bool {
	return nA >= m.nA && nB >= m.nB && nA-m.nA == nB-m.nB
}

// increment is the difference of what two pipelines added to a spend.
func increment(campaign, field string, a, b int64) []outdiff.Diff {
	if a == b {
		return nil
	}
	return []outdiff.Diff{{Output: outdiff.BudgetStatus, Key: campaign, Field: field,
		Baseline: fmt.Sprintf("%+d", a), Candidate: fmt.Sprintf("%+d", b), Size: math.Abs(float64(a - b)),
		Detail: "spend added since the last compared update"}}
}

// valueField is the compared field of the pacing and bid outputs.
func valueField(output string) string {
	if output == outdiff.Pacing {
		return "rate"
	}
	return "multiplier"
}

// forget drops what the state keeps of rows no longer in keep.
func (ps *pairState) forget(keep func(outputKey) bool) {
	for k := range ps.last {
		if !keep(k) {
			delete(ps.last, k)
			delete(ps.diffs, k)
		}
	}
	for c := range ps.spend {
		if !keep(outputKey{outdiff.BudgetStatus, c}) {
			delete(ps.spend, c)
			delete(ps.synced, c)
		}
	}
	for c := range ps.resumed {
		if !keep(outputKey{outdiff.BudgetStatus, c}) {
			delete(ps.resumed, c)
		}
	}
}
