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
			addrFile := filepath.Join(t.TempDir(), "addr.json")
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "sandbox", "--scenario", name, "--json", "--addr-file", addrFile)
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
		})
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
	addrs := append(append([]string{a.ZK, a.HTTP}, a.PrimaryBrokers...), a.StandbyBrokers...)
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
