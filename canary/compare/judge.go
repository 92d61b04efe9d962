package compare

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
)

// Report judges every target over the horizon ending at now.
func (e *Engine) Report(now time.Time) Report {
	rep := Report{At: now.UTC(), Verdict: InsufficientData, Rules: e.rules}
	names := make([]string, 0, len(e.targets))
	for name := range e.targets {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		tr := e.judgeTarget(e.targets[name], now)
		rep.Targets = append(rep.Targets, tr)
		if i == 0 {
			rep.Verdict = tr.Verdict
		} else {
			rep.Verdict = worse(rep.Verdict, tr.Verdict)
		}
	}
	return rep
}

// judgeTarget: too few campaigns, or no new point for Stale → insufficient
// data (a stale target's regressions are kept as reasons); any field or
// resource regression → regression; a field short of points, or no sampled
// campaign known (the missing outputs cannot be judged) → insufficient
// data; else pass. Resources that cannot be
// judged (too few samples, a rate mismatch) are shown, and do not hold back
// a pass of the outputs.
func (e *Engine) judgeTarget(st *targetState, now time.Time) TargetReport {
	tr := TargetReport{Name: st.name, Source: st.source.String(), Campaigns: len(st.campaigns), Sampled: len(st.sampled), LastPoint: st.lastPoint,
		Held: len(st.held), Withdrawn: len(st.withdrawn), Points: map[string]int{}, Resources: e.resources(st)}
	counts := map[fieldKey]*fieldCount{}
	missing := map[string]map[string]bool{}
	for _, r := range st.rounds {
		for o, n := range r.points {
			tr.Points[o] += n
		}
		for o, cs := range r.missing {
			if missing[o] == nil {
				missing[o] = map[string]bool{}
			}
			for _, c := range cs {
				missing[o][c] = true
			}
		}
		addCounts(counts, r.fields)
	}
	// What the held differences would add, were none withdrawn.
	held := round{points: map[string]int{}, fields: map[fieldKey]*fieldCount{}}
	for _, h := range st.held {
		held.points[h.k.output]++
		held.count(h.k.output, h.fields, h.ds, h.count)
	}
	withdrawn := map[fieldKey]int{}
	for _, w := range st.withdrawn {
		for _, k := range w.fields {
			withdrawn[k]++
		}
	}
	tr.Missing = map[string]int{}
	for _, o := range outputs {
		tr.Missing[o] = len(missing[o])
	}
	stale := st.lastPoint.IsZero() || now.Sub(st.lastPoint) > e.rules.Stale
	// An output the source side has stopped writing for the sampled
	// campaigns while the dark target writes it: its stage of the source
	// side is down (a stall, a crash; the monitor fails it over), and the
	// candidate's output is not judged meanwhile — its last points are
	// no verdict on what it writes now.
	quiet := map[string]time.Time{}
	if !stale {
		live := e.live[sideIndex(st.source)]
		for _, o := range outputs {
			src, dark := newest(live, o, st.sampled), newest(st.table, o, st.sampled)
			if !src.IsZero() && now.Sub(src) > e.rules.Stale && now.Sub(dark) <= e.rules.Stale {
				quiet[o] = src
			}
		}
	}
	var regressions, short, quietBefore, uncompared, pending []string
	stopped := map[string]bool{} // outputs with a field no longer compared
	waiting := map[string]bool{} // outputs with a field waiting for its held differences
	for _, f := range outdiff.Fields() {
		k := fieldKey{f.Output, f.Name}
		fr := e.judgeField(f, tr.Points[f.Output], counts[k])
		// Held differences: counted, they would make a pass no worse than
		// the verdict without them, and a regression no better. A pass
		// that holds with them is a pass; a regression only with them
		// waits until they are counted or withdrawn.
		if hc := held.fields[k]; hc != nil && fr.Verdict != Regression {
			all := e.judgeField(f, tr.Points[f.Output]+held.points[f.Output], sumCounts(counts[k], hc))
			if all.Verdict == Regression {
				fr.Verdict = InsufficientData
				waiting[f.Output] = true
				pending = append(pending, fmt.Sprintf("%s %s: %d differences held: counted %s after they were found (later while the target writes nothing), "+
					"unless a gap in the copy (a budget row with reason gap) explains them", f.Output, f.Name, hc.rawDiffs, e.rules.Hold))
			} else {
				fr = all
			}
		}
		if _, ok := quiet[f.Output]; ok {
			if fr.Verdict == Regression {
				quietBefore = append(quietBefore, "before it went quiet: "+regressionReason(fr))
			}
			fr.Verdict = InsufficientData
		}
		// A field no longer compared while the target's others are (its
		// campaigns out of sync since a gap or duplicates in the copy):
		// the points from before are no verdict on what the build writes
		// now. A regression they showed stands.
		if at, ok := st.compared[k]; ok && !stale && fr.Verdict == Pass && now.Sub(at) > e.rules.Stale {
			fr.Verdict = InsufficientData
			stopped[f.Output] = true
			uncompared = append(uncompared, fmt.Sprintf("%s %s: no comparison for more than %s (last %s) while other fields are compared",
				f.Output, f.Name, e.rules.Stale, lastText(at)))
		}
		fr.Withdrawn = withdrawn[k]
		tr.Fields = append(tr.Fields, fr)
		switch fr.Verdict {
		case Regression:
			regressions = append(regressions, regressionReason(fr))
		case InsufficientData:
			if !slices.Contains(short, f.Output) {
				short = append(short, f.Output)
			}
		}
	}
	for _, o := range short {
		if at, ok := quiet[o]; ok {
			tr.Reasons = append(tr.Reasons, fmt.Sprintf("%s: the source side (%s) has written none for the sampled campaigns for more than %s "+
				"(last %s) while the dark target has: is its %s down? The candidate's %s is not judged meanwhile",
				o, st.source, e.rules.Stale, lastText(at), stageOf(o), o))
			continue
		}
		if tr.Points[o] >= e.rules.MinPoints && stopped[o] || waiting[o] {
			continue // its reason is the field's
		}
		tr.Reasons = append(tr.Reasons, fmt.Sprintf("%s: %d points compared, need %d", o, tr.Points[o], e.rules.MinPoints))
	}
	tr.Reasons = append(tr.Reasons, pending...)
	tr.Reasons = append(tr.Reasons, quietBefore...)
	tr.Reasons = append(tr.Reasons, uncompared...)
	if n := st.raw.resumedNow(); n > 0 && (slices.Contains(short, outdiff.Pacing) || slices.Contains(short, outdiff.BidMultipliers)) {
		tr.Reasons = append(tr.Reasons, fmt.Sprintf("%d sampled campaigns' copies resumed after a gap (a dispatcher restart, a crashed replica, a paused target): "+
			"their pacing rate and bid multiplier are compared from their next day (a pacer keeps what the gap changed)", n))
	}
	if n := st.unsynced(); n > 0 && len(short) > 0 {
		tr.Reasons = append(tr.Reasons, fmt.Sprintf("%d sampled campaigns are not in sync with live: their spend today differs "+
			"(a dark copy that began or was paused mid-day, or copied records twice after a dispatcher crash); "+
			"their spend is compared by increments, their status, pacing and bid multiplier from their next day", n))
	}
	if stale {
		tr.Reasons = append(tr.Reasons, fmt.Sprintf("no new comparison for more than %s (last %s): is the dark target or its source side down?",
			e.rules.Stale, lastText(st.lastPoint)))
	}
	if tr.Resources.Verdict == Regression {
		regressions = append(regressions, "resources: "+strings.Join(tr.Resources.Reasons, "; "))
	}
	switch {
	case tr.Campaigns < e.rules.MinCampaigns:
		tr.Verdict = InsufficientData
		tr.Reasons = append([]string{fmt.Sprintf("%d sampled campaigns compared, need %d", tr.Campaigns, e.rules.MinCampaigns)}, tr.Reasons...)
	case stale:
		// Whatever the last rounds showed: a target that went quiet in the
		// middle of a window left it half written (some partitions, part of
		// its input), which reads as differences the build did not make.
		tr.Verdict = InsufficientData
		for _, r := range regressions {
			tr.Reasons = append(tr.Reasons, "before it went quiet: "+r)
		}
	case len(regressions) > 0:
		tr.Verdict, tr.Reasons = Regression, append(regressions, tr.Reasons...)
	case len(short) > 0:
		tr.Verdict = InsufficientData
	case tr.Sampled == 0:
		// Outputs compare, but without the campaigns the target was sent
		// the ones it fails to write cannot be found missing: a build
		// that drops outputs would pass.
		tr.Verdict = InsufficientData
		tr.Reasons = append(tr.Reasons, fmt.Sprintf("no sampled campaign known: %s gave no row (is Read on it granted to the comparator?), "+
			"so campaigns the target fails to write cannot be found missing", contract.TopicsWithPrefix(contract.DarkPrefix(st.name)).Budgets))
	default:
		tr.Verdict = Pass
	}
	return tr
}

// addCounts adds each field's counts of from to counts.
func addCounts(counts, from map[fieldKey]*fieldCount) {
	for k, fc := range from {
		sum := counts[k]
		if sum == nil {
			sum = &fieldCount{}
			counts[k] = sum
		}
		sum.add(fc)
	}
}

// sumCounts is a + b (either may be nil).
func sumCounts(a, b *fieldCount) *fieldCount {
	var sum fieldCount
	for _, fc := range []*fieldCount{a, b} {
		if fc != nil {
			sum.add(fc)
		}
	}
	return &sum
}

func (sum *fieldCount) add(fc *fieldCount) {
	sum.rawPoints += fc.rawPoints
	sum.noisePoints += fc.noisePoints
	sum.rawDiffs += fc.rawDiffs
	sum.noiseDiffs += fc.noiseDiffs
	sum.rawSize += fc.rawSize
	sum.noiseSize += fc.noiseSize
	sum.unexplained += fc.unexplained
	sum.rawMissing += fc.rawMissing
	sum.noiseMissing += fc.noiseMissing
	sum.worst = worstOf(append(slices.Clone(sum.worst), fc.worst...))
}

// judgeField applies the thresholds to one field's counts; outputPoints
// are its output's, which the minimum applies to.
func (e *Engine) judgeField(f outdiff.Field, outputPoints int, fc *fieldCount) FieldReport {
	if fc == nil {
		fc = &fieldCount{}
	}
	fr := FieldReport{Output: f.Output, Field: f.Name, Exact: f.Exact, RawPoints: fc.rawPoints, RawDiffs: fc.rawDiffs,
		NoisePoints: fc.noisePoints, NoiseDiffs: fc.noiseDiffs, Unexplained: fc.unexplained, Worst: fc.worst,
		RawMissing: fc.rawMissing, NoiseMissing: fc.noiseMissing}
	if fc.rawPoints > 0 {
		fr.RawRate = float64(fc.rawDiffs) / float64(fc.rawPoints)
	}
	if fc.noisePoints > 0 {
		fr.NoiseRate = float64(fc.noiseDiffs) / float64(fc.noisePoints)
	}
	// Mean sizes are over the values that differ; a missing value has none.
	if n := fc.rawDiffs - fc.rawMissing; n > 0 {
		fr.RawMeanSize = fc.rawSize / float64(n)
	}
	if n := fc.noiseDiffs - fc.noiseMissing; n > 0 {
		fr.NoiseMeanSize = fc.noiseSize / float64(n)
	}
	excess := fr.RawRate - fr.NoiseRate
	switch {
	case outputPoints < e.rules.MinPoints:
		fr.Verdict = InsufficientData
	case f.Exact && fc.unexplained > 0:
		fr.Verdict = Regression
	case !f.Exact && excess > e.rules.Absolute && excess > e.rules.Relative*fr.RawRate:
		fr.Verdict = Regression
	default:
		fr.Verdict = Pass
	}
	return fr
}

// newestOf is when t's latest value of any output for any of campaigns
// arrived (zero: none).
func newestOf(t *table, campaigns map[string]time.Time) time.Time {
	var at time.Time
	for _, o := range outputs {
		if n := newest(t, o, campaigns); n.After(at) {
			at = n
		}
	}
	return at
}

// newest is when t's latest value of output for any of campaigns arrived
// (zero: none).
func newest(t *table, output string, campaigns map[string]time.Time) time.Time {
	var at time.Time
	for c := range campaigns {
		if v, ok := t.ver[outputKey{output, c}]; ok && v.received.After(at) {
			at = v.received
		}
	}
	return at
}

// stageOf names the stage that writes output.
func stageOf(output string) string {
	switch output {
	case outdiff.BudgetStatus:
		return "budget enforcer"
	case outdiff.Pacing:
		return "pacer"
	}
	return "bidder"
}

func regressionReason(fr FieldReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: dark differs from live on %d of %d points (%.1f%%), primary from standby on %d of %d (%.1f%%)",
		fr.Output, fr.Field, fr.RawDiffs, fr.RawPoints, 100*fr.RawRate, fr.NoiseDiffs, fr.NoisePoints, 100*fr.NoiseRate)
	if fr.RawMissing > 0 || fr.NoiseMissing > 0 {
		fmt.Fprintf(&b, "; missing on dark %d, on the standby %d", fr.RawMissing, fr.NoiseMissing)
	}
	if fr.Exact {
		fmt.Fprintf(&b, "; %d not in the noise (exact field)", fr.Unexplained)
	}
	if len(fr.Worst) > 0 {
		b.WriteString("; worst:")
		for i, ex := range fr.Worst {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s live %s dark %s", ex.Campaign, ex.Live, ex.Dark)
		}
	}
	return b.String()
}

func lastText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}
