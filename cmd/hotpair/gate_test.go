package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor"
)

// hotpair gate answers from ZooKeeper alone: what a monitor published, with
// no monitor running.
func TestGateOnZooKeeper(t *testing.T) {
	conn, addr, root := zkForTest(t, "gate")
	paths := contract.NewPaths(root)
	zkf := []string{"--zk", addr, "--zk-root", root}
	gate := func(args ...string) (int, string, string) {
		return opRun(append(append([]string{"gate"}, zkf...), args...)...)
	}

	// Before any monitor decided: no.
	code, out, _ := gate("--side", "standby", "--held", "30m")
	if code != 1 || !strings.Contains(out, "no: standby may not be deployed now") || !strings.Contains(out, "no_selection: budget: no monitor has published a selection yet") {
		t.Fatalf("no selection: exit %d\n%s", code, out)
	}

	// The primary has run build v2 for 45 minutes, healthy for two hours;
	// the selections were written a minute ago.
	now := time.Now().UTC()
	decided, healthy, built := now.Add(-time.Minute), now.Add(-2*time.Hour), now.Add(-46*time.Minute)
	for _, svc := range contract.Services() {
		sel := contract.Selection{V: 1, Service: svc, Active: contract.Primary, Preferred: contract.Primary, Epoch: 1, DecidedAt: decided,
			Sides: map[contract.Side]contract.SideState{
				contract.Primary: {Healthy: true, HealthySince: &healthy, Build: "v2", BuildSince: &built},
				contract.Standby: {Healthy: true, HealthySince: &healthy, Build: "v1"},
			}}
		b, _ := contract.Encode(sel)
		if _, err := conn.Create(paths.Selection(svc), b, 0, zkutil.OpenACL()); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ = gate("--side", "standby", "--held", "30m")
	if code != 0 || !strings.Contains(out, "yes: standby may be deployed now: primary has been healthy on its build for 45m0s on every service (hold 30m0s)") {
		t.Fatalf("held long enough: exit %d\n%s", code, out)
	}
	code, out, _ = gate("--side", "standby", "--held", "1h", "--json")
	var a monitor.GateAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil || code != 1 {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	if a.OK || a.OtherHeldSeconds != 2700 || len(a.Failing) != 3 || a.Failing[0].Rule.String() != "hold_too_short" ||
		!strings.Contains(a.Reasons[0], `hold_too_short: budget: primary has been healthy on build "v2" for 45m0s, less than the hold 1h0m0s`) {
		t.Fatalf("--json answer: %+v", a)
	}

	// An override pinning the pacer to the standby closes the gate for it.
	code, _, stderr := opRun(append([]string{"override", "set", "--service", "pacer", "--side", "standby", "--reason", "primary maintenance", "--for", "1h", "--by", "alice"}, zkf...)...)
	if code != 0 {
		t.Fatalf("override set: %s", stderr)
	}
	code, out, _ = gate("--side", "standby", "--held", "30m")
	if code != 1 || !strings.Contains(out, "override_pins_side: pacer: an operator override by alice pins it to standby") {
		t.Fatalf("override: exit %d\n%s", code, out)
	}
	if code, out, _ = gate("--side", "primary", "--held", "30m"); code != 0 {
		t.Fatalf("the primary, with traffic pinned to the standby: exit %d\n%s", code, out)
	}
	// A stale selection: no monitor leads.
	if code, out, _ = gate("--side", "primary", "--held", "30m", "--max-age", "30s"); code != 1 || !strings.Contains(out, "selection_stale: budget: the selection was last written 1m0s ago (limit 30s)") {
		t.Fatalf("stale: exit %d\n%s", code, out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gate", "--zk", addr, "--held", "30m"}, `side must be primary or standby, got ""`},
		{[]string{"gate", "--zk", addr, "--side", "blue", "--held", "30m"}, `got "blue"`},
		{[]string{"gate", "--zk", addr, "--side", "primary"}, "held must be a positive duration"},
		{[]string{"gate", "--zk", addr, "--side", "primary", "--held", "soon"}, "invalid value"},
		{[]string{"gate", "--side", "primary", "--held", "30m"}, "--zk is required"},
		{[]string{"gate", "--zk", addr, "--side", "primary", "--held", "30m", "now"}, "unexpected argument"},
	} {
		code, _, stderr := opRun(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "usage: hotpair gate") {
			t.Errorf("%v: exit %d, want 2 naming %q:\n%s", tc.args, code, tc.want, stderr)
		}
	}
	if code, _, stderr := opRun("gate", "--zk", "127.0.0.1:1", "--timeout", "500ms", "--side", "primary", "--held", "30m"); code != 1 || !strings.Contains(stderr, "cannot reach ZooKeeper") {
		t.Fatalf("without ZooKeeper: exit %d\n%s", code, stderr)
	}
}
