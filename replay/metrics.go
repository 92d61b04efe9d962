package replay

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// playerMetrics are a player's metrics. The target label is the target as
// given (brokers/topic): a handful per player, never per key.
type playerMetrics struct {
	released     prometheus.Counter
	sent         *prometheus.CounterVec
	errors       *prometheus.CounterVec
	backpressure *prometheus.CounterVec
}

func newPlayerMetrics(reg prometheus.Registerer) *playerMetrics {
	f := promauto.With(reg)
	return &playerMetrics{
		released: f.NewCounter(prometheus.CounterOpts{
			Name: "hotpair_replay_released_records_total",
			Help: "Records the player released to all of its targets.",
		}),
		sent: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_replay_sent_records_total",
			Help: "Records a target acknowledged.",
		}, []string{"target"}),
		errors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_replay_send_errors_total",
			Help: "Records a target failed to take.",
		}, []string{"target"}),
		backpressure: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_replay_backpressure_seconds_total",
			Help: "Time the player waited for a target that could not keep up.",
		}, []string{"target"}),
	}
}

// recorderMetrics are a recorder's metrics.
type recorderMetrics struct {
	recorded prometheus.Counter
	filtered prometheus.Counter
	bytes    prometheus.Counter
}

func newRecorderMetrics(reg prometheus.Registerer) *recorderMetrics {
	f := promauto.With(reg)
	return &recorderMetrics{
		recorded: f.NewCounter(prometheus.CounterOpts{
			Name: "hotpair_replay_recorded_records_total",
			Help: "Records written to the recording.",
		}),
		filtered: f.NewCounter(prometheus.CounterOpts{
			Name: "hotpair_replay_record_filtered_total",
			Help: "Records consumed but left out by the recording's filters or window.",
		}),
		bytes: f.NewCounter(prometheus.CounterOpts{
			Name: "hotpair_replay_recorded_bytes_total",
			Help: "Key, value and header bytes of the records written.",
		}),
	}
}
