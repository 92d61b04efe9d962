package monitor

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// Side colours of the on-call page, charts and labels alike.
const (
	colorPrimary = "#1f6feb" // blue
	colorStandby = "#e8590c" // orange
)

//go:embed page.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"sideColor": sideColor,
	"ago":       ago,
	"ts":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"sides":     contract.Sides,
	"side": func(sel *contract.Selection, side contract.Side) *contract.SideState {
		if sel == nil {
			return nil
		}
		if s, ok := sel.Sides[side]; ok {
			return &s
		}
		return nil
	},
	"localSide": func(l *LocalDecision, side contract.Side) *SideVerdict {
		if l == nil {
			return nil
		}
		if s, ok := l.Sides[side]; ok {
			return &s
		}
		return nil
	},
	"join":  strings.Join,
	"deref": func(b *bool) bool { return b != nil && *b },
	"upper": func(v any) string { return strings.ToUpper(fmt.Sprint(v)) },
	"qps":   func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"lag":   lagText,
}).Parse(pageSource))

type pageData struct {
	Status
	Charts map[contract.Service]serviceCharts
	// Decisions are the decision record's latest decisions, newest first.
	Decisions        []decisions.Entry
	HistoryRetention time.Duration
	// Dark is the dark canary's section, when the replica runs a comparator.
	Dark template.HTML
}

type serviceCharts struct {
	QPS, Lag, Active template.HTML
}

func (m *Monitor) servePage(w http.ResponseWriter, _ *http.Request) {
	st := m.Status()
	d := pageData{Status: st, Charts: map[contract.Service]serviceCharts{}, Decisions: m.hist.recentDecisions(),
		HistoryRetention: m.cfg.History.Retention}
	if rep, ok := m.DarkReport(); ok {
		d.Dark = compare.Section(rep)
	}
	from := st.Now.Add(-m.cfg.History.Retention)
	for _, s := range st.Services {
		d.Charts[s.Service] = serviceCharts{
			QPS: lineChart("input events/s", s.History, from, st.Now, "%.0f", func(p SidePoint) float64 { return p.QPS }, nil),
			Lag: lineChart("p99 lag (s): end to end, dashed: aggregator", s.History, from, st.Now, "%.1f",
				func(p SidePoint) float64 { return float64(p.LagP99Ms) / 1000 },
				func(p SidePoint) float64 { return float64(p.AggregatorLagP99Ms) / 1000 }),
			Active: activeStrip(s.History, from, st.Now),
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	if err := pageTemplate.Execute(w, d); err != nil {
		m.log.Warn("rendering the on-call page failed", "err", err)
	}
}

func sideColor(v any) string {
	side, _ := contract.ParseSide(fmt.Sprint(v))
	if side == contract.Standby {
		return colorStandby
	}
	return colorPrimary
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1fh ago", d.Hours())
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH      = 560.0, 150.0
	padL, padR          = 48.0, 8.0
	padT, padB          = 18.0, 20.0
	plotW, plotH        = chartW - padL - padR, chartH - padT - padB
	stripW, stripH      = chartW, 14.0
	maxPolylinePoints   = 1500
	chartFontFamily     = "font-family=\"sans-serif\" font-size=\"10\""
	chartGridColor      = "#d0d7de"
	chartUnhealthyColor = "#cf222e"
)

// lineChart draws both sides' value over [from, to] as an inline SVG: one
// polyline per side in its colour, red dots on unhealthy windows; dashed,
// when given, a second value per side without dots.
func lineChart(title string, pts []Point, from, to time.Time, format string, val, dashed func(SidePoint) float64) template.HTML {
	if len(pts) > 0 && pts[0].At.After(from) {
		from = pts[0].At.Add(-time.Second)
	}
	span := to.Sub(from).Seconds()
	top := 0.0
	for _, p := range pts {
		top = math.Max(top, math.Max(val(p.Primary), val(p.Standby)))
		if dashed != nil {
			top = math.Max(top, math.Max(dashed(p.Primary), dashed(p.Standby)))
		}
	}
	top = niceCeil(top)
	x := func(t time.Time) float64 { return padL + plotW*math.Max(0, t.Sub(from).Seconds())/math.Max(span, 1) }
	y := func(v float64) float64 { return padT + plotH - plotH*v/top }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="%s" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg">`,
		template.HTMLEscapeString(title), chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<text x="%.0f" y="12" %s fill="#57606a">%s</text>`, padL, chartFontFamily, template.HTMLEscapeString(title))
	for i := 0; i <= 2; i++ {
		v := top * float64(i) / 2
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`, padL, chartW-padR, y(v), y(v), chartGridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" %s fill="#57606a">`+format+`</text>`, padL-4, y(v)+3, chartFontFamily, v)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s fill="#57606a">%s</text>`, padL, chartH-4, chartFontFamily, from.UTC().Format("15:04"))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" %s fill="#57606a">%s</text>`, chartW-padR, chartH-4, chartFontFamily, to.UTC().Format("15:04 MST"))
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" %s fill="#57606a">no window evaluated yet</text>`, padL+plotW/2, padT+plotH/2, chartFontFamily)
	}
	step := max(1, len(pts)/maxPolylinePoints)
	for _, side := range contract.Sides() {
		get := func(p Point) SidePoint {
			if side == contract.Standby {
				return p.Standby
			}
			return p.Primary
		}
		var line, dash, dots strings.Builder
		for i := 0; i < len(pts); i += step {
			p := pts[i]
			fmt.Fprintf(&line, "%.1f,%.1f ", x(p.At), y(val(get(p))))
			if dashed != nil {
				fmt.Fprintf(&dash, "%.1f,%.1f ", x(p.At), y(dashed(get(p))))
			}
			if !get(p).Healthy {
				fmt.Fprintf(&dots, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, x(p.At), y(val(get(p))), chartUnhealthyColor)
			}
		}
		if dashed != nil {
			fmt.Fprintf(&b, `<polyline class="series-%s-dashed" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3" points="%s"/>`,
				side, sideColor(side), strings.TrimSpace(dash.String()))
		}
		fmt.Fprintf(&b, `<polyline class="series-%s" fill="none" stroke="%s" stroke-width="2.5" points="%s"/>%s`,
			side, sideColor(side), strings.TrimSpace(line.String()), dots.String())
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// activeStrip draws which side was active in each window, in its colour.
func activeStrip(pts []Point, from, to time.Time) template.HTML {
	if len(pts) > 0 && pts[0].At.After(from) {
		from = pts[0].At.Add(-time.Second)
	}
	span := math.Max(to.Sub(from).Seconds(), 1)
	x := func(t time.Time) float64 { return padL + plotW*math.Max(0, t.Sub(from).Seconds())/span }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="strip" role="img" aria-label="active side over time" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg">`,
		stripW, stripH, stripW, stripH)
	fmt.Fprintf(&b, `<text x="%.1f" y="10" text-anchor="end" %s fill="#57606a">active</text>`, padL-4, chartFontFamily)
	for i, p := range pts {
		start := from
		if i > 0 {
			start = pts[i-1].At
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="1" width="%.1f" height="%.0f" fill="%s"/>`,
			x(start), math.Max(x(p.At)-x(start), 0.5), stripH-2, sideColor(p.Active))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
