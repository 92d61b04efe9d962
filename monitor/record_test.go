package monitor

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// budgetSwitches returns the replica's switches of budget, oldest first.
func budgetSwitches(r *replica) []Switch {
	var out []Switch
	for _, sw := range r.hist.recentSwitches() {
		if sw.Service == contract.ServiceBudget && sw.Kind != "initial" {
			out = append(out, sw)
		}
	}
	slices.Reverse(out)
	return out
}

// A failover and a return are recorded by the leader on both clusters.
// Both replicas are then replaced by new ones: each new replica's page and
// API show both switches, once each, with their evidence, and the same
// decisions as the other; each cluster's copy alone holds them too. Bad
// values on the topic are skipped and counted. The topic existed with
// another retention: it is set to record.retention.
func TestDecisionRecordSurvivesRestarts(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	p, s := startClusters(t)
	topic := decisions.Topic
	if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: s.brokers}, 1, 1, kafka.TopicSpec{Name: topic, Config: kafka.Retention(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	pf, _ := newFleet(t, p), newFleet(t, s)
	a := startReplica(t, testConfig("a", addr, paths, p, s))
	waitFor(t, &a.changes, 10*time.Second, "a to lead", a.IsLeader)
	b := startReplica(t, testConfig("b", addr, paths, p, s))
	w := watchSelection(t, testConn(t, addr, nil), paths, contract.ServiceBudget)
	w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)

	pf.set(func(f *fleet) { f.stopped = true })
	w.waitActive(t, contract.Standby, tHeartbeat+2*tWindow+5*time.Second)
	pf.set(func(f *fleet) { f.stopped = false })
	w.waitActive(t, contract.Primary, tGrace+4*tWindow+5*time.Second)
	for _, r := range []*replica{a, b} {
		waitFor(t, &r.changes, 10*time.Second, r.ID()+" to read both switches back", func() bool { return len(budgetSwitches(r)) == 2 })
	}
	// Someone writes junk, and a newer monitor an entry of version 2.
	junk := []*kgo.Record{{Topic: topic, Value: []byte("{not an entry")}, {Topic: topic, Value: []byte(`{"v":2,"id":"x","kind":"switch"}`)}}
	if err := kafkatest.Client(t, p.brokers).ProduceSync(t.Context(), junk...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*replica{a, b} {
		r.stop()
		err := <-r.done
		r.done <- err // for the cleanup
	}

	c := startReplica(t, testConfig("c", addr, paths, p, s))
	d := startReplica(t, testConfig("d", addr, paths, p, s))
	for _, r := range []*replica{c, d} {
		waitFor(t, &r.changes, 10*time.Second, r.ID()+" to read both switches from the record", func() bool { return len(budgetSwitches(r)) == 2 })
		waitFor(t, &r.changes, 10*time.Second, r.ID()+" to count the bad values", func() bool {
			return r.metric(t, "hotpair_monitor_record_bad_entries_total", "side", "primary", "reason", "invalid") == 1 &&
				r.metric(t, "hotpair_monitor_record_bad_entries_total", "side", "primary", "reason", "unknown_version") == 1
		})
	}
	sw := budgetSwitches(c)
	fo, ret := sw[0], sw[1]
	if fo.Kind != "failover" || fo.From != contract.Primary || fo.To != contract.Standby || ret.Kind != "return" || ret.To != contract.Primary || ret.Epoch != fo.Epoch+1 {
		t.Fatalf("switches after the restart: %+v", sw)
	}
	if ps := fo.Sides[contract.Primary]; ps.Healthy || len(ps.Reasons) == 0 || !strings.HasPrefix(ps.Reasons[0], "no_heartbeat") || !fo.Sides[contract.Standby].Healthy {
		t.Fatalf("the failover's evidence: %+v", fo.Sides)
	}
	if fo.Writer != "a" || !strings.Contains(ret.Reason, "healthy continuously") {
		t.Fatalf("failover recorded by %q, return reason %q", fo.Writer, ret.Reason)
	}
	ids := func(r *replica) []string {
		var out []string
		for _, e := range r.hist.recentDecisions() {
			if e.At.Before(fo.At.Add(time.Minute)) { // what a and b decided
				out = append(out, e.ID)
			}
		}
		return out
	}
	if !slices.Equal(ids(c), ids(d)) {
		t.Fatalf("the replicas show different histories:\n%v\n%v", ids(c), ids(d))
	}
	if pts := c.hist.pointsOf(contract.ServiceBudget); len(pts) == 0 || !pts[0].At.Before(fo.At) {
		t.Fatalf("the charts did not come back: %d points", len(pts))
	}
	if got := c.metric(t, "hotpair_decision_last_timestamp_seconds", "service", "budget", "reason", "return"); got != float64(ret.At.UnixNano())/1e9 {
		t.Fatalf("hotpair_decision_last_timestamp_seconds{budget,return} = %f, want %f", got, float64(ret.At.UnixNano())/1e9)
	}
	checkHistoryAPI(t, c, fo, ret)

	// Each cluster's copy alone holds both switches, once.
	for _, cl := range []cluster{p, s} {
		es, _, err := decisions.Read(t.Context(), decisions.ReadOptions{Sources: []decisions.Source{{Side: cl.side.String(), Brokers: cl.brokers}},
			Filter: decisions.Filter{Service: contract.ServiceBudget, Kinds: []decisions.Kind{decisions.KindSwitch}}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Cause)
		}
		if !slices.Equal(got, []string{"initial", "failover", "return"}) {
			t.Fatalf("the %s copy holds the switches %v", cl.side, got)
		}
		checkRetention(t, cl)
	}
}

func checkHistoryAPI(t *testing.T, r *replica, fo, ret Switch) {
	t.Helper()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	since := fo.At.Add(-time.Second).Format(time.RFC3339Nano)
	resp, err := srv.Client().Get(srv.URL + "/api/v1/history?service=budget&kind=switch&since=" + since)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans HistoryAnswer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/history: %d %v", resp.StatusCode, err)
	}
	if len(ans.Entries) != 2 || ans.Entries[0].Cause != fo.Kind || ans.Entries[1].Cause != ret.Kind || ans.HeldSince == nil {
		t.Fatalf("/api/v1/history: %+v", ans)
	}
	for query, param := range map[string]string{"service=ads": "service", "since=yesterday": "since", "until=-1h&since=-10m": "until",
		"kind=reboot": "kind", "servce=budget": "servce"} {
		rec := httptest.NewRecorder()
		r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/history?"+query, nil))
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), param) {
			t.Errorf("GET /api/v1/history?%s = %d %s; want 400 naming %s", query, rec.Code, rec.Body.String(), param)
		}
	}
}

// checkRetention checks the record's topic has record.retention.
func checkRetention(t *testing.T, cl cluster) {
	t.Helper()
	kc := kafkatest.Client(t, cl.brokers)
	rcs, err := kadm.NewClient(kc).DescribeTopicConfigs(context.Background(), decisions.Topic)
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(DefaultConfig().Record.Retention.Milliseconds(), 10)
	for _, c := range rcs[0].Configs {
		if c.Key == "retention.ms" && c.MaybeValue() != want {
			t.Fatalf("retention.ms of the %s copy = %s, want %s", cl.side, c.MaybeValue(), want)
		}
	}
}
