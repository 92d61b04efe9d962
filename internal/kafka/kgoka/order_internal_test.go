package kgoka

import (
	"errors"
	"slices"
	"testing"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
)

// finished records the order promises finish in and their errors.
type finished struct {
	names []string
	errs  map[string]error
}

func (f *finished) write(name string, table bool) *write {
	return &write{table: table, finish: func(_ *sarama.ProducerMessage, err error) *goka.Promise {
		f.names = append(f.names, name)
		f.errs[name] = err
		return nil
	}}
}

func readyNames(o *writeOrder, names map[*write]string) []string {
	var out []string
	for _, w := range o.ready {
		out = append(out, names[w])
	}
	return out
}

// A state waits for every output emitted before it, however the
// acknowledgements come, and promises finish in emit order.
func TestWriteOrderHoldsStatesAndFinishesInOrder(t *testing.T) {
	f := &finished{errs: map[string]error{}}
	o := newWriteOrder()
	s0, t1, s2, t3 := f.write("s0", false), f.write("t1", true), f.write("s2", false), f.write("t3", true)
	names := map[*write]string{s0: "s0", t1: "t1", s2: "s2", t3: "t3"}
	for _, w := range []*write{s0, t1, s2, t3} {
		o.add(w)
	}
	if got := readyNames(o, names); len(got) != 0 {
		t.Fatalf("released %v before any output was acknowledged", got)
	}
	o.acked(s2, nil, nil)
	if got := readyNames(o, names); len(got) != 0 || len(f.names) != 0 {
		t.Fatalf("after s2 only: released %v, finished %v; want nothing (s0 is not acknowledged)", got, f.names)
	}
	o.acked(s0, nil, nil)
	if got := readyNames(o, names); !slices.Equal(got, []string{"t1", "t3"}) {
		t.Fatalf("after s0 and s2: released %v, want [t1 t3]", got)
	}
	if taken := o.take(nil); len(taken) != 2 || o.waiting() != 2 {
		t.Fatalf("the sender took %d, %d waiting", len(taken), o.waiting())
	}
	o.handedOver(2)
	o.acked(t3, &sarama.ProducerMessage{Offset: 9}, nil)
	if !slices.Equal(f.names, []string{"s0"}) {
		t.Fatalf("finished %v, want [s0] (t1 is not acknowledged)", f.names)
	}
	o.acked(t1, &sarama.ProducerMessage{Offset: 8}, nil)
	if !slices.Equal(f.names, []string{"s0", "t1", "s2", "t3"}) {
		t.Fatalf("finished %v, want emit order", f.names)
	}
	for n, err := range f.errs {
		if err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// After a failed output the state that follows it is never released, and
// every later promise fails, even one whose own write went through.
func TestWriteOrderFailsEverythingAfterAFailure(t *testing.T) {
	f := &finished{errs: map[string]error{}}
	o := newWriteOrder()
	s0, t1, s2 := f.write("s0", false), f.write("t1", true), f.write("s2", false)
	for _, w := range []*write{s0, t1, s2} {
		o.add(w)
	}
	rejected := errors.New("rejected")
	o.acked(s0, nil, rejected)
	if len(o.ready) != 0 || o.waiting() != 0 {
		t.Fatalf("the state after a failed output was released (%d ready, %d waiting)", len(o.ready), o.waiting())
	}
	o.acked(s2, nil, nil)
	if !slices.Equal(f.names, []string{"s0", "t1", "s2"}) {
		t.Fatalf("finished %v, want [s0 t1 s2]", f.names)
	}
	for _, n := range f.names {
		if !errors.Is(f.errs[n], rejected) && !errors.Is(f.errs[n], errEarlierWriteFailed) {
			t.Errorf("%s finished with %v, want a failure", n, f.errs[n])
		}
	}
}
