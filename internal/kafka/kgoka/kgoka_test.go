package kgoka_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/kgoka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// goka's sarama clients (consumer group, consumer, topic manager) and
// hotpair's producer connect with the cluster's TLS and SASL: a processor
// on a secured cluster consumes its input, keeps a table and emits, with
// SCRAM-SHA-256 and SCRAM-SHA-512 alike.
func TestGokaProcessorOnASecuredCluster(t *testing.T) {
	kc, sec := kafkatest.SecureCluster(t)
	for _, mech := range []string{contract.SASLSCRAMSHA256, contract.SASLSCRAMSHA512, contract.SASLPlain} {
		t.Run(mech, func(t *testing.T) {
			auth := sec.Auth()
			auth.SASL.Mechanism = mech
			c := kafka.Cluster{Brokers: kc.ListenAddrs(), Auth: auth}
			in, out := "in-"+mech, "out-"+mech
			if err := kafka.EnsureTopics(t.Context(), c, 2, 1, kafka.TopicSpec{Name: in}, kafka.TopicSpec{Name: out}); err != nil {
				t.Fatal(err)
			}
			cl := kafkatest.ClientOf(t, c)
			const n = 20
			for i := range n {
				r := &kgo.Record{Topic: in, Key: []byte("k" + strconv.Itoa(i%3)), Value: []byte("x")}
				if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			g := goka.DefineGroup(goka.Group("count-"+mech),
				goka.Input(goka.Stream(in), new(codec.Bytes), func(ctx goka.Context, _ any) {
					c, _ := ctx.Value().(int64)
					ctx.SetValue(c + 1)
					ctx.Emit(goka.Stream(out), ctx.Key(), []byte(strconv.FormatInt(c+1, 10)))
				}),
				goka.Output(goka.Stream(out), new(codec.Bytes)),
				goka.Persist(new(codec.Int64)),
			)
			b := kgoka.Builders{ClientID: "test-" + mech, Auth: auth, Replication: 1}
			defer startProcessor(t, c, g, b)()
			got := kafkatest.ReadAllOf(t, c, out, n, 60*time.Second)
			if len(got) != n {
				t.Fatalf("the processor emitted %d of %d records", len(got), n)
			}
			last := map[string]string{}
			for _, r := range got {
				last[string(r.Key)] = string(r.Value)
			}
			if fmt.Sprint(last) != "map[k0:7 k1:7 k2:6]" {
				t.Fatalf("counts %v", last)
			}
		})
	}
}

// With a wrong password, goka's clients fail instead of hanging.
func TestGokaProcessorWithAWrongPasswordStops(t *testing.T) {
	kc, sec := kafkatest.SecureCluster(t)
	auth := sec.Auth()
	auth.SASL.Password = "wrong"
	b := kgoka.Builders{ClientID: "wrong", Auth: auth, Replication: 1}
	g := goka.DefineGroup("wrong", goka.Input("in", new(codec.Bytes), func(goka.Context, any) {}))
	proc, err := goka.NewProcessor(kc.ListenAddrs(), g, append(b.ProcessorOptions(),
		goka.WithStorageBuilder(storage.MemoryBuilder()))...)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		err = proc.Run(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the processor still ran after %s", 60*time.Second)
		}
	}
	if err == nil {
		t.Fatal("a processor with a wrong password ran")
	}
	t.Log(err)
}

// With a guard, hotpair's goka producer refuses a topic without the prefix:
// the emit fails with the guard's error and nothing reaches the topic.
func TestGuardedGokaProducerRefusesALiveTopic(t *testing.T) {
	kc := kafkatest.Cluster(t)
	c := kafka.Cluster{Brokers: kc.ListenAddrs()}
	if err := kafka.EnsureTopics(t.Context(), c, 1, 1, kafka.TopicSpec{Name: "spend"}, kafka.TopicSpec{Name: "dark.c.spend"}); err != nil {
		t.Fatal(err)
	}
	refused := 0
	guard, _ := kafka.NewTopicGuard("dark.c.", func(string) { refused++ })
	b := kgoka.Builders{ClientID: "guarded", Replication: 1, Guard: guard}
	for topic, want := range map[string]bool{"spend": false, "dark.c.spend": true} {
		em, err := goka.NewEmitter(c.Brokers, goka.Stream(topic), new(codec.Bytes), b.EmitterOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		err = em.EmitSync("k", []byte("v"))
		if (err == nil) != want || (err != nil && !errors.Is(err, kafka.ErrTopicRefused)) {
			t.Fatalf("emit to %s: %v, want sent=%v", topic, err, want)
		}
		if err := em.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	if got := kafkatest.UpToEnd(t, c.Brokers, "spend"); len(got) != 0 || refused != 1 {
		t.Fatalf("%d records on the live topic, %d refusals; want 0 and 1", len(got), refused)
	}
}

// startProcessor runs a processor of g on c with b's options and memory
// storage; stop cancels it and returns once it has stopped (30 s at most).
func startProcessor(t *testing.T, c kafka.Cluster, g *goka.GroupGraph, b kgoka.Builders) (stop func()) {
	t.Helper()
	proc, err := goka.NewProcessor(c.Brokers, g, append(b.ProcessorOptions(),
		goka.WithStorageBuilder(storage.MemoryBuilder()))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- proc.Run(ctx) }()
	return func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Error("the processor did not stop in 30 s")
		}
	}
}
