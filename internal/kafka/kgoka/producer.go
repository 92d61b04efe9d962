package kgoka

import (
	"context"
	"errors"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerDeliveryTimeout is how long a record may wait to be written before
// its emit fails (and with it the goka processor, which its supervisor then
// rebuilds): a processor facing a dead cluster fails instead of hanging.
const ProducerDeliveryTimeout = 30 * time.Second

// ProducerCloseTimeout bounds how long a stopping processor's producer
// waits for what is buffered (Builders.Stopping, Close). On a reachable
// cluster that takes milliseconds; on a dead one the records could only fail
// at ProducerDeliveryTimeout, and goka waits for every pending emit before a
// partition stops (up to a minute): a pipeline asked to stop would wait for
// its last wake-ups and state writes to expire. Giving up is safe: goka
// commits an input's offset only after its emits were written, so what was
// not written is processed again at the next start, as after a crash (every
// output has a deterministic id).
const ProducerCloseTimeout = 5 * time.Second

// producer is a goka.Producer on a franz-go client. goka's own producer is
// sarama's async producer: every record passes four goroutines and channels
// before it is batched, and batches are flushed on a timer (DESIGN §8: 100 ms
// by default, 1 ms here); franz-go appends a record to its partition's batch
// in the caller and sends as soon as a request slot is free, so batches grow
// with load and an idle record goes out at once.
//
// A processor's writes keep the order a crash needs (see writeOrder): a
// group table record waits for the stream records emitted before it, and is
// then sent by the producer's sender goroutine.
type producer struct {
	cl        *kgo.Client
	guard     *kafka.TopicGuard // nil: every topic
	order     *writeOrder       // nil for an emitter (no state, no order)
	closed    chan struct{}
	closeOnce sync.Once
	sender    sync.WaitGroup
}

// producerBuilder builds goka producers writing through a new franz-go
// client of the cluster (brokers come from goka). Keys are partitioned by
// goka's hasher, as goka's own producer does, so tables and streams stay
// co-partitioned; records are written idempotently with acks from all
// in-sync replicas. With b.Guard, a record to a topic the guard refuses is
// not sent and its emit fails.
//
// A processor's producer keeps the write order (ordered); an emitter's, which
// writes no state and outlives a failed record, does not.
func (b Builders) producerBuilder(ordered bool) goka.ProducerBuilder {
	return func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
		return b.newProducer(kafka.Cluster{Brokers: brokers, Auth: b.Auth}, clientID, hasher, ordered)
	}
}

// newProducer builds a producer of the cluster with the builders' Stopping
// and Guard.
func (b Builders) newProducer(c kafka.Cluster, clientID string, hasher func() hash.Hash32, ordered bool) (goka.Producer, error) {
	hash := func(key []byte) uint32 {
		h := hasher()
		h.Write(key)
		return h.Sum32()
	}
	cl, err := kafka.NewClient(c, clientID,
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(hash))),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(ProducerDeliveryTimeout),
		kgo.MaxBufferedRecords(10_000),
	)
	if err != nil {
		return nil, err
	}
	p := &producer{cl: cl, guard: b.Guard, closed: make(chan struct{})}
	if ordered {
		p.order = newWriteOrder()
		p.sender.Add(1)
		go p.send()
	}
	if b.Stopping != nil {
		go p.abortWhenStopping(b.Stopping)
	}
	return p, nil
}

// abortWhenStopping fails what is still buffered ProducerCloseTimeout after
// stopping closes, and every second after that until Close, so that goka's
// wait for pending emits ends on a dead cluster too.
func (p *producer) abortWhenStopping(stopping <-chan struct{}) {
	select {
	case <-stopping:
	case <-p.closed:
		return
	}
	t := time.NewTimer(ProducerCloseTimeout)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.cl.UnsafeAbortBufferedRecords()
			t.Reset(time.Second)
		case <-p.closed:
			return
		}
	}
}

func (p *producer) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

// EmitWithHeaders buffers the record and returns a promise finished when it
// is written or has failed (at once, unsent, when the guard refuses its
// topic). It blocks while the client's buffer is full, as
// goka's sarama producer blocks on its input channel.
func (p *producer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	promise, finish := goka.NewPromiseWithFinisher()
	if err := p.guard.Check(topic); err != nil {
		finish(nil, err)
		return promise
	}
	rec := &kgo.Record{Topic: topic, Key: []byte(key), Value: value}
	if len(headers) > 0 {
		rec.Headers = make([]kgo.RecordHeader, 0, len(headers))
		for k, v := range headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: v})
		}
	}
	if p.order == nil {
		p.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) { finish(nil, err) })
		return promise
	}
	w := &write{table: strings.HasSuffix(topic, tableSuffix), rec: rec, finish: finish}
	p.order.add(w)
	if !w.table {
		p.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) { p.order.acked(w, nil, err) })
	}
	return promise
}

// send gives the table records to the client as their gates open, in
// order, until the producer closes.
func (p *producer) send() {
	defer p.sender.Done()
	for {
		ws := p.order.take(p.closed)
		if ws == nil {
			return
		}
		for _, w := range ws {
			// goka reads the offset of a table write to store it with the
			// state (and nothing else of the message).
			p.cl.Produce(context.Background(), w.rec, func(r *kgo.Record, err error) {
				p.order.acked(w, &sarama.ProducerMessage{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp}, err)
			})
		}
		p.order.handedOver(len(ws))
	}
}

// tableSuffix ends the name of every goka group table (goka.GroupTable).
var tableSuffix = string(goka.GroupTable(""))

// Close writes what is buffered, table records waiting for their outputs
// included, for at most ProducerCloseTimeout, and closes the client; every
// record's promise is finished (with an error if it was not written).
func (p *producer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), ProducerCloseTimeout)
	defer cancel()
	err := p.cl.Flush(ctx)
	for err == nil && p.order != nil && p.order.waiting() > 0 {
		select {
		case <-p.order.moved:
			err = p.cl.Flush(ctx)
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	p.closeOnce.Do(func() { close(p.closed) })
	p.sender.Wait()
	if p.order != nil {
		p.order.abandon(errProducerClosed)
	}
	p.cl.Close()
	return err
}

var errProducerClosed = errors.New("kgoka: producer closed before the record was sent")
