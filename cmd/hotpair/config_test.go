package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// config check names every problem of every file and exits 1; good files
// and command lines pass with 0.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := "../../deploy/examples/pipeline-primary.yml"
	mon := "../../monitor/testdata/monitor.yml"
	threeBad := writeFile(t, dir, "pipeline.yml", "side: primery\nbrokers: [kafka-a1]\naggregator:\n  window: 1ms\n")
	monBad := writeFile(t, dir, "monitor.yml", "zk:\n  servers: [zk1:2181]\nclusters:\n  primary: {brokers: [a:9092]}\nwindow: 0s\n")
	neither := writeFile(t, dir, "neither.yml", "zk:\n  servers: [zk1:2181]\n")
	both := writeFile(t, dir, "both.yml", "side: primary\nclusters: {}\n")
	typo := writeFile(t, dir, "typo.yml", "side: primary\nbrokers: [a:9092]\nstorage:\n  dirr: /x\n")

	dark := "../../canary/compare/testdata/dark-compare.yml"
	code, out, _ := opRun("config", "check", good, mon, dark)
	if code != 0 || !strings.Contains(out, "ok   pipeline "+good) || !strings.Contains(out, "ok   monitor  "+mon) || !strings.Contains(out, "ok   dark-compare "+dark) {
		t.Fatalf("good files: exit %d\n%s", code, out)
	}
	code, out, _ = opRun("config", "check", good, threeBad, monBad, neither, both, typo)
	if code != 1 {
		t.Fatalf("bad files: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"ok   pipeline " + good,
		"BAD  pipeline " + threeBad,
		`side: "primery" is not a side`, `brokers[0]: "kafka-a1" is not host:port`, "aggregator.window must be at least 10ms, got 1ms",
		"BAD  monitor  " + monBad,
		"clusters.standby.brokers is required", "window must be at least 1s",
		"BAD  ?        " + neither, "cannot tell which config this is from its keys: pass --kind",
		"has keys of pipeline and of monitor configs: pass --kind",
		"key storage.dirr (line 4): unknown key",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = opRun("config", "check", "--kind", "monitor", neither)
	if code != 1 || !strings.Contains(out, "BAD  monitor") || !strings.Contains(out, "clusters.primary.brokers is required") {
		t.Fatalf("--kind monitor: exit %d\n%s", code, out)
	}

	// Command lines, as the daemons parse them.
	code, out, _ = opRun("config", "check", "--", "pipeline", "--config", good, "--instance", "p-0", "--zk", "zk1:2181")
	if code != 0 || !strings.Contains(out, "ok   command  hotpair pipeline --config") {
		t.Fatalf("good command: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pipeline", "--config", good, "--sides", "primary"}, "flag provided but not defined: -sides"},
		{[]string{"pipeline", "--config", threeBad}, `side: "primery" is not a side`},
		{[]string{"monitor", "--config", monBad}, "clusters.standby.brokers is required"},
		{[]string{"selectord", "--zk", "zk1:2181", "--http", "9480"}, `--http "9480" is not host:port`},
		{[]string{"replay", "play", filepath.Join(dir, "none.hpr"), "--target", "a:9092/ad-events", "--qps", "10"}, "none.hpr"},
		{[]string{"sandbox"}, "only these commands can be checked: pipeline, monitor, selectord, replay play"},
		{[]string{"monitor", "simulate", "--file", "x"}, `unexpected argument "simulate"`},
	} {
		code, out, _ := opRun(append([]string{"config", "check", "--"}, tc.args...)...)
		if code != 1 || !strings.Contains(out, "BAD  command") || !strings.Contains(out, tc.want) || strings.Contains(out, "usage: hotpair") {
			t.Errorf("%v: exit %d, want 1 naming %q (without the flag list):\n%s", tc.args, code, tc.want, out)
		}
	}
	for _, args := range [][]string{{"config"}, {"config", "check"}, {"config", "check", "--kind", "dark", good}, {"config", "check", good, "--"}} {
		if code, _, stderr := opRun(args...); code != 2 || !strings.Contains(stderr, "usage: hotpair config check") {
			t.Errorf("%v: exit %d, want 2 with the usage:\n%s", args, code, stderr)
		}
	}
}

// Every checkable command returns once its config is valid, under check:
// none of them may start (they would block on the unreachable ZooKeeper
// and Kafka named here).
func TestCheckableCommandsStartNothing(t *testing.T) {
	lines := map[string][]string{
		"pipeline":      {"pipeline", "--config", "../../deploy/examples/pipeline-standby.yml", "--zk", "127.0.0.1:1"},
		"monitor":       {"monitor", "--config", "../../monitor/testdata/monitor.yml"},
		"selectord":     {"selectord", "--zk", "127.0.0.1:1", "--http", "127.0.0.1:0"},
		"dark dispatch": {"dark", "dispatch", "--config", "../../canary/dispatch/testdata/good.yml"},
		"dark compare":  {"dark", "compare", "--config", "../../canary/compare/testdata/dark-compare.yml"},
		"replay play":   {"replay", "play", "../../deploy/compose/load/ad-events.hpr", "--target", "127.0.0.1:1/ad-events", "--qps", "10", "--loop", "--duration", "8760h"},
	}
	for _, c := range checkableCommands {
		args, ok := lines[strings.Join(c.path, " ")]
		if !ok {
			t.Fatalf("no command line to check %v with", c.path)
		}
		done := make(chan error, 1)
		go func() { done <- checkCommand(context.Background(), args) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: %v", args, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%v did not return under check: it started", args)
		}
	}
}

// config acls prints, per cluster, the kafka-acls.sh commands of the daemon
// each file configures, for its principal; a config it does not cover, a
// bad file and bad arguments are told apart.
func TestConfigACLs(t *testing.T) {
	pipe := "../../deploy/examples/pipeline-primary.yml"
	mon := "../../monitor/testdata/monitor.yml"
	disp := "../../canary/dispatch/testdata/good.yml"
	code, out, errOut := opRun("config", "acls", "--principal", "User:ads-a", "--dark-target", "cand", pipe, mon, disp)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	add := `kafka-acls.sh --bootstrap-server "$BOOTSTRAP" --add --allow-principal User:ads-a `
	for _, want := range []string{
		"# pipeline " + pipe + ": on the primary cluster",
		add + "--group hotpair-budget --operation Read\n",
		add + "--topic spend --operation Create --operation Read --operation Write\n",
		add + "--topic hotpair-budget-table --operation Create --operation DescribeConfigs --operation Read --operation Write\n",
		"# monitor " + mon + ": on each side's cluster (the same on both)",
		add + "--topic hotpair-health --operation Read\n",
		"# dark-dispatch " + disp + ": on the live primary cluster",
		add + "--group hotpair-dark-dispatch-primary --operation Read\n",
		"# dark-dispatch " + disp + ": on dark target cand's cluster",
		add + "--topic dark.cand.ad-events --operation Read --operation Write\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := opRun("config", "acls", pipe); code != 0 || !strings.Contains(out, "--allow-principal User:hotpair-pipeline ") {
		t.Errorf("default principal: exit %d\n%s", code, out)
	}
	darkMon, err := os.ReadFile(mon)
	if err != nil {
		t.Fatal(err)
	}
	darkMonFile := writeFile(t, t.TempDir(), "monitor.yml", strings.Replace(string(darkMon), "enabled: false", "enabled: true", 1))
	code, out, _ = opRun("config", "acls", "--kind", "monitor", "--dark-target", "cand", darkMonFile)
	for _, want := range []string{"--topic budget-status --operation Read\n", ": on dark target cand's cluster, as the dark_kafka user\n",
		"--topic dark.cand.budgets --operation Read\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("monitor with dark.enabled: exit %d, want %q in\n%s", code, want, out)
		}
	}
	code, out, _ = opRun("config", "acls", "--format", "strimzi", mon)
	if want := "- resource: {type: topic, name: hotpair-decisions, patternType: literal}\n  operations: [AlterConfigs, Create, Read, Write]\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("--format strimzi: exit %d, want %q in\n%s", code, want, out)
	}
	dark := "../../canary/compare/testdata/dark-compare.yml"
	code, out, errOut = opRun("config", "acls", "--principal", "User:ads-a", "--dark-target", "cand", dark)
	if want := "# dark-compare " + dark + ": on each side's cluster (the same on both)\n" +
		add + "--topic bid-multipliers --operation Read\n" +
		add + "--topic budget-status --operation Read\n" +
		add + "--topic hotpair-health --operation Read\n" +
		add + "--topic pacing --operation Read\n" +
		"# dark-compare " + dark + ": on dark target cand's cluster\n" +
		add + "--topic dark.cand.bid-multipliers --operation Read\n" +
		add + "--topic dark.cand.budget-status --operation Read\n" +
		add + "--topic dark.cand.budgets --operation Read\n" +
		add + "--topic dark.cand.hotpair-health --operation Read\n" +
		add + "--topic dark.cand.pacing --operation Read\n"; code != 0 || out != want {
		t.Errorf("dark-compare: exit %d\n%s%s\nwant\n%s", code, out, errOut, want)
	}
	// A target the config lists is covered without --dark-target, once.
	fixed := writeFile(t, t.TempDir(), "compare.yml", "clusters: {primary: {brokers: [\"a:9092\"]}, standby: {brokers: [\"b:9092\"]}}\n"+
		"topic_prefix: ads.\ntargets: [{name: fixed, brokers: [\"d:9092\"]}]\n")
	code, out, errOut = opRun("config", "acls", "--dark-target", "fixed", fixed)
	if code != 0 || strings.Count(out, "--topic dark.fixed.budgets --operation Read\n") != 1 ||
		!strings.Contains(out, ": on dark target fixed's cluster (d:9092)\n") || !strings.Contains(out, "--topic ads.pacing --operation Read\n") {
		t.Errorf("dark-compare with a target: exit %d\n%s%s", code, out, errOut)
	}
	for _, k := range configKinds {
		if k.acls == nil {
			t.Errorf("config acls does not cover a %s config", k.name)
		}
	}
	for _, args := range [][]string{{"--principal", "ads-a", pipe}, {"--dark-target", "Bad_Name", disp}, {"--format", "yaml", pipe}, {}} {
		if code, _, errOut := opRun(append([]string{"config", "acls"}, args...)...); code != 2 || !strings.Contains(errOut, "usage: hotpair config acls") {
			t.Errorf("%v: exit %d, want 2 with usage\n%s", args, code, errOut)
		}
	}
}
