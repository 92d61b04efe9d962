package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
)

// ErrBufferFull is reported for a record a side's buffer had no room for.
var ErrBufferFull = errors.New("pipeline: side's ingest buffer is full")

// IngestOptions configure an Ingester.
type IngestOptions struct {
	// Clusters maps each side to its brokers; one side or both.
	Clusters map[contract.Side][]string
	// KafkaAuth maps a side to its cluster's TLS and SASL (absent or nil:
	// plaintext).
	KafkaAuth map[contract.Side]*contract.KafkaAuth
	// TopicPrefix is prepended to topic names given to Write.
	TopicPrefix string
	// Buffer is how many records each side holds while its cluster is slow
	// or unreachable before it loses new ones (default 100000).
	Buffer int
	// DeliveryTimeout is how long a record may wait for its cluster before
	// it counts as lost (default 2m).
	DeliveryTimeout time.Duration
	// OnLost, if set, is called once for every record a side lost, with the
	// reason; it may be called from any goroutine and must not block.
	OnLost func(side contract.Side, r *kgo.Record, err error)

	// Injected dependencies.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Ingester dual-writes records to the clusters of both sides with one
// independent producer per side: each side has its own buffer and sender, so
// a dead or slow cluster never blocks the other. Records a side cannot take
// are lost for that side only, and counted.
type Ingester struct {
	opts  IngestOptions
	sides map[contract.Side]*sideWriter
	wg    sync.WaitGroup
	stop  context.CancelFunc
}

// SideStats counts one side's records.
type SideStats struct {
	Written, Delivered, Lost int64
	Buffered                 int
}

type sideWriter struct {
	side   contract.Side
	client *kgo.Client
	queue  chan *kgo.Record
	onLost func(*kgo.Record, error)

	mu        sync.Mutex
	delay     time.Duration
	link      chan struct{} // closed while the link is up
	written   int64
	delivered int64
	lost      int64

	mWritten, mDelivered prometheus.Counter
	mLost                *prometheus.CounterVec
	mBuffered            prometheus.Gauge
}

// NewIngester connects one producer per side and starts its sender.
func NewIngester(o IngestOptions) (*Ingester, error) {
	if len(o.Clusters) == 0 {
		return nil, fmt.Errorf("%w: IngestOptions.Clusters is required", ErrInvalidOptions)
	}
	if o.Buffer == 0 {
		o.Buffer = 100_000
	}
	setDefault(&o.DeliveryTimeout, 2*time.Minute)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	f := promauto.With(o.Registerer)
	written := f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_ingest_records_total", Help: "Records handed to a side's producer."}, []string{"side"})
	delivered := f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_ingest_delivered_total", Help: "Records a side's cluster acknowledged."}, []string{"side"})
	lost := f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_ingest_lost_total", Help: "Records a side lost: buffer_full, delivery_failed, or not_authorized (the cluster refused the ingester's user: IngestOptions.KafkaACLs)."}, []string{"side", "reason"})
	buffered := f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_ingest_buffered", Help: "Records waiting in a side's buffer."}, []string{"side"})

	ctx, cancel := context.WithCancel(context.Background())
	in := &Ingester{opts: o, sides: make(map[contract.Side]*sideWriter), stop: cancel}
	for side, brokers := range o.Clusters {
		if !side.Valid() {
			cancel()
			return nil, fmt.Errorf("%w: IngestOptions.Clusters: %q is not a side", ErrInvalidOptions, side)
		}
		c := kafka.Cluster{Name: side.String(), Brokers: brokers, Auth: o.KafkaAuth[side]}
		cl, err := kafka.NewProducer(c, "hotpair-ingest-"+side.String(), append(kafka.DeliverWithin(o.DeliveryTimeout),
			kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(10_000))...)
		if err != nil {
			cancel()
			in.closeClients()
			return nil, fmt.Errorf("pipeline: ingest client for %s: %w", side, err)
		}
		w := &sideWriter{
			side: side, client: cl, queue: make(chan *kgo.Record, o.Buffer),
			link:     make(chan struct{}),
			mWritten: written.WithLabelValues(side.String()), mDelivered: delivered.WithLabelValues(side.String()),
			mLost: lost.MustCurryWith(prometheus.Labels{"side": side.String()}), mBuffered: buffered.WithLabelValues(side.String()),
		}
		close(w.link)
		for _, reason := range []string{lostBufferFull, lostDeliveryFailed, lostNotAuthorized} {
			w.mLost.WithLabelValues(reason) // at 0 from the start, so that the first loss is an increase
		}
		if o.OnLost != nil {
			w.onLost = func(r *kgo.Record, err error) { o.OnLost(side, r, err) }
		}
		in.sides[side] = w
		in.wg.Add(1)
		go func() { defer in.wg.Done(); w.send(ctx) }()
	}
	return in, nil
}

// Sides returns the sides written to.
func (in *Ingester) Sides() []contract.Side {
	var s []contract.Side
	for side := range in.sides {
		s = append(s, side)
	}
	slices.Sort(s)
	return s
}

// Write queues one record for every side without blocking. topic is
// unprefixed; the record's timestamp is ts.
func (in *Ingester) Write(topic string, key, value []byte, headers []kgo.RecordHeader, ts time.Time) {
	for _, w := range in.sides {
		r := &kgo.Record{Topic: in.opts.TopicPrefix + topic, Key: key, Value: value, Headers: headers, Timestamp: ts}
		w.mu.Lock()
		w.written++
		w.mu.Unlock()
		w.mWritten.Inc()
		select {
		case w.queue <- r:
			w.mBuffered.Set(float64(len(w.queue)))
		default:
			w.lose(r, ErrBufferFull, lostBufferFull)
		}
	}
}

// Cut takes a side's link down (cut=true) or up. While it is down the side's
// records wait in its buffer; once the buffer is full, new ones are lost.
func (in *Ingester) Cut(side contract.Side, cut bool) error {
	w, ok := in.sides[side]
	if !ok {
		return fmt.Errorf("pipeline: ingest does not write to side %q", side)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.link:
		if cut {
			w.link = make(chan struct{})
		}
	default:
		if !cut {
			close(w.link)
		}
	}
	return nil
}

// SetDelay makes a side's records reach its cluster d after they were written.
func (in *Ingester) SetDelay(side contract.Side, d time.Duration) error {
	w, ok := in.sides[side]
	if !ok {
		return fmt.Errorf("pipeline: ingest does not write to side %q", side)
	}
	w.mu.Lock()
	w.delay = d
	w.mu.Unlock()
	return nil
}

// Stats returns the counts of every side.
func (in *Ingester) Stats() map[contract.Side]SideStats {
	out := make(map[contract.Side]SideStats)
	for side, w := range in.sides {
		w.mu.Lock()
		out[side] = SideStats{Written: w.written, Delivered: w.delivered, Lost: w.lost, Buffered: len(w.queue)}
		w.mu.Unlock()
	}
	return out
}

// Close waits until every queued record is delivered or lost, or ctx ends
// (what is left then is lost), and closes the producers.
func (in *Ingester) Close(ctx context.Context) {
	for _, w := range in.sides {
		close(w.queue)
	}
	done := make(chan struct{})
	go func() { in.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		in.stop()
		<-done
	}
	in.stop()
	in.closeClients()
}

func (in *Ingester) closeClients() {
	for _, w := range in.sides {
		w.client.Close()
	}
}

// send moves the side's records from its buffer to its producer, in order,
// holding each while the link is cut and until its delay has passed.
func (w *sideWriter) send(ctx context.Context) {
	defer func() {
		for r := range w.queue { // only after stop: what is still queued is lost
			w.lose(r, ctx.Err(), lostDeliveryFailed)
		}
	}()
	for r := range w.queue {
		w.mBuffered.Set(float64(len(w.queue)))
		w.mu.Lock()
		link, delay := w.link, w.delay
		w.mu.Unlock()
		select {
		case <-link:
		case <-ctx.Done():
			w.lose(r, ctx.Err(), lostDeliveryFailed)
			return
		}
		if wait := time.Until(r.Timestamp.Add(delay)); delay > 0 && wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				w.lose(r, ctx.Err(), lostDeliveryFailed)
				return
			}
		}
		w.client.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				reason := lostDeliveryFailed
				if kafka.NotAuthorized(err) {
					reason = lostNotAuthorized
				}
				w.lose(r, err, reason)
				return
			}
			w.mu.Lock()
			w.delivered++
			w.mu.Unlock()
			w.mDelivered.Inc()
		})
	}
	w.client.Flush(ctx)
}

// The reasons of hotpair_ingest_lost_total.
const (
	lostBufferFull     = "buffer_full"
	lostDeliveryFailed = "delivery_failed"
	lostNotAuthorized  = "not_authorized"
)

func (w *sideWriter) lose(r *kgo.Record, err error, reason string) {
	w.mu.Lock()
	w.lost++
	w.mu.Unlock()
	w.mLost.WithLabelValues(reason).Inc()
	if w.onLost != nil {
		w.onLost(r, err)
	}
}
