package selector

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/kafka"
)

// BudgetState is a campaign's budget status as the budget enforcer reports
// it. The zero value is unknown (no status on either side).
type BudgetState uint8

// Budget states.
const (
	StateActive BudgetState = 1 + iota
	StateDailyCapped
	StateLifetimeCapped
	StateNoBudget
)

// String returns the status as in BudgetStatus.Status, or "unknown".
func (s BudgetState) String() string {
	switch s {
	case StateActive:
		return contract.StatusActive
	case StateDailyCapped:
		return contract.StatusDailyCapped
	case StateLifetimeCapped:
		return contract.StatusLifetimeCapped
	case StateNoBudget:
		return contract.StatusNoBudget
	}
	return "unknown"
}

// Capped reports whether a campaign in this state must not serve.
func (s BudgetState) Capped() bool { return s == StateDailyCapped || s == StateLifetimeCapped }

func budgetStateOf(status string) BudgetState {
	switch status {
	case contract.StatusActive:
		return StateActive
	case contract.StatusDailyCapped:
		return StateDailyCapped
	case contract.StatusLifetimeCapped:
		return StateLifetimeCapped
	case contract.StatusNoBudget:
		return StateNoBudget
	}
	return 0
}

// Answer is one value of one service for one campaign.
type Answer struct {
	Service contract.Service
	// Wanted is the side asked for; From is the side that answered (unset
	// when Found is false). They differ when the wanted side had no value
	// for the campaign yet: see Fallback.
	Wanted, From contract.Side
	Found        bool

	Status     BudgetState // budget: the campaign's status
	Day        time.Time   // budget: the day of the status (UTC midnight of the campaign's local date)
	Rate       float64     // pacer: the pacing rate in [0,1]
	Multiplier float64     // bidder: the bid multiplier
	UpdatedAt  time.Time   // when the service computed the value
}

// Fallback reports whether the value came from the other side because the
// wanted side had none (its view still recovering, or the key not seen yet).
func (a Answer) Fallback() bool { return a.Found && a.From != a.Wanted }

// Views are materialised views of the output tables (budget-status, pacing,
// bid-multipliers) of both clusters. Each side has its own franz-go consumer
// reading every partition directly (no consumer group) from the start, and
// its own table, so a dead cluster never blocks the other side.
type Views struct {
	cfg     viewsCfg
	keys    *keyIndex
	sides   [3]*sideView // indexed by Side
	m       *viewsMetrics
	running atomic.Bool
	changes changes.Feed // every consumed fetch and lag measurement
}

// NewViews returns views of the clusters named with WithCluster (both sides
// are required). Nothing connects before Run.
func NewViews(opts ...ViewsOption) (*Views, error) {
	c := defaultViewsCfg()
	for _, o := range opts {
		o.applyViews(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	v := &Views{cfg: c, keys: newKeyIndex()}
	v.m = newViewsMetrics(c.reg, v)
	for _, side := range []contract.Side{contract.Primary, contract.Standby} {
		sv := &sideView{
			side: side, cluster: kafka.Cluster{Name: side.String(), Brokers: c.brokers[side], Auth: c.kafkaAuth[side]}, kopts: c.kafkaOpts[side],
			keys: v.keys, m: v.m, lagInterval: c.lagInterval, now: c.now,
			log:    c.logger.With("component", "views", "side", side.String()),
			topics: outputTopics(c.prefix),
		}
		sv.lag = newLagTracker(sv.topics, c.now(), &v.changes)
		v.sides[side] = sv
	}
	return v, nil
}

// ViewsKafkaACLs returns the ACLs the user of Views needs on each of the
// two clusters, for the topic prefix of WithTopicPrefix: Read on the three
// output topics (budget-status, pacing, bid-multipliers), named literally,
// sorted (contract.SortACLs). Kafka grants Describe with Read, and Describe
// is all the views need besides: the metadata of the topics, and the start
// and end offsets they measure for the lag report (ListOffsets). They use no
// consumer group (they assign every partition themselves and commit
// nothing), create no topic and produce nothing, so they need no group,
// Write, Create or cluster ACL.
func ViewsKafkaACLs(prefix string) []contract.KafkaACL {
	topics := outputTopics(prefix)
	return contract.SortACLs(contract.TopicACLs(topics[1:], contract.OpRead))
}

// outputTopics are the names of the output topics the views consume,
// indexed by Service.
func outputTopics(prefix string) [contract.NumServices + 1]string {
	names := contract.TopicsWithPrefix(prefix)
	var topics [contract.NumServices + 1]string
	for _, svc := range contract.Services() {
		topics[svc] = names.Output(svc.Stage())
	}
	return topics
}

// Run consumes both clusters until ctx is done. A cluster that is down is
// retried by its own consumer; it never delays the other side. Run returns
// nil after ctx is done, ErrAlreadyRunning, or an error building a client.
func (v *Views) Run(ctx context.Context) error {
	if !v.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for _, side := range []contract.Side{contract.Primary, contract.Standby} {
		wg.Go(func() {
			if errs[side] = v.sides[side].run(ctx); errs[side] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Get returns svc's value for campaign from side; when side has no value
// for it, the other side's value, with Fallback set. It does not allocate.
func (v *Views) Get(svc contract.Service, campaign string, side contract.Side) Answer {
	a := Answer{Service: svc, Wanted: side}
	if !svc.Valid() || !side.Valid() {
		return a
	}
	i, ok := v.keys.lookup(campaign)
	if !ok {
		v.m.misses[svc].Inc()
		return a
	}
	c := campaignEntries{v: v, i: i}
	if e, from, ok := v.pick(&c, svc, side); ok {
		a.fill(e, from)
	}
	return a
}

// pick returns svc's entry of campaign c from side, or from the other side
// when side has none; it counts fallbacks and misses.
func (v *Views) pick(c *campaignEntries, svc contract.Service, side contract.Side) (entry, contract.Side, bool) {
	if e := c.side(side); e.has.Has(svc) {
		return e, side, true
	}
	if e := c.side(side.Other()); e.has.Has(svc) {
		v.m.fallbacks[svc][side].Inc()
		return e, side.Other(), true
	}
	v.m.misses[svc].Inc()
	return entry{}, 0, false
}

// campaignEntries reads one campaign's entries, each side's at most once.
type campaignEntries struct {
	v      *Views
	i      uint32
	e      [3]entry // indexed by Side
	loaded [3]bool
}

func (c *campaignEntries) side(s contract.Side) entry {
	if !c.loaded[s] {
		c.e[s], _ = c.v.sides[s].tab.get(c.i)
		c.loaded[s] = true
	}
	return c.e[s]
}

func (a *Answer) fill(e entry, from contract.Side) {
	a.From, a.Found = from, true
	switch a.Service {
	case contract.ServiceBudget:
		a.Status, a.Day, a.UpdatedAt = e.status, dayTime(e.day), time.Unix(0, e.statusAt).UTC()
	case contract.ServicePacer:
		a.Rate, a.UpdatedAt = e.rate, time.Unix(0, e.pacingAt).UTC()
	case contract.ServiceBidder:
		a.Multiplier, a.UpdatedAt = e.multiplier, time.Unix(0, e.multAt).UTC()
	}
}

// Lag reports how far behind each view is, per side and topic.
func (v *Views) Lag() []ViewLag {
	now := v.cfg.now()
	var out []ViewLag
	for _, side := range []contract.Side{contract.Primary, contract.Standby} {
		out = append(out, v.sides[side].lag.report(side, now)...)
	}
	return out
}

// CaughtUp reports whether every view of side has reached the end of its
// topic at least once since Run started.
func (v *Views) CaughtUp(side contract.Side) bool {
	if !side.Valid() {
		return false
	}
	for _, l := range v.sides[side].lag.report(side, v.cfg.now()) {
		if !l.CaughtUpOnce {
			return false
		}
	}
	return true
}

// Campaigns returns how many campaign ids the views hold values for (on
// either side).
func (v *Views) Campaigns() int { return v.keys.len() }

// ViewsOption configures Views (NewViews).
type ViewsOption interface{ applyViews(*viewsCfg) }

type viewsOpt func(*viewsCfg)

func (o viewsOpt) applyViews(c *viewsCfg) { o(c) }

type viewsCfg struct {
	common
	brokers     [3][]string  // indexed by Side
	kafkaOpts   [3][]kgo.Opt // indexed by Side
	kafkaAuth   [3]*contract.KafkaAuth
	prefix      string
	lagInterval time.Duration
}

func defaultViewsCfg() viewsCfg {
	return viewsCfg{common: defaultCommon(), lagInterval: 5 * time.Second}
}

// WithCluster sets the seed brokers of side's Kafka cluster. Required for
// both sides.
func WithCluster(side contract.Side, brokers ...string) ViewsOption {
	return viewsOpt(func(c *viewsCfg) {
		if side.Valid() {
			c.brokers[side] = append([]string(nil), brokers...)
		}
	})
}

// WithKafkaAuth sets the TLS and SASL of side's cluster (the config's tls
// and sasl keys, loaded). Default nil: plaintext.
func WithKafkaAuth(side contract.Side, auth *contract.KafkaAuth) ViewsOption {
	return viewsOpt(func(c *viewsCfg) {
		if side.Valid() {
			c.kafkaAuth[side] = auth
		}
	})
}

// WithKafkaOptions adds franz-go client options (timeouts, fetch sizes) for
// side's cluster. Default none.
func WithKafkaOptions(side contract.Side, opts ...kgo.Opt) ViewsOption {
	return viewsOpt(func(c *viewsCfg) {
		if side.Valid() {
			c.kafkaOpts[side] = append(c.kafkaOpts[side], opts...)
		}
	})
}

// WithTopicPrefix sets the prefix of the topic names (contract.TopicsWithPrefix).
// Default "".
func WithTopicPrefix(p string) ViewsOption { return viewsOpt(func(c *viewsCfg) { c.prefix = p }) }

// WithLagInterval sets how often each side's end offsets are measured for
// the lag report. Default 5s.
func WithLagInterval(d time.Duration) ViewsOption {
	return viewsOpt(func(c *viewsCfg) { c.lagInterval = d })
}

func (c *viewsCfg) validate() error {
	for _, side := range []contract.Side{contract.Primary, contract.Standby} {
		if len(c.brokers[side]) == 0 {
			return fmt.Errorf("%w: NewViews needs WithCluster(%s, brokers...): views always read both clusters", ErrInvalidOption, side)
		}
	}
	if c.lagInterval < 10*time.Millisecond {
		return fmt.Errorf("%w: WithLagInterval(%s) is below 10ms", ErrInvalidOption, c.lagInterval)
	}
	return nil
}
