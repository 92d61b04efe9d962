package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// Dispatcher copies one live side's input to the dark targets. Build it
// with New, start it with Run.
type Dispatcher struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics
	topics contract.Topics
	retry  time.Duration

	routes   atomic.Pointer[[]route] // read per record by the consumers
	consumed atomic.Int64            // live ad events read, for the live rate
	assigned chan struct{}           // closed once the group assigned partitions
	assign   sync.Once
	// planned is closed once the control loop has applied the targets the
	// follower first read: the events consumer waits for it, so that it
	// copies from its group's committed offsets on rather than skipping
	// (and committing) what it reads before it knows where to send it. A
	// dispatcher that starts while ZooKeeper is unreadable reads nothing
	// until it is; one that loses ZooKeeper later pauses (PausedAll).
	planned chan struct{}
	plan    sync.Once

	freshMu sync.Mutex
	fresh   map[int32]bool // live partitions assigned and not yet resumed
	// gapped are the partitions resumed after a gap whose copy has not
	// caught up yet (see caughtUp); the events consumer alone touches it.
	gapped map[int32]bool

	budgetsMu sync.Mutex
	budgets   map[string][]byte // the live budgets table: campaign -> row

	plansMu sync.Mutex
	plans   map[string]Plan
	changes changes.Feed // notified after every round of the control loop
}

// route is one sending target as the consumers see it.
type route struct {
	s *sender
	f float64
}

// New checks the config and builds a Dispatcher; nothing connects before Run.
func New(c Config, opts ...Option) (*Dispatcher, error) {
	o := options{logger: slog.New(slog.DiscardHandler), reg: prometheus.NewRegistry(), retry: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	c.defaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: c, log: o.logger.With("component", "dark-dispatch", "side", c.Side.String()), m: newMetrics(o.reg),
		topics: contract.TopicsWithPrefix(c.TopicPrefix), retry: o.retry, assigned: make(chan struct{}),
		planned: make(chan struct{}), fresh: map[int32]bool{}, gapped: map[int32]bool{},
		budgets: map[string][]byte{}, plans: map[string]Plan{}}
	d.routes.Store(&[]route{})
	return d, nil
}

// live is the live side's cluster as the Kafka layer reaches it.
func (d *Dispatcher) live() kafka.Cluster {
	return kafka.Cluster{Name: d.cfg.Side.String(), Brokers: d.cfg.LiveBrokers, Auth: d.cfg.LiveAuth}
}

// Assigned is closed once the dispatcher's consumer group has given it
// partitions of ad-events: from then on, what is produced live is copied.
func (d *Dispatcher) Assigned() <-chan struct{} { return d.assigned }

// Changed returns a channel closed after the next round of the control
// loop: a change of a document or an instance count, and at least every
// second (the live rate and the expiries). Waiters look at Plans, or at the
// metrics, again then.
func (d *Dispatcher) Changed() <-chan struct{} { return d.changes.Next() }

// Plans returns every target's current plan, by name.
func (d *Dispatcher) Plans() []Plan {
	d.plansMu.Lock()
	defer d.plansMu.Unlock()
	return slices.SortedFunc(maps.Values(d.plans), func(a, b Plan) int { return strings.Compare(a.Name, b.Name) })
}

// Run copies until ctx ends. It connects to ZooKeeper and the live cluster
// in the background: an ensemble or cluster that is down pauses the copy
// (and says so in the metrics), it does not stop Run. It returns nil after
// ctx ended, or an error for a setting that cannot work.
func (d *Dispatcher) Run(ctx context.Context) error {
	sess, err := zkutil.Open(zkutil.Options{Servers: d.cfg.ZK, SessionTimeout: d.cfg.ZKSessionTimeout,
		Auth: d.cfg.ZKAuth, Logger: d.log})
	if err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	defer sess.Close()
	start := kgo.NewOffset().AtEnd()
	if d.cfg.Start == StartOldest {
		start = kgo.NewOffset().AtStart()
	}
	group := []kgo.Opt{kgo.ConsumerGroup(d.cfg.Group), kgo.ConsumeTopics(d.topics.AdEvents), kgo.ConsumeResetOffset(start),
		kgo.SessionTimeout(d.cfg.GroupSessionTimeout), kgo.HeartbeatInterval(min(3*time.Second, d.cfg.GroupSessionTimeout/3)),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			d.freshMu.Lock()
			for _, p := range assigned[d.topics.AdEvents] {
				d.fresh[p] = true
			}
			d.freshMu.Unlock()
			d.assign.Do(func() { close(d.assigned) })
		})}
	if d.cfg.GroupInstanceID != "" {
		group = append(group, kgo.InstanceID(d.cfg.GroupInstanceID))
	}
	events, err := kafka.NewClient(d.live(), "hotpair-dark-dispatch", group...)
	if err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	defer events.Close()
	// The budgets table is read whole, from the start, by every replica:
	// a target gets the rows of its sampled campaigns whatever the group's
	// offsets, and rows are upserts, so a row sent twice changes nothing.
	budgets, err := kafka.NewClient(d.live(), "hotpair-dark-dispatch-budgets",
		kgo.ConsumeTopics(d.topics.Budgets), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	defer budgets.Close()

	observed := make(chan followed, 1)
	var wg sync.WaitGroup
	f := newFollower(sess.Conn, contract.NewPaths(d.cfg.ZKRoot), d.cfg.Cluster)
	wg.Go(func() {
		f.run(ctx, sess, d.retry, func(o map[string]Observed, err error) {
			select { // keep only the newest
			case <-observed:
			default:
			}
			observed <- followed{obs: o, err: err}
		})
	})
	wg.Go(func() { d.consumeEvents(ctx, events) })
	wg.Go(func() { d.consumeBudgets(ctx, budgets) })
	senders := d.apply(ctx, observed)
	wg.Wait()
	d.closeSenders(senders)
	return nil
}

type followed struct {
	obs map[string]Observed
	err error
}

// consumeEvents reads live ad events and hands every sampled campaign's
// copies to the targets' senders, which never block.
func (d *Dispatcher) consumeEvents(ctx context.Context, cl *kgo.Client) {
	var errs kafka.ErrorLog
	var last []route
	copied := map[string]bool{} // the campaigns copied to a target so far
	select {
	case <-d.planned:
	case <-ctx.Done():
		return
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			errs.Note(d.log, "dispatch: reading live ad events", topic, p, err)
		})
		n := int64(fs.NumRecords())
		if n == 0 {
			continue
		}
		d.consumed.Add(n)
		d.m.consumed.WithLabelValues("ad-events").Add(float64(n))
		routes := *d.routes.Load()
		d.leaveWithoutRows(last, routes, copied)
		last = routes
		if len(routes) == 0 {
			continue
		}
		d.resume(ctx, fs, routes)
		fs.EachRecord(func(r *kgo.Record) {
			campaign := string(r.Key)
			for _, rt := range routes {
				n := contract.DarkCopies(campaign, rt.f)
				if n > 0 {
					copied[campaign] = true
				}
				for k := range n {
					rt.s.event(r, k)
				}
			}
		})
		d.caughtUp(ctx, cl, fs, routes)
	}
}

// resume has every route's target read back, all at once, what it already
// has of the live partitions this poll resumes (their first records since
// they were assigned), before any of their records is copied. A partition resumed
// while no target is sent to needs nothing: its records are not copied.
// The partitions it resumes at a record that waited Config.GapAfter had a
// gap in their copy: see caughtUp.
func (d *Dispatcher) resume(ctx context.Context, fs kgo.Fetches, routes []route) {
	d.freshMu.Lock()
	if len(d.fresh) == 0 {
		d.freshMu.Unlock()
		return
	}
	points := map[int32]resumePoint{}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Topic != d.topics.AdEvents || !d.fresh[p.Partition] || len(p.Records) == 0 {
			return
		}
		first := p.Records[0]
		points[p.Partition] = resumePoint{offset: first.Offset, ts: first.Timestamp}
		delete(d.fresh, p.Partition)
		if time.Since(first.Timestamp) >= d.cfg.GapAfter {
			d.gapped[p.Partition] = true
		} else {
			delete(d.gapped, p.Partition)
		}
	})
	d.freshMu.Unlock()
	if len(points) == 0 {
		return
	}
	var wg sync.WaitGroup // a target that is away costs the others nothing more than its timeout
	for _, rt := range routes {
		wg.Go(func() { rt.s.resume(ctx, d.cfg.Side, points) })
	}
	wg.Wait()
}

// caughtUp sends the gap rows (sendGapRows) of the partitions resumed after
// a gap whose copy has caught up in this poll: its newest record waited
// less than Config.GapAfter, or is the partition's last. Sent then, after
// the copies of the backlog, the rows tell the comparator from when the
// copy is whole again: the backlog's copies came late to the dark
// aggregator (late spend of earlier windows), and the windows after the
// rows get their copies in time.
func (d *Dispatcher) caughtUp(ctx context.Context, cl *kgo.Client, fs kgo.Fetches, routes []route) {
	if len(d.gapped) == 0 {
		return
	}
	ready := map[int32]bool{}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Topic != d.topics.AdEvents || !d.gapped[p.Partition] || len(p.Records) == 0 {
			return
		}
		last := p.Records[len(p.Records)-1]
		if time.Since(last.Timestamp) < d.cfg.GapAfter || last.Offset+1 >= p.HighWatermark {
			ready[p.Partition] = true
			delete(d.gapped, p.Partition)
		}
	})
	if len(ready) > 0 {
		d.sendGapRows(ctx, cl, ready, routes)
	}
}

// sendGapRows sends again, to every route, the budget rows of the sampled
// campaigns of live partitions whose copy had a gap: resumed at a record
// that waited at least Config.GapAfter — after a restart of the only
// replica, or partitions taken over from a replica that crashed, which the
// group moved only after its session timeout (a clean handover between
// replicas resumes at records a rebalance old) — and caught up since. The
// rows carry the reason gap (contract.HeaderDarkRow): the comparator then
// compares those campaigns afresh from then on, instead of judging the
// outputs the gap kept the dark pipeline from writing as missing, and
// their pacing and bids from their next day (a pacer keeps what late
// copies changed).
func (d *Dispatcher) sendGapRows(ctx context.Context, cl *kgo.Client, gaps map[int32]bool, routes []route) {
	parts := slices.Sorted(maps.Keys(gaps))
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(lctx, d.topics.AdEvents)
	if err == nil {
		err = topics.Error()
	}
	if err != nil {
		d.log.Warn("dispatch: resumed live partitions after a gap in their copy, but cannot list their topic to find their campaigns; "+
			"their budget rows are not sent again, so the comparator may judge outputs the gap withheld", "partitions", parts, "err", err)
		return
	}
	n := int32(len(topics[d.topics.AdEvents].Partitions))
	// Each route's rows sent again, as to a target that resumes.
	changed := make([]sampleChange, len(routes))
	for i, rt := range routes {
		changed[i] = sampleChange{s: rt.s, to: rt.f, gap: true}
	}
	campaigns := d.sendSampleChanges(changed, func(campaign string) bool { return gaps[kafka.PartitionFor(campaign, n)] })
	d.m.gapPartitions.Add(float64(len(gaps)))
	d.log.Info("dispatch: resumed live partitions whose copy had a gap; sent their sampled campaigns' budget rows again (reason gap)",
		"partitions", parts, "campaigns", campaigns, "gap_after", d.cfg.GapAfter)
}

// leaveWithoutRows sends, for every target whose fraction shrank since the
// consumer's last poll, a tombstone of each copied campaign without a budget
// row that leaves the sample: the target's budgets topic then says when its
// copy ended, as it does for the campaigns with a row (sendSampleChanges).
func (d *Dispatcher) leaveWithoutRows(last, routes []route, copied map[string]bool) {
	for _, rt := range routes {
		for _, was := range last {
			if was.s != rt.s || was.f <= rt.f {
				continue
			}
			for campaign := range copied {
				if _, ok := d.budgetRow(campaign); ok {
					continue
				}
				for k := contract.DarkCopies(campaign, rt.f); k < contract.DarkCopies(campaign, was.f); k++ {
					rt.s.budget([]byte(campaign), nil, k, contract.DarkRowUpdate)
				}
			}
		}
	}
}

// consumeBudgets keeps the live budgets table and sends every sampled
// campaign's rows.
func (d *Dispatcher) consumeBudgets(ctx context.Context, cl *kgo.Client) {
	var errs kafka.ErrorLog
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			errs.Note(d.log, "dispatch: reading live budgets", topic, p, err)
		})
		d.m.consumed.WithLabelValues("budgets").Add(float64(fs.NumRecords()))
		fs.EachRecord(func(r *kgo.Record) {
			campaign := string(r.Key)
			// Held while sending too: see sendSampleChanges.
			d.budgetsMu.Lock()
			defer d.budgetsMu.Unlock()
			if r.Value == nil {
				delete(d.budgets, campaign)
			} else {
				// A copy: r.Value points into the fetch's whole batch.
				d.budgets[campaign] = bytes.Clone(r.Value)
			}
			for _, rt := range *d.routes.Load() {
				for k := range contract.DarkCopies(campaign, rt.f) {
					rt.s.budget(r.Key, r.Value, k, contract.DarkRowUpdate)
				}
			}
		})
	}
}

// budgetRow returns the live budgets row of campaign.
func (d *Dispatcher) budgetRow(campaign string) ([]byte, bool) {
	d.budgetsMu.Lock()
	defer d.budgetsMu.Unlock()
	v, ok := d.budgets[campaign]
	return v, ok
}
