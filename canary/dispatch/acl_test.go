package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

func TestKafkaACLs(t *testing.T) {
	acls := func(a ...string) []string { return a }
	for _, tc := range []struct {
		name string
		got  []contract.KafkaACL
		want []string
	}{
		{"live, default config", dispatch.Config{Side: contract.Primary}.LiveKafkaACLs(), acls(
			"--group hotpair-dark-dispatch-primary --operation Read",
			"--topic ad-events --operation Read",
			"--topic budgets --operation Read")},
		{"live, prefix and group", dispatch.Config{Side: contract.Standby, TopicPrefix: "ads.", Group: "copy"}.LiveKafkaACLs(), acls(
			"--group copy --operation Read",
			"--topic ads.ad-events --operation Read",
			"--topic ads.budgets --operation Read")},
		{"target", dispatch.TargetKafkaACLs(contract.DarkPrefix("cand")), acls(
			"--topic dark.cand.ad-events --operation Read",
			"--topic dark.cand.ad-events --operation Write",
			"--topic dark.cand.budgets --operation Write")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kafkatest.ACLStrings(tc.got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// The dispatcher's user holds exactly LiveKafkaACLs on the live cluster
// and TargetKafkaACLs of each target on the target's cluster, both with
// TLS, SASL and authorization on: target "cand" receives its sample. Target
// "short" lacks the ACLs on its ad-events: it gets its budget rows, no event,
// and every event copy it should have had is counted as dropped, reason
// not_authorized. The group commits its offsets.
func TestCopiesWithTheDocumentedACLs(t *testing.T) {
	const user = "dispatch"
	e := newZKEnv(t)
	cfg := dispatch.Config{Side: contract.Primary} // the default group, hotpair-dark-dispatch-primary
	liveAdmin, liveAs := kafkatest.AuthorizedCluster(t, map[string][]contract.KafkaACL{user: cfg.LiveKafkaACLs()})
	createTopicsOn(t, liveAdmin, "")
	e.live = liveAdmin.Brokers

	short := contract.TopicsWithPrefix(contract.DarkPrefix("short"))
	shortACLs := slices.DeleteFunc(dispatch.TargetKafkaACLs(contract.DarkPrefix("short")), func(a contract.KafkaACL) bool {
		return a.Name == short.AdEvents
	})
	if len(shortACLs) != 1 {
		t.Fatalf("short's ACLs %v: want Write on %s alone", shortACLs, short.Budgets)
	}
	darkAdmin, darkAs := kafkatest.AuthorizedCluster(t, map[string][]contract.KafkaACL{
		user: append(dispatch.TargetKafkaACLs(contract.DarkPrefix("cand")), shortACLs...)})
	createTopicsOn(t, darkAdmin, contract.DarkPrefix("cand"))
	createTopicsOn(t, darkAdmin, contract.DarkPrefix("short"))
	e.set(doc("cand", contract.DarkIdentical, 0.5, darkAdmin.Brokers))
	e.set(doc("short", contract.DarkIdentical, 0.5, darkAdmin.Brokers))

	w := newWorkload(100, 3)
	w.budgetsTo(t, liveAdmin)
	d, reg := e.start(func(c *dispatch.Config) {
		c.Group = cfg.Group // the default
		c.LiveAuth = liveAs[user].Auth
		c.TargetAuth = darkAs[user].Auth
	})
	waitPlan(t, d, "cand", 10*time.Second, sending(0.5))
	waitPlan(t, d, "short", 10*time.Second, sending(0.5))
	ids := w.eventsTo(t, liveAdmin)

	cand := contract.TopicsWithPrefix(contract.DarkPrefix("cand"))
	wantEv, wantB := expectEvents(ids, 0.5), expectBudgets(w.campaigns, 0.5)
	waitFor(t, kafkatest.FollowOf(t, darkAdmin, cand.AdEvents), wantEv, gotEvents)
	waitFor(t, kafkatest.FollowOf(t, darkAdmin, cand.Budgets), wantB, gotBudgets)
	waitFor(t, kafkatest.FollowOf(t, darkAdmin, short.Budgets), wantB, gotBudgets)

	waitMetric(t, d, reg, float64(len(wantEv)), "hotpair_dark_dispatch_dropped_total", "target", "short", "reason", "not_authorized")
	if got := kafkatest.UpToEndOf(t, darkAdmin, short.AdEvents); len(got) != 0 {
		t.Fatalf("%s holds %d events without Write on it", short.AdEvents, len(got))
	}
	for _, target := range []string{"cand", "short"} {
		if v := metric(reg, "hotpair_dark_dispatch_dropped_total", "target", target, "reason", "delivery_failed"); v != 0 {
			t.Errorf("dropped{target=%s,reason=delivery_failed} = %v: a refusal is not_authorized", target, v)
		}
	}
	if v := metric(reg, "hotpair_dark_dispatch_dropped_total", "target", "cand", "reason", "not_authorized"); v != 0 {
		t.Errorf("dropped{target=cand,reason=not_authorized} = %v", v)
	}
	i := slices.IndexFunc(cfg.LiveKafkaACLs(), func(a contract.KafkaACL) bool { return a.Resource == contract.ResourceGroup })
	committed(t, d, liveAdmin, cfg.LiveKafkaACLs()[i].Name, "ad-events")
}

// committed waits until group's committed offsets of topic reach the
// topic's end: the group may commit (a restarted dispatcher resumes there).
func committed(t *testing.T, d *dispatch.Dispatcher, c kafka.Cluster, group, topic string) {
	t.Helper()
	adm := kadm.NewClient(kafkatest.ClientOf(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	until(t, d, 20*time.Second, func() string {
		got, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return fmt.Sprintf("fetching the offsets of %s: %v", group, err)
		}
		var behind string
		ends.Each(func(e kadm.ListedOffset) {
			if o, _ := got.Lookup(topic, e.Partition); o.At != e.Offset {
				behind = fmt.Sprintf("%s committed %s/%d at %d, its end is %d", group, topic, e.Partition, o.At, e.Offset)
			}
		})
		return behind
	})
}
