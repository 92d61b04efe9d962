package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/httpserver"
	"github.com/hotpair/hotpair/pipeline"
	"github.com/hotpair/hotpair/selector"
)

// startHTTP serves, on one address:
//
//	/                     the leading monitor's on-call page (and its /api/v1/status, /healthz, /readyz)
//	/api/v1/faults        GET lists, POST injects (JSON FaultSpec), DELETE heals all
//	/api/v1/faults/{id}   DELETE heals one
//	/api/v1/sandbox       addresses, load, ingest, the read side's view, recent events
//	/api/v1/events        the timeline (?since=RFC3339)
//	/metrics              every part's metrics
func (s *Sandbox) startHTTP(context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("/", s.monitors.handler())
	mux.HandleFunc("GET /api/v1/faults", func(w http.ResponseWriter, _ *http.Request) { httpserver.WriteJSON(w, http.StatusOK, s.Faults()) })
	mux.HandleFunc("POST /api/v1/faults", s.postFault)
	mux.HandleFunc("DELETE /api/v1/faults", func(w http.ResponseWriter, _ *http.Request) { httpserver.WriteJSON(w, http.StatusOK, s.HealAll()) })
	mux.HandleFunc("DELETE /api/v1/faults/{id}", s.deleteFault)
	mux.HandleFunc("GET /api/v1/sandbox", func(w http.ResponseWriter, _ *http.Request) { httpserver.WriteJSON(w, http.StatusOK, s.State()) })
	mux.HandleFunc("GET /api/v1/events", s.getEvents)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.regs, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))

	srv, err := httpserver.Listen(s.opts.HTTP, mux)
	if err != nil {
		return err
	}
	s.httpAddr = srv.Addr().String()
	s.goRun("HTTP server", srv.Serve)
	return nil
}

type apiError struct {
	Error string `json:"error"`
}

func (s *Sandbox) postFault(w http.ResponseWriter, r *http.Request) {
	var spec FaultSpec
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		httpserver.WriteJSON(w, http.StatusBadRequest, apiError{"body must be a JSON fault: " + err.Error()})
		return
	}
	f, err := s.Inject(spec)
	switch {
	case errors.Is(err, ErrBadFault), errors.Is(err, errNoLocalZK), errors.Is(err, pipeline.ErrNoSuchStage):
		httpserver.WriteJSON(w, http.StatusBadRequest, apiError{err.Error()})
	case err != nil:
		httpserver.WriteJSON(w, http.StatusInternalServerError, apiError{err.Error()})
	default:
		httpserver.WriteJSON(w, http.StatusCreated, f)
	}
}

func (s *Sandbox) deleteFault(w http.ResponseWriter, r *http.Request) {
	f, err := s.Heal(r.PathValue("id"))
	switch {
	case errors.Is(err, ErrNoSuchFault):
		httpserver.WriteJSON(w, http.StatusNotFound, apiError{err.Error()})
	case err != nil:
		httpserver.WriteJSON(w, http.StatusInternalServerError, apiError{err.Error()})
	default:
		httpserver.WriteJSON(w, http.StatusOK, f)
	}
}

func (s *Sandbox) getEvents(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			httpserver.WriteJSON(w, http.StatusBadRequest, apiError{"since must be an RFC 3339 time"})
			return
		}
		since = t
	}
	httpserver.WriteJSON(w, http.StatusOK, s.events.since(since))
}

// State is the sandbox at a glance.
type State struct {
	Addresses Addresses                            `json:"addresses"`
	Uptime    string                               `json:"uptime"`
	Active    map[string]string                    `json:"active"` // the side the read side uses, per service
	Leader    string                               `json:"monitor_leader"`
	Load      LoadStats                            `json:"load"`
	Ingest    map[contract.Side]pipeline.SideStats `json:"ingest"`
	Views     []selector.ViewLag                   `json:"views"`
	Faults    []Fault                              `json:"faults"`
	Events    []Event                              `json:"recent_events"`
	Dark      *DarkState                           `json:"dark,omitempty"`
}

// State returns the sandbox's state.
func (s *Sandbox) State() State {
	st := State{Addresses: s.Addresses(), Uptime: time.Since(s.started).Round(time.Second).String(),
		Active: map[string]string{}, Faults: s.Faults()}
	for _, svc := range contract.Services() {
		st.Active[svc.String()] = s.Active(svc.String())
	}
	if _, m := s.monitors.leader(); m != nil {
		st.Leader = m.ID()
	}
	if g := s.loadGen(); g != nil {
		st.Load = g.snapshot()
	}
	st.Ingest = s.ingest.Stats()
	st.Views = s.views.Lag()
	ev := s.events.since(time.Time{})
	if len(ev) > 50 {
		ev = ev[len(ev)-50:]
	}
	st.Events = ev
	st.Dark = s.darkState()
	return st
}
