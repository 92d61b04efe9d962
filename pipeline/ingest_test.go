package pipeline

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// An ingester started before its topics exist (started together with the
// pipelines, which create them) keeps what it is given until they do,
// within its delivery timeout, instead of losing it.
func TestIngesterWaitsForTopicsBeingCreated(t *testing.T) {
	kc := kafkatest.Cluster(t)
	brokers := kc.ListenAddrs()
	// Count the ingester's metadata requests for the topic, each answered
	// "unknown topic" while it does not exist.
	asked := make(chan struct{}, 100)
	kc.ControlKey(int16(kmsg.Metadata), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		for _, tp := range kr.(*kmsg.MetadataRequest).Topics {
			if tp.Topic != nil && *tp.Topic == "budgets" {
				select {
				case asked <- struct{}{}:
				default:
				}
			}
		}
		return nil, nil, false
	})
	in, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: brokers},
		DeliveryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	for i := range n {
		in.Write("budgets", fmt.Appendf(nil, "camp-%d", i), []byte(`{}`), nil, time.Now())
	}
	// More times than franz-go retries an unknown topic by default (4).
	for range 6 {
		select {
		case <-asked:
		case <-time.After(30 * time.Second):
			t.Fatal("the ingester stopped asking for the topic")
		}
	}
	if st := in.Stats()[contract.Primary]; st.Lost != 0 {
		t.Fatalf("before the topic exists: %+v, want nothing lost", st)
	}
	if err := kafka.EnsureTopics(context.Background(), kafka.Cluster{Brokers: brokers}, 4, 1, kafka.TopicSpec{Name: "budgets"}); err != nil {
		t.Fatal(err)
	}
	kafkatest.Follow(t, brokers, "budgets").Until(t, 30*time.Second, func(recs []*kgo.Record) string {
		if len(recs) < n {
			return fmt.Sprintf("%d of %d records in the topic; ingester: %+v", len(recs), n, in.Stats()[contract.Primary])
		}
		return ""
	})
	// Close waits for the acknowledgements, which the topic may show first.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in.Close(ctx)
	if st := in.Stats()[contract.Primary]; st.Lost != 0 || st.Delivered != n {
		t.Errorf("ingester: %+v, want %d delivered, none lost", st, n)
	}
}

// On a cluster that checks ACLs, an ingester whose user holds exactly
// IngestOptions.KafkaACLs delivers everything; one without Write on budgets
// loses the budget rows, counted as not_authorized, and still delivers the
// ad events.
func TestIngesterWithItsACLs(t *testing.T) {
	o := IngestOptions{TopicPrefix: "ads."}
	acls := o.KafkaACLs()
	if got, want := kafkatest.ACLStrings(acls), []string{"--topic ads.ad-events --operation Write", "--topic ads.budgets --operation Write"}; !slices.Equal(got, want) {
		t.Fatalf("KafkaACLs = %q, want %q", got, want)
	}
	admin, as := kafkatest.AuthorizedCluster(t, map[string][]contract.KafkaACL{"ingest": acls, "no-budgets": acls[:1]})
	if err := kafka.EnsureTopics(context.Background(), admin, 4, 1, kafka.TopicSpec{Name: "ads.ad-events"}, kafka.TopicSpec{Name: "ads.budgets"}); err != nil {
		t.Fatal(err)
	}
	for user, wantLost := range map[string]float64{"ingest": 0, "no-budgets": 3} {
		t.Run(user, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			o := IngestOptions{TopicPrefix: "ads.", Clusters: map[contract.Side][]string{contract.Primary: as[user].Brokers},
				KafkaAuth: map[contract.Side]*contract.KafkaAuth{contract.Primary: as[user].Auth}, Registerer: reg}
			in, err := NewIngester(o)
			if err != nil {
				t.Fatal(err)
			}
			// Every reason is exported at 0 before any loss, so an alert on
			// its increase fires at the first one.
			for _, reason := range []string{"buffer_full", "delivery_failed", "not_authorized"} {
				if v, ok := metricvalue.Get(reg, "hotpair_ingest_lost_total", "side", "primary", "reason", reason); !ok || v != 0 {
					t.Errorf("hotpair_ingest_lost_total{reason=%q} = %v (exported: %v) before any loss, want 0", reason, v, ok)
				}
			}
			for i := range 3 {
				in.Write("ad-events", fmt.Appendf(nil, "c%d", i), []byte(`{}`), nil, time.Now())
				in.Write("budgets", fmt.Appendf(nil, "c%d", i), []byte(`{}`), nil, time.Now())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			in.Close(ctx)
			st := in.Stats()[contract.Primary]
			lost, _ := metricvalue.Get(reg, "hotpair_ingest_lost_total", "side", "primary", "reason", "not_authorized")
			if st.Delivered != 6-int64(wantLost) || lost != wantLost {
				t.Errorf("%+v, not_authorized %v; want %v lost as not_authorized, the rest delivered", st, lost, wantLost)
			}
		})
	}
}
