package metricvalue

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

func TestGet(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := promauto.With(reg).NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"service", "side"})
	c.WithLabelValues("budget", "primary").Add(3)
	c.WithLabelValues("budget", "standby").Add(5)
	promauto.With(reg).NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"}).Set(7)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
		ok     bool
	}{
		{"x_total", []string{"side", "standby"}, 5, true},
		{"x_total", []string{"service", "budget", "side", "primary"}, 3, true},
		{"x_total", []string{"side", "nowhere"}, 0, false},
		{"g", nil, 7, true},
		{"missing", nil, 0, false},
	} {
		if got, ok := Get(reg, tc.name, tc.labels...); got != tc.want || ok != tc.ok {
			t.Errorf("Get(%s %v) = %v %v, want %v %v", tc.name, tc.labels, got, ok, tc.want, tc.ok)
		}
	}
}
