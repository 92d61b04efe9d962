package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

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
func (s *Sandbox) startHTTP(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("/", s.monitors.handler())
	mux.HandleFunc("GET /api/v1/faults", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Faults()) })
	mux.HandleFunc("POST /api/v1/faults", s.postFault)
	mux.HandleFunc("DELETE /api/v1/faults", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.HealAll()) })
	mux.HandleFunc("DELETE /api/v1/faults/{id}", s.deleteFault)
	mux.HandleFunc("GET /api/v1/sandbox", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.State()) })
	mux.HandleFunc("GET /api/v1/events", s.getEvents)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.regs, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))

	l, err := net.Listen("tcp", s.opts.HTTP)
	if err != nil {
		return err
	}
	s.httpAddr = l.Addr().String()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	s.onStop(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	return nil
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Sandbox) postFault(w http.ResponseWriter, r *http.Request) {
	var spec FaultSpec
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{"body must be a JSON fault: " + err.Error()})
		return
	}
	f, err := s.Inject(spec)
	switch {
	case errors.Is(err, ErrBadFault), errors.Is(err, errNoLocalZK), errors.Is(err, pipeline.ErrNoSuchStage):
		writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, apiError{err.Error()})
	default:
		writeJSON(w, http.StatusCreated, f)
	}
}

func (s *Sandbox) deleteFault(w http.ResponseWriter, r *http.Request) {
	f, err := s.Heal(r.PathValue("id"))
	switch {
	case errors.Is(err, ErrNoSuchFault):
		writeJSON(w, http.StatusNotFound, apiError{err.Error()})
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, apiError{err.Error()})
	default:
		writeJSON(w, http.StatusOK, f)
	}
}

func (s *Sandbox) getEvents(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{"since must be an RFC 3339 time"})
			return
		}
		since = t
	}
	writeJSON(w, http.StatusOK, s.events.since(since))
}

// State is the sandbox at a glance.
type State struct {
	Addresses Addresses                     `json:"addresses"`
	Uptime    string                        `json:"uptime"`
	Active    map[string]string             `json:"active"` // the side the read side uses, per service
	Leader    string                        `json:"monitor_leader"`
	Load      LoadStats                     `json:"load"`
	Ingest    map[string]pipeline.SideStats `json:"ingest"`
	Views     []selector.ViewLag            `json:"views"`
	Faults    []Fault                       `json:"faults"`
	Events    []Event                       `json:"recent_events"`
}

// State returns the sandbox's state.
func (s *Sandbox) State() State {
	st := State{Addresses: s.Addresses(), Uptime: time.Since(s.started).Round(time.Second).String(),
		Active: map[string]string{}, Faults: s.Faults()}
	for _, svc := range pipeline.Services() {
		st.Active[svc] = s.Active(svc)
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
	return st
}
