package decisions

import (
	"fmt"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Changes returns the entries for what changed between the selection
// persisted before (nil: none, this is the service's first decision) and
// next, persisted now: a switch of the active side (cause says why:
// failover, return, override or initial), degraded on or off, an override
// applied or ended, the stagger flag raised or cleared. Nothing changed:
// no entry. RecordedBy and RecordedAt are left for the writer.
func Changes(prev *contract.Selection, next contract.Selection, cause string) []Entry {
	base := Entry{V: Version, Service: next.Service, Epoch: next.Epoch, At: next.DecidedAt, Selection: next}
	var out []Entry
	if prev == nil || prev.Active != next.Active {
		e := base
		e.Kind, e.ID, e.To, e.Cause, e.Detail = KindSwitch, SwitchID(next.Service, next.Epoch), next.Active, cause, next.Reason
		if prev == nil {
			e.Cause = "initial"
		} else {
			e.From = prev.Active
		}
		if !next.LastSwitch.IsZero() {
			e.At = next.LastSwitch
		}
		out = append(out, e)
	}
	was := prev
	if was == nil {
		was = &contract.Selection{}
	}
	if was.Degraded != next.Degraded {
		detail := "both sides unhealthy: " + next.Reason
		if !next.Degraded {
			detail = "no longer degraded: " + next.Reason
		}
		out = append(out, flag(base, KindDegraded, next.Degraded, detail))
	}
	if !sameOverride(was.Override, next.Override) {
		if o := next.Override; o != nil {
			out = append(out, flag(base, KindOverride, true, fmt.Sprintf("operator override to %s by %s until %s: %s",
				o.Side, o.By, o.Until.UTC().Format(time.RFC3339), o.Reason)))
		} else {
			o := was.Override
			out = append(out, flag(base, KindOverride, false, fmt.Sprintf("override to %s by %s ended (until %s); %s",
				o.Side, o.By, o.Until.UTC().Format(time.RFC3339), next.Reason)))
		}
	}
	if (was.StaggerViolation != "") != (next.StaggerViolation != "") {
		detail := next.StaggerViolation
		if detail == "" {
			detail = "stagger violation over: " + was.StaggerViolation
		}
		out = append(out, flag(base, KindStagger, next.StaggerViolation != "", detail))
	}
	return out
}

func flag(base Entry, kind Kind, on bool, detail string) Entry {
	e := base
	e.Kind, e.On, e.Detail, e.ID = kind, &on, detail, FlagID(base.Service, base.Epoch, kind, on, base.At)
	return e
}

func sameOverride(a, b *contract.Override) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Side == b.Side && a.Until.Equal(b.Until) && a.Reason == b.Reason && a.By == b.By
}

// WindowEntry returns the entry of one window of sel.Service that ended at
// end: both sides' verdicts and sel, the selection decided with it.
func WindowEntry(sel contract.Selection, start, end time.Time, verdicts map[contract.Side]Verdict, th Thresholds) Entry {
	w := &Window{Start: start, End: end, Verdicts: verdicts, Decision: th}
	return Entry{V: Version, ID: WindowID(sel.Service, sel.Epoch, end), Kind: KindWindow, Service: sel.Service,
		At: end, Epoch: sel.Epoch, Detail: w.Summary(sel.Active), Selection: sel, Window: w}
}
