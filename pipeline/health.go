package pipeline

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sampler accumulates what one stage instance received during one sample
// interval: events, their lag, and the partitions assigned to it.
type sampler struct {
	mu          sync.Mutex
	windowStart time.Time
	events      int64
	lag         contract.LagHistogram
	lagMax      int64
	deadLetters int64
	partitions  []int32
}

// received counts one input record, good or bad.
func (s *sampler) received() {
	s.mu.Lock()
	s.events++
	s.mu.Unlock()
}

// deadLettered counts one record sent to the dead-letter topic.
func (s *sampler) deadLettered() {
	s.mu.Lock()
	s.deadLetters++
	s.mu.Unlock()
}

// lagged records the lag of one good input record.
func (s *sampler) lagged(lag time.Duration) {
	ms := lag.Milliseconds()
	s.mu.Lock()
	s.lag.Observe(ms)
	s.lagMax = max(s.lagMax, ms)
	s.mu.Unlock()
}

// assigned records a new partition assignment of the stage's input topic
// and returns its partitions, sorted.
func (s *sampler) assigned(a goka.Assignment) []int32 {
	ps := make([]int32, 0, len(a))
	for p := range a {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	s.mu.Lock()
	s.partitions = ps
	s.mu.Unlock()
	return slices.Clone(ps)
}

// take returns the sample of the interval ending at now and starts the next.
func (s *sampler) take(now time.Time, base contract.HealthSample) contract.HealthSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.windowStart.IsZero() || !now.After(s.windowStart) {
		s.windowStart = now.Add(-time.Millisecond)
	}
	out := base
	out.V = contract.SchemaVersion
	out.Partitions = slices.Clone(s.partitions)
	if out.Partitions == nil {
		out.Partitions = []int32{}
	}
	out.WindowStart, out.WindowEnd = s.windowStart.UTC(), now.UTC()
	out.Events, out.LagMs, out.LagMsMax, out.DeadLetters = s.events, s.lag, s.lagMax, s.deadLetters
	s.windowStart, s.events, s.lag, s.lagMax, s.deadLetters = now, 0, contract.LagHistogram{}, 0, 0
	return out
}

// sampleLoop writes the stage's HealthSample every interval to the health
// topic of its own cluster until ctx ends. It runs whatever state the
// processor is in — stalled, recovering or being rebuilt — because those are
// exactly the states the monitor must see.
func (st *stage) sampleLoop(ctx context.Context) {
	t := time.NewTicker(st.p.opts.SampleInterval)
	defer t.Stop()
	st.sampler.take(time.Now(), contract.HealthSample{}) // start the first interval now
	st.resources.take()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			st.writeSample(ctx, st.sampler.take(now, st.sampleBase()))
		}
	}
}

func (st *stage) sampleBase() contract.HealthSample {
	o := st.p.opts
	return contract.HealthSample{
		Service: st.name, Side: o.Side, Role: o.Role, Instance: o.Instance, Build: o.Build,
		TopicPartitions: o.Partitions, Resources: st.resources.take(),
	}
}

func (st *stage) writeSample(ctx context.Context, s contract.HealthSample) {
	b, err := contract.Encode(s)
	if err != nil {
		st.p.log.Error("encoding health sample", "service", st.name, "err", err)
		return
	}
	rec := &kgo.Record{Topic: st.p.topics.Health, Key: []byte(s.Key()), Value: b}
	st.p.client.TryProduce(ctx, rec, func(_ *kgo.Record, err error) {
		if err != nil {
			st.m.sampleErrors.Inc()
			st.p.log.Warn("writing health sample", "service", st.name, "err", err)
			return
		}
		st.m.samples.Inc()
	})
}
