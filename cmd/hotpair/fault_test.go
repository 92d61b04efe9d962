package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An answer of the sandbox that does not decode is an error, never a
// silent "nothing healed".
func TestFaultHealRejectsAnAnswerThatDoesNotDecode(t *testing.T) {
	for _, tc := range []struct {
		args []string
		body string
	}{
		{[]string{"f1"}, `[{"id":"f1"}]`}, // a list where one fault was due
		{[]string{"--all"}, `{"id":"f1"`}, // truncated
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodDelete {
				t.Errorf("%s %s", r.Method, r.URL)
			}
			_, _ = io.WriteString(w, tc.body)
		}))
		code, out, stderr := opRun(append([]string{"fault", "heal", "--http", srv.Listener.Addr().String()}, tc.args...)...)
		srv.Close()
		if code != 1 || out != "" || !strings.Contains(stderr, "is not what was expected") {
			t.Errorf("heal %v answered %s: exit %d, stdout %q, stderr %q; want exit 1 naming the bad answer", tc.args, tc.body, code, out, stderr)
		}
	}
}

// A good answer lists what was healed.
func TestFaultHealPrintsTheHealedFaults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `[{"id":"f1","kind":"stall"},{"id":"f2","kind":"lag"}]`)
	}))
	defer srv.Close()
	code, out, stderr := opRun("fault", "heal", "--http", srv.Listener.Addr().String(), "--all")
	if code != 0 || out != "f1 stall healed\nf2 lag healed\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
