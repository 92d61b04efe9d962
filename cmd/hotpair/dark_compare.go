package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hotpair/hotpair/canary/compare"
)

// runDarkCompare is "hotpair dark compare --config FILE": the comparator
// daemon, serving /, /api/v1/dark, /metrics and /healthz on http.listen.
func runDarkCompare(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "dark compare", "dark compare --config FILE")
	cfgPath := fs.String("config", "", "YAML config file, see docs/dark.md (required)")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	if *cfgPath == "" {
		return usageError(fs, a.stderr, "--config is required")
	}
	cfg, err := compare.LoadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark compare: %v\n", err)
		return 1
	}
	reg := newRegistry()
	c, err := compare.New(compare.Options{Config: cfg, Logger: a.logger, Registerer: reg, Gatherer: reg})
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark compare: %v\n", err)
		return 1
	}
	if a.checkOnly {
		return 0
	}
	if err := c.Run(ctx); err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark compare: %v\n", err)
		return 1
	}
	return 0
}

// runDarkReport is "hotpair dark report": the verdict of a running
// comparator (--url), or of one run here for a while (--config, --for).
// Exit 0 pass, 1 regression, 3 insufficient data, 2 usage; a comparator
// that cannot be reached is 3 as well (no verdict).
func runDarkReport(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "dark report", "dark report [--json] (--url http://HOST:PORT | --config FILE [--for 2m])")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	base := fs.String("url", "", "a running comparator (hotpair dark compare, or a process embedding one)")
	cfgPath := fs.String("config", "", "run a comparator here with this config (see docs/dark.md) and report at the end")
	dur := fs.Duration("for", 2*time.Minute, "with --config: how long to read and compare before reporting")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	switch {
	case (*base == "") == (*cfgPath == ""):
		return usageError(fs, a.stderr, "give either --url or --config")
	case *dur <= 0:
		return usageError(fs, a.stderr, "--for must be positive")
	}
	var rep compare.Report
	var err error
	if *base != "" {
		rep, err = fetchDarkReport(ctx, *base)
	} else {
		rep, err = localDarkReport(ctx, a, *cfgPath, *dur)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair dark report: %v\n", err)
		return 3
	}
	if *asJSON {
		if err := printJSON(a.stdout, rep); err != nil {
			return 1
		}
	} else {
		rep.WriteText(a.stdout)
	}
	return rep.Verdict.ExitCode()
}

// fetchDarkReport reads GET /api/v1/dark of the comparator at base.
func fetchDarkReport(ctx context.Context, base string) (compare.Report, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return compare.Report{}, fmt.Errorf("--url %q is not an http(s) URL", base)
	}
	if !strings.HasSuffix(u.Path, "/api/v1/dark") {
		u.Path += "/api/v1/dark"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return compare.Report{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return compare.Report{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return compare.Report{}, fmt.Errorf("%s answered %s", u, resp.Status)
	}
	var rep compare.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return compare.Report{}, fmt.Errorf("%s: %w", u, err)
	}
	return rep, nil
}

// localDarkReport runs a comparator for d (its HTTP listener off) and
// returns its last report.
func localDarkReport(ctx context.Context, a *app, path string, d time.Duration) (compare.Report, error) {
	cfg, err := compare.LoadConfig(path)
	if err != nil {
		return compare.Report{}, err
	}
	cfg.HTTP.Listen = "off"
	c, err := compare.New(compare.Options{Config: cfg, Logger: a.logger})
	if err != nil {
		return compare.Report{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := c.Run(ctx); err != nil {
		return compare.Report{}, err
	}
	return c.Report(), nil
}
