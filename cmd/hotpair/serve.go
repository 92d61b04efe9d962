package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hotpair/hotpair/internal/httpserver"
)

// newRegistry returns a registry with the Go runtime and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// metricsMux serves /metrics from g and /healthz.
func metricsMux(g prometheus.Gatherer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}

// serveHTTP listens on addr and serves h until ctx ends. It returns the
// address it listens on (useful with port 0); a failure to serve later is
// logged, and the command goes on with its work.
func serveHTTP(ctx context.Context, log *slog.Logger, addr string, h http.Handler) (net.Addr, error) {
	srv, err := httpserver.Listen(addr, h)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := srv.Serve(ctx); err != nil {
			log.Error("no more /metrics: the HTTP server stopped", "err", err)
		}
	}()
	return srv.Addr(), nil
}
