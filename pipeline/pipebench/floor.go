package pipebench

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/kgoka"
	"github.com/hotpair/hotpair/statestore"
)

// FloorResult compares bare goka with the record floor of the pipeline on
// the same workload, in the same run.
type FloorResult struct {
	Campaigns int `json:"campaigns"`
	Events    int `json:"events"`
	// Fused: the floor of the two stages in one processor (see Floor).
	Fused bool        `json:"fused"`
	Goka  Rate        `json:"bare_goka"`
	Floor RecordFloor `json:"floor"`
}

// Sizes of the floor's records: those of the pipeline's for the workload
// (an aggregator state with one pane, a SpendEvent, a campaign state, a
// BudgetStatus).
const (
	floorWindowsState, floorSpend, floorCampaignState, floorStatus = 39, 267, 53, 173
)

// Floor measures what the pipeline's Kafka records alone cost on goka: two
// processors on hotpair's Kafka client doing, for cfg's workload, the
// record operations the aggregator and the budget enforcer do and nothing
// else — the first reads and decodes each ad event (the least an
// aggregator does) and writes its key's state, and passes a record on when
// the event starts a new window of its campaign;
// the second reads each, writes its key's state and emits an output, with
// records of the pipeline's sizes — against bare goka counting per key
// (Run's baseline), in the same run. No decoding, no windows, no metrics,
// no wake-ups: the ratio is a ceiling for the pipeline's on this workload.
//
// fused measures, instead, the floor of a design with both stages in one
// processor: its state holds both stages', and a new window's record and
// status are emitted from the ad event's callback, nothing read back — what
// fewer records per ad event would buy.
func Floor(ctx context.Context, cfg Config, fused bool) (FloorResult, error) {
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return FloorResult{}, err
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return FloorResult{}, fmt.Errorf("pipebench: starting kfake: %w", err)
	}
	defer cluster.Close()
	c := kafka.Cluster{Brokers: cluster.ListenAddrs()}
	res := FloorResult{Campaigns: cfg.Campaigns, Events: cfg.Events, Fused: fused}
	w := newWorkload(cfg.Campaigns, cfg.Events, cfg.Partitions, cfg.EventRate, cfg.SteadyFor, time.Now())
	if err := kafka.EnsureTopics(ctx, c, cfg.Partitions, 1, kafka.TopicSpec{Name: topicAdEvents}); err != nil {
		return res, fmt.Errorf("pipebench: %w", err)
	}
	if err := w.produce(ctx, c); err != nil {
		return res, err
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if res.Goka, err = bareGoka(pctx, c, "bench-bare-goka", w.records(), false); err != nil {
		return res, fmt.Errorf("pipebench: bare goka: %w", err)
	}
	if res.Floor, err = floor(pctx, c, w, cfg.Partitions, fused, res.Goka); err != nil {
		return res, fmt.Errorf("pipebench: floor: %w", err)
	}
	return res, nil
}

// RecordFloor is what the pipeline's records alone cost on goka (see
// Floor), measured by Run when Config.Floor is set.
type RecordFloor struct {
	Rate
	// Passed is how many records the first processor passed on to the
	// second: one per campaign and window of the backlog but each
	// campaign's first, the SpendEvents the pipeline emits for it less the
	// wake-ups that close each campaign's last window.
	Passed int `json:"passed"`
	// Ratio is the floor's events per second over bare goka's in the same
	// run: the most the pipeline's Ratio could reach on this workload
	// without a change in the records it reads and writes.
	Ratio float64 `json:"ratio_to_bare_goka"`
}

// floor runs the floor's processors over w's backlog, which must be all
// that topicAdEvents holds, on topics of its own, and compares it with
// bare goka's rate on the same backlog.
func floor(ctx context.Context, c kafka.Cluster, w *workload, partitions int32, fused bool, bareGoka Rate) (RecordFloor, error) {
	topics := []kafka.TopicSpec{{Name: "bench-floor-spend"}, {Name: "bench-floor-status"}}
	if err := kafka.EnsureTopics(ctx, c, partitions, 1, topics...); err != nil {
		return RecordFloor{}, err
	}
	n := w.records()
	var consumed, emitted, applied atomic.Int64
	var first atomic.Pointer[start]
	spend, status := make([]byte, floorSpend), make([]byte, floorStatus)
	stateSize, groups := floorWindowsState, 2
	if fused {
		stateSize, groups = floorWindowsState+floorCampaignState, 1
	}
	agg := goka.DefineGroup("bench-floor-agg",
		goka.Input(topicAdEvents, new(codec.Bytes), func(ctx goka.Context, msg any) {
			if consumed.Add(1) == 1 {
				first.Store(startNow())
			}
			ev, err := contract.DecodeAdEvent(msg.([]byte))
			if err != nil {
				ctx.Fail(err)
			}
			start := statestore.WindowStartMs(ev.TS.UnixMilli(), window.Milliseconds())
			old, _ := ctx.Value().([]byte)
			state := make([]byte, stateSize)
			binary.BigEndian.PutUint64(state, uint64(start))
			ctx.SetValue(state)
			if old != nil && int64(binary.BigEndian.Uint64(old)) != start {
				emitted.Add(1)
				ctx.Emit("bench-floor-spend", ctx.Key(), spend)
				if fused {
					ctx.Emit("bench-floor-status", ctx.Key(), status)
					applied.Add(1)
				}
			}
		}),
		goka.Output("bench-floor-spend", new(codec.Bytes)),
		goka.Output("bench-floor-status", new(codec.Bytes)),
		goka.Persist(new(codec.Bytes)),
	)
	budget := goka.DefineGroup("bench-floor-budget",
		goka.Input("bench-floor-spend", new(codec.Bytes), func(ctx goka.Context, _ any) {
			_ = ctx.Value()
			ctx.SetValue(make([]byte, floorCampaignState))
			ctx.Emit("bench-floor-status", ctx.Key(), status)
			applied.Add(1)
		}),
		goka.Output("bench-floor-status", new(codec.Bytes)),
		goka.Persist(new(codec.Bytes)),
	)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 2)
	running := 0
	for _, g := range []*goka.GroupGraph{agg, budget}[:groups] {
		sb, err := statestore.Config{Backend: statestore.BackendMemory}.Builder("bench", string(g.Group()), "", nil)
		if err != nil {
			return RecordFloor{}, err
		}
		opts := append(kgoka.Builders{ClientID: string(g.Group()), Auth: c.Auth, Replication: 1}.ProcessorOptions(),
			goka.WithStorageBuilder(sb), goka.WithLogger(quietLogger{}))
		proc, err := goka.NewProcessor(c.Brokers, g, opts...)
		if err != nil {
			return RecordFloor{}, err
		}
		running++
		go func() { stopped <- proc.Run(pctx) }()
	}
	defer func() {
		cancel()
		for range running {
			<-stopped
		}
	}()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for consumed.Load() < int64(n) || applied.Load() < emitted.Load() {
		select {
		case <-ctx.Done():
			return RecordFloor{}, fmt.Errorf("%d of %d events consumed, %d of %d records applied: %w",
				consumed.Load(), n, applied.Load(), emitted.Load(), ctx.Err())
		case err := <-stopped:
			running--
			return RecordFloor{}, fmt.Errorf("a processor stopped: %v", err)
		case <-t.C:
		}
	}
	r := first.Load().rate(n)
	return RecordFloor{Rate: r, Passed: int(emitted.Load()), Ratio: r.EventsPerSec / bareGoka.EventsPerSec}, nil
}
