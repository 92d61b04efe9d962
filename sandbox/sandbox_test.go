package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changestest"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/internal/zkserver"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/monitor/core"
)

func registeredInstances(t *testing.T, a Addresses, side, stage string) int {
	t.Helper()
	conn, _, err := zk.Connect([]string{a.ZK}, 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kids, _, err := conn.Children(a.ZKRoot + "/instances/" + side + "/" + stage)
	if err != nil {
		t.Fatalf("listing %s %s instances: %v", side, stage, err)
	}
	return len(kids)
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		spec FaultSpec
		want string // "" = valid
	}{
		{FaultSpec{Kind: FaultStall, Service: "budget", Side: "primary"}, ""},
		{FaultSpec{Kind: FaultStall, Service: "aggregator", Side: "standby", For: "30s"}, ""},
		{FaultSpec{Kind: FaultLag, Side: "primary", Lag: "90s"}, ""},
		{FaultSpec{Kind: FaultStopZK}, ""},
		{FaultSpec{Kind: FaultWipeZK}, ""},
		{FaultSpec{Kind: FaultWipeZK, Service: "budget"}, "wipe-zk takes no --side or --service"},
		{FaultSpec{Kind: FaultKillLeader}, ""},
		{FaultSpec{Kind: FaultFlap, Service: "pacer", Side: "primary", Period: "6s"}, ""},
		{FaultSpec{Kind: FaultDeploy, Side: "standby", Build: "v2"}, ""},
		{FaultSpec{Kind: FaultDeploy, Side: "standby"}, "deploy needs --build"},
		{FaultSpec{Kind: FaultDeploy, Build: "v2"}, "deploy needs --side"},
		{FaultSpec{Kind: FaultStall, Service: "budget", Side: "primary", Build: "v2"}, "stall takes no --build"},
		{FaultSpec{Kind: "meteor"}, `kind "meteor" is not one of`},
		{FaultSpec{Kind: FaultStall, Service: "budget"}, "stall needs --side"},
		{FaultSpec{Kind: FaultStall, Side: "primary", Service: "enforcer"}, "stall needs --service"},
		{FaultSpec{Kind: FaultLag, Side: "primary"}, "lag needs --lag"},
		{FaultSpec{Kind: FaultStall, Service: "budget", Side: "primary", For: "soon"}, `for "soon" is not a positive duration`},
		{FaultSpec{Kind: FaultStopZK, Side: "primary"}, "stop-zk takes no --side or --service"},
		{FaultSpec{Kind: FaultSlow, Service: "aggregator", Side: "primary", Rate: 500}, ""},
		{FaultSpec{Kind: FaultSlow, Service: "aggregator", Side: "primary"}, "slow needs --rate"},
		{FaultSpec{Kind: FaultSlow, Side: "primary", Rate: 500}, "slow needs --service"},
		{FaultSpec{Kind: FaultTraffic, Factor: 4}, ""},
		{FaultSpec{Kind: FaultTraffic, Factor: 0.25}, ""},
		{FaultSpec{Kind: FaultTraffic, Factor: 1}, "traffic needs --factor"},
		{FaultSpec{Kind: FaultTraffic}, "traffic needs --factor"},
		{FaultSpec{Kind: FaultTraffic, Factor: 4, Side: "primary"}, "traffic takes no --side or --service"},
		{FaultSpec{Kind: FaultStall, Service: "budget", Side: "primary", Rate: 5}, "--rate applies to slow only"},
	} {
		_, err := parseSpec(tc.spec, time.Second)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.spec, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadFault)):
			t.Errorf("%+v: got %v, want an ErrBadFault containing %q", tc.spec, err, tc.want)
		}
	}
}

// TestFaultAPI runs a small sandbox in the test process (under the race
// detector in the test command), each side as two pipeline instances, and
// exercises the fault API's contract.
func TestFaultAPI(t *testing.T) {
	if err := zkserver.Installed(); err != nil {
		t.Fatal(err)
	}
	sb, err := New(Options{HTTP: "127.0.0.1:0", Campaigns: 6, QPS: 40, Timing: ScenarioTiming(), Instances: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Addresses, 1)
	done := make(chan error, 1)
	go func() { done <- sb.Run(ctx, func(a Addresses) { ready <- a }) }()
	var a Addresses
	select {
	case a = <-ready:
	case err := <-done:
		t.Fatalf("the sandbox did not start: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("the sandbox did not start within 3 minutes")
	}
	base := "http://" + a.HTTP
	if a.OperatorAuth == "" || len(a.PrimaryBrokers) == 0 || len(a.StandbyBrokers) == 0 || a.ZK == "" {
		t.Fatalf("incomplete addresses: %+v", a)
	}

	call := func(method, path, body string, wantCode int, out any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != wantCode {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, wantCode)
		}
		if out != nil {
			if err := json.NewDecoder(bytes.NewReader(b)).Decode(out); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, b)
			}
		}
	}
	call("POST", "/api/v1/faults", `{"kind":"meteor"}`, http.StatusBadRequest, nil)
	call("POST", "/api/v1/faults", `{"kind":"stall","service":"budget"}`, http.StatusBadRequest, nil)
	call("POST", "/api/v1/faults", `{"kind":"stall","service":"budget","side":"primary","typo":1}`, http.StatusBadRequest, nil)
	var f Fault
	call("POST", "/api/v1/faults", `{"kind":"stall","service":"budget","side":"primary"}`, http.StatusCreated, &f)
	if f.ID == "" || !f.Active() {
		t.Fatalf("injected fault %+v", f)
	}
	call("POST", "/api/v1/faults", `{"kind":"stall","service":"budget","side":"primary"}`, http.StatusBadRequest, nil) // already in force
	gateCalls(t, sb, call)
	var kill Fault
	call("POST", "/api/v1/faults", `{"kind":"kill-instance","service":"pacer","side":"standby"}`, http.StatusCreated, &kill)
	if kill.Active() {
		t.Fatalf("kill-instance is over once done: %+v", kill)
	}
	var list []Fault
	call("GET", "/api/v1/faults", "", http.StatusOK, &list)
	if len(list) != 2 || !list[0].Active() {
		t.Fatalf("fault list %+v", list)
	}
	var healed Fault
	call("DELETE", "/api/v1/faults/"+f.ID, "", http.StatusOK, &healed)
	if healed.Active() {
		t.Fatalf("healed fault still active: %+v", healed)
	}
	call("DELETE", "/api/v1/faults/f99", "", http.StatusNotFound, nil)
	var st State
	call("GET", "/api/v1/sandbox", "", http.StatusOK, &st)
	if st.Active["budget"] == "" || st.Leader == "" || len(st.Events) == 0 {
		t.Fatalf("sandbox state %+v", st)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`hotpair_stage_events_total{instance="sandbox-standby-1",role="live",service="aggregator",side="standby"}`,
		`hotpair_stage_partitions{instance="sandbox-primary-2",role="live",service="budget",side="primary"}`,
		`instance="sandbox-monitor-2"`, "hotpair_ingest_delivered_total"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Both instances of every stage are registered, and share its partitions.
	for _, side := range []string{"primary", "standby"} {
		for _, stage := range []string{"aggregator", "budget", "pacer", "bidder"} {
			if n := len(sb.pipe(side)); n != 2 {
				t.Fatalf("%s runs %d instances, want 2", side, n)
			}
			if got := registeredInstances(t, a, side, stage); got != 2 {
				t.Errorf("%s %s: %d instances registered in ZooKeeper, want 2", side, stage, got)
			}
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the sandbox did not stop within 90s")
	}
	for _, addr := range append([]string{a.ZK, a.HTTP}, a.PrimaryBrokers...) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still listening after Run returned", addr)
		}
	}
}

// gateCalls asks the rollout gate over the sandbox's HTTP address, as a
// rollout tool does, while the primary budget enforcer is stalled.
func gateCalls(t *testing.T, sb *Sandbox, call func(method, path, body string, wantCode int, out any)) {
	t.Helper()
	call("GET", "/api/v1/gate?side=standby", "", http.StatusBadRequest, nil)
	call("GET", "/api/v1/gate?side=blue&held=1m", "", http.StatusBadRequest, nil)
	call("GET", "/api/v1/gate?side=standby&held=later", "", http.StatusBadRequest, nil)
	var a monitor.GateAnswer
	call("GET", "/api/v1/gate?side=standby&held=1h", "", http.StatusConflict, &a)
	if a.OK || a.Side != contract.Standby || a.Other != contract.Primary || a.Held != "1h0m0s" || len(a.Services) != 3 || len(a.Reasons) == 0 {
		t.Fatalf("gate answer %+v", a)
	}
	// The stalled primary budget enforcer is found unhealthy within a few
	// windows: once the answering replica has published that, and the
	// standby's hold has begun on every service (healthy and keeping up: a
	// side still catching up on what piled up while the sandbox started has
	// no hold yet, and the gate rightly says so), the standby must not be
	// deployed, the primary may.
	m := sb.monitors.any()
	changestest.WaitForNext(t, m.Changed, time.Minute, "the stalled primary budget enforcer published unhealthy, the standby held", func() bool {
		stalled, held := false, 0
		for _, ss := range m.Status().Services {
			if ss.Selection == nil {
				continue
			}
			primary, judged := ss.Selection.Sides[contract.Primary]
			if ss.Service == contract.ServiceBudget {
				stalled = judged && !primary.Healthy
			}
			if st := ss.Selection.Sides[contract.Standby]; st.Healthy && st.HealthySince != nil && st.HealthySince.Before(ss.Selection.DecidedAt) {
				held++
			}
		}
		return stalled && held == len(contract.Services())
	})
	call("GET", "/api/v1/gate?side=standby&held=1ms", "", http.StatusConflict, &a)
	for _, rule := range []core.GateRule{core.GateOtherSideUnhealthy, core.GateOnlyHealthySide} {
		if !slices.ContainsFunc(a.Failing, func(r core.GateReason) bool { return r.Rule == rule && r.Service == contract.ServiceBudget }) {
			t.Fatalf("the gate does not refuse the standby with %s on budget: %+v", rule, a.Reasons)
		}
	}
	for _, ss := range m.Status().Services {
		if ss.Selection != nil {
			st := ss.Selection.Sides[contract.Standby]
			t.Logf("%s standby: healthy %v since %v, catching up %q; decided at %s", ss.Service, st.Healthy, st.HealthySince, st.CatchingUp, ss.Selection.DecidedAt.Format(time.RFC3339Nano))
		}
	}
	call("GET", "/api/v1/gate?side=primary&held=1ms", "", http.StatusOK, &a)
	if !a.OK || a.OtherHeldSeconds <= 0 {
		t.Fatalf("gate for the primary: %+v", a)
	}
}

// Insecure turns security off: the address file names no Kafka CA, SASL
// user or operator identity, and a plaintext client without SASL lists the
// clusters' topics. By default a client without TLS and SASL is refused.
// Both run with Dark: the dark cluster is secured as the other two, the
// dark pipeline, a separate process, registers and stops with the sandbox,
// and the dispatcher feeds it exactly the campaigns the hash chose.
func TestInsecureTurnsKafkaSecurityOff(t *testing.T) {
	for _, insecure := range []bool{true, false} {
		t.Run(fmt.Sprintf("insecure=%v", insecure), func(t *testing.T) {
			sb, err := New(Options{HTTP: "127.0.0.1:0", Campaigns: 4, QPS: 20, Timing: ScenarioTiming(), Insecure: insecure,
				Dark: true, DarkBinary: testbin.Hotpair(t)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan Addresses, 1)
			done := make(chan error, 1)
			go func() { done <- sb.Run(ctx, func(a Addresses) { ready <- a }) }()
			defer func() { cancel(); <-done; checkDarkStopped(t, sb) }()
			var a Addresses
			select {
			case a = <-ready:
			case err := <-done:
				t.Fatalf("the sandbox did not start: %v", err)
			case <-time.After(3 * time.Minute):
				t.Fatal("the sandbox did not start within 3 minutes")
			}
			checkDarkRunning(t, sb, a)
			checkDarkSample(t, sb)
			plain := kafka.Cluster{Brokers: a.PrimaryBrokers}
			err = kafka.CheckAuth(t.Context(), plain)
			if !insecure {
				darkErr := kafka.CheckAuth(t.Context(), kafka.Cluster{Brokers: a.DarkBrokers})
				if a.KafkaCAFile == "" || a.KafkaSASLPassword == "" || a.OperatorAuth == "" || !errors.Is(err, kafka.ErrAuth) || !errors.Is(darkErr, kafka.ErrAuth) {
					t.Fatalf("a secure sandbox: %+v; a plaintext client: %v, on the dark cluster: %v", a, err, darkErr)
				}
				return
			}
			dark, err := kadm.NewClient(kafkatest.Client(t, a.DarkBrokers)).ListTopics(t.Context())
			if err != nil || !dark.Has("dark.canary.ad-events") {
				t.Fatalf("a plaintext client lists %v on the dark cluster (%v)", dark.Names(), err)
			}
			for _, name := range dark.Names() {
				if !strings.HasPrefix(name, "dark.canary.") {
					t.Errorf("the dark cluster holds %s, without the dark prefix", name)
				}
			}
			if a.KafkaCAFile != "" || a.KafkaSASLPassword != "" || a.KafkaSecurityProtocol != "" || a.OperatorAuth != "" {
				t.Fatalf("an insecure sandbox names security: %+v", a)
			}
			topics, err := kadm.NewClient(kafkatest.Client(t, a.PrimaryBrokers)).ListTopics(t.Context())
			if err != nil || !topics.Has("ad-events") {
				t.Fatalf("a plaintext client lists %v (%v)", topics.Names(), err)
			}
		})
	}
}

// checkDarkRunning: the dark target's brokers are in the addresses, and
// its pipeline process runs with every stage registered as role dark.
func checkDarkRunning(t *testing.T, sb *Sandbox, a Addresses) {
	t.Helper()
	d := sb.State().Dark
	if len(a.DarkBrokers) != 1 || d == nil || d.Pipeline != "running" || len(d.Registered) != 4 || d.Prefix != "dark.canary." {
		t.Fatalf("dark brokers %v, dark state %+v", a.DarkBrokers, d)
	}
}

// checkDarkSample: the dispatcher feeds the dark pipeline exactly the
// campaigns the hash chose at the multiplier: each of them with a budget
// row gets a budget status on the dark cluster, no other campaign does.
func checkDarkSample(t *testing.T, sb *Sandbox) {
	t.Helper()
	want := map[string]bool{} // sampled campaign -> has a budget row
	for _, c := range sb.loadGen().campaigns {
		if contract.DarkCopies(c.ID, sb.opts.DarkMultiplier) > 0 {
			want[c.ID] = c.Budget != nil
		}
	}
	if len(want) == 0 {
		t.Fatal("the hash chose no campaign: give the test more campaigns")
	}
	var extra string
	kafkatest.FollowOf(t, sb.kafkaCluster(darkCluster), contract.DarkPrefix(DarkName)+"budget-status").Until(t, time.Minute, func(recs []*kgo.Record) string {
		got := kafkatest.LatestOf(recs)
		for c := range got {
			if _, ok := want[c]; !ok {
				extra = c
				return ""
			}
		}
		for c, budgeted := range want {
			if _, ok := got[c]; budgeted && !ok {
				return "sampled campaign " + c + " has no dark budget status"
			}
		}
		return ""
	})
	if extra != "" {
		t.Fatalf("campaign %s went dark, but the hash did not choose it at %g", extra, sb.opts.DarkMultiplier)
	}
	if d := sb.State().Dark.Dispatch; d == nil || !d.Sending || d.Fraction != sb.opts.DarkMultiplier || d.LiveCount != 1 || d.DarkCount != 1 {
		t.Fatalf("dispatch state %+v, want sending at %g (1 live, 1 dark instance)", d, sb.opts.DarkMultiplier)
	}
	// The monitors' comparator reads the dark target's outputs next to the
	// live ones (a verdict needs more points than this test waits for).
	err := sb.waitUntil(t.Context(), time.Minute, "the comparator comparing the dark target", func() bool {
		m := sb.monitors.any()
		if m == nil {
			return false
		}
		rep, _ := m.DarkReport()
		for _, tr := range rep.Targets {
			if tr.Name == DarkName && tr.Points["budget-status"] > 0 {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkDarkStopped: the dark pipeline process ended with the sandbox.
func checkDarkStopped(t *testing.T, sb *Sandbox) {
	t.Helper()
	select {
	case <-sb.dark.proc.Exited():
	default:
		t.Error("the dark pipeline process still runs after the sandbox stopped")
	}
}

// TestNewRefusesAWindowOfFewAggregatorWindows: a monitor window holding
// fewer than four aggregator windows would let a steady side's bursty
// input read as half the other side's, so New refuses it and says what
// window would do; the scenario and demo timings hold four or more.
func TestNewRefusesAWindowOfFewAggregatorWindows(t *testing.T) {
	tm := ScenarioTiming()
	tm.AggWindow = time.Second
	_, err := New(Options{HTTP: "127.0.0.1:0", Timing: tm})
	if err == nil || !strings.Contains(err.Error(), "must hold at least 4 aggregator windows (1s)") || !strings.Contains(err.Error(), "use a window of 4s or more") {
		t.Fatalf("New with a 3s window over 1s aggregator windows: %v", err)
	}
	for name, tm := range map[string]Timing{"scenario": ScenarioTiming(), "demo": DemoTiming()} {
		if tm.Window < 4*tm.AggWindow {
			t.Errorf("%s timing: window %s holds fewer than 4 aggregator windows of %s", name, tm.Window, tm.AggWindow)
		}
	}
}
