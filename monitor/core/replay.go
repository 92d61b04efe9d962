package core

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// RecordedWindow is one window of one service as the decision record keeps
// it: both sides' verdicts, already judged by the rules, and the decision
// state the monitor persisted after deciding the window.
type RecordedWindow struct {
	Service    contract.Service
	Start, End time.Time
	// Verdicts by side.
	Verdicts map[contract.Side]RecordedVerdict
	// State is what the monitor persisted after the window (StateFromSelection):
	// the active side, epoch, healthy-since times, unhealthy-window counts and
	// the override in force.
	State State
	// Stagger is the stagger flag as recorded (not re-decided).
	Stagger bool
}

// RecordedVerdict is one side's recorded verdict.
type RecordedVerdict struct {
	Healthy bool
	// Reasons are the failing rules as "rule: numbers".
	Reasons []string
	// CatchingUp is the evidence that the side was behind ("" when it kept
	// up): a healthy side catching up does not run its grace clock.
	CatchingUp         string
	QPS                float64
	LagP99Ms           int64
	AggregatorLagP99Ms int64
	Build              string
}

// ReplayVerdicts re-decides recorded windows with other decision
// thresholds (grace, failover_after, preferred). The rules are not run
// again — the verdicts are the record's — so only the state machine's
// thresholds can differ from what the monitor used; a rule threshold
// (lag_limit, rate_ratio, heartbeat, window) needs the health samples
// (Simulate).
//
// Per service, windows are taken in the order of their end; a window that
// overlaps the previous one by more than half its length (a new leader's
// first window after a takeover) is a second judgement of the same span
// and is skipped. The replay starts from the state recorded with the first
// window — active side, healthy-since times, unhealthy-window counts —
// and decides every later window with cfg, applying the override recorded
// as in force at each window's end. Result.From is the first window's end;
// Windows counts the windows re-decided.
func ReplayVerdicts(cfg DecisionConfig, windows []RecordedWindow) (SimResult, error) {
	res := SimResult{DegradedWindows: map[contract.Service]int{}, StaggerWindows: map[contract.Service]int{},
		UnhealthyWindows: map[string]int{}, Final: map[contract.Service]State{}}
	bySvc := map[contract.Service][]*RecordedWindow{}
	for i := range windows {
		w := &windows[i]
		bySvc[w.Service] = append(bySvc[w.Service], w)
	}
	for _, svc := range contract.Services() {
		ws := distinctWindows(bySvc[svc])
		if len(ws) == 0 {
			continue
		}
		st := ws[0].State
		if res.From.IsZero() || ws[0].End.Before(res.From) {
			res.From = ws[0].End
		}
		for _, w := range ws[1:] {
			d := Step(cfg, st, Input{Verdicts: w.verdicts(), Override: w.State.Override}, w.End)
			st = d.State
			res.recordReplayed(w, d)
		}
		res.Final[svc] = st
	}
	if len(res.Final) == 0 {
		return SimResult{}, ErrEmptyHistory
	}
	slices.SortStableFunc(res.Switches, func(a, b Switch) int { return a.At.Compare(b.At) })
	return res, nil
}

// distinctWindows sorts one service's windows by end and drops those that
// judge mostly the same span as the window before.
func distinctWindows(ws []*RecordedWindow) []*RecordedWindow {
	slices.SortStableFunc(ws, func(a, b *RecordedWindow) int { return cmp.Compare(a.End.UnixNano(), b.End.UnixNano()) })
	var out []*RecordedWindow
	for _, w := range ws {
		if n := len(out); n > 0 {
			prev := out[n-1]
			if overlap := prev.End.Sub(w.Start); !w.End.After(prev.End) || overlap > w.End.Sub(w.Start)/2 {
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

func (r *SimResult) recordReplayed(w *RecordedWindow, d Decision) {
	r.Windows++
	if w.End.After(r.To) {
		r.To = w.End
	}
	for side, v := range w.Verdicts {
		if !v.Healthy {
			r.UnhealthyWindows[w.Service.String()+"/"+side.String()]++
		}
	}
	if d.State.Degraded {
		r.DegradedWindows[w.Service]++
	}
	if w.Stagger {
		r.StaggerWindows[w.Service]++
	}
	if d.Switched {
		r.Switches = append(r.Switches, Switch{Service: w.Service, At: w.End, From: d.From, To: d.State.Active,
			Kind: d.Kind, KindName: d.Kind.String(), Epoch: d.State.Epoch, Reason: d.Reason})
	}
}

// verdicts rebuilds the window's verdicts as the state machine reads them.
func (w *RecordedWindow) verdicts() map[contract.Side]Verdict {
	out := map[contract.Side]Verdict{}
	for side, rv := range w.Verdicts {
		v := Verdict{Key: Key{Service: w.Service.Stage(), Side: side}, WindowStart: w.Start, WindowEnd: w.End, Healthy: rv.Healthy,
			CatchingUp: rv.CatchingUp, Stats: WindowStats{Start: w.Start, End: w.End, QPS: rv.QPS, LagP99Ms: rv.LagP99Ms,
				UpstreamLagP99Ms: rv.AggregatorLagP99Ms}}
		if rv.Build != "" {
			v.Stats.Builds = []BuildSeen{{Build: rv.Build}}
		}
		for _, s := range rv.Reasons {
			v.Reasons = append(v.Reasons, ParseReason(s))
		}
		out[side] = v
	}
	return out
}

// ParseReason reads back a reason written as "rule: detail" (Reason.String).
// A rule this version does not know keeps the whole text as its detail.
func ParseReason(s string) Reason {
	name, detail, _ := strings.Cut(s, ": ")
	for _, r := range AllRules() {
		if r.String() == name {
			return Reason{Rule: r, Detail: detail}
		}
	}
	return Reason{Detail: s}
}
