package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/selector"
)

func TestSelectordBadUsage(t *testing.T) {
	for name, args := range map[string][]string{
		"no --zk":             {},
		"unknown service":     {"--zk", "127.0.0.1:1", "--services", "budget,aggregator"},
		"duplicate service":   {"--zk", "127.0.0.1:1", "--services", "budget,budget"},
		"unknown side":        {"--zk", "127.0.0.1:1", "--default-side", "secondary"},
		"short session":       {"--zk", "127.0.0.1:1", "--zk-session-timeout", "1ms"},
		"bad credentials":     {"--zk", "127.0.0.1:1", "--zk-auth", "nopassword"},
		"unknown flag":        {"--zk", "127.0.0.1:1", "--wait", "1s"},
		"positional argument": {"--zk", "127.0.0.1:1", "extra"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"selectord"}, args...), &stdout, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), "usage: hotpair selectord") {
				t.Fatalf("no usage on stderr:\n%s", stderr.String())
			}
		})
	}
}

// selectordBuffer is a goroutine-safe output buffer that tells waiters
// about every write.
type selectordBuffer struct {
	changes changes.Feed
	mu      sync.Mutex
	b       bytes.Buffer
}

func (b *selectordBuffer) Write(p []byte) (int, error) {
	defer b.changes.Notify()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *selectordBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestSelectordServesTheSelection(t *testing.T) {
	conn, addr, root := zkForTest(t, "selectord")
	paths := contract.NewPaths(root)
	doc, _ := contract.Encode(contract.Selection{V: 1, Service: contract.ServicePacer, Active: contract.Standby, Preferred: contract.Primary, Epoch: 6, Reason: "primary lag_high"})
	if _, err := conn.Create(paths.Selection(contract.ServicePacer), doc, 0, zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &selectordBuffer{}, &selectordBuffer{}
	a := &app{stdout: stdout, stderr: stderr, logger: slog.New(slog.NewTextHandler(stderr, nil))}
	done := make(chan int, 1)
	go func() {
		done <- runSelectord(ctx, a, []string{"--zk", addr, "--zk-root", root, "--services", "pacer,bidder",
			"--default-side", "standby", "--http", "127.0.0.1:0"})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("selectord exited %d; stderr:\n%s", code, stderr.String())
		}
	}()
	var base string
	listening, stopWaiting := context.WithTimeout(context.Background(), 10*time.Second)
	defer stopWaiting()
	if err := stdout.changes.Until(listening, func() bool {
		a, ok := strings.CutPrefix(strings.TrimSpace(stdout.String()), "selectord listening on ")
		base = "http://" + a
		return ok
	}); err != nil {
		t.Fatalf("selectord did not start; stderr:\n%s", stderr.String())
	}

	// Long poll from the all-default tag until the pacer selection is read.
	resp, err := http.Get(base + "/v1/selection?wait=10s&tag=1.s.s.s")
	if err != nil {
		t.Fatal(err)
	}
	var st selector.Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Tag != "1.s.s6.s" || !st.ZKConnected || st.Services[1].Selection.Reason != "primary lag_high" || st.Services[0].Watched {
		t.Fatalf("status = %+v", st)
	}
	if resp.Header.Get(selector.TagHeader) != st.Tag {
		t.Fatalf("header %q, body tag %q", resp.Header.Get(selector.TagHeader), st.Tag)
	}
	// bidder has no selection: not ready.
	resp, err = http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d with bidder on the default, want 503", resp.StatusCode)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var m bytes.Buffer
	_, _ = m.ReadFrom(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`hotpair_selector_snapshot_age_seconds{service="pacer"} 0`, "hotpair_selector_zk_connected 1", "go_goroutines"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
