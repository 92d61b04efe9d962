package pipeline

import (
	"time"

	"github.com/hotpair/hotpair/contract"
)

// campaignDay is one local day of a campaign's time zone.
type campaignDay struct {
	Date  string    // YYYY-MM-DD
	Start time.Time // local midnight
	End   time.Time // next local midnight (23 or 25 hours later on DST days)
}

// dayOf returns the local day of t in loc.
func dayOf(t time.Time, loc *time.Location) campaignDay {
	l := t.In(loc)
	y, m, d := l.Date()
	start := time.Date(y, m, d, 0, 0, 0, 0, loc)
	return campaignDay{
		Date:  start.Format(time.DateOnly),
		Start: start,
		End:   time.Date(y, m, d+1, 0, 0, 0, 0, loc),
	}
}

// fraction is the part of the day elapsed at t, in [0,1].
func (d campaignDay) fraction(t time.Time) float64 {
	f := float64(t.Sub(d.Start)) / float64(d.End.Sub(d.Start))
	return min(max(f, 0), 1)
}

// zoneOf returns the time zone of a budget row, UTC without one.
func zoneOf(tz string) *time.Location {
	if tz == "" {
		return time.UTC
	}
	l, err := contract.LoadZone(tz)
	if err != nil {
		return time.UTC
	}
	return l
}
