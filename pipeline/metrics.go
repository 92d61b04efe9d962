package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// lagBuckets are the bounds, in seconds, of the lag histograms.
var lagBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// metrics of one Pipeline. Labels: service (the stage), side, role, reason.
type metrics struct {
	events       *prometheus.CounterVec
	lag          *prometheus.HistogramVec
	hopLag       *prometheus.HistogramVec
	outputDelay  *prometheus.HistogramVec
	deadLetters  *prometheus.CounterVec
	duplicates   *prometheus.CounterVec
	lateEvents   *prometheus.CounterVec
	outputs      *prometheus.CounterVec
	restarts     *prometheus.CounterVec
	consumeErrs  *prometheus.CounterVec
	paused       *prometheus.GaugeVec
	rateLimit    *prometheus.GaugeVec
	partitions   *prometheus.GaugeVec
	samples      *prometheus.CounterVec
	sampleErrors *prometheus.CounterVec
	wakeups      *prometheus.CounterVec
	pendingWakes *prometheus.GaugeVec
	refused      *prometheus.CounterVec
}

// latencyBuckets are the classic buckets of the latency histograms, fine
// where the goals are (tens of milliseconds). They are native histograms as
// well (buckets 10% wide), which a Prometheus with native histograms enabled
// scrapes instead, and from which hotpair bench reads its quantiles.
var latencyBuckets = []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30, 60, 300}

const nativeBucketFactor = 1.1

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	stage := []string{"service", "side", "role"}
	return &metrics{
		events: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_stage_events_total",
			Help: "Input records received by a stage (ad events for the aggregator, spend events for the services), good or bad.",
		}, stage),
		lag: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hotpair_stage_event_lag_seconds",
			Help: "End-to-end event lag where a stage receives a record: receive time minus the AdEvent's ts (aggregator), " +
				"or minus the SpendEvent's due_at, its window_end + allowed lateness (services). The monitor judges this one.",
			Buckets: lagBuckets,
		}, stage),
		hopLag: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hotpair_stage_hop_lag_seconds",
			Help: "Per-hop lag where a stage receives a record: receive time minus the SpendEvent's emitted_at (services: the " +
				"aggregator → service hop) or the ad event record's Kafka timestamp (aggregator: the ingest hop). It pinpoints a " +
				"slow hop; it is blind to a late aggregator.",
			Buckets:                     latencyBuckets,
			NativeHistogramBucketFactor: nativeBucketFactor,
		}, stage),
		outputDelay: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hotpair_window_output_latency_seconds",
			Help: "From a spend window's close (the moment its end plus the allowed lateness passed on the aggregator's " +
				"partition clock) to the service's output for it.",
			Buckets:                     latencyBuckets,
			NativeHistogramBucketFactor: nativeBucketFactor,
		}, stage),
		deadLetters: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_dead_letters_total",
			Help: "Bad records sent to the dead-letter topic, by reason.",
		}, append(stage, "reason")),
		duplicates: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_duplicates_total",
			Help: "Records already applied (a SpendEvent id seen before, an ad event redelivered) that changed nothing.",
		}, stage),
		lateEvents: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_late_events_total",
			Help: "Ad events that arrived after their window was emitted; each is emitted as its own late SpendEvent.",
		}, stage),
		outputs: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_stage_outputs_total",
			Help: "Records a stage emitted to its output topic.",
		}, stage),
		restarts: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_stage_restarts_total",
			Help: "Times a stage's goka processor failed and was rebuilt by its supervisor.",
		}, stage),
		consumeErrs: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_stage_consume_errors_total",
			Help: "Errors goka's consumer met reading a stage's input or loop partitions, by reason: not_authorized " +
				"(a missing Read ACL: that partition is not read at all) or fetch_failed. goka goes on without failing.",
		}, append(stage, "reason")),
		paused: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotpair_stage_paused",
			Help: "1 while a stage is paused (stops consuming) by an operator.",
		}, stage),
		rateLimit: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotpair_stage_rate_limit",
			Help: "The most input records per second a stage takes while an operator caps it (0: no cap).",
		}, stage),
		partitions: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotpair_stage_partitions",
			Help: "Input partitions assigned to this instance of a stage.",
		}, stage),
		samples: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_health_samples_total",
			Help: "Health samples written to the health topic.",
		}, stage),
		sampleErrors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_health_sample_errors_total",
			Help: "Health samples that could not be written.",
		}, stage),
		wakeups: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_stage_wakeups_total",
			Help: "Timer wake-ups sent to a stage's loop topic (windows closing, campaign midnights).",
		}, stage),
		pendingWakes: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotpair_stage_pending_wakeups",
			Help: "Keys of this instance with a pending timer wake-up.",
		}, stage),
		refused: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_pipeline_refused_records_total",
			Help: "Records a dark pipeline's producers refused, unsent, because their topic lacks the dark prefix (always 0 unless there is a bug).",
		}, []string{"topic"}),
	}
}
