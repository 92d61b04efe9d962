package kgoka_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/kgoka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// A processor dies while its output is not written: the state that follows
// that output must not be written either, or the next owner recovers a
// state whose output is lost (the aggregator's "window closed" without its
// SpendEvent). The cluster here drops every write to the output topic and
// takes every other write, as a crash between two produce requests could
// leave it; the processor is then stopped, its writes failing. The next run
// reads the input again and emits what the first run lost: one output per
// input, counted from a state that did not move without it.
func TestStateIsNotWrittenBeforeTheOutputsBeforeIt(t *testing.T) {
	kc, c, heal := dropWritesTo(t, "out", "k", "k", "k")
	runCounter(t, c, func() { kafkatest.ReadAllOf(t, c, "out-dropped", 1, 30*time.Second) })
	if n := len(kafkatest.UpToEnd(t, c.Brokers, string(goka.GroupTable("count")))); n != 0 {
		t.Fatalf("%d states written while the outputs before them were not", n)
	}
	heal()
	runCounter(t, c, func() { kafkatest.ReadAllOf(t, c, "out", 3, 30*time.Second) })
	if got := values(kafkatest.UpToEnd(t, kc.ListenAddrs(), "out")); got != "[1 2 3]" {
		t.Fatalf("outputs %s, want [1 2 3]: one per input, counted from the state", got)
	}
}

// A message whose writes were acknowledged (a dead letter) is not committed
// before an earlier message whose output is not written: the offset would
// move past that message, and the next run would never read it again.
func TestNoOffsetIsCommittedPastAnUnwrittenMessage(t *testing.T) {
	kc, c, heal := dropWritesTo(t, "out", "k", "bad")
	runCounter(t, c, func() { kafkatest.ReadAllOf(t, c, "dlq", 1, 30*time.Second) })
	heal()
	runCounter(t, c, func() { kafkatest.ReadAllOf(t, c, "out", 1, 30*time.Second) })
	if got := values(kafkatest.UpToEnd(t, kc.ListenAddrs(), "out")); got != "[1]" {
		t.Fatalf("outputs %s, want [1]: the first message read again", got)
	}
}

// dropWritesTo writes records with the keys to "in" and makes the cluster
// drop every write to topic, noting each in "<topic>-dropped", until heal.
func dropWritesTo(t *testing.T, topic string, keys ...string) (*kfake.Cluster, kafka.Cluster, func()) {
	kc := kafkatest.Cluster(t)
	c := kafka.Cluster{Brokers: kc.ListenAddrs()}
	specs := []kafka.TopicSpec{{Name: "in"}, {Name: "out"}, {Name: "dlq"}, {Name: topic + "-dropped"}}
	if err := kafka.EnsureTopics(t.Context(), c, 1, 1, specs...); err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.ClientOf(t, c)
	for _, k := range keys {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "in", Key: []byte(k), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	isTopic := kafkatest.WritesTo(t, kc, topic)
	var healed atomic.Bool
	kc.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		if healed.Load() {
			kc.DropControl()
			return nil, nil, false
		}
		req := kr.(*kmsg.ProduceRequest)
		kept := req.Topics[:0]
		for _, tp := range req.Topics {
			if isTopic(tp) {
				cl.Produce(context.Background(), &kgo.Record{Topic: topic + "-dropped"}, nil)
				continue
			}
			kept = append(kept, tp)
		}
		req.Topics = kept
		return nil, nil, false
	})
	return kc, c, func() { healed.Store(true) }
}

// runCounter runs a processor that counts the records of "in" per key and
// emits each count to "out" ("bad" records go to "dlq" and change no
// state) until wait returns, then stops it as the pipeline does (Stopping).
func runCounter(t *testing.T, c kafka.Cluster, wait func()) {
	t.Helper()
	g := goka.DefineGroup(goka.Group("count"),
		goka.Input(goka.Stream("in"), new(codec.Bytes), func(ctx goka.Context, _ any) {
			if ctx.Key() == "bad" {
				ctx.Emit(goka.Stream("dlq"), ctx.Key(), nil)
				return
			}
			n, _ := ctx.Value().(int64)
			ctx.Emit(goka.Stream("out"), ctx.Key(), []byte(strconv.FormatInt(n+1, 10)))
			ctx.SetValue(n + 1)
		}),
		goka.Output(goka.Stream("out"), new(codec.Bytes)),
		goka.Output(goka.Stream("dlq"), new(codec.Bytes)),
		goka.Persist(new(codec.Int64)),
	)
	stopping := make(chan struct{})
	stop := startProcessor(t, c, g, kgoka.Builders{ClientID: "count", Replication: 1, Stopping: stopping})
	wait()
	close(stopping)
	stop()
}

func values(rs []*kgo.Record) string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Value))
	}
	return fmt.Sprint(out)
}

// The write order is a processor's: an emitter (which writes no state and
// lives on after a failed record, unlike a processor) carries on after a
// record the cluster rejected.
func TestEmitterCarriesOnAfterAFailedRecord(t *testing.T) {
	kc := kafkatest.Cluster(t)
	c := kafka.Cluster{Brokers: kc.ListenAddrs()}
	if err := kafka.EnsureTopics(t.Context(), c, 1, 1, kafka.TopicSpec{Name: "dark.c.out"}); err != nil {
		t.Fatal(err)
	}
	kc.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		return kafkatest.Rejection(kr.(*kmsg.ProduceRequest), kerr.InvalidRecord), nil, true // the first request only
	})
	guard, _ := kafka.NewTopicGuard("dark.c.", nil)
	em, err := goka.NewEmitter(c.Brokers, goka.Stream("dark.c.out"), new(codec.Bytes),
		kgoka.Builders{ClientID: "emitter", Replication: 1, Guard: guard}.EmitterOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer em.Finish()
	if err := em.EmitSync("k", []byte("rejected")); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("first emit: %v, want the cluster's rejection", err)
	}
	if err := em.EmitSync("k", []byte("next")); err != nil {
		t.Fatalf("the emit after a rejected one failed: %v", err)
	}
}
