// Package integration holds the end-to-end tests: the whole system on two
// kfake clusters and the real ZooKeeper, driven as a user drives it, through
// the hotpair binary.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/sandbox"
)

// TestFaultMatrix runs every scripted scenario of `hotpair sandbox
// --scenario NAME --json` as a user would, and requires that every check held
// and that nothing it started — Kafka clusters, ZooKeeper, the HTTP
// endpoint — is left listening afterwards. The binary is the one the test
// command built (without the race detector: the scenarios judge real-time
// behaviour; every package's own tests run under -race).
func TestFaultMatrix(t *testing.T) {
	bin := testbin.Hotpair(t)
	for _, name := range sandbox.ScenarioNames() {
		t.Run(name, func(t *testing.T) {
			// Scenarios are independent (free ports, their own ZooKeeper
			// and clusters) and light: go test runs -parallel (GOMAXPROCS)
			// of them at once, which keeps the suite's wall time down.
			t.Parallel()
			addrFile := filepath.Join(t.TempDir(), "addr.json")
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			args := []string{"sandbox", "--scenario", name, "--json", "--addr-file", addrFile}
			replay := replayed[name]
			if replay != nil {
				args = append(args, "--save-history", filepath.Join(t.TempDir(), "history.jsonl"))
			}
			cmd := exec.CommandContext(ctx, bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var res sandbox.Result
			if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil {
				t.Fatalf("scenario %s: exit %v; stdout is not one JSON object (%v):\n%s\nstderr tail:\n%s", name, err, jerr, stdout.String(), tail(stderr.String()))
			}
			for _, c := range res.Checks {
				if !c.Passed {
					t.Errorf("check %q failed: %s", c.Name, c.Detail)
				}
			}
			if !res.Passed || err != nil {
				for _, e := range res.Events {
					t.Logf("%s", e.String(res.Events[0].At))
				}
				t.Fatalf("scenario %s did not hold (exit %v, %d checks)", name, err, len(res.Checks))
			}
			if len(res.Checks) < 4 || len(res.Spend) != 2 {
				t.Fatalf("scenario %s checked too little: %d checks, %d spend comparisons", name, len(res.Checks), len(res.Spend))
			}
			t.Logf("%s held in %s with %d checks", name, res.Duration, len(res.Checks))
			nothingListens(t, addrFile)
			if replay != nil {
				replay(t, bin, res)
			}
		})
	}
}

// replayed are the scenarios whose saved health history is replayed through
// `hotpair monitor simulate`, with the check of what it must reproduce.
var replayed = map[string]func(t *testing.T, bin string, res sandbox.Result){
	"slow-side": sameSwitches,
}

// sameSwitches replays the scenario's health history with the thresholds of
// its monitors and requires the switches the read side saw: the same
// services switching to the same sides in the same order, and no degraded
// window in either. Each replayed switch must come within three windows of
// the live one: the replay's windows start at multiples of the window, the
// live monitors' when they started, so a window that straddles a change
// holds different samples (one window); the aggregator's windows (2 s) fall
// one or two to a monitor window (3 s), so the window in which a side's
// input rate drops under half the other's can differ by one; and the live
// ticker's jitter can leave the grace clock a millisecond short at the end
// of the grace period (one). The replay dates a switch at the end of its
// window; the read side sees a live one after the window's evaluation, the
// publication and a ZooKeeper watch, which on a loaded machine (health
// samples late, the monitor's tick late) cost up to one window more: a live
// switch may come four windows after the replayed one, not more.
func sameSwitches(t *testing.T, bin string, res sandbox.Result) {
	t.Helper()
	if len(res.Simulate) == 0 {
		t.Fatal("the scenario saved no history to replay")
	}
	cmd := exec.Command(bin, append(res.Simulate, "--json")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hotpair %s: %v\n%s", strings.Join(res.Simulate, " "), err, stderr.String())
	}
	var sim struct {
		Window   string `json:"window"`
		Switches []struct {
			Service string    `json:"service"`
			At      time.Time `json:"at"`
			To      string    `json:"to"`
			Kind    string    `json:"kind"`
		} `json:"switches"`
		DegradedWindows map[string]int `json:"degraded_windows"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sim); err != nil {
		t.Fatalf("simulate --json: %v\n%s", err, stdout.String())
	}
	window, err := time.ParseDuration(sim.Window)
	if err != nil {
		t.Fatal(err)
	}
	type sw struct {
		at time.Time
		to string
	}
	live, replay := map[string][]sw{}, map[string][]sw{}
	for _, e := range res.Events {
		if e.Kind == sandbox.EventSwitch {
			live[e.Service] = append(live[e.Service], sw{e.At, e.Side})
		}
		if strings.HasPrefix(e.Detail, "degraded:") {
			t.Errorf("live: %s %s", e.Service, e.Detail)
		}
	}
	for _, s := range sim.Switches {
		replay[s.Service] = append(replay[s.Service], sw{s.At, s.To})
	}
	for _, svc := range []string{"budget", "pacer", "bidder"} {
		l, r := live[svc], replay[svc]
		if len(l) == 0 || len(l) != len(r) {
			t.Errorf("%s: the read side saw %d switches %v, the replay made %d %v", svc, len(l), l, len(r), r)
			continue
		}
		for i := range l {
			d := r[i].at.Sub(l[i].at)
			if r[i].to != l[i].to || d > 3*window || d < -4*window {
				t.Errorf("%s switch %d: live to %s at %s, replay to %s at %s (%s apart, limit %s earlier, %s later)",
					svc, i+1, l[i].to, l[i].at.Format(time.RFC3339Nano), r[i].to, r[i].at.Format(time.RFC3339Nano), d, 4*window, 3*window)
			} else {
				t.Logf("%s switch %d to %s: replay %s from the live one", svc, i+1, l[i].to, d.Round(10*time.Millisecond))
			}
		}
		if sim.DegradedWindows[svc] != 0 {
			t.Errorf("%s: the replay found %d degraded windows, the live monitors none", svc, sim.DegradedWindows[svc])
		}
	}
}

// nothingListens fails when any address of the sandbox still accepts
// connections after it exited.
func nothingListens(t *testing.T, addrFile string) {
	t.Helper()
	b, err := os.ReadFile(addrFile)
	if err != nil {
		t.Fatalf("the sandbox wrote no address file: %v", err)
	}
	var a sandbox.Addresses
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	addrs := append(append(append([]string{a.ZK, a.HTTP}, a.PrimaryBrokers...), a.StandbyBrokers...), a.DarkBrokers...)
	for _, addr := range addrs {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the sandbox exited", addr)
		}
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
