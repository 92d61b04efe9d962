package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor"
)

// opRun runs the hotpair command line and returns the exit code and outputs.
func opRun(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestOperatorToolsBadUsage(t *testing.T) {
	zkf := []string{"--zk", "127.0.0.1:1"}
	set := func(extra ...string) []string {
		return append(append([]string{"override", "set"}, zkf...), extra...)
	}
	checkBadUsage(t, map[string]usageCase{
		"override alone":          {[]string{"override"}, "set or clear?"},
		"override unknown":        {[]string{"override", "remove"}, `unknown subcommand "remove"`},
		"set without reason":      {set("--service", "budget", "--side", "standby", "--for", "1h"), "--reason is required"},
		"set without expiry":      {set("--service", "budget", "--side", "standby", "--reason", "drill"), "exactly one of --for and --until"},
		"set with both expiries":  {set("--service", "budget", "--side", "standby", "--reason", "x", "--for", "1h", "--until", "2030-01-01T00:00:00Z"), "exactly one of --for and --until"},
		"set without side":        {set("--service", "budget", "--reason", "x", "--for", "1h"), "--service and --side are required"},
		"set bad side":            {set("--service", "budget", "--side", "secondary", "--reason", "x", "--for", "1h"), `side "secondary" is not one of`},
		"set bad service":         {set("--service", "aggregator", "--side", "standby", "--reason", "x", "--for", "1h"), `service "aggregator" is not one of`},
		"set too long":            {set("--service", "budget", "--side", "standby", "--reason", "x", "--for", "400h"), "more than 168h"},
		"set in the past":         {set("--service", "budget", "--side", "standby", "--reason", "x", "--until", "2001-01-01T00:00:00Z"), "not in the future"},
		"set bad until":           {set("--service", "budget", "--side", "standby", "--reason", "x", "--until", "tomorrow"), "not an RFC 3339 time"},
		"set without zk":          {[]string{"override", "set", "--service", "budget", "--side", "standby", "--reason", "x", "--for", "1h"}, "--zk is required"},
		"set bad auth":            {set("--service", "budget", "--side", "standby", "--reason", "x", "--for", "1h", "--auth", "oncall"), "--auth"},
		"clear without service":   {append([]string{"override", "clear"}, zkf...), "--service is required"},
		"status without zk":       {[]string{"status"}, "--zk is required"},
		"status bad service":      {[]string{"status", "--zk", "127.0.0.1:1", "--services", "budget,spend"}, `--services: "spend"`},
		"status positional":       {[]string{"status", "--zk", "127.0.0.1:1", "now"}, "unexpected argument"},
		"monitor without config":  {[]string{"monitor"}, "--config is required"},
		"monitor simulate usage":  {[]string{"monitor", "simulate"}, "usage: hotpair monitor simulate"},
		"monitor unknown flag":    {[]string{"monitor", "--cfg", "x.yml"}, "flag provided but not defined"},
		"override set positional": {set("--service", "budget", "--side", "standby", "--reason", "x", "--for", "1h", "extra"), "unexpected argument"},
	})
}

// usageCase is a command line that must print want and the usage, and exit 2.
type usageCase struct {
	args []string
	want string
}

func checkBadUsage(t *testing.T, cases map[string]usageCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := opRun(tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "usage: hotpair") {
				t.Fatalf("stderr lacks %q and the usage:\n%s", tc.want, stderr)
			}
		})
	}
}

func TestMonitorBadConfigNamesTheKey(t *testing.T) {
	code, _, stderr := opRun("monitor", "--config", "../../monitor/testdata/bad-auth-without-operator.yml")
	if code != 1 || !strings.Contains(stderr, "zk.operator_user is required") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// status and override work straight on ZooKeeper, with no monitor running.
func TestStatusAndOverrideOnZooKeeper(t *testing.T) {
	conn, addr, root := zkForTest(t, "cli")
	paths := contract.NewPaths(root)
	// A selection as a monitor published it before going away.
	since := time.Now().Add(-20 * time.Minute).UTC()
	sel := contract.Selection{V: 1, Service: contract.ServiceBudget, Active: contract.Standby, Preferred: contract.Primary, Epoch: 2,
		DecidedAt: time.Now().UTC(), LastSwitch: time.Now().Add(-5 * time.Minute).UTC(),
		Reason: "failover primary → standby: primary unhealthy for 1 window(s): lag_high: p99 120000 ms > limit 60000 ms",
		Sides: map[contract.Side]contract.SideState{
			contract.Primary: {Healthy: false, Reasons: []string{"lag_high: p99 120000 ms > limit 60000 ms"}, QPS: 812, LagP99Ms: 120000, Build: "b7"},
			contract.Standby: {Healthy: true, HealthySince: &since, QPS: 815, LagP99Ms: 50, Build: "b6"},
		},
		StaggerViolation: "both sides took a new build within the stagger period 1h0m0s"}
	b, _ := contract.Encode(sel)
	if _, err := conn.Create(paths.Selection(contract.ServiceBudget), b, 0, zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	zkf := []string{"--zk", addr, "--zk-root", root}

	code, out, stderr := opRun(append([]string{"status"}, zkf...)...)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"NONE — no monitor replica is running", "budget   STANDBY", "BAD lag_high", "ok 815/s",
		"why:      failover primary → standby", "reasons: lag_high: p99 120000 ms", "STAGGER:  both sides", "no selection published yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}

	code, out, stderr = opRun(append([]string{"override", "set", "--service", "budget", "--side", "primary",
		"--reason", "standby build b6 is suspect", "--for", "30m", "--by", "alice"}, zkf...)...)
	if code != 0 || !strings.Contains(out, "override set: budget pinned to primary") || !strings.Contains(out, "WARNING: no monitor replica is running") {
		t.Fatalf("override set: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = opRun(append([]string{"status", "--json"}, zkf...)...)
	var st monitor.Status
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s", code, err, out)
	}
	if len(st.Services) != 3 || !st.Services[0].OverrideActive || st.Services[0].Override.By != "alice" || st.Services[0].Selection.Epoch != 2 {
		t.Fatalf("status --json: %+v", st.Services)
	}

	code, out, stderr = opRun(append([]string{"override", "clear", "--service", "budget", "--reason", "b6 is fine", "--by", "bob"}, zkf...)...)
	if code != 0 || !strings.Contains(out, "override of budget cleared by bob") {
		t.Fatalf("override clear: exit %d\n%s\n%s", code, out, stderr)
	}
	_, out, _ = opRun(append([]string{"status"}, zkf...)...)
	if !strings.Contains(out, "override: ended — to primary") || !strings.Contains(out, "cleared: b6 is fine (was: standby build b6 is suspect, by alice)") {
		t.Fatalf("status after clear:\n%s", out)
	}
	code, out, _ = opRun(append([]string{"override", "clear", "--service", "budget"}, zkf...)...)
	if code != 0 || !strings.Contains(out, "nothing to clear") {
		t.Fatalf("second clear: exit %d\n%s", code, out)
	}

	// An override protected by its operator cannot be changed without --auth.
	code, _, stderr = opRun(append([]string{"override", "set", "--service", "pacer", "--side", "standby",
		"--reason", "drill", "--for", "10m", "--auth", "oncall:pw"}, zkf...)...)
	if code != 0 {
		t.Fatalf("override set --auth: exit %d\n%s", code, stderr)
	}
	code, _, stderr = opRun(append([]string{"override", "clear", "--service", "pacer"}, zkf...)...)
	if code != 1 || !strings.Contains(stderr, "pass --auth") {
		t.Fatalf("clear without the operator identity: exit %d\n%s", code, stderr)
	}
	code, _, stderr = opRun(append([]string{"status"}, "--zk", "127.0.0.1:1", "--timeout", "500ms")...)
	if code != 1 || !strings.Contains(stderr, "cannot reach ZooKeeper") {
		t.Fatalf("status without ZooKeeper: exit %d\n%s", code, stderr)
	}
}
