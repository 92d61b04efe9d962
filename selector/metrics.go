package selector

import (
	"github.com/hotpair/hotpair/contract"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are the Selector's metrics.
type metrics struct {
	connected   prometheus.Gauge
	expirations prometheus.Counter
	isDefault   *prometheus.GaugeVec
	active      *prometheus.GaugeVec
	epoch       *prometheus.GaugeVec
	switches    *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	readErrors  *prometheus.CounterVec
}

// newMetrics registers the Selector's metrics; age(svc) is evaluated at
// every scrape.
func newMetrics(reg prometheus.Registerer, services []contract.Service, age func(contract.Service) float64) *metrics {
	f := promauto.With(reg)
	m := &metrics{
		connected: f.NewGauge(prometheus.GaugeOpts{
			Name: "hotpair_selector_zk_connected",
			Help: "1 while the selector has a ZooKeeper session, else 0.",
		}),
		expirations: f.NewCounter(prometheus.CounterOpts{
			Name: "hotpair_selector_zk_session_expirations_total",
			Help: "ZooKeeper sessions of the selector that expired (watches were set again on the new session).",
		}),
		isDefault: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotpair_selector_default",
			Help: "1 while the service answers the configured default side because no selection was read from ZooKeeper yet.",
		}, []string{"service"}),
		active: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotpair_selector_active",
			Help: "1 for the side the selector answers for the service, 0 for the other.",
		}, []string{"service", "side"}),
		epoch: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotpair_selector_epoch",
			Help: "Epoch of the selection in the snapshot (-1 while default).",
		}, []string{"service"}),
		switches: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_selector_switches_total",
			Help: "Changes of the active side the selector applied.",
		}, []string{"service"}),
		rejected: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_selector_znode_rejected_total",
			Help: "Selection znode contents ignored (the snapshot kept its side): reason malformed or deleted.",
		}, []string{"service", "reason"}),
		readErrors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_selector_zk_read_errors_total",
			Help: "Failed reads of a selection znode while the session was up (retried with backoff).",
		}, []string{"service"}),
	}
	for _, svc := range services {
		name := svc.String()
		f.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "hotpair_selector_snapshot_age_seconds",
			Help:        "Seconds since the service's snapshot was last known to match ZooKeeper: 0 while connected with a watch on a valid selection; grows while disconnected, before the first read, and while the znode is malformed or missing.",
			ConstLabels: prometheus.Labels{"service": name},
		}, func() float64 { return age(svc) })
		m.rejected.WithLabelValues(name, "malformed")
		m.rejected.WithLabelValues(name, "deleted")
		m.readErrors.WithLabelValues(name)
		m.switches.WithLabelValues(name)
	}
	return m
}

// setSide updates the per-service gauges for a snapshot entry.
func (m *metrics) setSide(svc contract.Service, side contract.Side, epoch int64, isDefault bool) {
	name := svc.String()
	for _, s := range []contract.Side{contract.Primary, contract.Standby} {
		v := 0.0
		if s == side {
			v = 1
		}
		m.active.WithLabelValues(name, s.String()).Set(v)
	}
	m.epoch.WithLabelValues(name).Set(float64(epoch))
	d := 0.0
	if isDefault {
		d = 1
	}
	m.isDefault.WithLabelValues(name).Set(d)
}

// viewsMetrics are the metrics of Views.
type viewsMetrics struct {
	fallbacks   [contract.NumServices + 1][3]prometheus.Counter // [service][wanted side]
	misses      [contract.NumServices + 1]prometheus.Counter
	records     [3][contract.NumServices + 1]prometheus.Counter // [side][service]
	fetchErrors [3]prometheus.Counter
	badRecords  *prometheus.CounterVec
}

func newViewsMetrics(reg prometheus.Registerer, v *Views) *viewsMetrics {
	f := promauto.With(reg)
	fallbacks := f.NewCounterVec(prometheus.CounterOpts{
		Name: "hotpair_view_fallbacks_total",
		Help: "Values answered from the other side because the wanted side (label side) had no value for the campaign yet.",
	}, []string{"service", "side"})
	misses := f.NewCounterVec(prometheus.CounterOpts{
		Name: "hotpair_view_misses_total",
		Help: "Lookups of a campaign that neither side has a value for.",
	}, []string{"service"})
	records := f.NewCounterVec(prometheus.CounterOpts{
		Name: "hotpair_view_records_total",
		Help: "Records consumed into the views, bad ones and tombstones included.",
	}, []string{"side", "topic"})
	fetchErrors := f.NewCounterVec(prometheus.CounterOpts{
		Name: "hotpair_view_fetch_errors_total",
		Help: "Errors fetching from the side's cluster (the consumer retries on its own).",
	}, []string{"side"})
	m := &viewsMetrics{
		badRecords: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hotpair_view_bad_records_total",
			Help: "Records skipped because they do not decode (the view keeps the previous value).",
		}, []string{"side", "topic", "reason"}),
	}
	reg.MustRegister(newLagCollector(v))
	for _, side := range []contract.Side{contract.Primary, contract.Standby} {
		m.fetchErrors[side] = fetchErrors.WithLabelValues(side.String())
		f.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "hotpair_view_end_offsets_age_seconds",
			Help:        "Seconds since the side's end offsets were last measured; grows while its cluster is unreachable.",
			ConstLabels: prometheus.Labels{"side": side.String()},
		}, func() float64 { return v.sides[side].lag.measuredAge(v.cfg.now()).Seconds() })
	}
	for _, svc := range contract.Services() {
		m.misses[svc] = misses.WithLabelValues(svc.String())
		for _, side := range []contract.Side{contract.Primary, contract.Standby} {
			m.fallbacks[svc][side] = fallbacks.WithLabelValues(svc.String(), side.String())
			m.records[side][svc] = records.WithLabelValues(side.String(), contract.TopicsWithPrefix(v.cfg.prefix).Output(svc.Stage()))
		}
	}
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hotpair_view_campaigns",
		Help: "Campaign ids the views hold values for, on either side.",
	}, func() float64 { return float64(v.keys.len()) })
	return m
}

// retrieverMetrics are the metrics of a Retriever.
type retrieverMetrics struct {
	requests   prometheus.Counter
	tagInvalid [2]prometheus.Counter // [0] missing, [1] malformed
	serve      prometheus.Counter
	capped     prometheus.Counter
}

func newRetrieverMetrics(reg prometheus.Registerer) *retrieverMetrics {
	f := promauto.With(reg)
	tags := f.NewCounterVec(prometheus.CounterOpts{
		Name: "hotpair_retriever_tag_fallbacks_total",
		Help: "Requests answered from the retriever's own snapshot because their tag was missing or malformed (reason).",
	}, []string{"reason"})
	cands := f.NewCounterVec(prometheus.CounterOpts{
		Name: "hotpair_retriever_candidates_total",
		Help: "Candidate campaigns retrieved, by outcome: serve or capped (filtered out).",
	}, []string{"outcome"})
	return &retrieverMetrics{
		requests: f.NewCounter(prometheus.CounterOpts{
			Name: "hotpair_retriever_requests_total",
			Help: "Retrieval requests answered.",
		}),
		tagInvalid: [2]prometheus.Counter{tags.WithLabelValues("missing"), tags.WithLabelValues("malformed")},
		serve:      cands.WithLabelValues("serve"),
		capped:     cands.WithLabelValues("capped"),
	}
}
