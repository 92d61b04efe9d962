package pipeline

import (
	"strconv"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/statestore"
)

// service is one of the three services (budget enforcer, pacer, bidder). All
// three consume spend and budgets (both as streams, so a budget change takes
// effect at once), keep a statestore.Campaign per campaign with an exactly-once
// Ledger, wake at each campaign's local midnight to start its new day, and
// emit their output after every change. They differ only in update.
type service struct {
	*stage
	output string
	// update computes the service's output for c at event time t. obs is the
	// regular spend window just applied, if any. It may change c.
	update func(key string, c *statestore.Campaign, t time.Time, obs *contract.SpendEvent) any
}

func newService(p *Pipeline, name contract.Stage) *stage {
	s := &service{stage: newStage(p, name), output: p.topics.Output(name)}
	switch name {
	case contract.StageBudget:
		s.update = s.enforce
	case contract.StagePacer:
		s.update = s.pace
	case contract.StageBidder:
		s.update = s.bid
	}
	edges := append(s.edges(s.onWake),
		goka.Input(goka.Stream(p.topics.Spend), new(codec.Bytes), s.onSpend),
		goka.Input(goka.Stream(p.topics.Budgets), new(codec.Bytes), s.onBudget),
		goka.Output(goka.Stream(s.output), new(codec.Bytes)),
		goka.Persist(new(statestore.CampaignCodec)),
	)
	s.graph = goka.DefineGroup(s.group, edges...)
	return s.stage
}

func campaignOf(ctx goka.Context) *statestore.Campaign {
	if c, _ := ctx.Value().(*statestore.Campaign); c != nil {
		return c
	}
	return new(statestore.Campaign)
}

func (s *service) onSpend(ctx goka.Context, msg any) {
	recv := s.receive(ctx)
	raw, _ := msg.([]byte)
	ev, err := contract.DecodeSpendEvent(raw)
	if err == nil {
		err = contract.CheckKey(ctx.Key(), ev.Campaign)
	}
	if err != nil {
		s.deadLetter(ctx, raw, err)
		return
	}
	s.m.hopLag.Observe(recv.Sub(ev.EmittedAt).Seconds())

	c := campaignOf(ctx)
	loc := zoneOf(budgetZone(c))
	day := dayOf(ev.WindowStart, loc)
	if !c.Ledger.Apply(statestore.Spend{
		ID: ev.ID, Late: ev.IsLate(), WindowStartMs: ev.WindowStart.UnixMilli(),
		Day: day.Date, Micros: ev.SpendMicros,
	}) {
		s.duplicate() // no lag: see observeLag
		return
	}
	// End to end: against the moment the SpendEvent could first have been
	// right, so a late arrival, a slow aggregator or a window closed late
	// all count; the hop from the aggregator is kept apart to pinpoint it.
	s.observeLag(recv.Sub(ev.DueAtOr(s.p.opts.Lateness)))
	var obs *contract.SpendEvent
	if !ev.IsLate() && day.Date == c.Ledger.Day {
		obs = &ev
	}
	s.commit(ctx, c, ev.WindowEnd, obs, recv)
	if closed, ok := windowClosedAt(ctx); ok {
		s.m.outputDelay.Observe(max(time.Since(closed), 0).Seconds())
	}
}

// windowClosedAt reads when the SpendEvent's window closed on the
// aggregator's partition clock (regular windows carry it).
func windowClosedAt(ctx goka.Context) (time.Time, bool) {
	v := ctx.Headers()[contract.HeaderWindowClosedAt]
	if v == nil {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

func (s *service) onBudget(ctx goka.Context, msg any) {
	s.gate.wait(ctx.Context())
	raw, _ := msg.([]byte)
	c := campaignOf(ctx)
	if raw == nil { // tombstone: the budget row was deleted
		c.Budget = nil
	} else {
		b, err := contract.DecodeBudget(raw)
		if err == nil {
			err = contract.CheckKey(ctx.Key(), b.Campaign)
		}
		if err != nil {
			s.deadLetter(ctx, raw, err)
			return
		}
		c.Budget = &statestore.BudgetRow{Advertiser: b.Advertiser, DailyMicros: b.DailyMicros,
			LifetimeMicros: b.LifetimeMicros, Timezone: b.Timezone}
	}
	now := time.Now()
	c.Ledger.Roll(dayOf(now, zoneOf(budgetZone(c))).Date)
	s.commit(ctx, c, now, nil, now)
}

// onWake starts the campaign's new day at its local midnight.
func (s *service) onWake(ctx goka.Context, _ any) {
	s.gate.wait(ctx.Context())
	c, _ := ctx.Value().(*statestore.Campaign)
	if c == nil {
		return
	}
	now := time.Now()
	c.Ledger.Roll(dayOf(now, zoneOf(budgetZone(c))).Date)
	s.commit(ctx, c, now, nil, now)
}

// commit computes and emits the output, arms the next midnight wake-up and
// stores the state, in that order within the callback (goka commits the
// input offset only after both writes).
func (s *service) commit(ctx goka.Context, c *statestore.Campaign, t time.Time, obs *contract.SpendEvent, now time.Time) {
	out := s.update(ctx.Key(), c, t, obs)
	b, err := contract.Encode(out)
	if err != nil {
		ctx.Fail(err)
	}
	ctx.Emit(goka.Stream(s.output), ctx.Key(), b)
	s.m.outputs.Inc()
	c.NextDayMs = dayOf(now, zoneOf(budgetZone(c))).End.UnixMilli()
	ctx.SetValue(c)
}

func budgetZone(c *statestore.Campaign) string {
	if c.Budget == nil {
		return ""
	}
	return c.Budget.Timezone
}

func (s *service) enforce(key string, c *statestore.Campaign, _ time.Time, _ *contract.SpendEvent) any {
	c.Status = budgetStatus(&c.Ledger, c.Budget)
	return contract.BudgetStatus{
		V: contract.SchemaVersion, Campaign: key, Status: c.Status, Day: c.Ledger.Day,
		SpentTodayMicros: c.Ledger.SpentToday, SpentLifetimeMicros: c.Ledger.SpentLifetime,
		LastWindowStart: lastWindowStart(&c.Ledger), UpdatedAt: time.Now().UTC(),
	}
}

func (s *service) pace(key string, c *statestore.Campaign, t time.Time, obs *contract.SpendEvent) any {
	var daily int64
	if c.Budget != nil {
		daily = c.Budget.DailyMicros
	}
	day := dayOf(t, zoneOf(budgetZone(c)))
	in := paceInput{
		DailyMicros: daily, SpentToday: c.Ledger.SpentToday,
		DayFraction: day.fraction(t), RemainingSec: day.End.Sub(t).Seconds(),
	}
	if obs != nil {
		in.WindowMicros, in.WindowSec = obs.SpendMicros, obs.WindowEnd.Sub(obs.WindowStart).Seconds()
	}
	var st statestore.Pacer
	if c.Pacer != nil {
		st = *c.Pacer
	}
	st, target := pace(s.p.opts.Pacer, st, in)
	c.Pacer = &st
	return contract.Pacing{
		V: contract.SchemaVersion, Campaign: key, Rate: st.Rate,
		TargetMicros: target, ActualMicros: c.Ledger.SpentToday, LastWindowStart: lastWindowStart(&c.Ledger),
		UpdatedAt: time.Now().UTC(),
	}
}

func (s *service) bid(key string, c *statestore.Campaign, t time.Time, obs *contract.SpendEvent) any {
	var daily int64
	if c.Budget != nil {
		daily = c.Budget.DailyMicros
	}
	day := dayOf(t, zoneOf(budgetZone(c)))
	var st statestore.Bidder
	if c.Bidder != nil {
		st = *c.Bidder
	}
	st = bid(s.p.opts.Bidder, st, bidInput{
		DailyMicros: daily, SpentToday: c.Ledger.SpentToday,
		TargetMicros: int64(float64(daily) * day.fraction(t)), NowMs: t.UnixMilli(), Observed: obs != nil,
	})
	c.Bidder = &st
	return contract.BidMultiplier{V: contract.SchemaVersion, Campaign: key, Multiplier: st.Multiplier,
		LastWindowStart: lastWindowStart(&c.Ledger), UpdatedAt: time.Now().UTC()}
}

// lastWindowStart is the start of the newest spend window l applied, zero
// before any: every output says which windows it follows from.
func lastWindowStart(l *statestore.Ledger) time.Time {
	if l.Through == 0 {
		return time.Time{}
	}
	return time.UnixMilli(l.Through).UTC()
}
