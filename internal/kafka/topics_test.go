package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// Several instances of a pipeline start at once and each ensures the same
// topics: every one of them succeeds, whoever creates a topic first (the
// others may see it before it has partitions).
func TestEnsureTopicsFromSeveralProcessesAtOnce(t *testing.T) {
	for round := range 5 {
		c := kafka.Cluster{Brokers: kafkatest.Cluster(t).ListenAddrs()}
		var specs []kafka.TopicSpec
		for i := range 12 {
			specs = append(specs, kafka.TopicSpec{Name: fmt.Sprintf("t%d", i), Compacted: i%2 == 0})
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = kafka.EnsureTopics(context.Background(), c, 4, 1, specs...) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, instance %d: %v", round, i, err)
			}
		}
	}
}
