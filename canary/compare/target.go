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
	// lastRaw and lastNoise are the versions (live, dark) and (primary,
	// standby) of each row last compared: a row counts again only when one
	// of its values changed.
	lastRaw, lastNoise map[outputKey][2]uint64
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
	rawDiffs, noiseDiffs int
	rawSize, noiseSize   float64
	unexplained          int
	worst                []Example
}

func newTargetState(t Target) *targetState {
	return &targetState{name: t.Name, source: t.Source, table: newTable(), health: &healthLog{},
		lastRaw: map[outputKey][2]uint64{}, lastNoise: map[outputKey][2]uint64{}, campaigns: map[string]time.Time{}}
}

// round compares every row of the target's sampled campaigns that changed
// and settled: dark against its source side (raw), and primary against
// standby (noise) on the same rows.
func (st *targetState) round(e *Engine, now time.Time) {
	r := round{at: now, points: map[string]int{}, noisePoints: map[string]int{}, fields: map[fieldKey]*fieldCount{}}
	live, prim, stby := e.live[sideIndex(st.source)], e.live[0], e.live[1]
	for k := range st.table.ver {
		noise, noiseOK := []outdiff.Diff(nil), false
		if vp, vs, ok := aligned(prim, stby, k, now, e.rules); ok {
			noise, noiseOK = diffs(prim, stby, k, e.tol), true
			if pair := [2]uint64{vp.seq, vs.seq}; st.lastNoise[k] != pair {
				st.lastNoise[k] = pair
				r.noisePoints[k.output]++
				for _, d := range noise {
					fc := r.field(k.output, d.Field)
					fc.noiseDiffs++
					fc.noiseSize += d.Size
				}
			}
		}
		vl, vd, ok := aligned(live, st.table, k, now, e.rules)
		if pair := [2]uint64{vl.seq, vd.seq}; !ok || st.lastRaw[k] == pair {
			continue
		} else {
			st.lastRaw[k] = pair
		}
		r.points[k.output]++
		st.campaigns[k.campaign], st.lastPoint = now, now
		for _, d := range diffs(live, st.table, k, e.tol) {
			fc := r.field(k.output, d.Field)
			fc.rawDiffs++
			fc.rawSize += d.Size
			if exact(k.output, d.Field) && !(noiseOK && slices.ContainsFunc(noise, func(n outdiff.Diff) bool { return n.Field == d.Field })) {
				fc.unexplained++
			}
			fc.keep(Example{Campaign: k.campaign, Live: d.Baseline, Dark: d.Candidate, Size: d.Size, At: now})
		}
	}
	st.rounds = append(st.rounds, r)
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
	for _, m := range []map[outputKey][2]uint64{st.lastRaw, st.lastNoise} {
		for k := range m {
			if _, ok := st.table.ver[k]; !ok {
				delete(m, k)
			}
		}
	}
	st.health.prune(from)
}
