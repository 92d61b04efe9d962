// Package httpserver is how every hotpair daemon serves HTTP (the monitor,
// the pipeline, selectord, the sandbox, ingest and replay): bind at start,
// so a bad address fails at once and port 0 can be learnt; serve until a
// context ends; shut down cleanly; and report a failure of Serve instead of
// dropping it. WriteJSON is the one way a handler answers JSON.
package httpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds how long Serve waits for requests in flight once
// its context ended; requests still running then are cut.
const ShutdownTimeout = 5 * time.Second

// Server is a bound HTTP server, not yet serving.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen binds addr ("host:port"; port 0 picks a free one) for h.
func Listen(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then shuts down: it stops accepting, and the
// requests in flight see their context end (they derive from ctx, so long
// polls and streams return at once) and get ShutdownTimeout to finish.
// It returns nil after ctx ended, or the error that stopped serving before.
// Serve may be called once.
func (s *Server) Serve(ctx context.Context) error {
	s.srv.BaseContext = func(net.Listener) context.Context { return ctx }
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(s.ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("http: serving on %s stopped: %w", s.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close()
	}
	<-served // http.ErrServerClosed
	return nil
}

// Close stops a server that will not Serve (an error before it could).
func (s *Server) Close() error { return s.ln.Close() }

// WriteJSON answers v as indented JSON with the status code; the answer is
// never cached (it is the state of a running system).
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
