package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

const (
	runbook    = "../docs/runbook.md"
	alertRules = "prometheus/hotpair-monitor-alerts.yml"
	alertTests = "prometheus/hotpair-monitor-alerts.test.yml"
	dashboard  = "grafana/hotpair.json"
)

var promParser = parser.NewParser(parser.Options{})

// grafanaVars stands in for the dashboard's variables, as Grafana
// interpolates them before it sends a query.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "${job}", ".+", "$job", ".+", "$service", "budget")

// alertGroups are the alert rules' groups, parsed as Prometheus does.
func alertGroups(t *testing.T) []rulefmt.RuleGroup {
	t.Helper()
	groups, errs := rulefmt.ParseFile(alertRules, false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", alertRules, errs)
	}
	return groups.Groups
}

// queries returns every PromQL expression of the dashboard (panels and
// annotations) and of the alert rules, by where it is.
func queries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, g := range alertGroups(t) {
		for _, r := range g.Rules {
			out[alertRules+": "+r.Alert] = r.Expr
		}
	}
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	labelValues := regexp.MustCompile(`^label_values\((.*), *[a-z_]+\)$`)
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok {
				where = dashboard + ": " + title
			} else if name, ok := v["name"].(string); ok {
				where = dashboard + ": " + name
			}
			for k, x := range v {
				if s, ok := x.(string); ok && k == "expr" {
					out[where+" "+s] = grafanaVars.Replace(s)
				} else if ok && k == "definition" {
					m := labelValues.FindStringSubmatch(s)
					if m == nil {
						t.Errorf("%s: variable query %q is not label_values(SELECTOR, LABEL)", where, s)
						continue
					}
					out[where+" "+s] = grafanaVars.Replace(m[1])
				} else {
					walk(x, where)
				}
			}
		case []any:
			for _, x := range v {
				walk(x, where)
			}
		}
	}
	walk(d, dashboard)
	return out
}

// metricNames parses expr with Prometheus's own parser and returns the
// metric names it selects.
func metricNames(t *testing.T, where, expr string) []string {
	t.Helper()
	e, err := promParser.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return nil
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// Every expression of the dashboard and the alert rules parses, and names
// only metrics that a running sandbox exports: the test starts `hotpair
// sandbox`, makes it produce a dead letter and a bad health sample (budget
// rows played into ad-events and hotpair-health), and scrapes /metrics.
// exportedOnlyAfterAnEvent are metrics that no daemon shows before the
// event they count, each with the file that defines it (which the test
// reads instead).
var exportedOnlyAfterAnEvent = map[string]string{
	// A dark pipeline's, one series per topic refused: none before the
	// first refusal, which is a bug.
	"hotpair_pipeline_refused_records_total": "../pipeline/metrics.go",
}

func TestQueriesNameExportedMetrics(t *testing.T) {
	used := map[string][]string{}
	for where, expr := range queries(t) {
		for _, n := range metricNames(t, where, expr) {
			used[n] = append(used[n], where)
		}
	}
	if len(used) < 20 {
		t.Fatalf("only %d metrics used: %v", len(used), used)
	}
	exported := scrapeSandbox(t)
	for name, where := range used {
		if file, ok := exportedOnlyAfterAnEvent[name]; ok {
			if b, err := os.ReadFile(file); err != nil || !bytes.Contains(b, []byte(`"`+name+`"`)) {
				t.Errorf("%s is not defined in %s (%v); used in:\n  %s", name, file, err, strings.Join(where, "\n  "))
			}
			continue
		}
		if !exported[name] {
			slices.Sort(where)
			t.Errorf("%s is not exported by a running sandbox; used in:\n  %s", name, strings.Join(where, "\n  "))
		}
	}
}

// scrapeSandbox runs the sandbox on loopback until its /metrics shows the
// dead letter and the bad health sample it was fed, and returns the metric
// names it exports.
func scrapeSandbox(t *testing.T) map[string]bool {
	t.Helper()
	bin := hotpairBin(t)
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	stdout, logs, stop := startDaemon(ctx, t, bin, nil, "sandbox", "--http", "127.0.0.1:0", "--addr-file", addrFile,
		"--campaigns", "6", "--qps", "40", "--window", "6s")
	defer func() { cancel(); stop() }()
	// The sandbox writes its address file, then prints its banner.
	up := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() { // to the end, so the sandbox never blocks on a full pipe
			if !seen && strings.HasPrefix(sc.Text(), "hotpair sandbox is up") {
				seen = true
				up <- true
			}
		}
		if !seen {
			up <- false
		}
	}()
	select {
	case ok := <-up:
		if !ok {
			t.Fatalf("the sandbox exited before it was up:\n%s", logs.String())
		}
	case <-ctx.Done():
		t.Fatalf("the sandbox was not up within 4 minutes:\n%s", logs.String())
	}
	var a sandboxAddrs
	b, err := os.ReadFile(addrFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &a); err != nil || a.HTTP == "" || len(a.Primary) == 0 {
		t.Fatalf("address file %s: %v", b, err)
	}
	for _, topic := range []string{"ad-events", "hotpair-health"} {
		// The sandbox's clusters speak SASL_SSL: the address file says how.
		play := exec.CommandContext(ctx, bin, "replay", "play", "compose/load/budgets.hpr", "--target", a.Primary[0]+"/"+topic, "--max",
			"--kafka-tls-ca-file", a.CA, "--kafka-sasl-mechanism", a.Mech, "--kafka-sasl-username", a.User,
			"--kafka-sasl-password-env", "HOTPAIR_KAFKA_PASSWORD")
		play.Env = append(os.Environ(), "HOTPAIR_KAFKA_PASSWORD="+a.Password)
		if out, err := play.CombinedOutput(); err != nil {
			t.Fatalf("playing budget rows into %s: %v\n%s", topic, err, out)
		}
	}
	for {
		names := metricNamesAt("http://" + a.HTTP + "/metrics")
		if names["hotpair_dead_letters_total"] && names["hotpair_monitor_bad_samples_total"] {
			maps.Copy(names, scrapeDispatcher(ctx, t, bin, dir, a))
			maps.Copy(names, scrapeComparator(ctx, t, bin, dir, a))
			return names
		}
		if ctx.Err() != nil {
			t.Fatalf("the sandbox never exported the dead letter and the bad sample it was fed (have %d names)", len(names))
		}
		time.Sleep(time.Second)
	}
}

// startDaemon starts bin with args (and env added to the test's) until
// stop, which interrupts it and waits; its stdout is for the caller to read
// to the end, its stderr is kept in logs, which the test may read while
// the daemon writes.
func startDaemon(ctx context.Context, t *testing.T, bin string, env []string, args ...string) (io.Reader, *logBuffer, func()) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	logs := &logBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdout, logs, func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }
}

// logBuffer is a daemon's stderr, written by exec's copying goroutine and
// read by the test.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sandboxAddrs is what the tests read of the sandbox's address file.
type sandboxAddrs struct {
	Primary      []string `json:"primary_brokers"`
	Standby      []string `json:"standby_brokers"`
	ZK           string   `json:"zk"`
	ZKRoot       string   `json:"zk_root"`
	HTTP         string   `json:"http"`
	CA           string   `json:"kafka_ca_file"`
	Mech         string   `json:"kafka_sasl_mechanism"`
	User         string   `json:"kafka_sasl_username"`
	Password     string   `json:"kafka_sasl_password"`
	OperatorAuth string   `json:"operator_auth"`
}

// metricNamesAt scrapes url and returns the metric names it exports (none
// when it does not answer).
func metricNamesAt(url string) map[string]bool {
	names := map[string]bool{}
	resp, err := http.Get(url)
	if err != nil {
		return names
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	return names
}

// scrapeDispatcher sets a dark target (the sandbox's standby cluster under
// the prefix dark.metrics-check.) as the sandbox's operator, runs `hotpair
// dark dispatch` on the sandbox's primary side with a config as an operator
// would write it, and returns the metric names it exports once it feeds the
// target: the dark canary's metrics, which the sandbox itself does not run.
func scrapeDispatcher(ctx context.Context, t *testing.T, bin, dir string, a sandboxAddrs) map[string]bool {
	t.Helper()
	zkf := []string{"--zk", a.ZK, "--zk-root", a.ZKRoot}
	if a.OperatorAuth != "" {
		zkf = append(zkf, "--auth", a.OperatorAuth)
	}
	set := exec.CommandContext(ctx, bin, append([]string{"dark", "set", "metrics-check", "--brokers", strings.Join(a.Standby, ","),
		"--strategy", "identical", "--multiplier", "1", "--until", "1h"}, zkf...)...)
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("hotpair dark set: %v\n%s", err, out)
	}
	security := ""
	if a.CA != "" {
		security = fmt.Sprintf("  tls: {enabled: true, ca_file: %q}\n  sasl: {mechanism: %s, username: %q, password_env: HOTPAIR_KAFKA_PASSWORD}\n", a.CA, a.Mech, a.User)
	}
	cfg := filepath.Join(dir, "dispatch.yml")
	yml := fmt.Sprintf("side: primary\nzk: {servers: [%q], root: %q}\nlive:\n  brokers: [%q]\n%stargets:\n%shttp: {listen: \"127.0.0.1:0\"}\n",
		a.ZK, a.ZKRoot, a.Primary[0], security, security)
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, logs, stop := startDaemon(ctx, t, bin, []string{"HOTPAIR_KAFKA_PASSWORD=" + a.Password}, "dark", "dispatch", "--config", cfg)
	defer stop()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), " on http://"); ok {
				urls <- "http://" + url + "/metrics"
			}
		}
		close(urls)
	}()
	url, ok := <-urls
	if !ok {
		t.Fatalf("hotpair dark dispatch did not start:\n%s", logs.String())
	}
	for {
		names := metricNamesAt(url)
		if names["hotpair_dark_dispatch_fraction"] && names["hotpair_dark_dispatch_records_total"] {
			return names
		}
		if ctx.Err() != nil {
			t.Fatalf("the dispatcher never exported its target's metrics (have %d names):\n%s", len(names), logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrapeComparator runs `hotpair dark compare` on the sandbox's two sides
// with a config as an operator would write it; it finds the target
// scrapeDispatcher left in ZooKeeper. It returns the metric names it exports
// once it judged that target: the comparator's metrics, which the sandbox
// itself does not run.
func scrapeComparator(ctx context.Context, t *testing.T, bin, dir string, a sandboxAddrs) map[string]bool {
	t.Helper()
	security := ""
	if a.CA != "" {
		security = fmt.Sprintf("tls: {enabled: true, ca_file: %q}, sasl: {mechanism: %s, username: %q, password_env: HOTPAIR_KAFKA_PASSWORD}", a.CA, a.Mech, a.User)
	}
	auth := ""
	if a.OperatorAuth != "" {
		auth = fmt.Sprintf(", auth: %q", a.OperatorAuth)
	}
	cfg := filepath.Join(dir, "dark-compare.yml")
	yml := fmt.Sprintf("zk: {servers: [%q], root: %q%s}\nclusters:\n  primary: {brokers: [%q], %s}\n  standby: {brokers: [%q], %s}\n"+
		"dark_kafka: {%s}\nhttp: {listen: \"127.0.0.1:0\"}\ninterval: 500ms\nsettle: 200ms\nmax_skew: 250ms\n",
		a.ZK, a.ZKRoot, auth, a.Primary[0], security, a.Standby[0], security, security)
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, logs, stop := startDaemon(ctx, t, bin, []string{"HOTPAIR_KAFKA_PASSWORD=" + a.Password}, "dark", "compare", "--config", cfg)
	defer stop()
	addr := regexp.MustCompile(`comparator serving .* http=(\S+)`)
	for {
		if m := addr.FindStringSubmatch(logs.String()); m != nil {
			names := metricNamesAt("http://" + m[1] + "/metrics")
			if names["hotpair_dark_verdict"] {
				return names
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the comparator never exported its verdict:\n%s", logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Every alert rule has a promtool unit test that expects it to fire, and
// promtool (Debian's prometheus package, installed by scripts/install-deps.sh)
// passes the rules and the tests.
func TestEveryAlertHasAPromtoolTest(t *testing.T) {
	var tests struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	b, err := os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			fires[a.Alertname] = fires[a.Alertname] || len(a.ExpAlerts) > 0
		}
	}
	n := 0
	for _, g := range alertGroups(t) {
		for _, r := range g.Rules {
			n++
			if r.Alert != "" && !fires[r.Alert] {
				t.Errorf("alert %s has no promtool unit test that expects it to fire", r.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatal("no rules")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: run scripts/install-deps.sh (Debian package prometheus)")
	}
	for _, args := range [][]string{{"check", "rules", filepath.Base(alertRules)}, {"test", "rules", filepath.Base(alertTests)}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every alert links its section of docs/runbook.md (GitHub's anchor of a
// "### AlertName" heading), and every alert section there is an alert of
// the rules: on-call lands on what to do, and no section outlives its alert.
func TestEveryAlertHasARunbookSection(t *testing.T) {
	const base = "https://github.com/hotpair/hotpair/blob/main/docs/runbook.md#"
	b, err := os.ReadFile(runbook)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok {
			sections[name] = true
		}
	}
	alerts := map[string]bool{}
	for _, g := range alertGroups(t) {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			if got, want := r.Annotations["runbook_url"], base+strings.ToLower(r.Alert); got != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, got, want)
			}
			if !sections[r.Alert] {
				t.Errorf("alert %s has no section (### %s) in %s", r.Alert, r.Alert, runbook)
			}
		}
	}
	for name := range sections {
		if !alerts[name] {
			t.Errorf("%s has a section ### %s, which is no alert of %s", runbook, name, alertRules)
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts")
	}
}
