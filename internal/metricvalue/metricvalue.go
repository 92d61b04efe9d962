// Package metricvalue reads one series from a Prometheus gatherer: what
// tests assert on, what the sandbox watches its parts with, and where
// hotpair bench reads its latency quantiles.
package metricvalue

import (
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Get returns the value of the counter or gauge series name{labels}, where
// labels are name, value pairs that must all match (others may differ), and
// whether such a series exists. What gathered is used even when a part of a
// gatherer failed.
func Get(g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	m := series(g, name, labels)
	switch {
	case m == nil:
		return 0, false
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

// Sum returns the sum of the counter or gauge series name{labels} (labels
// as for Get), e.g. over the instances of a stage.
func Sum(g prometheus.Gatherer, name string, labels ...string) float64 {
	var total float64
	for _, m := range matching(g, name, labels) {
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}

// Histogram returns the histogram series name{labels} (labels as for Get).
func Histogram(g prometheus.Gatherer, name string, labels ...string) (*dto.Histogram, bool) {
	m := series(g, name, labels)
	if m == nil || m.Histogram == nil {
		return nil, false
	}
	return m.Histogram, true
}

func series(g prometheus.Gatherer, name string, labels []string) *dto.Metric {
	if ms := matching(g, name, labels); len(ms) > 0 {
		return ms[0]
	}
	return nil
}

// matching returns every series name{labels}.
func matching(g prometheus.Gatherer, name string, labels []string) []*dto.Metric {
	mfs, _ := g.Gather()
	var out []*dto.Metric
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
			out = append(out, m)
		}
	}
	return out
}

// Native is the positive part of a native (exponential) histogram: counts by
// bucket index, where bucket i holds observations in
// (2^((i-1)/2^Schema), 2^(i/2^Schema)]. Subtracting the histogram taken at
// the start of an interval gives the interval's distribution.
type Native struct {
	Schema int32
	Zero   uint64 // observations at or below the zero threshold
	Counts map[int32]uint64
}

// NativeOf reads the native buckets of h (empty when h has none).
func NativeOf(h *dto.Histogram) Native {
	n := Native{Schema: h.GetSchema(), Zero: h.GetZeroCount(), Counts: make(map[int32]uint64)}
	var idx int32
	var count int64
	d := h.GetPositiveDelta()
	for si, span := range h.GetPositiveSpan() {
		if si == 0 {
			idx = span.GetOffset()
		} else {
			idx += span.GetOffset()
		}
		for range span.GetLength() {
			if len(d) == 0 {
				return n
			}
			count += d[0]
			d = d[1:]
			n.Counts[idx] = uint64(count)
			idx++
		}
	}
	return n
}

// Sub returns the observations of n that are not in earlier, a snapshot of
// the same histogram taken before.
func (n Native) Sub(earlier Native) Native {
	out := Native{Schema: n.Schema, Zero: n.Zero - min(earlier.Zero, n.Zero), Counts: make(map[int32]uint64, len(n.Counts))}
	for i, c := range n.Counts {
		if e := earlier.Counts[i]; e < c {
			out.Counts[i] = c - e
		}
	}
	return out
}

// Count is the number of observations.
func (n Native) Count() uint64 {
	total := n.Zero
	for _, c := range n.Counts {
		total += c
	}
	return total
}

// Quantile returns the upper bound of the bucket that holds the q-quantile
// (0 < q ≤ 1): at most one bucket width (10% with hotpair's histograms) above
// the true value. It returns 0 when n is empty or the quantile is in the
// zero bucket.
func (n Native) Quantile(q float64) float64 {
	total := n.Count()
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	seen := n.Zero
	if seen >= rank {
		return 0
	}
	idx := make([]int32, 0, len(n.Counts))
	for i := range n.Counts {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		if seen += n.Counts[i]; seen >= rank {
			return math.Exp2(float64(i) / math.Exp2(float64(n.Schema)))
		}
	}
	return math.Exp2(float64(idx[len(idx)-1]) / math.Exp2(float64(n.Schema)))
}
