package compare

import (
	"fmt"
	"math"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
)

// resourceMetric is one judged figure of an instance window.
type resourceMetric struct {
	name string
	get  func(unit) float64
	// increase and slack: the dark median passes up to
	// live × (1 + primary/standby spread + increase) + slack.
	increase func(ResourceRules) float64
	slack    func(ResourceRules) float64
}

var resourceMetrics = []resourceMetric{
	{"cpu_seconds_per_1k_events", func(u unit) float64 { return u.cpuPer1k },
		func(r ResourceRules) float64 { return r.CPUIncrease }, func(ResourceRules) float64 { return 0 }},
	{"rss_bytes", func(u unit) float64 { return u.rss },
		func(r ResourceRules) float64 { return r.MemoryIncrease }, func(ResourceRules) float64 { return 0 }},
	{"event_lag_p99_seconds", func(u unit) float64 { return u.lagP99 },
		func(r ResourceRules) float64 { return r.LagIncrease }, func(r ResourceRules) float64 { return r.LagSlack.Seconds() }},
	{"dead_letter_rate", func(u unit) float64 { return u.deadLetter },
		func(ResourceRules) float64 { return 0 }, func(r ResourceRules) float64 { return r.DeadLetterRateAbs }},
}

// resources judges the target's instances against its source side's, per
// stage, over the samples of the horizon.
func (e *Engine) resources(st *targetState) ResourceReport {
	rr := e.rules.Resources
	var rep ResourceReport
	stages := st.health.stages()
	if len(stages) == 0 {
		return ResourceReport{Verdict: InsufficientData, Reasons: []string{"no health samples from the dark target"}}
	}
	worst := Pass
	for _, stage := range stages {
		live, dark := e.health[sideIndex(st.source)].units(stage), st.health.units(stage)
		v, reason, rows := judgeStage(rr, stage, live, dark, e.health[0].units(stage), e.health[1].units(stage))
		rep.Rows = append(rep.Rows, rows...)
		if reason != "" {
			rep.Reasons = append(rep.Reasons, reason)
		}
		worst = worse(worst, v)
	}
	rep.Verdict = worst
	return rep
}

// judgeStage checks the rate first: a dark instance must take a live
// instance's input rate (±RateTolerance), or nothing else is comparable.
func judgeStage(rr ResourceRules, stage contract.Stage, live, dark, prim, stby []unit) (Verdict, string, []ResourceRow) {
	if len(live) < rr.MinSamples || len(dark) < rr.MinSamples {
		return InsufficientData, fmt.Sprintf("%s: %d dark and %d live instance windows, need %d each", stage, len(dark), len(live), rr.MinSamples), nil
	}
	get := func(us []unit, f func(unit) float64) []float64 {
		var out []float64
		for _, u := range us {
			if v := f(u); !math.IsNaN(v) {
				out = append(out, v)
			}
		}
		return out
	}
	eps := func(u unit) float64 { return u.eps }
	rateRow := row(stage, "input_events_per_second", get(live, eps), get(dark, eps), get(prim, eps), get(stby, eps))
	if math.Abs(rateRow.Dark/rateRow.Live-1) > rr.RateTolerance {
		rateRow.Verdict = RateMismatch
		return RateMismatch, fmt.Sprintf("%s: a dark instance takes %.1f events/s, a live one %.1f (more than ±%.0f%% apart): rate mismatch, resources not judged",
			stage, rateRow.Dark, rateRow.Live, 100*rr.RateTolerance), []ResourceRow{rateRow}
	}
	rateRow.Verdict = Pass
	rows := []ResourceRow{rateRow}
	verdict, reason := Pass, ""
	for _, m := range resourceMetrics {
		l, d := get(live, m.get), get(dark, m.get)
		if len(l) < rr.MinSamples || len(d) < rr.MinSamples {
			continue // e.g. CPU and memory from a build that does not report them
		}
		r := row(stage, m.name, l, d, get(prim, m.get), get(stby, m.get))
		spread := outdiff.RelDiff(r.Primary, r.Standby)
		r.Limit = r.Live*(1+spread+m.increase(rr)) + m.slack(rr)
		r.Verdict = Pass
		if r.Dark > r.Limit && r.P < 1-rr.Confidence {
			r.Verdict, verdict = Regression, Regression
			reason += fmt.Sprintf("%s %s: dark %s, live %s (limit %s, primary %s, standby %s; Mann-Whitney p=%.2g over %d dark and %d live windows); ",
				stage, m.name, fmtFigure(m.name, r.Dark), fmtFigure(m.name, r.Live), fmtFigure(m.name, r.Limit),
				fmtFigure(m.name, r.Primary), fmtFigure(m.name, r.Standby), r.P, r.DarkN, r.LiveN)
		}
		rows = append(rows, r)
	}
	if reason != "" {
		reason = reason[:len(reason)-2]
	}
	return verdict, reason, rows
}

// row is one metric's medians; a live side without samples shows 0 (JSON
// has no NaN), and then gives no spread.
func row(stage contract.Stage, metric string, live, dark, prim, stby []float64) ResourceRow {
	r := ResourceRow{Stage: stage.String(), Metric: metric, Live: median(live), Dark: median(dark),
		Primary: median(prim), Standby: median(stby), P: mannWhitneyP(live, dark), LiveN: len(live), DarkN: len(dark)}
	if len(prim) == 0 || len(stby) == 0 {
		r.Primary, r.Standby = 0, 0
	}
	return r
}

// fmtFigure prints a figure in the metric's unit.
func fmtFigure(metric string, v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case metric == "rss_bytes":
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case metric == "event_lag_p99_seconds":
		return fmt.Sprintf("%.3fs", v)
	case metric == "cpu_seconds_per_1k_events":
		return fmt.Sprintf("%.4f CPU-s/1k ev", v)
	case metric == "dead_letter_rate":
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// worse returns the worse verdict: regression, rate mismatch, insufficient
// data, pass.
func worse(a, b Verdict) Verdict {
	rank := map[Verdict]int{Pass: 0, InsufficientData: 1, RateMismatch: 2, Regression: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}
