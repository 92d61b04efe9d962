// Package metricvalue reads one series' value from a Prometheus gatherer:
// what tests assert on and what the sandbox watches its parts with.
package metricvalue

import "github.com/prometheus/client_golang/prometheus"

// Get returns the value of the counter or gauge series name{labels}, where
// labels are name, value pairs that must all match (others may differ), and
// whether such a series exists. What gathered is used even when a part of a
// gatherer failed.
func Get(g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	mfs, _ := g.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}
