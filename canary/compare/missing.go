package compare

import (
	"bytes"
	"strconv"
	"time"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
)

// missingValue stands for the value a pipeline did not write, and
// missingDetail marks such a difference.
const (
	missingValue  = "missing"
	missingDetail = "no value where the baseline has one"
)

// pendingMiss is a baseline value of a sampled campaign that the other
// pipeline has not matched yet.
type pendingMiss struct {
	seq uint64
	// due is when the other pipeline should have written its value: the
	// baseline's updated_at, or (dark) when the campaign went dark if later.
	due time.Time
	// evidence is the first round that saw the other pipeline write a
	// campaign sampled no earlier than this one, at or after due.
	evidence time.Time
	live     map[string]string // field → the baseline's value
}

// missing follows the baseline a's latest value of row k of a sampled
// campaign that b lacks. The campaign went dark at since (zero for the
// noise: both live sides get every campaign); sampled are every sampled
// campaign's times. It returns one difference per field of the output, the
// value missing on b, when b is known to be past it and still lacks it:
//
//   - b has no value of the row written at or after due − max_skew (one
//     within the skew is compared by point; a later one means b has the
//     campaign);
//   - b wrote the same output for a campaign sampled at the same time or
//     later (within max_skew) at or after due: b processed the input that
//     came with this campaign's, so it is not starting or catching up
//     before it;
//   - and still lacked it missingGrace after it first did so, having by then
//     written that output for such a campaign at or after due +
//     missingGrace: it went on without this value. A pipeline that stopped
//     in the middle of a window (some partitions written, others not) and
//     writes nothing more has shown no such thing; it goes stale instead.
//
// A baseline value is judged once; the next is taken once it is.
func (ps *pairState) missing(a, b *table, k outputKey, since time.Time, sampled map[string]time.Time, now time.Time, r Rules) []outdiff.Diff {
	va, ok := a.ver[k]
	if !ok {
		return nil
	}
	if ps.before(va, since, r) { // before the comparison (re)started, or the campaign went dark
		delete(ps.pending, k)
		ps.judged[k], ps.lacks[k] = va.seq, false
		return nil
	}
	matched := func(due time.Time) bool {
		vb, ok := b.ver[k]
		return ok && !vb.updated.Before(due.Add(-r.MaxSkew))
	}
	p := ps.pending[k]
	if p == nil {
		if ps.judged[k] == va.seq {
			return nil
		}
		due := va.updated
		if since.After(due) {
			due = since
		}
		if matched(due) { // the usual case: nothing to follow
			ps.judged[k], ps.lacks[k] = va.seq, false
			return nil
		}
		p = &pendingMiss{seq: va.seq, due: due, live: fieldValues(a, k)}
		ps.pending[k] = p
	}
	if matched(p.due) {
		delete(ps.pending, k)
		ps.judged[k], ps.lacks[k] = p.seq, false
		return nil
	}
	if p.evidence.IsZero() {
		if now.Sub(p.due) < r.MaxSkew || !wroteLater(b, k, p.due, sampled, r.MaxSkew) {
			return nil
		}
		p.evidence = now
	}
	if now.Sub(p.evidence) < missingGrace(r) || !wroteLater(b, k, p.due.Add(missingGrace(r)), sampled, r.MaxSkew) {
		return nil
	}
	delete(ps.pending, k)
	ps.judged[k], ps.lacks[k] = p.seq, true
	var ds []outdiff.Diff
	for _, f := range outdiff.Fields() {
		if f.Output == k.output {
			ds = append(ds, outdiff.Diff{Output: k.output, Key: k.campaign, Field: f.Name, Baseline: p.live[f.Name],
				Candidate: missingValue, Detail: missingDetail})
		}
	}
	return ds
}

// missingGrace is how long a value may still come after the other pipeline
// showed it is past it: a value within the skew arrives by max_skew and
// settles, and two more rounds allow for a round's granularity and for a
// partition processed a little after the others (docs/dark.md: 17s by
// default, 1.7 aggregator windows by default and in the sandbox).
func missingGrace(r Rules) time.Duration { return r.Settle + r.MaxSkew + 2*r.Interval }

// wroteLater reports whether b wrote output k.output, at or after due, for
// another campaign sampled no earlier than k's (within skew).
func wroteLater(b *table, k outputKey, due time.Time, sampled map[string]time.Time, skew time.Duration) bool {
	from := sampled[k.campaign].Add(-skew)
	for c, at := range sampled {
		if c == k.campaign || at.Before(from) {
			continue
		}
		if v, ok := b.ver[outputKey{k.output, c}]; ok && !v.updated.Before(due) {
			return true
		}
	}
	return false
}

// fieldValues are row k's compared fields as the report prints them.
func fieldValues(t *table, k outputKey) map[string]string {
	switch k.output {
	case outdiff.BudgetStatus:
		s := t.out.Status[k.campaign]
		return map[string]string{"status": s.Status, "day": s.Day, "spent_today_micros": strconv.FormatInt(s.SpentTodayMicros, 10),
			"spent_lifetime_micros": strconv.FormatInt(s.SpentLifetimeMicros, 10)}
	case outdiff.Pacing:
		return map[string]string{"rate": outdiff.FormatFloat(t.out.Pacing[k.campaign].Rate)}
	}
	return map[string]string{"multiplier": outdiff.FormatFloat(t.out.Bid[k.campaign].Multiplier)}
}

// isMissing reports whether d is a value missing on the candidate.
func isMissing(d outdiff.Diff) bool { return d.Detail == missingDetail }

// sample records that campaign went dark on the target at at (its latest
// budget row, row, its timestamp on the target's budgets topic, and why the
// dispatcher sent it), or, for a tombstone (row nil),
// that it no longer is (a campaign without a budget row included: the
// dispatcher sends it a tombstone too). Clones are not kept.
func (st *targetState) sample(campaign string, row []byte, reason contract.DarkRowReason, at time.Time) {
	if _, k := contract.DarkCampaignOf(campaign); k != 0 {
		return
	}
	if row == nil {
		delete(st.rows, campaign)
		// Taken out of the sample (a smaller multiplier): its copy ended,
		// in the middle of a window, so what the target writes of it from
		// now on lacks what came after, and is not compared (admit). The
		// round's prune forgets what the comparison kept of it.
		delete(st.sampled, campaign)
		st.left[campaign] = at
		st.table.forget(campaign)
		return
	}
	delete(st.left, campaign)
	prev, had := st.rows[campaign]
	st.rows[campaign] = bytes.Clone(row)
	same := had && bytes.Equal(prev, row) && at.After(st.sampled[campaign])
	switch {
	case same && (reason == contract.DarkRowSample || reason == contract.DarkRowUpdate):
		// Sent again for no gap: another dispatcher replica started and
		// sent the rows of every sampled campaign, as the first one did.
		// The copy goes on: nothing to start afresh.
		return
	case had && (reason == contract.DarkRowGap || reason == "" && same):
		// The copy had a gap (a dispatcher without the header: the same
		// row again means it started again or resumed the target). Its
		// copies that followed may have reached the dark aggregator
		// after it closed their windows: late spend, which the pacer
		// counts in the day's spend but not in its demand. With traffic
		// that does not follow the dark rate, a pacer keeps such a
		// difference for the rest of the day, so the campaign's pacing
		// and bids are not compared until its next day (spend and status
		// are: they do not depend on when the spend came).
		st.raw.resumed[campaign] = campaignDay(row, at)
		st.lastGap = at
	}
	// The latest row: after a gap the copy may lack what came before it, as
	// after a campaign first went dark. A budget changed by an operator
	// moves it too, and costs the window or two around the change.
	if last, ok := st.sampled[campaign]; !ok || at.After(last) {
		st.sampled[campaign] = at
		// Its spend is compared afresh: from the first update whose window
		// began after this row (pairState.before).
		delete(st.raw.spend, campaign)
		delete(st.raw.synced, campaign)
	}
}

// forgetMissing drops what the state follows of campaigns no longer sampled.
func (ps *pairState) forgetMissing(sampled func(campaign string) bool) {
	for k := range ps.pending {
		if !sampled(k.campaign) {
			delete(ps.pending, k)
		}
	}
	for k := range ps.judged {
		if !sampled(k.campaign) {
			delete(ps.judged, k)
			delete(ps.lacks, k)
		}
	}
}

// campaignDay is the campaign-local date of at, in the timezone of the
// campaign's budget row (UTC when the row does not say or cannot be read).
func campaignDay(row []byte, at time.Time) string {
	loc := time.UTC
	if b, err := contract.DecodeBudget(row); err == nil && b.Timezone != "" {
		if l, err := time.LoadLocation(b.Timezone); err == nil {
			loc = l
		}
	}
	return at.In(loc).Format(time.DateOnly)
}
