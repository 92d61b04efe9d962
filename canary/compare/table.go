package compare

import (
	"fmt"
	"time"

	"github.com/hotpair/hotpair/canary/outdiff"
)

// outputKey is one campaign's row of one output.
type outputKey struct{ output, campaign string }

// version is when a pipeline's latest value of a row arrived and was
// written, and the newest spend window it follows from (zero: the value
// does not say); seq numbers the values, so a round knows what it
// compared, and n counts the row's values.
type version struct {
	received, updated, window time.Time
	seq, n                    uint64
}

// table is one pipeline's latest output values, with their versions.
type table struct {
	out outdiff.Outputs
	ver map[outputKey]version
	seq uint64
	// windows: the pipeline writes last_window_start (a value with it has
	// been seen), so a value without it has applied no spend window yet.
	windows bool
}

func newTable() *table { return &table{out: outdiff.NewOutputs(), ver: map[outputKey]version{}} }

func (t *table) add(output, key string, value []byte, at time.Time) error {
	switch output {
	case outdiff.BudgetStatus, outdiff.Pacing, outdiff.BidMultipliers:
	default:
		return fmt.Errorf("%w: %q", ErrNotOutput, output)
	}
	if err := t.out.Add(output, key, value); err != nil {
		return err
	}
	t.seq++
	k := outputKey{output, key}
	updated, window := t.times(output, key)
	t.ver[k] = version{received: at, updated: updated, window: window, seq: t.seq, n: t.ver[k].n + 1}
	t.windows = t.windows || !window.IsZero()
	return nil
}

// times are the updated_at and last_window_start of a row's latest value.
func (t *table) times(output, key string) (updated, window time.Time) {
	switch output {
	case outdiff.BudgetStatus:
		s := t.out.Status[key]
		return s.UpdatedAt, s.LastWindowStart
	case outdiff.Pacing:
		p := t.out.Pacing[key]
		return p.UpdatedAt, p.LastWindowStart
	}
	m := t.out.Bid[key]
	return m.UpdatedAt, m.LastWindowStart
}

// diffs compares row k of a (the baseline: live, or the primary) with b's.
func diffs(a, b *table, k outputKey, tol outdiff.Tolerances) []outdiff.Diff {
	switch k.output {
	case outdiff.BudgetStatus:
		return outdiff.StatusDiffs(a.out.Status[k.campaign], b.out.Status[k.campaign])
	case outdiff.Pacing:
		return outdiff.PacingDiffs(a.out.Pacing[k.campaign], b.out.Pacing[k.campaign], tol)
	}
	return outdiff.BidDiffs(a.out.Bid[k.campaign], b.out.Bid[k.campaign], tol)
}

// prune forgets rows not updated since from: no round compares them again.
func (t *table) prune(from time.Time) {
	t.pruneIf(from, func(outputKey) bool { return true })
}

// forget drops every row of campaign.
func (t *table) forget(campaign string) {
	for _, o := range outputs {
		t.drop(outputKey{o, campaign})
	}
}

// pruneIf forgets the rows not updated since from for which drop holds.
func (t *table) pruneIf(from time.Time, drop func(outputKey) bool) {
	for k, v := range t.ver {
		if v.received.Before(from) && drop(k) {
			t.drop(k)
		}
	}
}

// drop forgets row k.
func (t *table) drop(k outputKey) {
	delete(t.ver, k)
	switch k.output {
	case outdiff.BudgetStatus:
		delete(t.out.Status, k.campaign)
	case outdiff.Pacing:
		delete(t.out.Pacing, k.campaign)
	default:
		delete(t.out.Bid, k.campaign)
	}
}

// aligned reports whether row k can be compared between a and b at now:
// both have it, neither changed within settle, both were written within
// maxSkew of each other, and both follow from the same newest spend window
// (none: no spend yet) where both pipelines say which. Where one does not
// (a build before last_window_start), the skew alone stands for it: a
// pipeline more than half a window behind the other (max_skew is half a
// window) writes window W about when the other writes W+1, and such a pair
// read as the build's difference.
func aligned(a, b *table, k outputKey, now time.Time, r Rules) (va, vb version, ok bool) {
	va, okA := a.ver[k]
	vb, okB := b.ver[k]
	if !okA || !okB {
		return va, vb, false
	}
	settled := now.Sub(va.received) >= r.Settle && now.Sub(vb.received) >= r.Settle
	skew := va.updated.Sub(vb.updated)
	sameWindow := !a.windows || !b.windows || va.window.Equal(vb.window)
	return va, vb, settled && skew <= r.MaxSkew && -skew <= r.MaxSkew && sameWindow
}
