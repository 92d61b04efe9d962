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
	o := a.p.opts
	in := statestore.Event{Offset: ctx.Offset(), TsMs: tsMs, Advertiser: ev.Advertiser, Micros: ev.PriceMicros, ClockMs: clock}
	added := w.Add(in, o.Window.Milliseconds(), o.Lateness.Milliseconds())
	if added == statestore.Duplicate {
		a.duplicate() // no lag: see observeLag
		return
	}
	a.observeLag(recv.Sub(ev.TS))
	if added == statestore.Late {
		// Its window closed before it arrived: it is right as it arrives.
		a.m.late.Inc()
		start := time.UnixMilli(statestore.WindowStartMs(tsMs, w.SizeMs)).UTC()
		a.emit(ctx, contract.SpendEvent{
			ID: contract.LateSpendID(ev.Campaign, start, ev.ID), Campaign: ev.Campaign, Advertiser: ev.Advertiser,
			SpendMicros: ev.PriceMicros, Events: 1,
			WindowStart: start, WindowEnd: start.Add(time.Duration(w.SizeMs) * time.Millisecond),
			DueAt: ev.TS.UTC(),
		}, recv, recv.UnixMilli())
	}
	a.closeDue(ctx, w, clock, recv)
	ctx.SetValue(w)
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
	if a.closeDue(ctx, w, a.marks.at(ctx.Partition(), now), now) > 0 {
		ctx.SetValue(w)
	}
	// Nothing due (an event closed the panes first): the state and its wake
	// time in the index are current; writing it again would only cost.
}

// closeDue emits the windows of w that are closed at clock, the partition's
// clock at wall time now, and returns how many.
func (a aggregator) closeDue(ctx goka.Context, w *statestore.Windows, clock int64, now time.Time) int {
	panes := w.CloseDue(clock)
	for _, pane := range panes {
		start := time.UnixMilli(pane.StartMs).UTC()
		end := start.Add(time.Duration(w.SizeMs) * time.Millisecond)
		closed := a.marks.closedAt(ctx.Partition(), pane.StartMs+w.SizeMs+w.LatenessMs, now.UnixMilli())
		a.emit(ctx, contract.SpendEvent{
			ID: contract.SpendID(ctx.Key(), start), Campaign: ctx.Key(), Advertiser: pane.Advertiser,
			SpendMicros: pane.Micros, Events: pane.Events,
			WindowStart: start, WindowEnd: end, DueAt: end.Add(time.Duration(w.LatenessMs) * time.Millisecond),
		}, now, closed)
	}
	return len(panes)
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
