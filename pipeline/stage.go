package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/kgoka"
	"github.com/hotpair/hotpair/statestore"
)

// stage is one stage of one side: its goka group graph, the supervisor that
// rebuilds its processor after failures, its timer wake-ups, its health
// sampler and its pause gate.
type stage struct {
	p     *Pipeline
	name  contract.Stage
	group goka.Group
	graph *goka.GroupGraph
	wake  *statestore.Wakeups
	m     stageMetrics
	// threshold is the clock wake-ups are due by, per input partition:
	// the wall clock, or the aggregator's watermarks.
	threshold func(partition int32, now time.Time) int64
	// wakeTick is how often due wake-ups are looked for (WakeInterval).
	wakeTick time.Duration
	// beforeWake, if set, runs before each round of wake-ups.
	beforeWake func(ctx context.Context, now time.Time)

	sampler   sampler
	resources resourceMeter
	gate      gate
	limit     limiter
	// wakeC asks wakeLoop to send the due wake-ups now rather than at its
	// next tick: a partition's clock passed a window close.
	wakeC chan struct{}
	// quietCheck is set while a wakeWhenQuiet timer is pending.
	quietCheck atomic.Bool

	mu     sync.Mutex
	cancel context.CancelFunc // of the running processor; nil between runs
	proc   *goka.Processor
	kicked bool // the running processor was stopped by Restart, not by a failure
	// consumeLog logs goka's consumer errors (consumeError).
	consumeLogMu sync.Mutex
	consumeLog   kafka.ErrorLog
	// stores builds the processor's storage; it outlives clean stops (a
	// memory store keeps its state, as a leveldb directory does) but not a
	// failed run or a restart, which recover from the changelog as after a
	// crash.
	stores storage.Builder
}

// stageMetrics are the pipeline metrics with this stage's labels.
type stageMetrics struct {
	events, duplicates, late, outputs, restarts prometheus.Counter
	samples, sampleErrors, wakeups              prometheus.Counter
	paused, partitions, pendingWakes, rateLimit prometheus.Gauge
	lag, hopLag, outputDelay                    prometheus.Observer
	deadLetters, consumeErrs                    *prometheus.CounterVec
}

func newStage(p *Pipeline, name contract.Stage) *stage {
	l := prometheus.Labels{"service": name.String(), "side": p.opts.Side.String(), "role": p.opts.Role.String()}
	m := p.metrics
	st := &stage{
		p:     p,
		name:  name,
		group: goka.Group(p.opts.TopicPrefix + "hotpair-" + name.String()),
		wake:  statestore.NewWakeups(),
		wakeC: make(chan struct{}, 1),
		m: stageMetrics{
			events: m.events.With(l), duplicates: m.duplicates.With(l), late: m.lateEvents.With(l),
			outputs: m.outputs.With(l), restarts: m.restarts.With(l), samples: m.samples.With(l),
			sampleErrors: m.sampleErrors.With(l), wakeups: m.wakeups.With(l), paused: m.paused.With(l), rateLimit: m.rateLimit.With(l),
			partitions: m.partitions.With(l), pendingWakes: m.pendingWakes.With(l), lag: m.lag.With(l), hopLag: m.hopLag.With(l),
			outputDelay: m.outputDelay.With(l),
			deadLetters: m.deadLetters.MustCurryWith(l), consumeErrs: m.consumeErrs.MustCurryWith(l),
		},
	}
	st.threshold = func(_ int32, now time.Time) int64 { return now.UnixMilli() }
	st.wakeTick = p.opts.WakeInterval
	st.wake.Assign(nil) // until the group assigns partitions
	st.gate.init()
	for _, reason := range []string{consumeNotAuthorized, consumeFetchFailed} {
		st.m.consumeErrs.WithLabelValues(reason) // at 0 from the start, for rate() and alerts
	}
	return st
}

// tableTopic and loopTopic are goka's names for the group's table and loop.
func (st *stage) tableTopic() string { return string(st.group) + "-table" }
func (st *stage) loopTopic() string  { return string(st.group) + "-loop" }

// run supervises the stage until ctx ends: goka gives up for good about 15 s
// into a Kafka outage and a processor runs once, so a failed processor is
// rebuilt (its state recovered from the changelog alone: a failed run's
// local store can be ahead of it) with exponential backoff, 1 s to 30 s,
// reset after a minute of healthy running.
func (st *stage) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); st.sampleLoop(ctx) }()
	go func() { defer wg.Done(); st.wakeLoop(ctx) }()
	defer wg.Wait()

	backoff := time.Second
	for ctx.Err() == nil {
		started := time.Now()
		err := st.runOnce(ctx)
		st.sampler.assigned(nil)
		st.wake.Assign(nil)
		st.m.partitions.Set(0)
		st.mu.Lock()
		kicked := st.kicked
		st.kicked = false
		st.mu.Unlock()
		// A failed run can leave its local store ahead of the changelog
		// (see statestore.Config.Release), and a restart recovers as after
		// a crash: the next run recovers from the changelog alone.
		st.releaseStores(!kicked && (err == nil || errors.Is(err, context.Canceled)), kicked)
		switch {
		case ctx.Err() != nil:
			return
		case kicked:
			st.p.log.Warn("stage restarted by request", "service", st.name)
			st.m.restarts.Inc()
			continue
		}
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		st.m.restarts.Inc()
		st.p.log.Error("stage failed; rebuilding", "service", st.name, "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (st *stage) runOnce(ctx context.Context) error {
	o := st.p.opts
	sb, err := st.storeBuilder()
	if err != nil {
		return err
	}
	opts := append(st.p.builders.ProcessorOptions(),
		goka.WithStorageBuilder(sb),
		goka.WithNilHandling(goka.NilProcess),
		goka.WithLogger(gokaLogger{l: st.p.log.With("service", st.name), st: st}),
		goka.WithRebalanceCallback(func(a goka.Assignment) {
			parts := st.sampler.assigned(a)
			st.wake.Assign(parts)
			st.m.partitions.Set(float64(len(a)))
			st.p.log.Info("partitions assigned", "service", st.name, "partitions", parts)
		}),
	)
	if o.HotStandby {
		opts = append(opts, goka.WithHotStandby(), goka.WithRecoverAhead())
	}
	proc, err := goka.NewProcessor(o.Brokers, st.graph, opts...)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st.mu.Lock()
	st.cancel, st.proc = cancel, proc
	st.mu.Unlock()
	err = proc.Run(pctx)
	st.mu.Lock()
	st.cancel, st.proc = nil, nil
	st.mu.Unlock()
	if err == nil && ctx.Err() == nil && pctx.Err() == nil {
		err = errors.New("processor stopped")
	}
	return err
}

// releaseStores ends the run's use of its local stores: kept for the next
// run after a clean stop, dropped after a failure or a restart.
func (st *stage) releaseStores(clean, restart bool) {
	o := st.p.opts
	if err := o.Storage.Release(o.Side.String(), st.name.String(), clean); err != nil {
		st.p.log.Error("releasing the local store", "service", st.name, "err", err)
	}
	if clean {
		return
	}
	st.mu.Lock()
	st.stores = nil
	st.mu.Unlock()
	if !restart {
		st.p.log.Warn("local store dropped after a failed run; the next run recovers from the changelog", "service", st.name)
	}
}

func (st *stage) storeBuilder() (storage.Builder, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stores == nil {
		o := st.p.opts
		if o.Storage.InUse(o.Side.String(), st.name.String()) {
			st.p.log.Warn("local store left by a run that did not stop cleanly; emptied, recovering from the changelog",
				"service", st.name, "dir", o.Storage.Dir)
		}
		sb, err := o.Storage.Builder(o.Side.String(), st.name.String(), st.tableTopic(), st.wake)
		if err != nil {
			return nil, err
		}
		st.stores = sb
	}
	return st.stores, nil
}

// restart stops the running processor; the supervisor rebuilds it at once,
// recovering its state as after a crash.
func (st *stage) restart() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.cancel == nil {
		return false
	}
	st.kicked = true
	st.stores = nil
	st.cancel()
	return true
}

// wakeLoop sends the due timer wake-ups of this instance's keys to the
// stage's loop topic. The loop topic is co-partitioned with the input, so a
// wake-up reaches the instance that owns the key.
func (st *stage) wakeLoop(ctx context.Context) {
	t := time.NewTicker(st.wakeTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			st.sendWakeups(ctx, now)
		case <-st.wakeC:
			st.sendWakeups(ctx, time.Now())
		}
	}
}

// sendWakeups sends the due wake-ups, in rounds of wakeBatch while there
// are more; it waits while the client's buffer is full.
func (st *stage) sendWakeups(ctx context.Context, now time.Time) {
	st.m.pendingWakes.Set(float64(st.wake.Len()))
	if st.beforeWake != nil {
		st.beforeWake(ctx, now)
	}
	due := func(p int32) int64 { return st.threshold(p, now) }
	for ctx.Err() == nil {
		keys := st.wake.Due(now, due, wakeRetry, wakeBatch)
		for _, k := range keys {
			st.m.wakeups.Inc()
			rec := &kgo.Record{Topic: st.loopTopic(), Key: []byte(k), Value: []byte(strconv.FormatInt(now.UnixMilli(), 10))}
			st.p.client.Produce(ctx, rec, func(_ *kgo.Record, err error) {
				if err != nil && ctx.Err() == nil {
					st.p.log.Warn("sending wake-up", "service", st.name, "err", err)
				}
			})
		}
		if len(keys) < wakeBatch {
			return
		}
	}
}

const wakeBatch = 10_000

// wakeWhenQuiet asks the wake loop to look again once a busy partition may
// have fallen quiet, rather than at its next tick.
func (st *stage) wakeWhenQuiet() {
	if st.quietCheck.CompareAndSwap(false, true) {
		time.AfterFunc(quietAfter+5*time.Millisecond, func() {
			st.quietCheck.Store(false)
			st.wakeNow()
		})
	}
}

// wakeNow asks the wake loop to send the due wake-ups without waiting for
// its tick.
func (st *stage) wakeNow() {
	select {
	case st.wakeC <- struct{}{}:
	default:
	}
}

// wakeRetry is when a wake-up that did not lead to a state write is sent again.
const wakeRetry = 5 * time.Second

// deadLetter sends a bad record to the dead-letter topic with its reason and
// source coordinates in headers. It never touches the stage's state.
func (st *stage) deadLetter(ctx goka.Context, raw []byte, err error) {
	reason := contract.ReasonOf(err)
	if reason == "" {
		reason = "error"
	}
	h := goka.Headers{
		"hotpair-reason":           []byte(reason),
		"hotpair-error":            []byte(err.Error()),
		"hotpair-source-topic":     []byte(string(ctx.Topic())),
		"hotpair-source-partition": []byte(strconv.FormatInt(int64(ctx.Partition()), 10)),
		"hotpair-source-offset":    []byte(strconv.FormatInt(ctx.Offset(), 10)),
		"hotpair-service":          []byte(st.name.String()),
		"hotpair-side":             []byte(st.p.opts.Side.String()),
	}
	if raw == nil {
		raw = []byte{}
	}
	ctx.Emit(goka.Stream(st.p.topics.DLQ), ctx.Key(), raw, goka.WithCtxEmitHeaders(h))
	st.m.deadLetters.WithLabelValues(string(reason)).Inc()
	st.sampler.deadLettered()
	st.p.log.Debug("dead letter", "service", st.name, "reason", reason,
		"topic", ctx.Topic(), "partition", ctx.Partition(), "offset", ctx.Offset(), "err", err)
}

// receive is the first step of every input callback: wait while paused and
// for the stage's rate limit, then count the record. It returns the receive
// time, used for the event lag.
func (st *stage) receive(ctx goka.Context) time.Time {
	st.gate.wait(ctx.Context())
	st.limit.wait(ctx.Context())
	st.sampler.received()
	st.m.events.Inc()
	return time.Now()
}

// observeLag records the end-to-end lag of an input record the stage
// applied. A duplicate (a redelivery after a restart or a rebalance: an ad
// event whose offset the aggregator applied, a SpendEvent a service
// applied) is not observed: it changes no output, and long due it would
// make a side that just rebalanced read as behind. Count it with
// duplicate instead.
func (st *stage) observeLag(lag time.Duration) {
	st.sampler.lagged(lag)
	st.m.lag.Observe(lag.Seconds())
}

// duplicate counts an input record the stage had already applied.
func (st *stage) duplicate() { st.m.duplicates.Inc() }

// edges returns the stream edges every stage has: the dead-letter output and
// the loop topic for timer wake-ups.
func (st *stage) edges(onWake goka.ProcessCallback) []goka.Edge {
	return []goka.Edge{
		goka.Output(goka.Stream(st.p.topics.DLQ), new(codec.Bytes)),
		goka.Loop(new(codec.Bytes), onWake),
	}
}

// gate blocks input callbacks while the stage is paused.
type gate struct {
	mu   sync.Mutex
	open chan struct{} // closed while not paused
}

func (g *gate) init() {
	g.open = make(chan struct{})
	close(g.open)
}

func (g *gate) wait(ctx context.Context) {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (g *gate) set(paused bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open: // open now
		if paused {
			g.open = make(chan struct{})
		}
	default: // paused now
		if !paused {
			close(g.open)
		}
	}
}

// limiter caps the rate at which a stage takes input records: each record
// takes the next free slot of 1/rate seconds and waits for it, so the stage
// processes at most rate records per second however many partitions feed it
// (a CPU-starved or throttled instance). A zero rate is no limit.
type limiter struct {
	mu       sync.Mutex
	interval time.Duration // 0: no limit
	next     time.Time     // the next free slot
}

func (l *limiter) set(perSecond float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.interval = 0
	if perSecond > 0 {
		l.interval = time.Duration(float64(time.Second) / perSecond)
	}
	l.next = time.Time{}
}

// wait blocks until the caller's slot comes, or ctx ends.
func (l *limiter) wait(ctx context.Context) {
	l.mu.Lock()
	if l.interval == 0 {
		l.mu.Unlock()
		return
	}
	now := time.Now()
	slot := l.next
	if slot.Before(now) {
		slot = now
	}
	l.next = slot.Add(l.interval)
	l.mu.Unlock()
	if d := slot.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// gokaLogger sends goka's logs to slog at debug level; goka logs every
// rebalance and recovery step. But for its consumer's errors, which goka
// only logs and goes on: a partition its principal may not read (a
// missing ACL on the stage's loop topic, say) is then simply never read,
// and the stage's timers never fire. Those go to consumeError.
type gokaLogger struct {
	l  *slog.Logger
	st *stage
}

// gokaConsumerError is how goka (v1.1.15, processor.go) logs an error of
// its consumer group, after a prefix naming the processor.
const gokaConsumerError = "error during execution of consumer group: %v"

func (g gokaLogger) Print(v ...any)   { g.l.Debug(fmt.Sprint(v...)) }
func (g gokaLogger) Println(v ...any) { g.l.Debug(fmt.Sprint(v...)) }
func (g gokaLogger) Printf(format string, v ...any) {
	if len(v) == 1 && strings.HasSuffix(format, gokaConsumerError) {
		if err, ok := v[0].(error); ok {
			g.st.consumeError(g.l, err)
			return
		}
	}
	g.l.Debug(fmt.Sprintf(format, v...))
}

// The reasons of hotpair_stage_consume_errors_total.
const (
	consumeNotAuthorized = "not_authorized" // a missing Read ACL: the partition is not read at all
	consumeFetchFailed   = "fetch_failed"
)

// consumeError counts an error of goka's consumer by reason and logs it at
// warning level, once per change of its partition's error.
func (st *stage) consumeError(l *slog.Logger, err error) {
	reason, msg := consumeFetchFailed, "consuming a partition failed"
	if kgoka.NotAuthorized(err) {
		reason, msg = consumeNotAuthorized, "the cluster refused to let the stage read a partition: grant what `hotpair config acls` lists"
	}
	st.m.consumeErrs.WithLabelValues(reason).Inc()
	topic, partition := "", int32(-1)
	if ce := (*sarama.ConsumerError)(nil); errors.As(err, &ce) {
		topic, partition = ce.Topic, ce.Partition
	}
	st.consumeLogMu.Lock()
	defer st.consumeLogMu.Unlock()
	st.consumeLog.Note(l, msg, topic, partition, err)
}
