package compare

import (
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
)

// maxExamples is how many worst campaigns a field keeps per round and reports.
const maxExamples = 5

// targetState is what the engine keeps about one dark target.
type targetState struct {
	name   string
	source contract.Side
	table  *table
	health *healthLog
	// raw compares dark with live, noise primary with standby.
	raw, noise *pairState
	// campaigns were compared last at these times.
	campaigns map[string]time.Time
	// sampled are the campaigns the target was sent (the keys of its
	// budgets topic, clones left out), with when they first were.
	sampled map[string]time.Time
	// left are the campaigns taken out of the sample (a tombstone on the
	// target's budgets topic), when: their outputs are not compared, until
	// they are sent again (a row), or, for one without a budget row, until
	// it writes again more than stale later.
	left map[string]time.Time
	// lastGap is when the latest budget row with reason gap came, for any
	// campaign: the gap the copy of a campaign without a budget row (no
	// row to send again) may have had too (release).
	lastGap time.Time
	// rows are the sampled campaigns' latest budget rows.
	rows      map[string][]byte
	lastPoint time.Time
	// compared is when each field was last compared, dark against live.
	compared map[fieldKey]time.Time
	rounds   []round
	// held are the differences found and not counted yet (Rules.Hold);
	// withdrawn, the points a gap in the copy explained.
	held      []heldPoint
	withdrawn []withdrawal
	// again: the target was judged before, removed and set again, or
	// wrote nothing for longer than stale (its copy has a gap); its next
	// round starts the comparison afresh.
	again bool
	// lastOutput is when the target's latest output record arrived.
	lastOutput time.Time
	// stalled: the target wrote nothing for longer than Rules.silence
	// while its source side wrote (its copy stopped); back is when it
	// wrote again after its latest stall.
	stalled bool
	back    time.Time
}

// received notes that an output record of the target arrived at at: the
// first after a silence longer than stale (the target was dead, paused by
// its dispatcher, cut off) starts the comparison afresh, as a target set
// again does; the first after a stall restarts the hold of the
// differences held (release).
func (st *targetState) received(at time.Time, stale time.Duration) {
	if !st.lastOutput.IsZero() && at.Sub(st.lastOutput) > stale {
		st.again = true
	}
	if st.stalled {
		st.stalled, st.back = false, at
	}
	st.lastOutput = at
}

// admit reports whether an output of campaign that arrived at at is
// compared: not one of a campaign taken out of the sample (its last window,
// cut short, or the status its tombstone made), until it is sent again —
// a row, or, without a budget row, an output more than stale later. A
// campaign without a budget row needs no start of its own: its first dark
// value (the window its copy began in) is the spend's starting point.
func (st *targetState) admit(campaign string, at time.Time, stale time.Duration) bool {
	if left, ok := st.left[campaign]; ok {
		if at.Sub(left) <= stale {
			return false
		}
		delete(st.left, campaign)
	}
	return true
}

// heldPoint is a dark-vs-live point with differences, counted Rules.Hold
// after it was found unless a gap in the copy explains it (release).
type heldPoint struct {
	k          outputKey
	live, dark version
	fields     []string
	ds         []outdiff.Diff
	count      func(*fieldCount, *outdiff.Diff)
	found      time.Time
}

// withdrawal is a held point withdrawn at at: the fields that differed.
type withdrawal struct {
	at     time.Time
	fields []fieldKey
}

// round is what one comparison round of a target counted.
type round struct {
	at          time.Time
	points      map[string]int // per output, dark vs live
	noisePoints map[string]int // per output, primary vs standby
	fields      map[fieldKey]*fieldCount
	missing     map[string][]string // per output, campaigns found missing on dark
}

type fieldKey struct{ output, field string }

type fieldCount struct {
	rawPoints, noisePoints int
	rawDiffs, noiseDiffs   int
	rawSize, noiseSize     float64
	unexplained            int
	// rawMissing and noiseMissing count the differences that are a value
	// missing on the candidate (dark; the standby), among the diffs.
	rawMissing, noiseMissing int
	worst                    []Example
}

func newTargetState(t Target) *targetState {
	return &targetState{name: t.Name, source: t.Source, table: newTable(), health: &healthLog{},
		raw: newPairState(), noise: newPairState(), campaigns: map[string]time.Time{}, sampled: map[string]time.Time{},
		left: map[string]time.Time{}, rows: map[string][]byte{}, compared: map[fieldKey]time.Time{}}
}

// round compares every row of the target's sampled campaigns that changed
// and settled: dark against its source side (raw), and primary against
// standby (noise) on the same rows. Budget status goes first, so that the
// other outputs know whether their campaign is in sync.
func (st *targetState) round(e *Engine, now time.Time) {
	if st.again {
		// Set again after a removal (cleared, disabled, its document gone
		// with ZooKeeper's data), or back after a silence longer than
		// stale: its copy lacks what live got meanwhile, so only values of
		// spend windows that began after it was fed again are compared or
		// judged missing, as for a new target (pairState.before). Before,
		// the values around the gap read as spend differences and missing
		// values of the build.
		st.raw.from, st.again = now, false
	}
	r := round{at: now, points: map[string]int{}, noisePoints: map[string]int{}, fields: map[fieldKey]*fieldCount{}, missing: map[string][]string{}}
	live, prim, stby := e.live[sideIndex(st.source)], e.live[0], e.live[1]
	st.release(&r, now, e.rules, live)
	for _, first := range []bool{true, false} {
		for k := range st.table.ver {
			if (k.output == outdiff.BudgetStatus) != first {
				continue
			}
			if ds, fields := st.noise.point(prim, stby, k, time.Time{}, now, e.rules, e.tol); len(fields) > 0 {
				r.noisePoints[k.output]++
				r.count(k.output, fields, ds, noiseCount)
			}
			ds, fields := st.raw.point(live, st.table, k, st.sampled[k.campaign], now, e.rules, e.tol)
			if len(fields) == 0 {
				continue
			}
			st.campaigns[k.campaign], st.lastPoint = now, now
			st.comparedNow(k.output, fields, now)
			if len(ds) > 0 && e.rules.Hold > 0 {
				st.held = append(st.held, heldPoint{k: k, live: live.ver[k], dark: st.table.ver[k], fields: fields, ds: ds,
					count: st.rawCount(k, now), found: now})
				continue
			}
			r.points[k.output]++
			r.count(k.output, fields, ds, st.rawCount(k, now))
		}
	}
	// Sampled campaigns whose values live has and a pipeline lacks.
	for c, since := range st.sampled {
		for _, o := range outputs {
			k := outputKey{o, c}
			if _, ok := st.table.ver[k]; !ok { // the noise on the rows the target lacks
				if ds, fields := st.noise.point(prim, stby, k, time.Time{}, now, e.rules, e.tol); len(fields) > 0 {
					r.noisePoints[k.output]++
					r.count(k.output, fields, ds, noiseCount)
				}
			}
			if ds := st.noise.missing(prim, stby, k, time.Time{}, st.sampled, now, e.rules); ds != nil {
				r.noisePoints[o]++
				r.count(o, fieldsOf(ds), ds, noiseCount)
			}
			if ds := st.raw.missing(live, st.table, k, since, st.sampled, now, e.rules); ds != nil {
				r.points[o]++
				r.missing[o] = append(r.missing[o], c)
				st.campaigns[c] = now
				st.comparedNow(o, fieldsOf(ds), now)
				r.count(o, fieldsOf(ds), ds, st.rawCount(k, now))
			}
		}
	}
	st.rounds = append(st.rounds, r)
}

// release counts into r the held differences found Rules.Hold ago, and
// withdraws those whose values follow from what the copy lacked: a budget
// row with reason gap (or any that starts the campaign's comparison afresh,
// pairState.before) came for the campaign after the window began. A
// crashed dispatcher replica's campaigns are copied again only a session
// timeout later, while the other replica's copies move the dark
// aggregator's clock on, so a window that straddled the crash is closed on
// dark with the copies made before it and read as a spend difference of
// the build before the gap row can say why.
//
// A single dispatcher that stops (a restart, a crash) sends its gap rows
// only once it runs again and has caught up, however long that takes; the
// dark target writes nothing meanwhile but the windows its aggregator
// closed on the idle timeout, short of the copies. So a held difference is
// not counted while the target is stalled — silent for longer than
// Rules.silence while its source side writes — and counts hold after it
// wrote again, not before. A campaign without a budget row gets no gap
// row of its own: any campaign's gap row withdraws its differences too
// (its copy may have had the same gap; the comparator cannot tell).
func (st *targetState) release(r *round, now time.Time, rules Rules, live *table) {
	if src := newestOf(live, st.sampled); !st.lastOutput.IsZero() && src.Sub(st.lastOutput) > rules.silence() {
		st.stalled = true
	}
	keep := st.held[:0]
	for _, h := range st.held {
		since, ok := st.sampled[h.k.campaign]
		if !ok {
			since = st.lastGap
		}
		switch {
		case st.stalled || now.Sub(h.found) < rules.Hold || now.Sub(st.back) < rules.Hold:
			keep = append(keep, h)
		case st.raw.before(h.live, since, rules) || st.raw.before(h.dark, since, rules):
			w := withdrawal{at: now}
			for _, d := range h.ds {
				w.fields = append(w.fields, fieldKey{h.k.output, d.Field})
			}
			st.withdrawn = append(st.withdrawn, w)
		default:
			r.points[h.k.output]++
			r.count(h.k.output, h.fields, h.ds, h.count)
		}
	}
	clear(st.held[len(keep):])
	st.held = keep
}

// outputs are the compared outputs, budget status first.
var outputs = []string{outdiff.BudgetStatus, outdiff.Pacing, outdiff.BidMultipliers}

// noiseCount counts a noise point (d nil) or difference.
func noiseCount(fc *fieldCount, d *outdiff.Diff) {
	if d == nil {
		fc.noisePoints++
		return
	}
	fc.noiseDiffs++
	fc.noiseSize += d.Size
	if isMissing(*d) {
		fc.noiseMissing++
	}
}

// rawCount returns what counts a raw point (d nil) or difference of row k:
// a difference of an exact field is unexplained unless primary and standby
// differed on that field of the row too (or the standby lacks the row).
func (st *targetState) rawCount(k outputKey, now time.Time) func(*fieldCount, *outdiff.Diff) {
	noise := st.noise.diffs[k]
	_, pending := st.noise.pending[k]
	noiseMissing := pending || st.noise.lacks[k]
	return func(fc *fieldCount, d *outdiff.Diff) {
		if d == nil {
			fc.rawPoints++
			return
		}
		fc.rawDiffs++
		fc.rawSize += d.Size
		missing := isMissing(*d)
		if missing {
			fc.rawMissing++
		}
		if exact(k.output, d.Field) && !noiseMissing && !slices.ContainsFunc(noise, func(n outdiff.Diff) bool { return n.Field == d.Field }) {
			fc.unexplained++
		}
		fc.keep(Example{Campaign: k.campaign, Live: d.Baseline, Dark: d.Candidate, Size: d.Size, Missing: missing, At: now})
	}
}

// fieldsOf are the fields of ds, in order.
func fieldsOf(ds []outdiff.Diff) []string {
	fs := make([]string, len(ds))
	for i, d := range ds {
		fs[i] = d.Field
	}
	return fs
}

// count calls add once per compared field (d nil) and once per difference.
func (r *round) count(output string, fields []string, ds []outdiff.Diff, add func(*fieldCount, *outdiff.Diff)) {
	for _, f := range fields {
		add(r.field(output, f), nil)
	}
	for i := range ds {
		add(r.field(output, ds[i].Field), &ds[i])
	}
}

func (r *round) field(output, field string) *fieldCount {
	k := fieldKey{output, field}
	fc := r.fields[k]
	if fc == nil {
		fc = &fieldCount{}
		r.fields[k] = fc
	}
	return fc
}

// keep adds ex to the worst examples if it is among the largest.
func (fc *fieldCount) keep(ex Example) {
	fc.worst = worstOf(append(fc.worst, ex))
}

// worstOf sorts examples (missing values first, then by size, largest
// first, then latest, then campaign) and keeps maxExamples, one per campaign.
func worstOf(exs []Example) []Example {
	slices.SortStableFunc(exs, func(a, b Example) int {
		switch {
		case a.Missing != b.Missing:
			if a.Missing {
				return -1
			}
			return 1
		case a.Size != b.Size:
			if a.Size > b.Size {
				return -1
			}
			return 1
		case !a.At.Equal(b.At):
			return b.At.Compare(a.At)
		}
		return strings.Compare(a.Campaign, b.Campaign)
	})
	var out []Example
	for _, ex := range exs {
		if len(out) < maxExamples && !slices.ContainsFunc(out, func(o Example) bool { return o.Campaign == ex.Campaign }) {
			out = append(out, ex)
		}
	}
	return out
}

func exact(output, field string) bool {
	return slices.ContainsFunc(outdiff.Fields(), func(f outdiff.Field) bool { return f.Output == output && f.Name == field && f.Exact })
}

// prune forgets rounds, campaigns, rows and samples older than from.
func (st *targetState) prune(from time.Time) {
	st.rounds = slices.DeleteFunc(st.rounds, func(r round) bool { return r.at.Before(from) })
	st.withdrawn = slices.DeleteFunc(st.withdrawn, func(w withdrawal) bool { return w.at.Before(from) })
	st.held = slices.DeleteFunc(st.held, func(h heldPoint) bool { return h.found.Before(from) })
	for c, at := range st.campaigns {
		if at.Before(from) {
			delete(st.campaigns, c)
		}
	}
	st.table.prune(from)
	sampled := func(c string) bool { _, ok := st.sampled[c]; return ok }
	kept := func(k outputKey) bool { _, ok := st.table.ver[k]; return ok || sampled(k.campaign) }
	for _, ps := range []*pairState{st.raw, st.noise} {
		ps.forget(kept)
		ps.forgetMissing(sampled)
	}
	st.health.prune(from)
}

// comparedNow notes that fields of output were compared at now.
func (st *targetState) comparedNow(output string, fields []string, now time.Time) {
	for _, f := range fields {
		st.compared[fieldKey{output, f}] = now
	}
}

// unsynced counts the sampled campaigns whose spend today differed from
// live's at their last compared budget status.
func (st *targetState) unsynced() int {
	n := 0
	for _, ok := range st.raw.synced {
		if !ok {
			n++
		}
	}
	return n
}
