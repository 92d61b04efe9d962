package compare

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hotpair/hotpair/internal/httpserver"
)

// Handler serves the comparator's endpoints:
//
//	/              a small page with the dark canary section (HTML, no scripts)
//	/api/v1/dark   the latest Report as JSON
//	/metrics       Prometheus metrics (when there is a Gatherer)
//	/healthz       200 while rounds run
func (c *Comparator) Handler() http.Handler {
	mux := http.NewServeMux()
	if c.gather != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(c.gather, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if age := time.Since(c.Report().At); age > 3*c.cfg.Interval+time.Second {
			http.Error(w, "no comparison round for "+age.Round(time.Second).String(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /api/v1/dark", func(w http.ResponseWriter, _ *http.Request) {
		httpserver.WriteJSON(w, http.StatusOK, c.Report())
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		if err := pageTemplate.Execute(w, Section(c.Report())); err != nil {
			c.log.Warn("rendering the page failed", "err", err)
		}
	})
	return mux
}

//go:embed section.html.tmpl
var sectionSource string

var sectionTemplate = template.Must(template.New("dark").Funcs(template.FuncMap{
	"pct":    func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"figure": fmtFigure,
	"ts":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"p": func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return fmt.Sprintf("%.4f", v)
	},
	"verdictClass": func(v Verdict) string {
		switch v {
		case Pass:
			return "ok"
		case Regression:
			return "bad"
		}
		return "unknown"
	},
}).Parse(sectionSource))

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="15"><title>hotpair dark canary</title>
<style>body { font-family: sans-serif; margin: 16px 24px; color: #1f2328; }</style></head>
<body><h1>hotpair dark canary</h1>{{.}}</body></html>`))

// Section renders the report as an HTML fragment (a <section id="dark">),
// for the comparator's page and for any page that embeds the comparator,
// such as the monitor's on-call page.
func Section(r Report) template.HTML {
	var b bytes.Buffer
	if err := sectionTemplate.Execute(&b, r); err != nil {
		return template.HTML("<section id=\"dark\"><p>dark canary: " + template.HTMLEscapeString(err.Error()) + "</p></section>")
	}
	return template.HTML(b.String())
}
