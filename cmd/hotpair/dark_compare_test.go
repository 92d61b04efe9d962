package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/canary/compare/comparetest"
)

func TestDarkCompareBadUsage(t *testing.T) {
	checkBadUsage(t, map[string]usageCase{
		"compare no config":    {[]string{"dark", "compare"}, "--config is required"},
		"report neither":       {[]string{"dark", "report"}, "give either --url or --config"},
		"report both":          {[]string{"dark", "report", "--url", "http://x", "--config", "c.yml"}, "give either --url or --config"},
		"report for zero":      {[]string{"dark", "report", "--config", "c.yml", "--for", "0s"}, "--for must be positive"},
		"report stray arg":     {[]string{"dark", "report", "--url", "http://x", "extra"}, `unexpected argument "extra"`},
		"report bad flag":      {[]string{"dark", "report", "--nope"}, "flag provided but not defined"},
		"report for not a dur": {[]string{"dark", "report", "--config", "c.yml", "--for", "2"}, "invalid value"},
	})
}

// darkConfig writes a comparator config for the pipelines, comparing
// within moments.
func darkConfig(t *testing.T, p *comparetest.Pipelines, listen string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dark-compare.yml")
	cfg := fmt.Sprintf(`clusters:
  primary: {brokers: [%q]}
  standby: {brokers: [%q]}
targets:
  - name: %s
    source: primary
    brokers: [%q]
http: {listen: %q}
interval: 100ms
settle: 200ms
hold: 300ms
horizon: 1m
stale: 30s
`, p.Primary.ListenAddrs()[0], p.Standby.ListenAddrs()[0], p.Target, p.Dark.ListenAddrs()[0], listen)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hotpair dark report runs a comparator for --for and exits with the
// verdict: 0 pass, 1 regression naming the field and the campaigns with
// both values, 3 too few campaigns.
func TestDarkReportExitCodes(t *testing.T) {
	tests := []struct {
		name      string
		campaigns int
		change    func(string, int, comparetest.Row) comparetest.Row
		code      int
		want      []string
	}{
		{"equal outputs", 60, nil, 0, []string{"dark canary: PASS", "target cand (copy of primary): PASS — 60 campaigns compared"}},
		{"a changed bid rule", 60, func(p string, i int, r comparetest.Row) comparetest.Row {
			if p == "dark" && i < 12 {
				r.Mult = 2
			}
			return r
		}, 1, []string{"dark canary: REGRESSION", "bid-multipliers multiplier: dark differs from live on 12 of 60 points (20.0%)", "c-000 live 1 dark 2"}},
		{"too few campaigns", 5, nil, 3, []string{"dark canary: INSUFFICIENT DATA", "5 sampled campaigns compared, need 10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := comparetest.Start(t, "cand")
			p.Sample(t, tt.campaigns) // the rows the dispatcher sends the target
			p.Write(t, tt.campaigns, tt.change)
			code, out, stderr := opRun("dark", "report", "--config", darkConfig(t, p, "off"), "--for", "1500ms")
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// --url asks a running comparator; --json prints its report.
func TestDarkReportFromURL(t *testing.T) {
	p := comparetest.Start(t, "cand")
	p.Sample(t, 60)
	p.Write(t, 60, nil)
	cfg, err := compare.LoadConfig(darkConfig(t, p, "127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := compare.New(compare.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wait, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := c.Until(wait, func(r compare.Report) bool { return r.Verdict == compare.Pass }); err != nil {
		t.Fatalf("no pass within 30 s: %v; %+v", err, c.Report().Targets)
	}
	code, out, stderr := opRun("dark", "report", "--json", "--url", "http://"+c.HTTPAddr())
	var rep compare.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Verdict != compare.Pass || rep.Targets[0].Campaigns != 60 {
		t.Fatalf("exit %d, %v: %+v\n%s", code, err, rep, stderr)
	}
	// Nothing listening: no verdict.
	if code, _, stderr := opRun("dark", "report", "--url", "http://127.0.0.1:1"); code != 3 || !strings.Contains(stderr, "hotpair dark report:") {
		t.Fatalf("unreachable comparator: exit %d\n%s", code, stderr)
	}
}
