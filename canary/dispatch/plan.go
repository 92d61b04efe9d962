package dispatch

import (
	"fmt"
	"math"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Reason says why a target that should receive gets nothing.
type Reason string

// Pause reasons (the reason label of hotpair_dark_dispatch_paused).
const (
	// ReasonZKUnavailable: the ZooKeeper session is down; no document nor
	// count can be read.
	ReasonZKUnavailable Reason = "zk_unavailable"
	// ReasonBadDocument: the target's znode does not decode or validate.
	ReasonBadDocument Reason = "bad_document"
	// ReasonCountsUnreadable: reading the instance registry failed.
	ReasonCountsUnreadable Reason = "counts_unreadable"
	// ReasonNoLiveInstances: no live aggregator is registered, so the rate
	// formula divides by zero.
	ReasonNoLiveInstances Reason = "no_live_instances"
	// ReasonNoDarkInstances: no dark aggregator of the target is
	// registered: nothing would consume the copy. Not alerted on.
	ReasonNoDarkInstances Reason = "no_dark_instances"
)

// PauseReasons lists every reason, for metrics.
func PauseReasons() []Reason {
	return []Reason{ReasonZKUnavailable, ReasonBadDocument, ReasonCountsUnreadable, ReasonNoLiveInstances, ReasonNoDarkInstances}
}

// Counts are the aggregator instances of the live source cluster and of a
// dark target, as the registry lists them. Err is set when they could not
// be read.
type Counts struct {
	Live, Dark int
	Err        error
}

// Observed is what the follower read for one target: its document (nil with
// DocErr when it did not decode) and, for a relative target, the counts.
type Observed struct {
	Name   string
	Doc    *contract.DarkTarget
	DocErr error
	Counts Counts
}

// Plan is what the dispatcher does for one target.
type Plan struct {
	Name string
	// Doc is the target's document (nil when it could not be read).
	Doc *contract.DarkTarget
	// Active: the document is enabled and not expired.
	Active bool
	// Fraction is the sampled fraction of campaigns (DarkCopies); 0 while
	// paused or inactive.
	Fraction float64
	// Expected is the fraction the target should get: Fraction, or while
	// paused the last one known (the multiplier when none was), so the
	// expected rate stays above zero and the alert fires.
	Expected float64
	// Paused is set when the target should receive but cannot be fed.
	Paused Reason
	// Detail explains Paused for the log and the status.
	Detail string
	// Live and Dark are the counts a relative target used.
	Live, Dark int
}

// Sending reports whether records go to the target.
func (p Plan) Sending() bool { return p.Active && p.Paused == "" && p.Fraction > 0 }

// PlanTarget decides one target at now from what was observed; last is the
// target's previous plan (zero when new), whose fraction stands in as the
// expected one while the target is paused. It is pure.
func PlanTarget(o Observed, last Plan, now time.Time) Plan {
	p := Plan{Name: o.Name, Doc: o.Doc}
	if o.Doc == nil {
		p.Active = true // unknown: a target that cannot be read is paused, not off
		return paused(p, last, ReasonBadDocument, fmt.Sprintf("the document does not decode: %v", o.DocErr))
	}
	d := *o.Doc
	p.Active = d.ActiveAt(now)
	if !p.Active {
		return p
	}
	switch d.Strategy {
	case contract.DarkIdentical:
		p.Fraction = d.Multiplier
	case contract.DarkConstant:
		p.Fraction = d.Multiplier
		if p.Fraction == 0 {
			p.Fraction = 1
		}
	case contract.DarkRelative:
		c := o.Counts
		p.Live, p.Dark = c.Live, c.Dark
		switch {
		case c.Err != nil:
			return paused(p, last, ReasonCountsUnreadable, fmt.Sprintf("reading the instance counts: %v", c.Err))
		case c.Live == 0:
			return paused(p, last, ReasonNoLiveInstances, "no live aggregator instance is registered: the rate formula divides by zero")
		case c.Dark == 0:
			p.Paused, p.Detail = ReasonNoDarkInstances, "no dark aggregator instance is registered: nothing consumes the copy"
			return p
		}
		p.Fraction = RelativeFraction(d.Multiplier, c.Live, c.Dark)
	}
	p.Expected = p.Fraction
	return p
}

// RelativeFraction is a relative target's sampled fraction: multiplier ×
// dark / live, at most contract.MaxDarkMultiplier.
func RelativeFraction(multiplier float64, live, dark int) float64 {
	if live <= 0 || dark <= 0 {
		return 0
	}
	return math.Min(multiplier*float64(dark)/float64(live), contract.MaxDarkMultiplier)
}

func paused(p, last Plan, r Reason, detail string) Plan {
	p.Paused, p.Detail = r, detail
	p.Expected = last.Expected
	if p.Expected == 0 && p.Doc != nil {
		p.Expected = p.Doc.Multiplier
	}
	if p.Expected == 0 && last.Doc != nil {
		p.Expected = last.Doc.Multiplier
	}
	return p
}

// PausedAll is every last plan paused for reason (ZooKeeper is down): the
// documents are kept, nothing is sent.
func PausedAll(last map[string]Plan, r Reason, detail string) map[string]Plan {
	out := make(map[string]Plan, len(last))
	for name, l := range last {
		p := Plan{Name: name, Doc: l.Doc, Active: l.Active, Live: l.Live, Dark: l.Dark}
		if !p.Active {
			out[name] = p
			continue
		}
		out[name] = paused(p, l, r, detail)
	}
	return out
}
