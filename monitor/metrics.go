package monitor

import (
	"github.com/hotpair/hotpair/contract"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are the monitor's Prometheus metrics (DESIGN §6). Labels are only
// service, side, role and reason. Every replica exports the decision it
// holds (the leader's own, a follower's mirror of the published one);
// switches and publications are counted by the replica that wrote them.
type metrics struct {
	activeSide    *prometheus.GaugeVec // service, side
	degraded      *prometheus.GaugeVec // service
	switches      *prometheus.CounterVec
	overrideOn    *prometheus.GaugeVec // service
	stagger       *prometheus.GaugeVec // service
	epoch         *prometheus.GaugeVec // service
	sideHealthy   *prometheus.GaugeVec // service, side
	sideReason    *prometheus.GaugeVec // service, side, reason
	sideQPS       *prometheus.GaugeVec // service, side
	sideLag       *prometheus.GaugeVec // service, side
	sideBehind    *prometheus.GaugeVec // service, side
	sideInstances *prometheus.GaugeVec // service, side

	leader         prometheus.Gauge
	zkConnected    prometheus.Gauge
	publications   *prometheus.CounterVec // service
	publishErrors  *prometheus.CounterVec // service, reason
	lastPublished  *prometheus.GaugeVec   // service
	evaluations    prometheus.Counter
	lastEvaluation prometheus.Gauge
	steps          prometheus.CounterFunc

	samples        *prometheus.CounterVec // side
	badSamples     *prometheus.CounterVec // side, reason
	consumerErrors *prometheus.CounterVec // side

	// The decision record (record.go).
	decisionsRecorded *prometheus.CounterVec // service, reason
	decisionLast      *prometheus.GaugeVec   // service, reason
	recordWrites      *prometheus.CounterVec // side
	recordWriteErrors *prometheus.CounterVec // side, reason
	recordReads       *prometheus.CounterVec // side
	recordBad         *prometheus.CounterVec // side, reason
	recordReadErrors  *prometheus.CounterVec // side
}

func newMetrics(reg prometheus.Registerer, steps func() float64) *metrics {
	f := promauto.With(reg)
	return &metrics{
		activeSide: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_service_active_side",
			Help: "1 for the side the read side should use for the service, 0 for the other."}, []string{"service", "side"}),
		degraded: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_service_degraded",
			Help: "1 while both sides of the service are unhealthy (the active side stays)."}, []string{"service"}),
		switches: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_switches_total",
			Help: "Changes of the active side this replica published, by the side switched to and why (failover, return, override, first)."}, []string{"service", "side", "reason"}),
		overrideOn: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_service_override_active",
			Help: "1 while an operator override decides the service's active side."}, []string{"service"}),
		stagger: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_service_stagger_violation",
			Help: "1 while both sides of the service run a build newer than the stagger period."}, []string{"service"}),
		epoch: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_service_epoch",
			Help: "Epoch of the service's selection: the number of changes of its active side."}, []string{"service"}),
		sideHealthy: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_side_healthy",
			Help: "1 when the last evaluation window found the side of the service healthy."}, []string{"service", "side"}),
		sideReason: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_side_unhealthy_reason",
			Help: "1 for each rule the side of the service failed in the last window."}, []string{"service", "side", "reason"}),
		sideQPS: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_side_qps",
			Help: "Input events per second of the side of the service over the last window."}, []string{"service", "side"}),
		sideLag: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_side_lag_p99_seconds",
			Help: "Merged p99 end-to-end event lag of the side of the stage over the last window: for a service, receive time minus the SpendEvent's window_end + allowed lateness; for the aggregator (service=\"aggregator\"), minus the ad event's ts."}, []string{"service", "side"}),
		sideBehind: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_side_catching_up",
			Help: "1 while the side of the stage is behind: its p99 lag, or its aggregator's, above rules.catch_up_lag (its grace clock does not run)."}, []string{"service", "side"}),
		sideInstances: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_side_instances",
			Help: "Instances of the side of the service that reported within the heartbeat timeout."}, []string{"service", "side"}),

		leader: f.NewGauge(prometheus.GaugeOpts{Name: "hotpair_monitor_leader",
			Help: "1 while this monitor replica is the elected leader (the only writer)."}),
		zkConnected: f.NewGauge(prometheus.GaugeOpts{Name: "hotpair_monitor_zk_connected",
			Help: "1 while this replica has a ZooKeeper session."}),
		publications: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_publications_total",
			Help: "Selections this replica wrote to ZooKeeper."}, []string{"service"}),
		publishErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_publish_errors_total",
			Help: "Selection writes that failed, by reason: fenced (this replica no longer leads), version_conflict, acl, zk (ZooKeeper unreachable or erroring)."},
			[]string{"service", "reason"}),
		lastPublished: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_monitor_last_publication_timestamp_seconds",
			Help: "When this replica last wrote the service's selection."}, []string{"service"}),
		evaluations: f.NewCounter(prometheus.CounterOpts{Name: "hotpair_monitor_evaluations_total",
			Help: "Evaluation windows closed."}),
		lastEvaluation: f.NewGauge(prometheus.GaugeOpts{Name: "hotpair_monitor_last_evaluation_timestamp_seconds",
			Help: "When the last evaluation window closed."}),
		steps: f.NewCounterFunc(prometheus.CounterOpts{Name: "hotpair_monitor_aggregation_steps_total",
			Help: "Aggregation steps: exactly one per health sample handed to the windows (never fed by the monitor's own output)."}, steps),

		samples: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_samples_total",
			Help: "Health samples read, by the cluster (side) they came from."}, []string{"side"}),
		badSamples: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_bad_samples_total",
			Help: "Health samples skipped as bad, by side and reason."}, []string{"side", "reason"}),
		consumerErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_consumer_errors_total",
			Help: "Errors reading hotpair-health, by the cluster (side)."}, []string{"side"}),

		decisionsRecorded: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_decisions_recorded_total",
			Help: "Entries this replica appended to the decision record (as leader), by service and reason: the switch's cause (failover, return, override, initial), degraded_on/off, override_on/off, stagger_on/off, window."},
			[]string{"service", "reason"}),
		decisionLast: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_decision_last_timestamp_seconds",
			Help: "When the latest decision of each reason happened, as read from the decision record (the same on every replica, after any restart): for Grafana annotations with 'series value as timestamp'."},
			[]string{"service", "reason"}),
		recordWrites: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_record_writes_total",
			Help: "Decision entries a cluster acknowledged, by the cluster (side)."}, []string{"side"}),
		recordWriteErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_record_write_errors_total",
			Help: "Decision entries lost for one cluster (the other keeps its copy), by side and reason: buffer_full, delivery_failed."},
			[]string{"side", "reason"}),
		recordReads: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_record_entries_read_total",
			Help: "Decision entries read back from the record, by the cluster (side)."}, []string{"side"}),
		recordBad: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_record_bad_entries_total",
			Help: "Values of the decision record skipped, by side and reason: invalid, unknown_version."}, []string{"side", "reason"}),
		recordReadErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_monitor_record_read_errors_total",
			Help: "Errors reading the decision record, by the cluster (side)."}, []string{"side"}),
	}
}

// initCounters exports the switch, publish-error and decision-record error
// counters at zero, so that the alerts' increase() sees the first switch or
// error instead of a series that appears at 1.
func (m *metrics) initCounters(services []contract.Service) {
	for _, svc := range services {
		for _, side := range contract.Sides() {
			for _, kind := range []string{"failover", "return", "override"} {
				m.switches.WithLabelValues(svc.String(), side.String(), kind)
			}
		}
		for _, reason := range []string{"fenced", "version_conflict", "acl", "zk"} {
			m.publishErrors.WithLabelValues(svc.String(), reason)
		}
	}
	for _, side := range contract.Sides() {
		for _, reason := range []string{"buffer_full", "delivery_failed"} {
			m.recordWriteErrors.WithLabelValues(side.String(), reason)
		}
		for _, reason := range []string{"invalid", "unknown_version"} {
			m.recordBad.WithLabelValues(side.String(), reason)
		}
	}
}
