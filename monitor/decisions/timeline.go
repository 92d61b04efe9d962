package decisions

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Merge returns the entries of every list (e.g. the copies read from both
// clusters) with each id once, in time order. Of two entries with the same
// id it keeps the one recorded first (the earlier RecordedAt; the first
// seen when they tie), so a retry or a rewrite never shows twice and the
// result does not depend on which cluster answered first.
func Merge(lists ...[]Entry) []Entry {
	byID := map[string]int{}
	var out []Entry
	for _, l := range lists {
		for _, e := range l {
			i, seen := byID[e.ID]
			switch {
			case !seen:
				byID[e.ID] = len(out)
				out = append(out, e)
			case e.RecordedAt.Before(out[i].RecordedAt):
				out[i] = e
			}
		}
	}
	Sort(out)
	return out
}

// Sort orders entries by time; entries of the same instant in the order of
// Kinds (a window before the switch it caused), then by id.
func Sort(es []Entry) {
	slices.SortStableFunc(es, Compare)
}

// Compare is the order of Sort.
func Compare(a, b Entry) int {
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	if c := cmp.Compare(slices.Index(Kinds(), a.Kind), slices.Index(Kinds(), b.Kind)); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// Filter selects entries.
type Filter struct {
	// Service: only this service (unset: every service).
	Service contract.Service
	// Since and Until bound At (inclusive; zero: unbounded).
	Since, Until time.Time
	// Kinds: only these kinds (none: every kind).
	Kinds []Kind
}

// Match reports whether e passes the filter.
func (f Filter) Match(e *Entry) bool {
	return (f.Service == 0 || e.Service == f.Service) &&
		(f.Since.IsZero() || !e.At.Before(f.Since)) &&
		(f.Until.IsZero() || !e.At.After(f.Until)) &&
		(len(f.Kinds) == 0 || slices.Contains(f.Kinds, e.Kind))
}

// Apply returns the entries that pass the filter, in their order.
func (f Filter) Apply(es []Entry) []Entry {
	out := []Entry{}
	for i := range es {
		if f.Match(&es[i]) {
			out = append(out, es[i])
		}
	}
	return out
}

// ParseKinds reads a comma-separated list of kinds ("" is none: every kind).
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !slices.Contains(Kinds(), Kind(k)) {
			return nil, fmt.Errorf("%q is not a kind (%v)", k, Kinds())
		}
		out = append(out, Kind(k))
	}
	return out, nil
}

// ParseTime reads a point in time as operators write it: a duration back
// from now ("12h" or "-12h"), "now", or an RFC 3339 time.
func ParseTime(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); err == nil && d >= 0 && !strings.HasPrefix(s, "+") {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration back from now (12h or -12h) nor an RFC 3339 time", s)
	}
	return t, nil
}
