package pipeline

import (
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/hotpair/hotpair/statestore"
)

// aggregator sums each campaign's ad events into tumbling event-time windows
// and emits one SpendEvent per window after it closes: at window end plus the
// allowed lateness, by wall clock, whether or not the campaign gets more
// events (a timer wake-up closes it). Windows are aligned to the Unix epoch
// and ids are campaign/window_start_ms, so both sides emit the same events.
//
// An ad event later than the lateness allows (its window was already
// emitted) is not dropped: it is emitted as a SpendEvent of its own, id
// campaign/window_start_ms/late/event_id, and counted in
// hotpair_late_events_total. Downstream, spend is counted exactly once per id.
type aggregator struct{ *stage }

func newAggregator(p *Pipeline) *stage {
	a := aggregator{newStage(p, StageAggregator)}
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

func (a aggregator) closeDue(ctx goka.Context, w *statestore.Windows, now time.Time) {
	for _, pane := range w.CloseDue(now.UnixMilli()) {
		start := time.UnixMilli(pane.StartMs).UTC()
		a.emit(ctx, SpendEvent{
			ID: SpendID(ctx.Key(), start), Campaign: ctx.Key(), Advertiser: pane.Advertiser,
			SpendMicros: pane.Micros, Events: pane.Events,
			WindowStart: start, WindowEnd: start.Add(time.Duration(w.SizeMs) * time.Millisecond),
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
