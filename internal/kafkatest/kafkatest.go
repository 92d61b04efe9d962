// Package kafkatest starts in-process kfake clusters (franz-go's Kafka
// protocol implementation) for tests: one cluster per side, as in production.
package kafkatest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/devsec"
)

// Cluster starts a single-broker kfake cluster, closed at cleanup.
func Cluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// SecureCluster starts a single-broker kfake cluster with TLS and SASL on
// (devsec), closed at cleanup, and returns it with the settings its clients
// connect with.
func SecureCluster(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, *devsec.Setup) {
	t.Helper()
	sec, err := devsec.New()
	if err != nil {
		t.Fatal(err)
	}
	return Cluster(t, append(sec.ClusterOpts(), opts...)...), sec
}

// Client returns a franz-go client of the cluster with goka-compatible
// partitioning, closed at cleanup.
func Client(t testing.TB, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return ClientOf(t, kafka.Cluster{Brokers: brokers}, opts...)
}

// ClientOf is Client for a cluster with its security settings.
func ClientOf(t testing.TB, c kafka.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kafka.NewProducer(c, "", opts...)
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// ReadAll consumes topic from the start until want records arrived or
// timeout, and returns them.
func ReadAll(t testing.TB, brokers []string, topic string, want int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	return ReadAllOf(t, kafka.Cluster{Brokers: brokers}, topic, want, timeout)
}

// ReadAllOf is ReadAll for a cluster with its security settings.
func ReadAllOf(t testing.TB, c kafka.Cluster, topic string, want int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	cl := ClientOf(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// Latest reads topic from the start to its current end offsets and returns
// the last value of every key (a table's current contents). A key whose
// last record is a tombstone is absent.
func Latest(t testing.TB, brokers []string, topic string) map[string][]byte {
	t.Helper()
	return LatestOf(UpToEnd(t, brokers, topic))
}

// UpToEnd returns every record of topic from the start up to its end
// offsets as of the call, in partition order.
func UpToEnd(t testing.TB, brokers []string, topic string) []*kgo.Record {
	t.Helper()
	return UpToEndOf(t, kafka.Cluster{Brokers: brokers}, topic)
}

// UpToEndOf is UpToEnd for a cluster with its security settings.
func UpToEndOf(t testing.TB, c kafka.Cluster, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admCl := ClientOf(t, c)
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	want := make(map[int32]kgo.Offset)
	remaining := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[o.Partition] = kgo.NewOffset().AtStart()
			remaining++
		}
	})
	if remaining == 0 {
		return nil
	}
	cl := ClientOf(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}))
	var out []*kgo.Record
	done := make(map[int32]bool)
	for len(done) < remaining {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s to its end: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if end, _ := ends.Lookup(topic, r.Partition); r.Offset+1 >= end.Offset {
				done[r.Partition] = true
			}
		})
	}
	return out
}

// Follower consumes a topic from its start in the background and tells
// waiters about every fetch, so a test waits for what it expects to arrive
// instead of reading the topic again and again.
type Follower struct {
	topic   string
	changes changes.Feed
	mu      sync.Mutex
	records []*kgo.Record
}

// Follow starts following topic until the test ends.
func Follow(t testing.TB, brokers []string, topic string) *Follower {
	t.Helper()
	return FollowOf(t, kafka.Cluster{Brokers: brokers}, topic)
}

// FollowOf is Follow for a cluster with its security settings.
func FollowOf(t testing.TB, c kafka.Cluster, topic string) *Follower {
	t.Helper()
	f := &Follower{topic: topic}
	cl := ClientOf(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(100*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			f.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { f.records = append(f.records, r) })
			f.mu.Unlock()
			f.changes.Notify()
		}
	}()
	t.Cleanup(func() { cancel(); <-done }) // before the client closes
	return f
}

// Until waits until cond, given every record so far, returns "", checking
// at every fetch; after timeout it fails the test with cond's last answer.
func (f *Follower) Until(t testing.TB, timeout time.Duration, cond func(records []*kgo.Record) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var msg string
	err := f.changes.Until(ctx, func() bool {
		f.mu.Lock()
		recs := f.records[:len(f.records):len(f.records)]
		f.mu.Unlock()
		msg = cond(recs)
		return msg == ""
	})
	if err != nil {
		t.Fatalf("%s after %s: %s", f.topic, timeout, msg)
	}
}

// LatestOf returns the last value of every key of records (a table's
// contents); a key whose last record is a tombstone is absent.
func LatestOf(records []*kgo.Record) map[string][]byte {
	out := make(map[string][]byte)
	for _, r := range records {
		if r.Value == nil {
			delete(out, string(r.Key))
			continue
		}
		out[string(r.Key)] = r.Value
	}
	return out
}
