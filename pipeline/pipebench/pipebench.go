// Package pipebench measures one side's pipeline end to end on an
// in-process kfake cluster: the throughput of the aggregator and the budget
// enforcer against a bare goka processor and a raw franz-go consumer reading
// the same records in the same run, and the per-hop delays and the window
// close → budget status latency under that load and idle.
// BenchmarkEndToEnd (go test ./pipeline) and `hotpair bench pipeline` both
// run it, so the figures in the docs and an operator's own are the same
// measurement.
package pipebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/devsec"
)

// ErrInvalidConfig is returned by Run for an unusable Config.
var ErrInvalidConfig = errors.New("pipebench: invalid config")

// Config is one measurement.
type Config struct {
	// Campaigns the ad events are spread over (default 10,000) and Events
	// (default 200,000). Fewer campaigns mean more events per window and
	// fewer SpendEvents per ad event.
	Campaigns, Events int
	// EventRate is how many ad events the workload holds per second of
	// event time (default Events over two minutes: 1,667/s for 200k). With
	// a window of 10 s, a campaign's events in a window — and so how many
	// SpendEvents, each a read, a changelog record and a status downstream,
	// the pipeline pays per ad event — follow from EventRate / Campaigns. A
	// live stream is read about as fast as it is written, so a stream that
	// loads the pipeline to its throughput has a rate near that throughput;
	// the default's is some 50 times lower: the backlog of a sparse stream,
	// where with 10k campaigns most ad events open a window of their own.
	EventRate float64
	// Partitions of every topic (default 8).
	Partitions int32
	// SteadyLoad is the rate of the steady phase, after the backlog, as a
	// fraction of the pipeline's backlog throughput (default 0.5); it lasts
	// SteadyFor (default 3s).
	SteadyLoad float64
	SteadyFor  time.Duration
	// Probes is how many single ad events are sent one at a time at the
	// end, for the idle latencies (default 100).
	Probes int
	// Timeout bounds each phase (default 5m).
	Timeout time.Duration
	// Secure runs the cluster with TLS and SASL/SCRAM on, every client
	// through them, as against a secured production cluster: what
	// security costs, against the same baselines.
	Secure bool
	// Floor also measures the record floor (see Floor) on the same backlog,
	// cluster and baseline, between bare goka and the pipeline.
	Floor bool
	// CPUProfile and Trace, when set, receive a CPU profile and an
	// execution trace of the pipeline's backlog phase.
	CPUProfile, Trace io.Writer
	// Logger receives progress at debug level and the pipeline's logs.
	Logger *slog.Logger
}

func (c *Config) applyDefaults() {
	if c.Campaigns == 0 {
		c.Campaigns = 10_000
	}
	if c.Events == 0 {
		c.Events = 200_000
	}
	if c.EventRate == 0 {
		c.EventRate = float64(c.Events) / span.Seconds()
	}
	if c.Partitions == 0 {
		c.Partitions = 8
	}
	if c.SteadyLoad == 0 {
		c.SteadyLoad = 0.5
	}
	if c.SteadyFor == 0 {
		c.SteadyFor = 3 * time.Second
	}
	if c.Probes == 0 {
		c.Probes = 100
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	switch {
	case c.Campaigns < 1 || c.Events < c.Campaigns:
		return fmt.Errorf("%w: need at least one campaign and at least as many events as campaigns (campaigns %d, events %d)",
			ErrInvalidConfig, c.Campaigns, c.Events)
	case !(c.EventRate >= 1) || c.EventRate > MaxEventRate:
		return fmt.Errorf("%w: EventRate must be in [1, %d] ad events per second of event time, got %v",
			ErrInvalidConfig, MaxEventRate, c.EventRate)
	case c.Partitions < 1 || c.Probes < 1 || c.SteadyFor < 0:
		return fmt.Errorf("%w: Partitions and Probes must be positive, SteadyFor not negative", ErrInvalidConfig)
	case c.SteadyLoad < 0 || c.SteadyLoad > 1:
		return fmt.Errorf("%w: SteadyLoad must be in (0,1], got %v", ErrInvalidConfig, c.SteadyLoad)
	}
	return nil
}

// Result is what one Run measured. Every rate is over the same records.
type Result struct {
	Campaigns  int   `json:"campaigns"`
	Events     int   `json:"events"`
	Partitions int32 `json:"partitions"`
	// EventRate is the workload's ad events per second of event time.
	EventRate float64 `json:"event_time_rate"`
	// Windows is how many SpendEvents the aggregator emitted for the
	// backlog, each applied by the budget enforcer exactly once;
	// WindowsPerEvent is Windows / Events, what drives the pipeline's cost
	// per ad event beyond bare goka's.
	Windows         int     `json:"windows"`
	WindowsPerEvent float64 `json:"windows_per_event"`
	// Wakeups is how many timer wake-ups the aggregator sent through its
	// loop topic meanwhile, to close windows of campaigns without newer events.
	Wakeups int `json:"wakeups"`
	// Raw is one franz-go consumer reading the ad events; Goka a goka
	// processor counting them per key with goka's own (sarama) producer;
	// GokaHotpair the same processor with hotpair's Kafka client layer;
	// Pipeline the aggregator and the budget enforcer, from the first ad
	// event consumed to the last window's status.
	Raw         Rate `json:"raw_franz_go"`
	Goka        Rate `json:"bare_goka"`
	GokaHotpair Rate `json:"bare_goka_hotpair_client"`
	Pipeline    Rate `json:"pipeline"`
	// Ratio is Pipeline / Goka events per second.
	Ratio float64 `json:"ratio_to_bare_goka"`
	// Floor is the record floor, with Config.Floor.
	Floor *RecordFloor `json:"record_floor,omitempty"`
	// Backlog are the latencies while the backlog drains at full speed
	// (saturated: the hops include queueing); Steady those while events
	// arrive at SteadyRate, a fraction of the backlog throughput (from a
	// sixth of the phase in to the end of its events); StreamEnd those from
	// then until every window of the phase is applied: the steady events
	// stop and the sentinels close every campaign's open window at once, a
	// burst of one SpendEvent per campaign as at a live window close; Idle
	// those of the probes, sent one at a time at the end.
	Backlog    Latencies `json:"backlog"`
	SteadyRate float64   `json:"steady_events_per_sec"`
	Steady     Latencies `json:"steady"`
	StreamEnd  Latencies `json:"stream_end"`
	Idle       Latencies `json:"idle"`
}

// Rate is a throughput: events over wall seconds, and over the CPU seconds
// the process used meanwhile; AllocsPerEvent is the heap objects the
// process allocated meanwhile per event, a figure that varies far less
// from run to run than the rates (both include the in-process Kafka
// broker).
type Rate struct {
	Seconds         float64 `json:"seconds"`
	EventsPerSec    float64 `json:"events_per_sec"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	EventsPerCPUSec float64 `json:"events_per_cpu_sec"`
	AllocsPerEvent  float64 `json:"allocs_per_event"`
}

// Latencies of one phase.
type Latencies struct {
	// IngestHop is ad event produced → aggregator received (not in the
	// backlog phase, where it is the backlog's age).
	IngestHop Quantiles `json:"ingest_hop"`
	// SpendHop is SpendEvent emitted → budget enforcer received.
	SpendHop Quantiles `json:"spend_hop"`
	// StatusHop is BudgetStatus emitted → a franz-go reader received.
	StatusHop Quantiles `json:"status_hop"`
	// CloseToStatus is a window's close on the aggregator's partition clock
	// → the budget enforcer's status for it.
	CloseToStatus Quantiles `json:"close_to_status"`
}

// Quantiles of one latency, in milliseconds.
type Quantiles struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// Run performs one measurement on a new in-process kfake cluster: it writes
// the workload, reads it with the raw consumer and the bare goka processors
// (and the record floor's, with Config.Floor), then runs the pipeline over it, probes it idle, and checks that every
// campaign's lifetime spend in the budget statuses is exact.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	log := cfg.Logger
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	var auth *contract.KafkaAuth
	if cfg.Secure {
		sec, err := devsec.New()
		if err != nil {
			return Result{}, fmt.Errorf("pipebench: %w", err)
		}
		opts, auth = append(opts, sec.ClusterOpts()...), sec.Auth()
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return Result{}, fmt.Errorf("pipebench: starting kfake: %w", err)
	}
	defer cluster.Close()
	c := kafka.Cluster{Brokers: cluster.ListenAddrs(), Auth: auth}
	res := Result{Campaigns: cfg.Campaigns, Events: cfg.Events, Partitions: cfg.Partitions, EventRate: cfg.EventRate}

	w := newWorkload(cfg.Campaigns, cfg.Events, cfg.Partitions, cfg.EventRate, cfg.SteadyFor, time.Now())
	log.Debug("writing the workload", "events", w.records(), "windows", w.windows)
	if err := kafka.EnsureTopics(ctx, c, cfg.Partitions, 1, kafka.TopicSpec{Name: topicAdEvents}); err != nil {
		return res, fmt.Errorf("pipebench: %w", err)
	}
	if err := w.produce(ctx, c); err != nil {
		return res, err
	}
	phase := func(name string, f func(context.Context) (Rate, error)) (Rate, error) {
		pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		log.Debug("phase", "name", name)
		r, err := f(pctx)
		if err != nil {
			return r, fmt.Errorf("pipebench: %s: %w", name, err)
		}
		return r, nil
	}
	n := w.records()
	if res.Raw, err = phase("raw franz-go consumer", func(ctx context.Context) (Rate, error) {
		return measure(n, func() error { _, err := ReadTopic(ctx, c.Brokers, c.Auth, topicAdEvents, n); return err })
	}); err != nil {
		return res, err
	}
	if res.Goka, err = phase("bare goka", func(ctx context.Context) (Rate, error) {
		return bareGoka(ctx, c, "bench-bare-goka", n, false)
	}); err != nil {
		return res, err
	}
	if res.GokaHotpair, err = phase("bare goka, hotpair client", func(ctx context.Context) (Rate, error) {
		return bareGoka(ctx, c, "bench-bare-goka-hotpair", n, true)
	}); err != nil {
		return res, err
	}
	if cfg.Floor {
		pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		f, err := floor(pctx, c, w, cfg.Partitions, false, res.Goka)
		cancel()
		if err != nil {
			return res, fmt.Errorf("pipebench: record floor: %w", err)
		}
		res.Floor = &f
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := runPipeline(pctx, cfg, c, w, &res); err != nil {
		return res, fmt.Errorf("pipebench: pipeline: %w", err)
	}
	res.Ratio = res.Pipeline.EventsPerSec / res.Goka.EventsPerSec
	return res, nil
}

// profile starts the configured CPU profile and trace; stop ends them.
func (c *Config) profile() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if c.CPUProfile != nil {
		if err := pprof.StartCPUProfile(c.CPUProfile); err != nil {
			return stop, fmt.Errorf("pipebench: cpu profile: %w", err)
		}
		stops = append(stops, pprof.StopCPUProfile)
	}
	if c.Trace != nil {
		if err := trace.Start(c.Trace); err != nil {
			stop()
			return func() {}, fmt.Errorf("pipebench: trace: %w", err)
		}
		stops = append(stops, trace.Stop)
	}
	return stop, nil
}
