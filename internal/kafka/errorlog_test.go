package kafka

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A refusal repeated at every poll is logged once, and again only when the
// error changes.
func TestErrorLogOncePerChange(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, nil))
	var e ErrorLog
	refused, down := errors.New("TOPIC_AUTHORIZATION_FAILED"), errors.New("connection refused")
	for _, err := range []error{refused, refused, refused, down, refused} {
		e.Note(log, "views: fetch error", "pacing", 0, err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "topic=pacing") ||
		!strings.Contains(lines[1], "connection refused") || !strings.Contains(lines[2], "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("logged:\n%s", b.String())
	}
}
