package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/hotpair/hotpair/contract"
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
	a := aggregator{stage: newStage(p, contract.StageAggregator), marks: newWatermarks(p.opts.IdleClose, p.opts.Window, p.opts.Lateness)}
	a.threshold = a.marks.wakeThreshold
	a.beforeWake = a.listEnds
	// A backlog's last panes wait for their partition to fall quiet: look
	// at least that often.
	a.wakeTick = min(p.opts.WakeInterval, quietAfter)
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
	a.marks.received(ctx.Partition(), ctx.Offset(), recv.UnixMilli())
	if ts := ctx.Timestamp(); !ts.IsZero() { // when the ad event was written
		a.m.hopLag.Observe(max(recv.Sub(ts), 0).Seconds())
	}
	raw, _ := msg.([]byte)
	ev, err := contract.DecodeAdEvent(raw)
	if err == nil {
		err = contract.CheckKey(ctx.Key(), ev.Campaign)
	}
	if err == nil && ev.TS.After(recv.Add(a.p.opts.MaxFuture)) {
		err = &contract.DecodeError{Reason: contract.ReasonFutureTimestamp, Field: "ts", Detail: fmt.Sprintf(
			"%s is more than %s ahead of the aggregator's clock", ev.TS.Format(time.RFC3339Nano), a.p.opts.MaxFuture)}
	}
	if err != nil {
		a.deadLetter(ctx, raw, err)
		return
	}
	a.observeLag(recv.Sub(ev.TS))
	p, tsMs := ctx.Partition(), ev.TS.UnixMilli()
	if a.marks.observe(p, tsMs, recv.UnixMilli()) {
		// The partition's clock passed a window close. Live, the wake-ups of
		// the panes due now go out at once. Behind (a backlog), the
		// campaigns' own events close most panes sooner, at no extra cost:
		// wake-ups go out if the partition falls quiet (see wakeThreshold).
		if recv.Sub(ev.TS) < a.p.opts.Window {
			a.wakeNow()
		} else {
			a.wakeWhenQuiet()
		}
	}
	clock := a.marks.at(p, recv)

	w, _ := ctx.Value().(*statestore.Windows)
	if w == nil {
		w = new(statestore.Windows)
	}
	batch := a.reemit(ctx, w, recv)
	o := a.p.opts
	in := statestore.Event{Offset: ctx.Offset(), TsMs: tsMs, Advertiser: ev.Advertiser, Micros: ev.PriceMicros, ClockMs: clock}
	switch w.Add(in, o.Window.Milliseconds(), o.Lateness.Milliseconds()) {
	case statestore.Duplicate:
		a.m.duplicates.Inc()
		if len(batch) > 0 {
			a.keep(w, batch)
			ctx.SetValue(w)
		}
		return
	case statestore.Late:
		// Its window closed before it arrived: it is right as it arrives.
		a.m.late.Inc()
		x := statestore.Emitted{StartMs: statestore.WindowStartMs(tsMs, w.SizeMs), Advertiser: ev.Advertiser,
			Micros: ev.PriceMicros, Events: 1, DueMs: ev.TS.UnixMilli(), LateEventID: ev.ID}
		a.emit(ctx, spendOf(ctx.Key(), w.SizeMs, x), recv, recv.UnixMilli())
		batch = append(batch, x)
	}
	batch = a.closeDue(ctx, w, clock, recv, batch)
	a.keep(w, batch)
	ctx.SetValue(w)
}

// reemit emits again the SpendEvents the campaign's latest emitting
// message wrote, when another run of the aggregator (a process that died,
// a processor rebuilt after a failure) wrote them: its state write may be
// durable while they are not. They are the same records (the services count
// each id once), and they are returned to be kept as this run's.
func (a aggregator) reemit(ctx goka.Context, w *statestore.Windows, now time.Time) []statestore.Emitted {
	if len(w.Emitted) == 0 || w.EmittedBy == a.runID.Load() {
		return nil
	}
	for _, x := range w.Emitted {
		a.emit(ctx, spendOf(ctx.Key(), w.SizeMs, x), now, x.DueMs)
		a.m.reemitted.Inc()
	}
	return append([]statestore.Emitted(nil), w.Emitted...)
}

// keep records batch, the SpendEvents this message emitted, in the state
// as this run's; a message that emitted nothing keeps the ones before.
func (a aggregator) keep(w *statestore.Windows, batch []statestore.Emitted) {
	if len(batch) > 0 {
		w.Emitted, w.EmittedBy = batch, a.runID.Load()
	}
}

// spendOf is the SpendEvent of an emitted window (or late event) of a
// campaign with windows of sizeMs.
func spendOf(campaign string, sizeMs int64, x statestore.Emitted) contract.SpendEvent {
	start := time.UnixMilli(x.StartMs).UTC()
	id := contract.SpendID(campaign, start)
	if x.LateEventID != "" {
		id = contract.LateSpendID(campaign, start, x.LateEventID)
	}
	return contract.SpendEvent{ID: id, Campaign: campaign, Advertiser: x.Advertiser, SpendMicros: x.Micros, Events: x.Events,
		WindowStart: start, WindowEnd: start.Add(time.Duration(sizeMs) * time.Millisecond), DueAt: time.UnixMilli(x.DueMs).UTC()}
}

// listEnds lists the ad-events log end offsets when a partition that is
// behind has received nothing for a moment: it is quiet only if it has read
// its input to the end, not while its consumer waits for a fetch (goka's
// consumer fetches for all partitions at once, after the slowest has taken
// its records) or for a CPU. Without them (an error), such a partition
// counts as quiet, as it did before.
func (a aggregator) listEnds(ctx context.Context, now time.Time) {
	if !a.marks.needEnds(now) {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	listed, err := kadm.NewClient(a.p.admin).ListEndOffsets(lctx, a.p.topics.AdEvents)
	if err != nil {
		a.p.log.Debug("listing the ad events' end offsets", "err", err)
		return
	}
	ends := make(map[int32]int64)
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			ends[o.Partition] = o.Offset
		}
	})
	a.marks.setEnds(ends)
}

// onWake closes the campaign's windows that are due.
func (a aggregator) onWake(ctx goka.Context, _ any) {
	a.gate.wait(ctx.Context())
	w, _ := ctx.Value().(*statestore.Windows)
	if w == nil {
		return
	}
	now := time.Now()
	batch := a.reemit(ctx, w, now)
	if batch = a.closeDue(ctx, w, a.marks.at(ctx.Partition(), now), now, batch); len(batch) > 0 {
		a.keep(w, batch)
		ctx.SetValue(w)
	}
	// Nothing due (an event closed the panes first): the state and its wake
	// time in the index are current; writing it again would only cost.
}

// closeDue emits the windows of w that are closed at clock, the partition's
// clock at wall time now, and returns batch with them appended.
func (a aggregator) closeDue(ctx goka.Context, w *statestore.Windows, clock int64, now time.Time, batch []statestore.Emitted) []statestore.Emitted {
	for _, pane := range w.CloseDue(clock) {
		due := pane.StartMs + w.SizeMs + w.LatenessMs
		x := statestore.Emitted{StartMs: pane.StartMs, Advertiser: pane.Advertiser, Micros: pane.Micros, Events: pane.Events, DueMs: due}
		a.emit(ctx, spendOf(ctx.Key(), w.SizeMs, x), now, a.marks.closedAt(ctx.Partition(), due, now.UnixMilli()))
		batch = append(batch, x)
	}
	return batch
}

// emit writes a SpendEvent with the moment it could first have been right,
// closedMs (unix ms: its window's close, or a late event's arrival), in the
// HeaderWindowClosedAt header for the services' output latency.
func (a aggregator) emit(ctx goka.Context, e contract.SpendEvent, now time.Time, closedMs int64) {
	e.V, e.EmittedAt = contract.SchemaVersion, now.UTC()
	b, err := contract.Encode(e)
	if err != nil {
		ctx.Fail(err)
	}
	h := goka.WithCtxEmitHeaders(goka.Headers{contract.HeaderWindowClosedAt: strconv.AppendInt(nil, closedMs, 10)})
	ctx.Emit(goka.Stream(a.p.topics.Spend), e.Campaign, b, h)
	a.m.outputs.Inc()
}
