package compare

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are the comparator's hotpair_dark_* series. Labels: target (a
// dark target's name), output, field, stage, metric, verdict; never a
// campaign.
type metrics struct {
	verdict        *prometheus.GaugeVec
	fieldVerdict   *prometheus.GaugeVec
	points         *prometheus.GaugeVec
	campaigns      *prometheus.GaugeVec
	missing        *prometheus.GaugeVec
	differences    *prometheus.GaugeVec
	rawRatio       *prometheus.GaugeVec
	noiseRatio     *prometheus.GaugeVec
	resourceRatio  *prometheus.GaugeVec
	lastComparison *prometheus.GaugeVec
	records        *prometheus.CounterVec
	badRecords     *prometheus.CounterVec
	readErrors     *prometheus.CounterVec
	zkErrors       prometheus.Counter
	known          map[string]bool
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		verdict: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_verdict",
			Help: "1 for a dark target's current verdict (pass, regression, insufficient data), 0 for the others."}, []string{"target", "verdict"}),
		fieldVerdict: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_field_regression",
			Help: "1 when an output field of a dark target regresses beyond the noise."}, []string{"target", "output", "field"}),
		points: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_compared_points",
			Help: "Compared (campaign, update) points of an output, dark vs live, within the horizon."}, []string{"target", "output"}),
		campaigns: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_compared_campaigns",
			Help: "Distinct sampled campaigns compared within the horizon."}, []string{"target"}),
		missing: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_missing_campaigns",
			Help: "Sampled campaigns whose live value of an output the dark target did not write, within the horizon."}, []string{"target", "output"}),
		differences: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_differences",
			Help: "Points with differences, dark vs live, not counted: held (counted after the hold) or withdrawn within the horizon (a gap in the copy explained them)."}, []string{"target", "state"}),
		rawRatio: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_raw_difference_ratio",
			Help: "Fraction of points where the dark target differs from its live source side."}, []string{"target", "output", "field"}),
		noiseRatio: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_noise_difference_ratio",
			Help: "Fraction of points where the primary differs from the standby, on the target's sampled campaigns."}, []string{"target", "output", "field"}),
		resourceRatio: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_resource_ratio",
			Help: "A dark instance's median figure over a live instance's, per stage and metric."}, []string{"target", "stage", "metric"}),
		lastComparison: f.NewGaugeVec(prometheus.GaugeOpts{Name: "hotpair_dark_last_comparison_timestamp_seconds",
			Help: "When a dark value of the target was last compared (Unix seconds)."}, []string{"target"}),
		records: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_dark_compare_records_total",
			Help: "Output and health records the comparator read, per pipeline (primary, standby, dark NAME)."}, []string{"pipeline"}),
		badRecords: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_dark_compare_bad_records_total",
			Help: "Records the comparator could not decode, per pipeline."}, []string{"pipeline"}),
		readErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "hotpair_dark_compare_read_errors_total",
			Help: "Failed reads of a pipeline's topics, per pipeline and reason (not_authorized: the comparator's user lacks Read on a topic; fetch_failed)."}, []string{"pipeline", "reason"}),
		zkErrors: f.NewCounter(prometheus.CounterOpts{Name: "hotpair_dark_compare_zk_errors_total",
			Help: "Failed reads of the dark targets from ZooKeeper."}),
		known: map[string]bool{},
	}
}

// update sets the gauges from a report; a target gone from it loses its series.
func (m *metrics) update(rep Report) {
	now := map[string]bool{}
	for _, t := range rep.Targets {
		now[t.Name] = true
		for _, v := range []Verdict{Pass, Regression, InsufficientData} {
			m.verdict.WithLabelValues(t.Name, v.String()).Set(b2f(t.Verdict == v))
		}
		m.campaigns.WithLabelValues(t.Name).Set(float64(t.Campaigns))
		for o, n := range t.Points {
			m.points.WithLabelValues(t.Name, o).Set(float64(n))
		}
		for o, n := range t.Missing {
			m.missing.WithLabelValues(t.Name, o).Set(float64(n))
		}
		m.differences.WithLabelValues(t.Name, "held").Set(float64(t.Held))
		m.differences.WithLabelValues(t.Name, "withdrawn").Set(float64(t.Withdrawn))
		for _, f := range t.Fields {
			m.fieldVerdict.WithLabelValues(t.Name, f.Output, f.Field).Set(b2f(f.Verdict == Regression))
			m.rawRatio.WithLabelValues(t.Name, f.Output, f.Field).Set(f.RawRate)
			m.noiseRatio.WithLabelValues(t.Name, f.Output, f.Field).Set(f.NoiseRate)
		}
		for _, r := range t.Resources.Rows {
			if r.Live > 0 {
				m.resourceRatio.WithLabelValues(t.Name, r.Stage, r.Metric).Set(r.Dark / r.Live)
			}
		}
		if !t.LastPoint.IsZero() {
			m.lastComparison.WithLabelValues(t.Name).Set(float64(t.LastPoint.UnixNano()) / 1e9)
		}
	}
	for name := range m.known {
		if !now[name] {
			for _, v := range []interface {
				DeletePartialMatch(prometheus.Labels) int
			}{m.verdict, m.fieldVerdict, m.points, m.campaigns, m.missing, m.differences, m.rawRatio, m.noiseRatio, m.resourceRatio, m.lastComparison} {
				v.DeletePartialMatch(prometheus.Labels{"target": name})
			}
		}
	}
	m.known = now
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
