package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/sandbox"
)

// TestSandboxAsAUserChecksIt walks through the acceptance of the interactive
// sandbox: it comes up and prints its addresses; an external Kafka client's
// record is processed; any ZooKeeper client reads the selection, but cannot
// change it (ACLs are on by default); one command stalls the primary budget
// enforcer and `hotpair status` shows the switch with its reason; after the
// heal, traffic returns only once the grace period has passed; the operator
// credentials of the address file work for `hotpair override`; Ctrl-C stops
// everything and leaves nothing listening.
func TestSandboxAsAUserChecksIt(t *testing.T) {
	t.Parallel() // see TestFaultMatrix
	bin := testbin.Hotpair(t)
	const window, grace = 6 * time.Second, 15 * time.Second
	sb := startSandbox(t, bin, "--window", window.String(), "--grace", grace.String())
	a := sb.addr
	if out := sb.out.String(); !strings.Contains(out, "on-call page") || !strings.Contains(out, a.ZK) {
		t.Errorf("the sandbox did not print its addresses:\n%s", out)
	}

	// An external Kafka client attaches to the printed brokers.
	cl := kafkatest.ClientOf(t, kafkaOf(t, a, a.PrimaryBrokers))
	ev := fmt.Sprintf(`{"v":1,"id":"external-1","type":"click","campaign":"external-camp","advertiser":"ext","price_micros":4242,"ts":%q}`,
		time.Now().UTC().Format(time.RFC3339Nano))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "ad-events", Key: []byte("external-camp"), Value: []byte(ev)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafkatest.FollowOf(t, kafkaOf(t, a, a.PrimaryBrokers), "budget-status").Until(t, time.Minute, func(recs []*kgo.Record) string {
		v, ok := kafkatest.LatestOf(recs)["external-camp"]
		if !ok {
			return "the external record is not processed"
		}
		st, err := contract.DecodeBudgetStatus(v)
		if err != nil || st.SpentLifetimeMicros != 4242 || st.Status != contract.StatusNoBudget {
			return fmt.Sprintf("the external campaign's status is %s (%v)", v, err)
		}
		return ""
	})

	// Any ZooKeeper client reads the selection; without the monitor's
	// identity it cannot change it.
	conn, paths := sb.zk(t)
	b, _, err := conn.Get(paths.Selection(contract.ServiceBudget))
	if err != nil {
		t.Fatalf("reading the selection znode: %v", err)
	}
	if sel, err := contract.DecodeSelection(b); err != nil || sel.Active != contract.Primary {
		t.Fatalf("selection %s: %v", b, err)
	}
	if _, err := conn.Set(paths.Selection(contract.ServiceBudget), []byte(`{"v":1,"active":"standby"}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("an anonymous client changed the selection: %v", err)
	}

	// One command stalls the primary budget enforcer.
	id := strings.TrimSpace(run(t, bin, "fault", "inject", "--http", a.HTTP, "stall", "--service", "budget", "--side", "primary"))
	injected := time.Now()
	waitSelection(t, conn, paths.Selection(contract.ServiceBudget), 2*window+5*time.Second, "budget on standby", func(sel *contract.Selection) bool {
		return sel.Active == contract.Standby
	})
	var reason string
	if sel := statusOf(t, bin, a, contract.StageBudget.String()); sel == nil || sel.Active != contract.Standby {
		t.Fatalf("hotpair status does not show budget on standby: %+v", sel)
	} else {
		reason = sel.Reason
	}
	t.Logf("switched to standby %s after the stall: %s", time.Since(injected).Round(100*time.Millisecond), reason)
	if !strings.Contains(reason, "input_rate_low") {
		t.Errorf("the switch's reason does not name the failing rule: %s", reason)
	}
	page := get(t, "http://"+a.HTTP+"/")
	if !strings.Contains(page, "STANDBY") || !strings.Contains(page, "input_rate_low") {
		t.Errorf("the on-call page does not show the switch and its reason")
	}

	// Healed, the primary must stay healthy for the grace period first.
	run(t, bin, "fault", "heal", "--http", a.HTTP, id)
	healed := time.Now()
	waitSelection(t, conn, paths.Selection(contract.ServiceBudget), grace+3*window+10*time.Second, "budget back on primary", func(sel *contract.Selection) bool {
		return sel.Active == contract.Primary
	})
	if back := time.Since(healed); back < grace {
		t.Errorf("traffic returned %s after the heal, before the grace period %s", back, grace)
	}

	// The operator credentials of the address file work for overrides.
	run(t, bin, "override", "set", "--zk", a.ZK, "--zk-root", a.ZKRoot, "--auth", a.OperatorAuth,
		"--service", "pacer", "--side", "standby", "--for", "1m", "--reason", "integration test")
	waitSelection(t, conn, paths.Selection(contract.ServicePacer), 10*time.Second, "the override applied", func(sel *contract.Selection) bool {
		return sel.Active == contract.Standby && sel.Override != nil
	})
	if sel := statusOf(t, bin, a, contract.StagePacer.String()); sel == nil || sel.Active != contract.Standby || sel.Override == nil {
		t.Errorf("hotpair status does not show the override: %+v", sel)
	}
	run(t, bin, "override", "clear", "--zk", a.ZK, "--zk-root", a.ZKRoot, "--auth", a.OperatorAuth, "--service", "pacer", "--reason", "done")

	// Ctrl-C stops everything.
	sb.interrupt(t)
}

// sandboxProcess is a `hotpair sandbox` a test started.
type sandboxProcess struct {
	addr        sandbox.Addresses
	addrFile    string
	cmd         *exec.Cmd
	out, errOut testbin.Buffer
	exited      chan error
}

// startSandbox starts `hotpair sandbox` with a small load on a free port
// and waits until it is up. It is killed when the test ends, its output
// shown if the test failed.
func startSandbox(t *testing.T, bin string, args ...string) *sandboxProcess {
	t.Helper()
	sb := &sandboxProcess{addrFile: filepath.Join(t.TempDir(), "addr.json"), exited: make(chan error, 1)}
	sb.cmd = exec.Command(bin, append([]string{"sandbox", "--http", "127.0.0.1:0", "--addr-file", sb.addrFile,
		"--campaigns", "12", "--qps", "120"}, args...)...)
	sb.cmd.Stdout, sb.cmd.Stderr = &sb.out, &sb.errOut
	if err := sb.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { sb.exited <- sb.cmd.Wait() }()
	t.Cleanup(func() {
		_ = sb.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("sandbox stdout:\n%s\nstderr tail:\n%s", sb.out.String(), tail(sb.errOut.String()))
		}
	})
	sb.addr = waitAddresses(t, &sb.out, sb.addrFile, sb.exited)
	return sb
}

// zk is an anonymous ZooKeeper session to the sandbox (closed at the end
// of the test) and its znode layout.
func (sb *sandboxProcess) zk(t *testing.T) (*zk.Conn, contract.Paths) {
	t.Helper()
	conn, _, err := zk.Connect([]string{sb.addr.ZK}, 5*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn, contract.NewPaths(sb.addr.ZKRoot)
}

// interrupt stops the sandbox as Ctrl-C does and checks that it exits
// cleanly and leaves nothing listening.
func (sb *sandboxProcess) interrupt(t *testing.T) {
	t.Helper()
	_ = sb.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-sb.exited:
		if err != nil {
			t.Errorf("the sandbox exited with %v after SIGINT", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the sandbox did not stop within 90s of SIGINT")
	}
	nothingListens(t, sb.addrFile)
}

// waitAddresses waits for the sandbox's whole banner (it writes its address
// file first) and reads the file.
func waitAddresses(t *testing.T, out *testbin.Buffer, file string, exited <-chan error) sandbox.Addresses {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	for {
		next := out.Changes.Next()
		if strings.Contains(out.String(), "Ctrl-C stops everything.") {
			break
		}
		select {
		case <-next:
		case err := <-exited:
			t.Fatalf("the sandbox exited before it was ready: %v", err)
		case <-deadline:
			t.Fatal("the sandbox was not up within 3 minutes")
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var a sandbox.Addresses
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("address file %s: %v", b, err)
	}
	return a
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("hotpair %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// statusOf returns a service's selection as `hotpair status --json` shows it.
func statusOf(t *testing.T, bin string, a sandbox.Addresses, service string) *contract.Selection {
	t.Helper()
	out, err := exec.Command(bin, "status", "--zk", a.ZK, "--zk-root", a.ZKRoot, "--json").Output()
	if err != nil {
		return nil
	}
	var st monitor.Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("hotpair status --json: %v\n%s", err, out)
	}
	for _, s := range st.Services {
		if s.Service.String() == service {
			return s.Selection
		}
	}
	return nil
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitSelection waits, on a ZooKeeper watch, until the selection znode p
// decodes and satisfies cond.
func waitSelection(t *testing.T, conn *zk.Conn, p string, timeout time.Duration, what string, cond func(*contract.Selection) bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		b, _, changed, err := conn.GetW(p)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		if sel, err := contract.DecodeSelection(b); err == nil && cond(&sel) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("not %s within %s: %s", what, timeout, b)
		}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
