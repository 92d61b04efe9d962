package httpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/internal/httpserver"
)

// A request in flight (a long poll) ends with the server's context, so a
// shutdown is quick and clean: Serve returns nil.
func TestServeShutsDownCleanlyWithItsContext(t *testing.T) {
	inFlight := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		<-r.Context().Done()
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	srv, err := httpserver.Listen("127.0.0.1:0", mux)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	base := "http://" + srv.Addr().String()

	resp, err := http.Get(base + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("got %q", b)
	}
	polled := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/wait")
		if err != nil {
			polled <- 0
			return
		}
		resp.Body.Close()
		polled <- resp.StatusCode
	}()
	<-inFlight
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after its context ended: %v, want nil", err)
		}
	case <-time.After(httpserver.ShutdownTimeout):
		t.Fatal("Serve did not return: the request in flight held the shutdown")
	}
	if code := <-polled; code != http.StatusServiceUnavailable {
		t.Fatalf("the request in flight got %d, want the handler's 503", code)
	}
	if _, err := http.Get(base + "/ok"); err == nil {
		t.Fatal("still serving after the shutdown")
	}
}

// A failure of Serve is returned, not dropped.
func TestServeReportsItsFailure(t *testing.T) {
	srv, err := httpserver.Listen("127.0.0.1:0", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	_ = srv.Close() // the listener fails under the server
	if err := <-served; err == nil || !strings.Contains(err.Error(), srv.Addr().String()) {
		t.Fatalf("Serve = %v, want an error naming the address", err)
	}
}

func TestListenFailsAtOnce(t *testing.T) {
	if _, err := httpserver.Listen("127.0.0.1:notaport", http.NotFoundHandler()); err == nil {
		t.Fatal("Listen accepted a bad address")
	}
}

func TestWriteJSON(t *testing.T) {
	w := httptest.NewRecorder()
	httpserver.WriteJSON(w, http.StatusConflict, map[string]any{"ok": false})
	if w.Code != http.StatusConflict || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("code %d, headers %v", w.Code, w.Header())
	}
	var got map[string]bool
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got["ok"] || !strings.Contains(w.Body.String(), "\n  \"ok\"") {
		t.Fatalf("body %q (%v), want indented JSON", w.Body.String(), err)
	}
}
