package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
)

func TestDarkBadUsage(t *testing.T) {
	zkf := []string{"--zk", "127.0.0.1:1"}
	set := func(extra ...string) []string { return append(append([]string{"dark", "set"}, extra...), zkf...) }
	checkBadUsage(t, map[string]usageCase{
		"dark alone":              {[]string{"dark"}, "subcommands:"},
		"dark unknown":            {[]string{"dark", "launch"}, `unknown subcommand "launch"`},
		"dispatch without config": {[]string{"dark", "dispatch"}, "--config is required"},
		"dispatch positional":     {[]string{"dark", "dispatch", "--config", "x.yml", "now"}, "unexpected argument"},
		"set without name":        {set("--brokers", "127.0.0.1:9092", "--multiplier", "0.25"), "NAME is required"},
		"set bad name":            {set("Cand!", "--brokers", "127.0.0.1:9092", "--multiplier", "0.25"), `NAME "Cand!"`},
		"set two names":           {set("a", "b", "--brokers", "127.0.0.1:9092"), `unexpected argument "b"`},
		"set without brokers":     {set("cand", "--multiplier", "0.25"), "--brokers is required"},
		"set without multiplier":  {set("cand", "--brokers", "127.0.0.1:9092"), "--multiplier 0"},
		"set multiplier too big":  {set("cand", "--brokers", "127.0.0.1:9092", "--multiplier", "40"), "--multiplier 40"},
		"set bad strategy":        {set("cand", "--brokers", "127.0.0.1:9092", "--multiplier", "1", "--strategy", "random"), `--strategy "random"`},
		"set constant no rate":    {set("cand", "--brokers", "127.0.0.1:9092", "--strategy", "constant"), "--rate 0"},
		"set bad source":          {set("cand", "--brokers", "127.0.0.1:9092", "--multiplier", "1", "--source", "both"), "--source"},
		"set bad until":           {set("cand", "--brokers", "127.0.0.1:9092", "--multiplier", "1", "--until", "soon"), `--until "soon"`},
		"set until in the past":   {set("cand", "--brokers", "127.0.0.1:9092", "--multiplier", "1", "--until", "2001-01-01T00:00:00Z"), "not in the future"},
		"set without zk":          {[]string{"dark", "set", "cand", "--brokers", "127.0.0.1:9092", "--multiplier", "1"}, "--zk is required"},
		"clear without name":      {append([]string{"dark", "clear"}, zkf...), "NAME is required"},
		"status positional":       {append([]string{"dark", "status", "all"}, zkf...), "unexpected argument"},
		"status without zk":       {[]string{"dark", "status"}, "--zk is required"},
	})
}

func TestDarkBadConfigNamesTheKey(t *testing.T) {
	code, _, stderr := opRun("dark", "dispatch", "--config", "../../canary/dispatch/testdata/bad-start.yml")
	if code != 1 || !strings.Contains(stderr, `start is "yesterday"`) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	code, out, stderr := opRun("config", "check", "--kind", "dark-dispatch", "../../canary/dispatch/testdata/good.yml")
	if code != 0 {
		t.Fatalf("config check of a good dispatcher config: exit %d\n%s%s", code, out, stderr)
	}
	// A StatefulSet's replica passes its pod's name as its static group
	// membership; a bad one is a usage error naming the key.
	code, out, stderr = opRun("config", "check", "--", "dark", "dispatch", "--config", "../../canary/dispatch/testdata/good.yml", "--group-instance-id", "dispatch-1")
	if code != 0 {
		t.Fatalf("config check -- dark dispatch --group-instance-id: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = opRun("dark", "dispatch", "--config", "../../canary/dispatch/testdata/good.yml", "--group-instance-id", "dispatch 1")
	if code != 2 || !strings.Contains(stderr, `group_instance_id "dispatch 1" must not contain spaces`) {
		t.Fatalf("a bad --group-instance-id: exit %d, stderr:\n%s", code, stderr)
	}
}

// set, status and clear work on ZooKeeper; a target set with the operator
// identity cannot be changed or deleted without it.
func TestDarkTargetsOnZooKeeper(t *testing.T) {
	conn, addr, root := zkForTest(t, "dark")
	paths := contract.NewPaths(root)
	zkf := []string{"--zk", addr, "--zk-root", root}
	op := []string{"--auth", "oncall:pw"}
	run := func(args ...string) (int, string, string) {
		return opRun(append(append([]string{"dark"}, args...), zkf...)...)
	}

	code, out, stderr := run("status")
	if code != 0 || !strings.Contains(out, "no dark targets") {
		t.Fatalf("status with none: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = run(append([]string{"set", "cand", "--brokers", "127.0.0.1:9192", "--multiplier", "0.5", "--until", "2h"}, op...)...)
	if code != 0 || !strings.Contains(out, "dark target cand set by oncall: relative × 0.5 of primary's input to 127.0.0.1:9192 under dark.cand.") {
		t.Fatalf("set: exit %d\n%s%s", code, out, stderr)
	}
	// Two live aggregators and one dark one: fraction 0.5 × 1/2.
	for _, p := range []string{paths.Instances("primary", contract.StageAggregator) + "/a", paths.Instances("primary", contract.StageAggregator) + "/b",
		paths.DarkInstances("cand", contract.StageAggregator) + "/x"} {
		if err := zkutil.EnsurePath(conn, p, zkutil.OpenACL()); err != nil {
			t.Fatal(err)
		}
	}
	code, _, stderr = run("set", "twin", "--brokers", "127.0.0.1:9193", "--strategy", "identical", "--multiplier", "0.25")
	if code != 1 || !strings.Contains(stderr, "only by the operator identity") {
		t.Fatalf("anonymous set of a new target under the protected directory: exit %d\n%s", code, stderr)
	}
	code, out, stderr = run(append([]string{"set", "twin", "--brokers", "127.0.0.1:9193", "--strategy", "identical", "--multiplier", "0.25", "--disable"}, op...)...)
	if code != 0 {
		t.Fatalf("set twin: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = run("status")
	for _, want := range []string{"cand    sending  0.25      2/1", "twin    off", "DISABLED"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status lacks %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	code, out, _ = run("status", "--json")
	var st struct{ Targets []dispatch.TargetStatus }
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || len(st.Targets) != 2 {
		t.Fatalf("status --json: exit %d %v\n%s", code, err, out)
	}
	if c := st.Targets[0]; c.Name != "cand" || c.Fraction != 0.25 || c.LiveInstances != 2 || c.DarkInstances != 1 || c.Doc == nil || c.Doc.Until == nil {
		t.Fatalf("status --json of cand: %+v", c)
	}

	// Protected by the operator: no change, no delete without --auth.
	code, _, stderr = run("set", "cand", "--brokers", "127.0.0.1:9192", "--multiplier", "4")
	if code != 1 || !strings.Contains(stderr, "only by the operator identity") {
		t.Fatalf("anonymous set: exit %d\n%s", code, stderr)
	}
	code, _, stderr = run("clear", "cand")
	if code != 1 || !strings.Contains(stderr, "only by the operator identity") {
		t.Fatalf("anonymous clear: exit %d\n%s", code, stderr)
	}
	code, out, stderr = run(append([]string{"clear", "cand"}, op...)...)
	if code != 0 || !strings.Contains(out, "dark target cand cleared") {
		t.Fatalf("clear: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = run(append([]string{"clear", "cand"}, op...)...)
	if code != 0 || !strings.Contains(out, "nothing to clear") {
		t.Fatalf("second clear: exit %d\n%s", code, out)
	}
}
