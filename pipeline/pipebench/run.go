package pipebench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/pipeline"
	"github.com/hotpair/hotpair/statestore"
)

// runPipeline runs the aggregator and the budget enforcer with the default
// windows over the backlog, then probes them idle, and fills res.
func runPipeline(ctx context.Context, cfg Config, c kafka.Cluster, w *workload, res *Result) error {
	reg := prometheus.NewRegistry()
	p, err := pipeline.New(pipeline.Options{
		Brokers: c.Brokers, KafkaAuth: c.Auth, Side: contract.Primary, Instance: "bench",
		Stages:     []contract.Stage{contract.StageAggregator, contract.StageBudget},
		Partitions: cfg.Partitions, Replication: 1, CreateTopics: true,
		Storage: statestore.Config{Backend: statestore.BackendMemory},
		Window:  window, Lateness: lateness,
		Logger: cfg.Logger, Registerer: reg,
	})
	if err != nil {
		return err
	}
	// The reader starts first, so the topic must exist.
	statusTopic := contract.TopicsWithPrefix("").BudgetStatus
	if err := kafka.EnsureTopics(ctx, c, cfg.Partitions, 1, kafka.TopicSpec{Name: statusTopic, Compacted: true}); err != nil {
		return err
	}
	rd, err := newStatusReader(c, statusTopic)
	if err != nil {
		return err
	}
	defer rd.close()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(pctx) }()
	defer func() { cancel(); <-stopped }()

	m := metricsOf(reg)
	if err := m.await(ctx, func() bool { return m.get("hotpair_stage_events_total", contract.StageAggregator) > 0 }); err != nil {
		return fmt.Errorf("no ad event consumed: %w", err)
	}
	stop, err := cfg.profile()
	if err != nil {
		return err
	}
	from := startNow()
	// The backlog is through when every ad event is consumed and every
	// window of it emitted and applied by the budget enforcer.
	err = m.awaitWindows(ctx, w.records(), w.windows)
	stop()
	if err != nil {
		return fmt.Errorf("backlog: %w", err)
	}
	res.Pipeline = from.rate(w.records())
	res.Windows = int(m.get("hotpair_stage_outputs_total", contract.StageAggregator))
	res.WindowsPerEvent = float64(res.Windows) / float64(cfg.Events)
	res.Wakeups = int(m.get("hotpair_stage_wakeups_total", contract.StageAggregator))
	if late := m.get("hotpair_late_events_total", contract.StageAggregator); late > 0 {
		return fmt.Errorf("%v ad events were late: the backlog's windows were not all closed on the partition clock", late)
	}
	if _, err := awaitStatuses(ctx, m, rd); err != nil {
		return fmt.Errorf("backlog: %w", err)
	}
	backlog := m.snapshot()
	res.Backlog = backlog.latencies(snapshots{}, rd.hops(phaseBacklog))
	res.Backlog.IngestHop = Quantiles{} // the backlog's age, not a hop

	// Steady: events at a fraction of the backlog throughput.
	cl, err := kafka.NewProducer(c, "bench-probes", kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	// Its latencies are those observed from a sixth of the way in (past its
	// start, when the rate steps up from idle) to the end of its events, while
	// they keep coming; the end of the stream — the sentinels close every
	// campaign's open window at once, a burst of one SpendEvent per
	// campaign, as a live window close does — is measured on its own.
	rd.setPhase(phaseSettling)
	res.SteadyRate = cfg.SteadyLoad * res.Pipeline.EventsPerSec
	var settled, ending snapshots
	records, windows, err := w.produceSteady(ctx, cl, res.SteadyRate, cfg.SteadyFor,
		func() { settled = m.snapshot(); rd.setPhase(phaseSteady) },
		func() { ending = m.snapshot(); rd.setPhase(phaseEnd) })
	if err != nil {
		return err
	}
	res.Steady = ending.latencies(settled, rd.hops(phaseSteady))
	if err := m.awaitWindows(ctx, w.records()+records, res.Windows+windows); err != nil {
		return fmt.Errorf("steady phase: %w", err)
	}
	statuses, err := awaitStatuses(ctx, m, rd)
	if err != nil {
		return fmt.Errorf("steady phase: %w", err)
	}
	steady := m.snapshot()
	res.StreamEnd = steady.latencies(ending, rd.hops(phaseEnd))

	// Idle: one probe at a time, each awaited at the reader.
	rd.setPhase(phaseIdle)
	for i := range cfg.Probes {
		r := w.probe(i)
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("probe %d: %w", i, err)
		}
		if err := rd.await(ctx, string(r.Key)); err != nil {
			return fmt.Errorf("probe %d: no budget status: %w", i, err)
		}
	}
	res.Idle = m.snapshot().latencies(steady, rd.hops(phaseIdle))

	// Every status has reached the reader: spend is exact.
	if err := rd.awaitCount(ctx, statuses+cfg.Probes); err != nil {
		return fmt.Errorf("reading the budget statuses: %w", err)
	}
	return checkSpend(rd.latest(), w.truth())
}

// awaitStatuses waits until the reader has every status the budget
// enforcer wrote so far, so that a phase's status hops are all in it and
// none spills into the next (the idle probes' above all), and returns how
// many that is.
func awaitStatuses(ctx context.Context, m pipeMetrics, rd *statusReader) (int, error) {
	n := int(m.get("hotpair_stage_outputs_total", contract.StageBudget))
	if err := rd.awaitCount(ctx, n); err != nil {
		return 0, fmt.Errorf("reading the budget statuses: %w", err)
	}
	return n, nil
}

// pipeMetrics reads the pipeline's metrics.
type pipeMetrics struct{ g prometheus.Gatherer }

func metricsOf(g prometheus.Gatherer) pipeMetrics { return pipeMetrics{g} }

func (m pipeMetrics) get(name string, stage contract.Stage) float64 {
	v, _ := metricvalue.Get(m.g, name, "service", stage.String())
	return v
}

// at returns the metrics as gathered once now, for several reads: the
// registry is gathered once per poll, not once per value, so that the
// measurement costs the measured process little (the bare goka baseline
// counts with an atomic).
func (m pipeMetrics) at() pipeMetrics {
	mfs, err := m.g.Gather()
	return pipeMetrics{prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return mfs, err })}
}

// awaitWindows waits until the aggregator consumed records ad events and
// emitted windows SpendEvents, and the budget enforcer applied them all.
func (m pipeMetrics) awaitWindows(ctx context.Context, records, windows int) error {
	var agg, emitted, applied float64
	read := func() {
		s := m.at()
		agg = s.get("hotpair_stage_events_total", contract.StageAggregator)
		emitted = s.get("hotpair_stage_outputs_total", contract.StageAggregator)
		applied = s.get("hotpair_stage_events_total", contract.StageBudget)
	}
	err := m.await(ctx, func() bool {
		read()
		return int(agg) == records && int(emitted) >= windows && applied == emitted
	})
	if err != nil {
		read()
		return fmt.Errorf("%v of %d ad events consumed, %v of %d windows emitted, %v applied: %w",
			agg, records, emitted, windows, applied, err)
	}
	return nil
}

// await polls cond every 10 ms until it holds or ctx ends.
func (m pipeMetrics) await(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// snapshots are the latency histograms at one moment.
type snapshots struct {
	ingestHop, spendHop, closeToStatus metricvalue.Native
}

func (m pipeMetrics) snapshot() snapshots {
	get := func(name string, stage contract.Stage) metricvalue.Native {
		h, ok := metricvalue.Histogram(m.g, name, "service", stage.String())
		if !ok {
			return metricvalue.Native{}
		}
		return metricvalue.NativeOf(h)
	}
	return snapshots{
		ingestHop:     get("hotpair_stage_hop_lag_seconds", contract.StageAggregator),
		spendHop:      get("hotpair_stage_hop_lag_seconds", contract.StageBudget),
		closeToStatus: get("hotpair_window_output_latency_seconds", contract.StageBudget),
	}
}

// latencies are those observed since earlier.
func (s snapshots) latencies(earlier snapshots, statusHops []time.Duration) Latencies {
	return Latencies{
		IngestHop:     quantilesOf(s.ingestHop.Sub(earlier.ingestHop)),
		SpendHop:      quantilesOf(s.spendHop.Sub(earlier.spendHop)),
		CloseToStatus: quantilesOf(s.closeToStatus.Sub(earlier.closeToStatus)),
		StatusHop:     exactQuantiles(statusHops),
	}
}

func quantilesOf(n metricvalue.Native) Quantiles {
	return Quantiles{N: int(n.Count()), P50Ms: n.Quantile(0.5) * 1000, P99Ms: n.Quantile(0.99) * 1000}
}

func exactQuantiles(d []time.Duration) Quantiles {
	if len(d) == 0 {
		return Quantiles{}
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := min(len(d)-1, int(q*float64(len(d))))
		return float64(d[i]) / float64(time.Millisecond)
	}
	return Quantiles{N: len(d), P50Ms: at(0.5), P99Ms: at(0.99)}
}

const (
	phaseBacklog = iota
	phaseSettling
	phaseSteady
	phaseEnd
	phaseIdle
	phases
)

// statusReader consumes budget-status as a read-side view would: it keeps
// each campaign's latest status, each record's hop (receive time − the
// record's timestamp, when the budget enforcer emitted it) by phase, and
// tells awaiting probes when their status arrived.
type statusReader struct {
	cl   *kgo.Client
	done chan struct{}

	mu     sync.Mutex
	cond   *sync.Cond
	phase  int
	hopsBy [phases][]time.Duration
	last   map[string][]byte
	count  int
}

func newStatusReader(c kafka.Cluster, topic string) (*statusReader, error) {
	cl, err := kafka.NewClient(c, "bench-status-reader", kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	r := &statusReader{cl: cl, done: make(chan struct{}), last: make(map[string][]byte)}
	r.cond = sync.NewCond(&r.mu)
	go r.run()
	return r, nil
}

func (r *statusReader) run() {
	defer close(r.done)
	for {
		fs := r.cl.PollFetches(context.Background())
		if fs.IsClientClosed() {
			return
		}
		now := time.Now()
		r.mu.Lock()
		fs.EachRecord(func(rec *kgo.Record) {
			r.hopsBy[r.phase] = append(r.hopsBy[r.phase], now.Sub(rec.Timestamp))
			r.last[string(rec.Key)] = rec.Value
			r.count++
		})
		r.cond.Broadcast()
		r.mu.Unlock()
	}
}

func (r *statusReader) close() {
	r.cl.Close()
	<-r.done
	r.mu.Lock()
	r.count = -1 // wakes awaiters for good
	r.cond.Broadcast()
	r.mu.Unlock()
}

func (r *statusReader) setPhase(p int) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

func (r *statusReader) hops(phase int) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.hopsBy[phase])
}

func (r *statusReader) latest() map[string][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]byte, len(r.last))
	for k, v := range r.last {
		if !strings.HasPrefix(k, "sentinel-") {
			out[k] = v
		}
	}
	return out
}

// await waits until a status of key arrived.
func (r *statusReader) await(ctx context.Context, key string) error {
	return r.wait(ctx, func() bool { _, ok := r.last[key]; return ok })
}

// awaitCount waits until n statuses arrived.
func (r *statusReader) awaitCount(ctx context.Context, n int) error {
	return r.wait(ctx, func() bool { return r.count >= n })
}

func (r *statusReader) wait(ctx context.Context, cond func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for !cond() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if r.count < 0 {
			return fmt.Errorf("status reader closed")
		}
		r.cond.Wait()
	}
	return nil
}
