// Package outdiff compares the service outputs of two pipelines (budget-status,
// pacing, bid-multipliers) campaign by campaign and field by field. It is the
// one comparison of hotpair's two ways of testing a build on real traffic:
// `hotpair replay verify` (a candidate against a baseline on a recording) and
// the dark canary's comparator (a dark target against live, and primary
// against standby for the noise floor).
//
// Budget status fields are compared exactly; the pacing rate within an
// absolute tolerance; the bid multiplier within a relative one.
package outdiff

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/hotpair/hotpair/contract"
)

// The outputs, by the names of their topics.
const (
	BudgetStatus   = "budget-status"
	Pacing         = "pacing"
	BidMultipliers = "bid-multipliers"
)

// Field is one compared field of an output.
type Field struct {
	Output string `json:"output"`
	Name   string `json:"field"`
	// Exact fields differ at any difference; the others beyond a tolerance.
	Exact bool `json:"exact"`
}

// Fields lists every compared field, in report order.
func Fields() []Field {
	return []Field{
		{BudgetStatus, "status", true}, {BudgetStatus, "day", true},
		{BudgetStatus, "spent_today_micros", true}, {BudgetStatus, "spent_lifetime_micros", true},
		{Pacing, "rate", false}, {BidMultipliers, "multiplier", false},
	}
}

// Diff is one field of one campaign that differs between the two pipelines.
type Diff struct {
	Output    string `json:"output"` // budget-status, pacing or bid-multipliers
	Key       string `json:"key"`
	Field     string `json:"field"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	Detail    string `json:"detail,omitempty"`
	// Size is how much the values differ: |a − b| for the pacing rate, the
	// relative difference for the bid multiplier, the absolute difference for
	// an amount, 1 for a differing word; 0 for a key on one side only.
	Size float64 `json:"-"`
}

// Tolerances say how far two values may be apart and still be equal.
type Tolerances struct {
	// PacingRateAbs is the largest |a − b| of a campaign's pacing rate (0..1).
	PacingRateAbs float64
	// BidMultiplierRel is the largest relative difference of a campaign's bid
	// multiplier.
	BidMultiplierRel float64
}

// Outputs are the last value per campaign of the three service outputs of
// one pipeline (the topics are compacted: the last value is the state).
type Outputs struct {
	Status map[string]contract.BudgetStatus
	Pacing map[string]contract.Pacing
	Bid    map[string]contract.BidMultiplier
}

// NewOutputs returns empty outputs.
func NewOutputs() Outputs {
	return Outputs{Status: map[string]contract.BudgetStatus{}, Pacing: map[string]contract.Pacing{}, Bid: map[string]contract.BidMultiplier{}}
}

// Add decodes value as output's record for key and keeps it as the key's
// latest. A value that does not decode is returned as an error and kept out.
func (o Outputs) Add(output, key string, value []byte) error {
	var err error
	switch output {
	case BudgetStatus:
		var v contract.BudgetStatus
		if v, err = contract.DecodeBudgetStatus(value); err == nil {
			o.Status[key] = v
		}
	case Pacing:
		var v contract.Pacing
		if v, err = contract.DecodePacing(value); err == nil {
			o.Pacing[key] = v
		}
	case BidMultipliers:
		var v contract.BidMultiplier
		if v, err = contract.DecodeBidMultiplier(value); err == nil {
			o.Bid[key] = v
		}
	default:
		err = fmt.Errorf("outdiff: %q is not an output", output)
	}
	return err
}

// Compare compares two pipelines' outputs key by key, in output then key
// order. A key present on one side only is a difference (field "key").
func Compare(base, cand Outputs, tol Tolerances) []Diff {
	var out []Diff
	out = append(out, compareKeyed(BudgetStatus, base.Status, cand.Status, StatusDiffs)...)
	out = append(out, compareKeyed(Pacing, base.Pacing, cand.Pacing, func(a, b contract.Pacing) []Diff { return PacingDiffs(a, b, tol) })...)
	out = append(out, compareKeyed(BidMultipliers, base.Bid, cand.Bid, func(a, b contract.BidMultiplier) []Diff { return BidDiffs(a, b, tol) })...)
	return out
}

// StatusDiffs compares two budget statuses: status, day and both spends
// must be equal.
func StatusDiffs(a, b contract.BudgetStatus) []Diff {
	var out []Diff
	word := func(field, x, y string) {
		if x != y {
			out = append(out, Diff{Output: BudgetStatus, Key: a.Campaign, Field: field, Baseline: x, Candidate: y, Size: 1})
		}
	}
	amount := func(field string, x, y int64) {
		if x != y {
			out = append(out, Diff{Output: BudgetStatus, Key: a.Campaign, Field: field,
				Baseline: strconv.FormatInt(x, 10), Candidate: strconv.FormatInt(y, 10), Size: math.Abs(float64(x - y))})
		}
	}
	word("status", a.Status, b.Status)
	word("day", a.Day, b.Day)
	amount("spent_today_micros", a.SpentTodayMicros, b.SpentTodayMicros)
	amount("spent_lifetime_micros", a.SpentLifetimeMicros, b.SpentLifetimeMicros)
	return out
}

// PacingDiffs compares two pacing rates within tol.PacingRateAbs.
func PacingDiffs(a, b contract.Pacing, tol Tolerances) []Diff {
	if d := math.Abs(a.Rate - b.Rate); d > tol.PacingRateAbs {
		return []Diff{{Output: Pacing, Key: a.Campaign, Field: "rate", Baseline: FormatFloat(a.Rate), Candidate: FormatFloat(b.Rate), Size: d,
			Detail: fmt.Sprintf("differs by %.4f, tolerance %.4f", d, tol.PacingRateAbs)}}
	}
	return nil
}

// BidDiffs compares two bid multipliers within tol.BidMultiplierRel.
func BidDiffs(a, b contract.BidMultiplier, tol Tolerances) []Diff {
	if d := RelDiff(a.Multiplier, b.Multiplier); d > tol.BidMultiplierRel {
		return []Diff{{Output: BidMultipliers, Key: a.Campaign, Field: "multiplier", Baseline: FormatFloat(a.Multiplier), Candidate: FormatFloat(b.Multiplier), Size: d,
			Detail: fmt.Sprintf("differs by %.2f%%, tolerance %.2f%%", 100*d, 100*tol.BidMultiplierRel)}}
	}
	return nil
}

// compareKeyed compares two keyed outputs with cmp, in key order, and names
// output and key on every difference.
func compareKeyed[V any](output string, base, cand map[string]V, cmp func(a, b V) []Diff) []Diff {
	keys := slices.Sorted(maps.Keys(base))
	for k := range cand {
		if _, ok := base[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []Diff
	for _, k := range keys {
		a, inBase := base[k]
		b, inCand := cand[k]
		var ds []Diff
		switch {
		case !inCand:
			ds = []Diff{{Field: "key", Baseline: "present", Candidate: "missing"}}
		case !inBase:
			ds = []Diff{{Field: "key", Baseline: "missing", Candidate: "present"}}
		default:
			ds = cmp(a, b)
		}
		for i := range ds {
			ds[i].Output, ds[i].Key = output, k
		}
		out = append(out, ds...)
	}
	return out
}

// RelDiff is |a − b| relative to the larger magnitude (0 when equal).
func RelDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// FormatFloat prints a value of an output for a report.
func FormatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
