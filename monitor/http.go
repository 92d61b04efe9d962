package monitor

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/httpserver"
)

// Handler serves the replica's HTTP endpoints:
//
//	/                on-call page (HTML, no scripts)
//	/api/v1/status   Status as JSON
//	/api/v1/gate     the rollout gate: GET or POST ?side=S&held=D → 200 ok / 409 not (GateAnswer)
//	/api/v1/history  the decision record as this replica holds it (JSON)
//	/api/v1/dark     the dark canary's report, with dark.enabled (else 404)
//	/metrics         Prometheus metrics
//	/healthz         200 while the evaluation loop is alive
//	/readyz          200 once ZooKeeper is usable and a window was evaluated
func (m *Monitor) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.gather, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", m.serveHealthz)
	mux.HandleFunc("GET /readyz", m.serveReadyz)
	mux.HandleFunc("GET /api/v1/status", m.serveStatus)
	mux.HandleFunc("GET /api/v1/gate", m.serveGate)
	mux.HandleFunc("POST /api/v1/gate", m.serveGate) // Flagger's webhooks POST (the body is ignored)
	mux.HandleFunc("GET /api/v1/history", m.serveHistory)
	mux.HandleFunc("GET /api/v1/dark", m.serveDark)
	mux.HandleFunc("GET /{$}", m.servePage)
	return mux
}

// serveHealthz fails when evaluation windows stopped closing: more than
// three windows passed since the last one (a wedged loop needs a restart).
func (m *Monitor) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	if s := m.snap.Load(); s != nil && !s.lastEvaluation.IsZero() {
		if age := time.Since(s.lastEvaluation); age > 3*m.cfg.Window+time.Second {
			http.Error(w, "no evaluation for "+age.Round(time.Second).String(), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = w.Write([]byte("ok\n"))
}

func (m *Monitor) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	switch {
	case !m.zkUp.Load():
		http.Error(w, "not ready: no ZooKeeper session", http.StatusServiceUnavailable)
	case !m.evaluated.Load():
		http.Error(w, "not ready: no window evaluated yet", http.StatusServiceUnavailable)
	default:
		_, _ = w.Write([]byte("ready\n"))
	}
}

func (m *Monitor) serveDark(w http.ResponseWriter, _ *http.Request) {
	if m.dark == nil {
		http.Error(w, "this monitor runs no dark comparator (dark.enabled in its config)", http.StatusNotFound)
		return
	}
	httpserver.WriteJSON(w, http.StatusOK, m.dark.Report())
}

// DarkReport is the report of the replica's dark comparator (false without one).
func (m *Monitor) DarkReport() (compare.Report, bool) {
	if m.dark == nil {
		return compare.Report{}, false
	}
	return m.dark.Report(), true
}

func (m *Monitor) serveStatus(w http.ResponseWriter, _ *http.Request) {
	httpserver.WriteJSON(w, http.StatusOK, m.Status())
}

// Status returns the replica's view: what is published, its own latest
// decisions and verdicts, the overrides it knows and its recent history.
func (m *Monitor) Status() Status {
	now := time.Now()
	st := Status{Now: now.UTC(), Root: m.paths.Root, Replica: &ReplicaStatus{
		ID: m.id, Leader: m.IsLeader(), ZKConnected: m.zkUp.Load(), Ready: m.Ready(),
		Window: m.cfg.Window.String(), Steps: m.steps.Load(), Switches: m.hist.recentSwitches(),
	}}
	snap := m.snap.Load()
	if snap != nil {
		st.Replica.LastEvaluation = snap.lastEvaluation
	}
	published := map[contract.Service]*contract.Selection{}
	if p := m.pub.Load(); p != nil {
		published = p.publishedSelections()
	}
	overrides := m.currentOverrides()
	for _, svc := range m.cfg.services() {
		ss := ServiceStatus{Service: svc, Selection: published[svc], Override: overrides[svc], History: m.hist.pointsOf(svc)}
		ss.OverrideActive = ss.Override.ActiveAt(now)
		if snap != nil {
			ss.Local = snap.local[svc]
		}
		st.Services = append(st.Services, ss)
	}
	return st
}
