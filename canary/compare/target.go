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
	lastPoint time.Time
	rounds    []round
}

// round is what one comparison round of a target counted.
type round struct {
	at          time.Time
	points      map[string]int // per output, dark vs live
	noisePoints map[string]int // per output, primary vs standby
	fields      map[fieldKey]*fieldCount
}

type fieldKey struct{ output, field string }

type fieldCount struct {
	rawPoints, noisePoints int
	rawDiffs, noiseDiffs   int
	rawSize, noiseSize     float64
	unexplained            int
	worst                  []Example
}

func newTargetState(t Target) *targetState {
	return &targetState{name: t.Name, source: t.Source, table: newTable(), health: &healthLog{},
		raw: newPairState(), noise: newPairState(), campaigns: map[string]time.Time{}}
}

// round compares every row of the target's sampled campaigns that changed
// and settled: dark against its source side (raw), and primary against
// standby (noise) on the same rows. Budget status goes first, so that the
// other outputs know whether their campaign is in sync.
func (st *targetState) round(e *Engine, now time.Time) {
	r := round{at: now, points: map[string]int{}, noisePoints: map[string]int{}, fields: map[fieldKey]*fieldCount{}}
	live, prim, stby := e.live[sideIndex(st.source)], e.live[0], e.live[1]
	for _, first := range []bool{true, false} {
		for k := range st.table.ver {
			if (k.output == outdiff.BudgetStatus) != first {
				continue
			}
			if ds, fields := st.noise.point(prim, stby, k, now, e.rules, e.tol); len(fields) > 0 {
				r.noisePoints[k.output]++
				r.count(k.output, fields, ds, func(fc *fieldCount, d *outdiff.Diff) {
					if d == nil {
						fc.noisePoints++
						return
					}
					fc.noiseDiffs++
					fc.noiseSize += d.Size
				})
			}
			ds, fields := st.raw.point(live, st.table, k, now, e.rules, e.tol)
			if len(fields) == 0 {
				continue
			}
			r.points[k.output]++
			st.campaigns[k.campaign], st.lastPoint = now, now
			noise := st.noise.diffs[k]
			r.count(k.output, fields, ds, func(fc *fieldCount, d *outdiff.Diff) {
				if d == nil {
					fc.rawPoints++
					return
				}
				fc.rawDiffs++
				fc.rawSize += d.Size
				if exact(k.output, d.Field) && !slices.ContainsFunc(noise, func(n outdiff.Diff) bool { return n.Field == d.Field }) {
					fc.unexplained++
				}
				fc.keep(Example{Campaign: k.campaign, Live: d.Baseline, Dark: d.Candidate, Size: d.Size, At: now})
			})
		}
	}
	st.rounds = append(st.rounds, r)
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

// worstOf sorts examples by size (largest first, then latest, then
// campaign) and keeps maxExamples, one per campaign.
func worstOf(exs []Example) []Example {
	slices.SortStableFunc(exs, func(a, b Example) int {
		switch {
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
	for c, at := range st.campaigns {
		if at.Before(from) {
			delete(st.campaigns, c)
		}
	}
	st.table.prune(from)
	kept := func(k outputKey) bool { _, ok := st.table.ver[k]; return ok }
	st.raw.forget(kept)
	st.noise.forget(kept)
	st.health.prune(from)
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
