package integration

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// TestDecisionHistorySurvivesRestarts is the decision record's acceptance,
// driven as on-call would: in a sandbox the primary budget enforcer stalls
// (failover) and is healed (return); both monitor replicas then restart,
// and the page, /api/v1/history and `hotpair history` still show both
// switches with their evidence, once each. Then the primary Kafka cluster
// stops: every service fails over, `hotpair history` shows it from the
// standby's copy, and once the primary is back its own copy holds every
// entry too — stopping it lost nothing.
func TestDecisionHistorySurvivesRestarts(t *testing.T) {
	t.Parallel() // see TestFaultMatrix
	bin := testbin.Hotpair(t)
	const window, grace = 6 * time.Second, 15 * time.Second
	sb := startSandbox(t, bin, "--window", window.String(), "--grace", grace.String())
	a := sb.addr
	conn, paths := sb.zk(t)
	budget := paths.Selection(contract.ServiceBudget)
	started := time.Now()

	// A failover and a return.
	id := strings.TrimSpace(run(t, bin, "fault", "inject", "--http", a.HTTP, "stall", "--service", "budget", "--side", "primary"))
	waitSelection(t, conn, budget, 2*window+10*time.Second, "budget on standby", func(s *contract.Selection) bool { return s.Active == contract.Standby })
	run(t, bin, "fault", "heal", "--http", a.HTTP, id)
	waitSelection(t, conn, budget, grace+3*window+10*time.Second, "budget back on primary", func(s *contract.Selection) bool { return s.Active == contract.Primary })

	// Both replicas restart: whatever they show now comes from the record.
	run(t, bin, "fault", "inject", "--http", a.HTTP, "restart-monitors")
	restarted := time.Now()
	var page string
	waitSelection(t, conn, budget, 3*window+10*time.Second, "a restarted replica to publish and show both switches", func(s *contract.Selection) bool {
		if !s.DecidedAt.After(restarted) {
			return false
		}
		page = get(t, "http://"+a.HTTP+"/")
		return len(pageSwitches(page, "budget")) == 2
	})
	if sw := pageSwitches(page, "budget"); sw[0] != "standby → primary (return)" || sw[1] != "primary → standby (failover)" {
		t.Fatalf("the page lists budget's switches as %q", sw)
	}
	if !regexp.MustCompile(`(?s)<tr class="switch">.*?budget.*?\(failover\).*?primary</b>: unhealthy.*?input_rate_low`).MatchString(page) {
		t.Fatalf("the page does not show the failover's evidence (primary unhealthy, input_rate_low)")
	}
	var ans monitor.HistoryAnswer
	if err := json.Unmarshal([]byte(get(t, "http://"+a.HTTP+"/api/v1/history?service=budget&kind=switch")), &ans); err != nil {
		t.Fatal(err)
	}
	if got := causes(ans.Entries); !slices.Equal(got, []string{"initial", "failover", "return"}) {
		t.Fatalf("/api/v1/history after the restart: %v", got)
	}
	since := "-" + time.Since(started).Round(time.Second).String()
	both := append([]string{"--brokers", strings.Join(a.PrimaryBrokers, ","), "--standby-brokers", strings.Join(a.StandbyBrokers, ",")}, kafkaArgs(t, a)...)
	hist := run(t, bin, append([]string{"history", "--since", since, "--service", "budget"}, both...)...)
	for want, n := range map[string]int{"SWITCH primary → standby  failover": 1, "SWITCH standby → primary  return": 1,
		"budget: 2 switch(es) (1 failover, 1 return)": 1} {
		if got := strings.Count(hist, want); got != n {
			t.Fatalf("hotpair history shows %q %d times, want %d:\n%s", want, got, n, hist)
		}
	}
	if !regexp.MustCompile(`failover  epoch \d+ .*\n    why: .*input_rate_low.*\n    primary:  UNHEALTHY .*input_rate_low`).MatchString(hist) {
		t.Fatalf("hotpair history does not show the failover's evidence:\n%s", hist)
	}

	// The primary Kafka cluster stops: every service fails over, and the
	// record keeps it on the standby's copy.
	stop := strings.TrimSpace(run(t, bin, "fault", "inject", "--http", a.HTTP, "stop-cluster", "--side", "primary"))
	for _, svc := range contract.Services() {
		waitSelection(t, conn, paths.Selection(svc), 4*window+15*time.Second, svc.String()+" on standby", func(s *contract.Selection) bool {
			return s.Active == contract.Standby
		})
	}
	failovers := func(recs []*kgo.Record) []string {
		var ids []string
		for _, r := range recs {
			if e, err := decisions.Decode(r.Value); err == nil && e.Kind == decisions.KindSwitch {
				ids = append(ids, e.ID)
			}
		}
		slices.Sort(ids)
		return slices.Compact(ids)
	}
	var onStandby []string
	kafkatest.FollowOf(t, kafkaOf(t, a, a.StandbyBrokers), decisions.Topic).Until(t, 10*time.Second, func(recs []*kgo.Record) string {
		onStandby = failovers(recs)
		if len(onStandby) < 3+2+3 { // initial ×3, budget's failover and return, the three failovers now
			return fmt.Sprintf("the standby's copy holds the switches %v", onStandby)
		}
		return ""
	})
	hist = run(t, bin, append([]string{"history", "--since", since, "--timeout", "15s"}, both...)...)
	for _, svc := range contract.Services() {
		if !strings.Contains(hist, fmt.Sprintf("  %-6s  SWITCH primary → standby  failover", svc)) {
			t.Fatalf("hotpair history with the primary cluster down lacks %s's failover:\n%s", svc, hist)
		}
	}
	if !strings.Contains(hist, "primary copy UNREADABLE") {
		t.Fatalf("hotpair history does not say the primary's copy could not be read:\n%s", hist)
	}

	// The primary comes back: its producer delivers what waited, so its
	// own copy holds every switch as well.
	run(t, bin, "fault", "heal", "--http", a.HTTP, stop)
	kafkatest.FollowOf(t, kafkaOf(t, a, a.PrimaryBrokers), decisions.Topic).Until(t, 30*time.Second, func(recs []*kgo.Record) string {
		if got := failovers(recs); !slices.Equal(got, onStandby) {
			return fmt.Sprintf("the primary's copy holds the switches %v, the standby's %v", got, onStandby)
		}
		return ""
	})
	t.Logf("both copies hold the %d switches; the sandbox ran %s", len(onStandby), time.Since(started).Round(time.Second))

	sb.interrupt(t)
}

// pageSwitches returns the switches the page's decision table lists for
// service, newest first, as "from → to (cause)".
func pageSwitches(page, service string) []string {
	var out []string
	row := regexp.MustCompile(`(?s)<tr class="switch">\s*<td>.*?</td><td>` + service + `</td>\s*<td>(.*?)</td>`)
	tag := regexp.MustCompile(`<[^>]*>`)
	for _, m := range row.FindAllStringSubmatch(page, -1) {
		if s := strings.TrimSpace(tag.ReplaceAllString(m[1], "")); !strings.HasSuffix(s, "(initial)") {
			out = append(out, s)
		}
	}
	return out
}

func causes(es []decisions.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Cause)
	}
	return out
}
