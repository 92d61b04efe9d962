package selector

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hotpair/hotpair/internal/httpserver"
)

// ServerOptions configure a Server (hotpair selectord).
type ServerOptions struct {
	// Addr is the HTTP listen address, e.g. ":8080" or "127.0.0.1:0".
	Addr string
	// MaxWait bounds the wait of a long poll. Default 2m.
	MaxWait time.Duration
	// KeepAlive is the interval of comment lines on an idle event stream.
	// Default 15s.
	KeepAlive time.Duration
	// OnListening, when set, is called with the bound address once the
	// server listens.
	OnListening func(net.Addr)

	// Injected dependencies.
	Selector *Selector           // required
	Gatherer prometheus.Gatherer // served on /metrics; nil: no /metrics
	Logger   *slog.Logger
}

// Server serves a Selector's snapshot over HTTP for clients that cannot
// speak ZooKeeper:
//
//	GET /v1/selection                  the snapshot as JSON (and the tag)
//	GET /v1/selection?tag=T&wait=30s   long poll: answers once the tag differs from T, or after wait
//	GET /v1/selection/stream           server-sent events: the snapshot now and after every change
//	GET /metrics, /healthz, /readyz
type Server struct {
	o   ServerOptions
	log *slog.Logger
	mux *http.ServeMux
}

// NewServer validates o and returns a server.
func NewServer(o ServerOptions) (*Server, error) {
	if o.Selector == nil {
		return nil, fmt.Errorf("%w: ServerOptions.Selector is required", ErrInvalidOption)
	}
	if o.Addr == "" {
		return nil, fmt.Errorf("%w: ServerOptions.Addr is required", ErrInvalidOption)
	}
	if o.MaxWait == 0 {
		o.MaxWait = 2 * time.Minute
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, log: o.Logger.With("component", "selectord"), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /v1/selection", s.selection)
	s.mux.HandleFunc("GET /v1/selection/stream", s.stream)
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if o.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	}
	return s, nil
}

// Handler returns the HTTP handler (for embedding in another server).
func (s *Server) Handler() http.Handler { return s.mux }

// Run runs the selector and the HTTP server until ctx is done.
func (s *Server) Run(ctx context.Context) error {
	srv, err := httpserver.Listen(s.o.Addr, s.mux)
	if err != nil {
		return fmt.Errorf("selectord: %w", err)
	}
	if s.o.OnListening != nil {
		s.o.OnListening(srv.Addr())
	}
	s.log.Info("selectord: listening", "addr", srv.Addr().String())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	selDone := make(chan error, 1)
	go func() { selDone <- s.o.Selector.Run(ctx) }()
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Serve(ctx) }() // long polls and streams end with ctx
	// Whichever ends first (ctx, a failure to serve, the selector) ends both.
	var httpErr, selErr error
	select {
	case httpErr = <-httpDone:
		cancel()
		selErr = <-selDone
	case selErr = <-selDone:
		cancel()
		httpErr = <-httpDone
	case <-ctx.Done():
		httpErr, selErr = <-httpDone, <-selDone
	}
	if httpErr != nil {
		return fmt.Errorf("selectord: %w", httpErr)
	}
	return selErr
}

// selection answers GET /v1/selection, as a long poll when asked.
func (s *Server) selection(w http.ResponseWriter, r *http.Request) {
	wait, err := s.waitParam(r)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	st, snap := s.o.Selector.Status(s.o.Selector.cfg.now())
	if wait > 0 && (!r.URL.Query().Has("tag") || r.URL.Query().Get("tag") == snap.TagString()) {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-snap.Changed():
			st, _ = s.o.Selector.Status(s.o.Selector.cfg.now())
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set(TagHeader, st.Tag)
	httpserver.WriteJSON(w, http.StatusOK, st)
}

func (s *Server) waitParam(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("wait=%q: want a duration such as 30s", v)
	}
	return min(d, s.o.MaxWait), nil
}

// stream answers GET /v1/selection/stream with server-sent events: an event
// "selection" with the status now and after every change of the tag.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	keep := time.NewTicker(s.o.KeepAlive)
	defer keep.Stop()
	for {
		st, snap := s.o.Selector.Status(s.o.Selector.cfg.now())
		b, _ := json.Marshal(st)
		if _, err := fmt.Fprintf(w, "event: selection\nid: %s\ndata: %s\n\n", st.Tag, b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		for changed := false; !changed; {
			select {
			case <-snap.Changed():
				changed = true
			case <-keep.C:
				if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
					return
				}
			case <-r.Context().Done():
				return
			}
		}
	}
}

type health struct {
	ZKConnected bool   `json:"zk_connected"`
	Ready       bool   `json:"ready"`
	Tag         string `json:"tag"`
}

// healthz answers 200 while the process serves: the selector keeps serving
// its last snapshot through ZooKeeper outages (fail static).
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	st, _ := s.o.Selector.Status(s.o.Selector.cfg.now())
	httpserver.WriteJSON(w, http.StatusOK, health{ZKConnected: st.ZKConnected, Ready: s.o.Selector.Ready(), Tag: st.Tag})
}

// readyz answers 200 once every watched service has a selection read from
// ZooKeeper, 503 while some still answer the default side.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	st, _ := s.o.Selector.Status(s.o.Selector.cfg.now())
	h := health{ZKConnected: st.ZKConnected, Ready: s.o.Selector.Ready(), Tag: st.Tag}
	code := http.StatusOK
	if !h.Ready {
		code = http.StatusServiceUnavailable
	}
	httpserver.WriteJSON(w, code, h)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	httpserver.WriteJSON(w, code, map[string]string{"error": msg})
}
