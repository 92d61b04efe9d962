package kafka_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

func TestTopicGuardAllowsOnlyItsPrefix(t *testing.T) {
	var refused []string
	g, err := kafka.NewTopicGuard("dark.canary.", func(topic string) { refused = append(refused, topic) })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic string
		ok    bool
	}{
		{"dark.canary.spend", true},
		{"dark.canary.hotpair-budget-table", true},
		{"spend", false},
		{"dark.other.spend", false},
		{"dark.canaryspend", false},
		{"x.dark.canary.spend", false},
	} {
		err := g.Check(tc.topic)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, kafka.ErrTopicRefused)) {
			t.Errorf("%s: got %v, want allowed=%v", tc.topic, err, tc.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), tc.topic) || !strings.Contains(err.Error(), "dark.canary.")) {
			t.Errorf("%s: the error %q names neither the topic nor the prefix", tc.topic, err)
		}
	}
	if len(refused) != 4 {
		t.Fatalf("onRefuse saw %v, want the 4 refused topics", refused)
	}
	if err := (*kafka.TopicGuard)(nil).Check("spend"); err != nil {
		t.Fatalf("a nil guard refused: %v", err)
	}
	if _, err := kafka.NewTopicGuard("", nil); err == nil {
		t.Fatal("a guard without a prefix was built")
	}
}

// A guarded producer sends nothing to a topic outside its prefix, by any of
// its produce calls, while records to its own topics arrive.
func TestGuardedProducerSendsNothingOutsideItsPrefix(t *testing.T) {
	kc := kafkatest.Cluster(t)
	c := kafka.Cluster{Brokers: kc.ListenAddrs()}
	if err := kafka.EnsureTopics(t.Context(), c, 1, 1, kafka.TopicSpec{Name: "spend"}, kafka.TopicSpec{Name: "dark.c.spend"}); err != nil {
		t.Fatal(err)
	}
	g, _ := kafka.NewTopicGuard("dark.c.", nil)
	cl := kafkatest.ClientOf(t, c)
	p := kafka.Guard(cl, g)
	live := func() *kgo.Record { return &kgo.Record{Topic: "spend", Value: []byte("x")} }
	dark := func() *kgo.Record { return &kgo.Record{Topic: "dark.c.spend", Value: []byte("x")} }
	errs := make(chan error, 4)
	p.Produce(t.Context(), live(), func(_ *kgo.Record, err error) { errs <- err })
	p.TryProduce(t.Context(), live(), func(_ *kgo.Record, err error) { errs <- err })
	for _, r := range p.ProduceSync(t.Context(), live(), dark()) {
		if (r.Err == nil) != (r.Record.Topic == "dark.c.spend") {
			t.Fatalf("ProduceSync to %s: %v", r.Record.Topic, r.Err)
		}
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, kafka.ErrTopicRefused) {
			t.Fatalf("a live record's promise got %v, want ErrTopicRefused", err)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), "spend", "dark.c.spend")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("spend", 0); o.Offset != 0 {
		t.Fatalf("%d records reached the live topic", o.Offset)
	}
	if o, _ := ends.Lookup("dark.c.spend", 0); o.Offset != 1 {
		t.Fatalf("%d records reached the dark topic, want 1", o.Offset)
	}
}
