package monitor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/canary/compare/comparetest"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
)

// With dark.enabled the monitor runs a replica of the dark comparator: its
// report is at /api/v1/dark and its section on the on-call page.
func TestMonitorRunsTheDarkComparator(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	pipes := comparetest.Start(t, "cand")
	pipes.Sample(t, 60) // the rows the dispatcher sends the target
	pipes.Write(t, 60, nil)
	p := cluster{side: contract.Primary, brokers: pipes.Primary.ListenAddrs(), kc: pipes.Primary}
	s := cluster{side: contract.Standby, brokers: pipes.Standby.ListenAddrs(), kc: pipes.Standby}
	cfg := testConfig("dark", addr, paths, p, s)
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Dark.Enabled = true
	cfg.Dark.Targets = []compare.TargetConfig{{Name: "cand", Source: "primary", KafkaCluster: contract.KafkaCluster{Brokers: pipes.Dark.ListenAddrs()}}}
	cfg.Dark.Interval, cfg.Dark.Settle, cfg.Dark.Horizon, cfg.Dark.Stale = 100*time.Millisecond, 200*time.Millisecond, time.Minute, 30*time.Second
	r := startReplica(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.dark.Until(ctx, func(rep compare.Report) bool { return rep.Verdict == compare.Pass }); err != nil {
		t.Fatalf("no pass: %+v", r.dark.Report().Targets)
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get("http://" + r.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	var rep compare.Report
	if err := json.Unmarshal([]byte(get("/api/v1/dark")), &rep); err != nil || rep.Verdict != compare.Pass || rep.Targets[0].Campaigns != 60 {
		t.Fatalf("/api/v1/dark: %v %+v", err, rep)
	}
	if page := get("/"); !strings.Contains(page, `<section id="dark">`) || !strings.Contains(page, `id="dark-verdict">pass<`) {
		t.Fatalf("the on-call page has no dark canary section:\n%s", page)
	}
	if got := r.metric(t, "hotpair_dark_verdict", "target", "cand", "verdict", "pass"); got != 1 {
		t.Fatalf("hotpair_dark_verdict on the monitor's registry: %v", got)
	}
}

// Off by default: no comparator, /api/v1/dark says how to turn it on, the
// page has no section.
func TestMonitorWithoutDarkComparator(t *testing.T) {
	cfg := testConfig("nodark", "127.0.0.1:1", contract.NewPaths("/x"), cluster{brokers: []string{"127.0.0.1:1"}}, cluster{brokers: []string{"127.0.0.1:2"}})
	m, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/dark", nil))
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "dark.enabled") {
		t.Fatalf("GET /api/v1/dark: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if strings.Contains(w.Body.String(), `id="dark"`) {
		t.Fatal("the page shows a dark section without a comparator")
	}
}
