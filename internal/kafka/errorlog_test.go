package kafka

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A refusal repeated at every poll is logged once per partition, and again
// only when that partition's error changes.
func TestErrorLogOncePerChange(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, nil))
	var e ErrorLog
	refused, down := errors.New("TOPIC_AUTHORIZATION_FAILED"), errors.New("connection refused")
	for range 3 { // the partitions' errors come interleaved
		for p := range int32(2) {
			e.Note(log, "views: fetch error", "pacing", p, refused)
		}
	}
	e.Note(log, "views: fetch error", "pacing", 0, down)
	e.Note(log, "views: fetch error", "pacing", 0, refused)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{"partition=0 err=TOPIC_AUTHORIZATION_FAILED", "partition=1 err=TOPIC_AUTHORIZATION_FAILED",
		`partition=0 err="connection refused"`, "partition=0 err=TOPIC_AUTHORIZATION_FAILED"}
	if len(lines) != len(want) {
		t.Fatalf("logged:\n%s", b.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], "level=WARN") || !strings.Contains(lines[i], "topic=pacing") || !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s, want %s", i, lines[i], w)
		}
	}
}
