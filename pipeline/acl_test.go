package pipeline

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// aclsOf is the list a pipeline with options o asks for.
func aclsOf(t *testing.T, o Options) []contract.KafkaACL {
	t.Helper()
	o.Registerer = prometheus.NewRegistry()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p.KafkaACLs()
}

// without is acls without missing, which must be one of them.
func without(t *testing.T, acls []contract.KafkaACL, missing contract.KafkaACL) []contract.KafkaACL {
	t.Helper()
	i := slices.Index(acls, missing)
	if i < 0 {
		t.Fatalf("%v is not in the list", missing)
	}
	return slices.Delete(slices.Clone(acls), i, i+1)
}

// runAuthorized runs a pipeline of all four stages, creating its topics, as
// a principal that holds exactly acls on a cluster that checks ACLs, and
// sends it a workload through a superuser (after setup, given the
// superuser's cluster, if set). It returns the superuser's cluster, the
// pipeline's metrics and the workload.
func runAuthorized(t *testing.T, acls func(Options) []contract.KafkaACL, log *slog.Logger, setup ...func(admin kafka.Cluster)) (kafka.Cluster, *prometheus.Registry, *workload) {
	o := testOptions([]string{"not yet known"}, contract.Primary) // the list does not depend on them
	admin, as := kafkatest.AuthorizedCluster(t, map[string][]contract.KafkaACL{"pipeline": acls(o)})
	for _, f := range setup {
		f(admin)
	}
	o.Brokers, o.KafkaAuth = as["pipeline"].Brokers, as["pipeline"].Auth
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	if log != nil {
		o.Logger = log
	}
	startPipeline(t, o)
	in, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: admin.Brokers},
		KafkaAuth: map[contract.Side]*contract.KafkaAuth{contract.Primary: admin.Auth}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(context.Background()) })
	w := newWorkload(8, 200, 11)
	w.writeBudgets(t, in)
	w.writeEvents(t, in)
	return admin, reg, w
}

// A pipeline whose principal holds exactly the ACLs KafkaACLs lists runs
// all four stages on a cluster that checks ACLs: every campaign's spend
// ends exact, and the pacer and the bidder write their outputs.
func TestPipelineRunsWithExactlyItsACLs(t *testing.T) {
	admin, _, w := runAuthorized(t, func(o Options) []contract.KafkaACL { return aclsOf(t, o) }, nil)
	kafkatest.FollowOf(t, admin, "budget-status").Until(t, 60*time.Second, func(recs []*kgo.Record) string {
		return spentIs(w.truth)(statusesOf(t, kafkatest.LatestOf(recs)))
	})
	for _, topic := range []string{"pacing", "bid-multipliers", "hotpair-health"} {
		kafkatest.ReadAllOf(t, admin, topic, 1, 30*time.Second)
	}
}

// Create is needed only for the topics that are missing: on a cluster where
// they were created beforehand, a pipeline with topics.create on (the
// default) runs without it.
func TestPipelineNeedsNoCreateForExistingTopics(t *testing.T) {
	admin, _, w := runAuthorized(t, func(o Options) []contract.KafkaACL {
		o.CreateTopics = false
		return aclsOf(t, o)
	}, nil, func(admin kafka.Cluster) {
		var specs []kafka.TopicSpec
		for _, name := range contract.TopicsWithPrefix("").All() {
			specs = append(specs, kafka.TopicSpec{Name: name})
		}
		for _, st := range contract.Stages() {
			specs = append(specs, kafka.TopicSpec{Name: "hotpair-" + st.String() + "-table", Compacted: true},
				kafka.TopicSpec{Name: "hotpair-" + st.String() + "-loop"})
		}
		if err := kafka.EnsureTopics(context.Background(), admin, 4, 1, specs...); err != nil {
			t.Fatal(err)
		}
	})
	kafkatest.FollowOf(t, admin, "budget-status").Until(t, 60*time.Second, func(recs []*kgo.Record) string {
		return spentIs(w.truth)(statusesOf(t, kafkatest.LatestOf(recs)))
	})
}

// A missing topic it may not create stops the pipeline at start, with the
// refusal and the fix, instead of retrying forever.
func TestPipelineThatMayNotCreateAMissingTopicStops(t *testing.T) {
	o := testOptions([]string{"not yet known"}, contract.Primary)
	acls := aclsOf(t, o)
	missing := contract.KafkaACL{Resource: contract.ResourceTopic, Pattern: contract.PatternLiteral, Name: "ad-events", Operation: contract.OpCreate}
	_, as := kafkatest.AuthorizedCluster(t, map[string][]contract.KafkaACL{"pipeline": without(t, acls, missing)})
	o.Brokers, o.KafkaAuth, o.Registerer = as["pipeline"].Brokers, as["pipeline"].Auth, prometheus.NewRegistry()
	err := runToStop(t, o)
	if err == nil {
		t.Fatal("Run: nil, want it to stop at start")
	}
	for _, want := range []string{"ad-events", "TOPIC_AUTHORIZATION_FAILED", "topics.create: false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
}

// Without one of them (Write on the budget enforcer's output), the budget
// enforcer fails, saying the cluster refused it, and is rebuilt; the other
// stages go on.
func TestPipelineWithoutAnACLShowsTheStageFailing(t *testing.T) {
	missing := contract.KafkaACL{Resource: contract.ResourceTopic, Pattern: contract.PatternLiteral, Name: "budget-status", Operation: contract.OpWrite}
	failures := make(chan slog.Record, 16)
	log := slog.New(recordHandler{level: slog.LevelError, records: failures})
	admin, reg, _ := runAuthorized(t, func(o Options) []contract.KafkaACL { return without(t, aclsOf(t, o), missing) }, log)
	select {
	case r := <-failures:
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		if r.Message != "stage failed; rebuilding" || attrs["service"] != "budget" || !strings.Contains(attrs["err"], "TOPIC_AUTHORIZATION_FAILED") {
			t.Fatalf("first error logged: %q %v; want the budget enforcer failing on TOPIC_AUTHORIZATION_FAILED", r.Message, attrs)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the budget enforcer did not fail without Write on budget-status")
	}
	kafkatest.ReadAllOf(t, admin, "pacing", 1, 30*time.Second)
	if n, _ := metricvalue.Get(reg, "hotpair_stage_restarts_total", "service", contract.StagePacer.String()); n != 0 {
		t.Errorf("the pacer restarted %v times; only the budget enforcer lacks an ACL", n)
	}
}

// Without Read on its loop topic goka does not fail the aggregator: it
// logs the refusal at debug level and never reads the loop, so the windows
// that only a timer closes never close. The stage says so: a warning
// naming the topic, and hotpair_stage_consume_errors_total{reason=
// "not_authorized"}.
func TestStageThatMayNotReadItsLoopSaysSo(t *testing.T) {
	missing := contract.KafkaACL{Resource: contract.ResourceTopic, Pattern: contract.PatternLiteral, Name: "hotpair-aggregator-loop", Operation: contract.OpRead}
	warnings := make(chan slog.Record, 64)
	log := slog.New(recordHandler{level: slog.LevelWarn, records: warnings})
	_, reg, _ := runAuthorized(t, func(o Options) []contract.KafkaACL { return without(t, aclsOf(t, o), missing) }, log)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case r := <-warnings:
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			if attrs["topic"] != "hotpair-aggregator-loop" || attrs["service"] != "aggregator" {
				continue // e.g. health samples, late to start
			}
			if !strings.Contains(r.Message, "refused") {
				t.Fatalf("warning %q %v: want it to say the cluster refused", r.Message, attrs)
			}
			if n, _ := metricvalue.Get(reg, "hotpair_stage_consume_errors_total", "service", "aggregator", "reason", "not_authorized"); n == 0 {
				t.Error("hotpair_stage_consume_errors_total{reason=not_authorized} = 0")
			}
			return
		case <-deadline:
			t.Fatal("no warning named the aggregator's loop topic it may not read")
		}
	}
}

// recordHandler sends the records at level or above to records (dropping
// them when it is full).
type recordHandler struct {
	level   slog.Level
	records chan<- slog.Record
	attrs   []slog.Attr
}

func (h recordHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	select {
	case h.records <- r:
	default:
	}
	return nil
}

func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(slices.Clone(h.attrs), as...)
	return h
}

func (h recordHandler) WithGroup(string) slog.Handler { return h }
