package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Drop reasons (the reason label of hotpair_dark_dispatch_dropped_total).
const (
	dropBufferFull     = "buffer_full"     // the target's producer buffer was full (slow or dead target)
	dropDeliveryFailed = "delivery_failed" // the target did not acknowledge within the delivery timeout
	dropNotAuthorized  = "not_authorized"  // the target's cluster refused the dispatcher's user (a missing ACL, TargetKafkaACLs)
	dropUndecodable    = "undecodable"     // a clone or repeat of a record the contract's codec rejects
	dropCloneID        = "clone_id"        // a clone's id would exceed 128 bytes
	dropOverRate       = "over_rate"       // a constant target's queue was full: live sent more than its rate
	dropTopicRefused   = "topic_refused"   // the topic lacks the target's prefix: refused unsent by the producer's guard (a bug)
)

type metrics struct {
	consumed *prometheus.CounterVec // topic
	liveRate prometheus.Gauge
	expected *prometheus.GaugeVec   // target
	fraction *prometheus.GaugeVec   // target
	paused   *prometheus.GaugeVec   // target, reason
	records  *prometheus.CounterVec // target, topic
	dropped  *prometheus.CounterVec // target, reason
	buffered *prometheus.GaugeVec   // target
	live     *prometheus.GaugeVec   // target
	dark     *prometheus.GaugeVec   // target
	targets  prometheus.Gauge
	// resumeSkipped and resumeFailed: see sender.resume.
	resumeSkipped, resumeFailed *prometheus.CounterVec // target
	// gapPartitions: see Dispatcher.sendGapRows.
	gapPartitions prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		consumed: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_dark_dispatch_consumed_total",
			Help: "Live records the dispatcher read, by topic (ad-events, budgets)."}, []string{"topic"}),
		liveRate: f.NewGauge(prometheus.GaugeOpts{Name: "hotpair_dark_dispatch_live_rate",
			Help: "Live ad events per second the dispatcher reads (10 s moving average)."}),
		expected: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_dispatch_expected_rate",
			Help: "Ad events per second a dark target should receive: what the sampling chose (10 s average), while paused the live rate × the last fraction known, or a constant target's rate; 0 when off."}, []string{"target"}),
		fraction: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_dispatch_fraction",
			Help: "Sampled fraction of campaigns a dark target receives (0 while paused or off; above 1 clones)."}, []string{"target"}),
		paused: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_dispatch_paused",
			Help: "1 while a dark target that should receive gets nothing, by reason."}, []string{"target", "reason"}),
		records: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_dark_dispatch_records_total",
			Help: "Records a dark target acknowledged, by its topic."}, []string{"target", "topic"}),
		dropped: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_dark_dispatch_dropped_total",
			Help: "Copies not delivered to a dark target, by reason."}, []string{"target", "reason"}),
		buffered: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_dispatch_buffered",
			Help: "Copies waiting for a dark target (producer buffer and constant queue)."}, []string{"target"}),
		live: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_dispatch_live_instances",
			Help: "Live aggregator instances a relative target's fraction divides by."}, []string{"target"}),
		dark: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_dispatch_dark_instances",
			Help: "Dark aggregator instances of a relative target."}, []string{"target"}),
		targets: f.NewGauge(prometheus.GaugeOpts{Name: "hotpair_dark_dispatch_targets",
			Help: "Dark targets the dispatcher sends to now."}),
		resumeSkipped: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_dark_dispatch_resume_skipped_total",
			Help: "Copies not sent because the dark target already had them: live records after the group's committed offset, copied before a restart or a rebalance."}, []string{"target"}),
		resumeFailed: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_dark_dispatch_resume_failures_total",
			Help: "Resumed live partitions for which the dispatcher could not read back what the dark target had (its copies after the committed offset may be sent twice)."}, []string{"target"}),
		gapPartitions: f.NewCounter(prometheus.CounterOpts{Name: "hotpair_dark_dispatch_gap_partitions_total",
			Help: "Live partitions resumed at a record that had waited at least gap_after (a restart, a crashed replica's partitions taken over): their sampled campaigns' budget rows were sent again with reason gap."}),
	}
}

// setPlan shows a target's plan; expected is its expected rate.
func (m *metrics) setPlan(p Plan, expected float64) {
	m.fraction.WithLabelValues(p.Name).Set(p.Fraction)
	m.expected.WithLabelValues(p.Name).Set(expected)
	m.live.WithLabelValues(p.Name).Set(float64(p.Live))
	m.dark.WithLabelValues(p.Name).Set(float64(p.Dark))
	for _, r := range PauseReasons() {
		v := 0.0
		if p.Paused == r {
			v = 1
		}
		m.paused.WithLabelValues(p.Name, string(r)).Set(v)
	}
}

// forget removes a deleted target's series.
func (m *metrics) forget(name string) {
	l := prometheus.Labels{"target": name}
	for _, v := range []*prometheus.GaugeVec{m.expected, m.fraction, m.paused, m.buffered, m.live, m.dark} {
		v.DeletePartialMatch(l)
	}
}
