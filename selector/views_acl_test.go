package selector

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// The list a team grants the views' user on each cluster, as documented.
func TestViewsKafkaACLs(t *testing.T) {
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{
			"--topic bid-multipliers --operation Read",
			"--topic budget-status --operation Read",
			"--topic pacing --operation Read",
		}},
		{"team-a.", []string{
			"--topic team-a.bid-multipliers --operation Read",
			"--topic team-a.budget-status --operation Read",
			"--topic team-a.pacing --operation Read",
		}},
	} {
		got := kafkatest.ACLStrings(ViewsKafkaACLs(c.prefix))
		if !slices.Equal(got, c.want) {
			t.Errorf("ViewsKafkaACLs(%q) =\n%s\nwant\n%s", c.prefix, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

const viewsUser = "views"

// authorizedSide is one side's cluster with authorization on: a superuser's
// producer of the output topics (as the pipelines write them) and the
// cluster as the views' user, holding exactly acls, reaches it.
func authorizedSide(t *testing.T, prefix string, acls []contract.KafkaACL) (*cluster, kafka.Cluster) {
	t.Helper()
	admin, as := kafkatest.AuthorizedCluster(t, map[string][]contract.KafkaACL{viewsUser: acls})
	return withOutputTopics(t, admin, prefix), as[viewsUser]
}

// startAuthorizedViews starts views of the two clusters as the views' user.
func startAuthorizedViews(t *testing.T, prefix string, primary, standby kafka.Cluster) (*Views, *Retriever, func(string, ...string) float64) {
	t.Helper()
	v, reg := startViews(t, WithTopicPrefix(prefix),
		WithCluster(contract.Primary, primary.Brokers...), WithKafkaAuth(contract.Primary, primary.Auth),
		WithCluster(contract.Standby, standby.Brokers...), WithKafkaAuth(contract.Standby, standby.Auth))
	r, err := NewRetriever(v, staticSource{newDefaultSnapshot(contract.Primary)}, WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	return v, r, func(name string, labels ...string) float64 { return metricValue(t, reg, name, labels...) }
}

// A views user holding exactly ViewsKafkaACLs on each cluster reads both
// clusters' outputs and measures their lag without a single authorization
// error.
func TestViewsWorkWithExactlyTheirACLs(t *testing.T) {
	const prefix = "acl."
	acls := ViewsKafkaACLs(prefix)
	p, pAs := authorizedSide(t, prefix, acls)
	s, sAs := authorizedSide(t, prefix, acls)
	writeOutputs(p, s)
	v, r, metric := startAuthorizedViews(t, prefix, pAs, sAs)
	waitUntil(t, &v.changes, 15*time.Second, "both sides caught up", func() bool {
		return v.CaughtUp(contract.Primary) && v.CaughtUp(contract.Standby)
	})

	checkOutputs(t, v)
	// Written while the views run: they keep following.
	s.pacing("c1", 0.25)
	waitUntil(t, &v.changes, 10*time.Second, "the update arrives", func() bool {
		return v.Get(contract.ServicePacer, "c1", contract.Standby).Rate == 0.25
	})

	// The lag report measured every topic (ListOffsets is allowed too), and
	// nothing was refused on either side.
	waitUntil(t, &v.changes, 10*time.Second, "the lag report catches up", func() bool {
		for _, l := range r.Lag() {
			if !l.CaughtUp || l.Error != "" || l.EndOffsetsAt.IsZero() {
				return false
			}
		}
		return true
	})
	for _, side := range []string{"primary", "standby"} {
		if n := metric("hotpair_view_fetch_errors_total", "side", side); n != 0 {
			t.Errorf("fetch errors on %s = %v, want 0", side, n)
		}
	}
}

// Without Read on one output topic, the views serve the others, and the
// lag report and metrics tell the operator which topic is refused.
func TestViewsMissingAnACLSayWhichTopic(t *testing.T) {
	const prefix = "acl."
	acls := ViewsKafkaACLs(prefix)
	denied := contract.TopicsWithPrefix(prefix).Pacing
	partial := slices.DeleteFunc(slices.Clone(acls), func(a contract.KafkaACL) bool {
		return a.Resource == contract.ResourceTopic && a.Name == denied && a.Operation == contract.OpRead
	})
	if len(partial) != len(acls)-1 {
		t.Fatalf("removing Read on %s from %v left %v", denied, acls, partial)
	}
	p, pAs := authorizedSide(t, prefix, acls)
	s, sAs := authorizedSide(t, prefix, partial)
	writeOutputs(p, s)
	v, r, metric := startAuthorizedViews(t, prefix, pAs, sAs)

	waitUntil(t, &v.changes, 15*time.Second, "the refused topic is reported, the others caught up", func() bool {
		if metric("hotpair_view_fetch_errors_total", "side", "standby") == 0 {
			return false // the refused fetches are counted
		}
		for _, l := range r.Lag() {
			if l.Side == "standby" && l.Topic == denied {
				if !strings.Contains(l.Error, "TOPIC_AUTHORIZATION_FAILED") || l.CaughtUpOnce {
					return false
				}
			} else if !l.CaughtUp || l.Error != "" {
				return false
			}
		}
		return true
	})
	if v.CaughtUp(contract.Standby) {
		t.Error("the standby views say they caught up without reading " + denied)
	}
	if got := metric("hotpair_view_caught_up_once", "side", "standby", "topic", denied); got != 0 {
		t.Errorf("caught_up_once{standby,%s} = %v, want 0", denied, got)
	}
	if got := metric("hotpair_view_fetch_errors_total", "side", "primary"); got != 0 {
		t.Errorf("fetch errors on the primary = %v, want 0", got)
	}

	// What the retriever sees: the standby's other tables, and for the
	// refused one the primary's value, as a fallback.
	for _, c := range []struct {
		svc  contract.Service
		want func(Answer) bool
	}{
		{contract.ServiceBudget, func(a Answer) bool { return a.From == contract.Standby && a.Status == StateDailyCapped }},
		{contract.ServiceBidder, func(a Answer) bool { return a.From == contract.Standby && a.Multiplier == 1.5 }},
		{contract.ServicePacer, func(a Answer) bool { return a.Fallback() && a.From == contract.Primary && a.Rate == 0.5 }},
	} {
		if a := v.Get(c.svc, "c1", contract.Standby); !c.want(a) {
			t.Errorf("Get(%s, c1, standby) = %+v", c.svc, a)
		}
	}
	if got := metric("hotpair_view_records_total", "side", "standby", "topic", denied); got != 0 {
		t.Errorf("records{standby,%s} = %v, want 0", denied, got)
	}
}
