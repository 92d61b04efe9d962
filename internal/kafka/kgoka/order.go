package kgoka

import (
	"errors"
	"fmt"
	"sync"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// writeOrder keeps a processor's writes consistent across a crash. goka
// writes a message's outputs (stream records) and its new state (a group
// table record) to different partitions with no transaction between them,
// and commits the message's offset once its own writes are acknowledged.
// When the process dies (SIGKILL, OOM) with writes in flight, two things
// could go wrong:
//
//   - a state is durable while an output emitted before it is not: the
//     aggregator's state says "window closed" but its SpendEvent was lost,
//     and the next owner, which recovers that state, never emits it again;
//   - an offset is committed past a message whose writes are not durable (a
//     later message's writes were acknowledged first): that message is
//     neither in the state nor read again.
//
// So, within one producer (one goka processor):
//
//   - a table record is sent only once every stream record emitted before
//     it is acknowledged: whatever state the next owner recovers, the
//     outputs of the messages it reflects were written;
//   - promises finish in the order the records were emitted, and from the
//     first failed one on, all fail: goka commits a message only once every
//     earlier message's writes are acknowledged.
//
// Stream records go out at once; table records keep their order among
// themselves (a changelog partition stays in processing order). Once a
// record fails, every table record not yet sent fails: the state that
// would follow it is never written (goka then stops the processor, whose
// next run reads the input again).
type writeOrder struct {
	mu sync.Mutex
	// q holds every record not yet finished, in emit order; q[0] is record
	// number base.
	q    []*write
	base uint64
	// gate is the number of the oldest stream record not yet acknowledged
	// (or of the next record): table records before it may be sent. sent:
	// every table record numbered below it was released (or failed).
	gate, sent uint64
	failed     error
	// poisoned is the first failure in emit order.
	poisoned error
	// ready holds released table records for the sender, in order;
	// unsent counts table records not yet handed to the client.
	ready  []*write
	unsent int
	wake   chan struct{} // a release happened (1-buffered)
	moved  chan struct{} // the sender handed records over (1-buffered)
}

type write struct {
	table bool
	done  bool
	rec   *kgo.Record
	err   error
	msg   *sarama.ProducerMessage // a table record's, for goka's offset
	// finish finishes the record's promise.
	finish goka.PromiseFinisher
}

var errEarlierWriteFailed = errors.New("kgoka: a write emitted before this state failed; the state is not written")

func newWriteOrder() *writeOrder {
	return &writeOrder{wake: make(chan struct{}, 1), moved: make(chan struct{}, 1)}
}

// add queues w in emit order. A stream record is sent by the caller at
// once; a table record is handed to the sender when its gate opens.
func (o *writeOrder) add(w *write) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.q = append(o.q, w)
	if w.table {
		o.unsent++
		o.releaseLocked()
	}
}

// acked records the outcome of w, hands the table records it unblocked to
// the sender and finishes, in emit order, every promise that can be.
func (o *writeOrder) acked(w *write, msg *sarama.ProducerMessage, err error) {
	o.mu.Lock()
	w.done, w.msg = true, msg
	if w.err == nil {
		w.err = err
	}
	if err != nil && o.failed == nil {
		o.failed = errEarlierWriteFailed
	}
	o.finishUnlock()
}

// finishUnlock releases what can be, pops the finished records, unlocks and
// finishes their promises in emit order.
func (o *writeOrder) finishUnlock() {
	o.releaseLocked()
	finished := o.popLocked()
	o.mu.Unlock()
	for _, w := range finished {
		w.finish(w.msg, w.err)
	}
}

// releaseLocked moves the gate past acknowledged stream records and hands
// the table records before it to the sender; after a failed record it fails
// every table record not yet released instead.
func (o *writeOrder) releaseLocked() {
	end := o.base + uint64(len(o.q))
	o.gate = max(o.gate, o.base)
	for o.gate < end {
		if w := o.q[o.gate-o.base]; !w.table && !w.done {
			break
		}
		o.gate++
	}
	limit := o.gate
	if o.failed != nil {
		limit = end
	}
	released := false
	for o.sent = max(o.sent, o.base); o.sent < limit; o.sent++ {
		w := o.q[o.sent-o.base]
		if !w.table || w.done {
			continue
		}
		if o.failed != nil {
			w.err, w.done = o.failed, true
			o.unsent--
			continue
		}
		o.ready = append(o.ready, w)
		released = true
	}
	if released {
		signal(o.wake)
	}
}

// popLocked removes the finished records at the front of the queue and
// returns them in emit order. From the first failed one on, every record
// fails: a message after it must not be committed either.
func (o *writeOrder) popLocked() []*write {
	i := 0
	for ; i < len(o.q) && o.q[i].done; i++ {
		switch w := o.q[i]; {
		case w.err != nil && o.poisoned == nil:
			o.poisoned = w.err
		case w.err == nil && o.poisoned != nil:
			w.err = fmt.Errorf("kgoka: a write emitted before this one failed: %w", o.poisoned)
		}
	}
	if i == 0 {
		return nil
	}
	out := append([]*write(nil), o.q[:i]...)
	clear(o.q[:i])
	o.q = o.q[i:]
	o.base += uint64(i)
	return out
}

// take returns the released table records, waiting for some; nil once stop
// is closed.
func (o *writeOrder) take(stop <-chan struct{}) []*write {
	for {
		o.mu.Lock()
		out := o.ready
		o.ready = nil
		o.mu.Unlock()
		if len(out) > 0 {
			return out
		}
		select {
		case <-o.wake:
		case <-stop:
			return nil
		}
	}
}

// handedOver counts n table records as given to the client.
func (o *writeOrder) handedOver(n int) {
	o.mu.Lock()
	o.unsent -= n
	o.mu.Unlock()
	signal(o.moved)
}

// waiting is how many table records are not yet given to the client.
func (o *writeOrder) waiting() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unsent
}

// abandon fails every table record not yet given to the client, and
// finishes what can be (the producer is closing).
func (o *writeOrder) abandon(err error) {
	o.mu.Lock()
	if o.failed == nil {
		o.failed = err
	}
	for _, w := range o.ready {
		w.err, w.done = err, true
		o.unsent--
	}
	o.ready = nil
	o.finishUnlock()
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
