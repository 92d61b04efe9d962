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
	if got := Sum(reg, "x_total", "service", "budget"); got != 8 {
		t.Errorf("Sum over both sides = %v, want 8", got)
	}
}

func TestNativeQuantiles(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := promauto.With(reg).NewHistogram(prometheus.HistogramOpts{Name: "lat_seconds", Help: "l",
		Buckets: []float64{1}, NativeHistogramBucketFactor: 1.1})
	// 1..100 ms, then a second interval of 1 s observations only.
	for i := 1; i <= 100; i++ {
		h.Observe(float64(i) / 1000)
	}
	first := snapshot(t, reg)
	for range 10 {
		h.Observe(1)
	}
	for _, tc := range []struct {
		q, want float64
	}{{0.5, 0.050}, {0.99, 0.099}, {1, 0.100}} {
		got := first.Quantile(tc.q)
		if got < tc.want || got > tc.want*1.1 {
			t.Errorf("q%v = %v, want within 10%% above %v", tc.q, got, tc.want)
		}
	}
	second := snapshot(t, reg).Sub(first)
	if second.Count() != 10 {
		t.Fatalf("interval count %d, want 10", second.Count())
	}
	if got := second.Quantile(0.5); got < 1 || got > 1.1 {
		t.Errorf("interval median %v, want 1 s (within 10%%)", got)
	}
	if got := (Native{}).Quantile(0.5); got != 0 {
		t.Errorf("empty quantile %v, want 0", got)
	}
}

func snapshot(t *testing.T, g prometheus.Gatherer) Native {
	t.Helper()
	h, ok := Histogram(g, "lat_seconds")
	if !ok {
		t.Fatal("histogram not found")
	}
	return NativeOf(h)
}
