package pipeline

import (
	"sync"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/hotpair/hotpair/statestore"
)

// aggregator sums each campaign's ad events into tumbling event-time windows
// and emits one SpendEvent per window once it closes, whether or not the
// campaign gets more events: a timer wake-up closes it. A window closes when
// its end plus the allowed lateness has passed on its partition's clock:
//
//   - the partition's watermark, the newest event time it has received (never
//     ahead of the wall clock), while events keep arriving — so a pipeline that
//     lags behind, or catches up on a backlog after an outage, closes the same
//     windows with the same events as one that keeps up;
//   - the wall clock once the partition has received nothing for IdleClose.
//
// Windows are aligned to the Unix epoch and ids are campaign/window_start_ms,
// so both sides emit the same SpendEvents.
//
// An ad event later than the lateness allows (its window was already
// emitted) is not dropped: it is emitted as a SpendEvent of its own, id
// campaign/window_start_ms/late/event_id, and counted in
// hotpair_late_events_total. Downstream, spend is counted exactly once per id.
//
// Every SpendEvent carries due_at, the moment it could first have been right
// (window_end + lateness; a late one: its ad event's ts), from which the
// services measure their end-to-end event lag.
type aggregator struct {
	*stage
	marks *watermarks
}

func newAggregator(p *Pipeline) *stage {
	a := aggregator{stage: newStage(p, StageAggregator), marks: newWatermarks(p.opts.IdleClose)}
	a.threshold = a.marks.at
	edges := append(a.edges(a.onWake),
		goka.Input(goka.Stream(p.topics.AdEvents), new(codec.Bytes), a.onAdEvent),
		goka.Output(goka.Stream(p.topics.Spend), new(codec.Bytes)),
		goka.Persist(new(statestore.WindowsCodec)),
	)
	a.graph = goka.DefineGroup(a.group, edges...)
	return a.stage
}

func (a aggregator) onAdEvent(ctx goka.Context, msg any) {
	recv := a.receive(ctx)
	raw, _ := msg.([]byte)
	ev, err := DecodeAdEvent(raw)
	if err == nil {
		err = CheckKey(ctx.Key(), ev.Campaign)
	}
	if err == nil && ev.TS.After(recv.Add(a.p.opts.MaxFuture)) {
		err = badRecord(ReasonFutureTimestamp, "ts", "%s is more than %s ahead of the aggregator's clock",
			ev.TS.Format(time.RFC3339Nano), a.p.opts.MaxFuture)
	}
	if err != nil {
		a.deadLetter(ctx, raw, err)
		return
	}
	a.observeLag(recv.Sub(ev.TS))
	a.marks.observe(ctx.Partition(), ev.TS.UnixMilli(), recv.UnixMilli())

	w, _ := ctx.Value().(*statestore.Windows)
	if w == nil {
		w = new(statestore.Windows)
	}
	o := a.p.opts
	switch w.Add(ctx.Offset(), ev.TS.UnixMilli(), ev.Advertiser, ev.PriceMicros, o.Window.Milliseconds(), o.Lateness.Milliseconds()) {
	case statestore.Duplicate:
		a.m.duplicates.Inc()
		return
	case statestore.Late:
		a.m.late.Inc()
		start := time.UnixMilli(statestore.WindowStartMs(ev.TS.UnixMilli(), w.SizeMs)).UTC()
		a.emit(ctx, SpendEvent{
			ID: LateSpendID(ev.Campaign, start, ev.ID), Campaign: ev.Campaign, Advertiser: ev.Advertiser,
			SpendMicros: ev.PriceMicros, Events: 1,
			WindowStart: start, WindowEnd: start.Add(time.Duration(w.SizeMs) * time.Millisecond),
			DueAt: ev.TS.UTC(),
		}, recv)
	}
	a.closeDue(ctx, w, recv)
	ctx.SetValue(w)
}

// onWake closes the campaign's windows that are due.
func (a aggregator) onWake(ctx goka.Context, _ any) {
	a.gate.wait(ctx.Context())
	w, _ := ctx.Value().(*statestore.Windows)
	if w == nil {
		return
	}
	a.closeDue(ctx, w, time.Now())
	ctx.SetValue(w)
}

// closeDue emits the windows of w that are closed on the partition's clock.
func (a aggregator) closeDue(ctx goka.Context, w *statestore.Windows, now time.Time) {
	for _, pane := range w.CloseDue(a.marks.at(ctx.Partition(), now)) {
		start := time.UnixMilli(pane.StartMs).UTC()
		end := start.Add(time.Duration(w.SizeMs) * time.Millisecond)
		a.emit(ctx, SpendEvent{
			ID: SpendID(ctx.Key(), start), Campaign: ctx.Key(), Advertiser: pane.Advertiser,
			SpendMicros: pane.Micros, Events: pane.Events,
			WindowStart: start, WindowEnd: end, DueAt: end.Add(time.Duration(w.LatenessMs) * time.Millisecond),
		}, now)
	}
}

func (a aggregator) emit(ctx goka.Context, e SpendEvent, now time.Time) {
	e.V, e.EmittedAt = SchemaVersion, now.UTC()
	b, err := Encode(e)
	if err != nil {
		ctx.Fail(err)
	}
	ctx.Emit(goka.Stream(a.p.topics.Spend), e.Campaign, b)
	a.m.outputs.Inc()
}

// watermarks keeps, per input partition, the clock the aggregator closes
// windows by (see aggregator).
type watermarks struct {
	idleMs int64
	mu     sync.Mutex
	parts  map[int32]*watermark
}

type watermark struct{ maxTsMs, lastRecvMs int64 }

func newWatermarks(idle time.Duration) *watermarks {
	return &watermarks{idleMs: idle.Milliseconds(), parts: make(map[int32]*watermark)}
}

// observe records an event of time tsMs received at recvMs.
func (w *watermarks) observe(p int32, tsMs, recvMs int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.mark(p, recvMs)
	m.maxTsMs, m.lastRecvMs = max(m.maxTsMs, tsMs), recvMs
}

// at returns the partition's clock at wall time now (unix ms).
func (w *watermarks) at(p int32, now time.Time) int64 {
	nowMs := now.UnixMilli()
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.mark(p, nowMs)
	if nowMs-m.lastRecvMs >= w.idleMs {
		return nowMs
	}
	return min(m.maxTsMs, nowMs)
}

// mark returns the partition's watermark; a partition seen for the first
// time (just assigned, or after a restart) starts its idle timer now.
func (w *watermarks) mark(p int32, nowMs int64) *watermark {
	m := w.parts[p]
	if m == nil {
		m = &watermark{lastRecvMs: nowMs}
		w.parts[p] = m
	}
	return m
}
