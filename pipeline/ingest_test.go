package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
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
	defer in.Close(context.Background())
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
	if st := in.Stats()[contract.Primary]; st.Lost != 0 || st.Delivered != n {
		t.Errorf("ingester: %+v, want %d delivered, none lost", st, n)
	}
}
