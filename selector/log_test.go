package selector

import (
	"log/slog"
	"os"
	"sync"
	"testing"
)

// testLogger logs to the test log until the test's cleanup;
// HOTPAIR_TEST_VERBOSE=1 shows debug lines.
func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("HOTPAIR_TEST_VERBOSE") != "" {
		level = slog.LevelDebug
	}
	w := &tWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type tWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *tWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(b[:len(b)-1]))
	}
	return len(b), nil
}
