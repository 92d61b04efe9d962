package replay

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric names verify reads from a pipeline's /metrics.
const (
	metricStageEvents     = "hotpair_stage_events_total"
	metricStageLag        = "hotpair_stage_event_lag_seconds"
	metricStagePartitions = "hotpair_stage_partitions"
	metricStageOutputs    = "hotpair_stage_outputs_total"
	metricPendingWakes    = "hotpair_stage_pending_wakeups"
	metricDeadLetters     = "hotpair_dead_letters_total"
	metricCPU             = "process_cpu_seconds_total"
	metricRSS             = "process_resident_memory_bytes"
)

// metricsSnapshot is one scrape of a /metrics endpoint.
type metricsSnapshot map[string]*dto.MetricFamily

var scrapeClient = &http.Client{Timeout: 5 * time.Second}

func scrapeMetrics(ctx context.Context, addr string) (metricsSnapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	return mf, nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// sum adds up the samples of a counter, gauge or untyped metric whose labels
// include want.
func (s metricsSnapshot) sum(name string, want map[string]string) float64 {
	var total float64
	for _, m := range s[name].GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// labelValues returns the distinct values of label among a metric's samples.
func (s metricsSnapshot) labelValues(name, label string) []string {
	var out []string
	for _, m := range s[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && !slices.Contains(out, l.GetValue()) {
				out = append(out, l.GetValue())
			}
		}
	}
	slices.Sort(out)
	return out
}

// bucket is a cumulative histogram bucket.
type bucket struct {
	le    float64
	count float64
}

// histogram merges the buckets of a histogram's samples whose labels include want.
func (s metricsSnapshot) histogram(name string, want map[string]string) []bucket {
	merged := map[float64]float64{}
	for _, m := range s[name].GetMetric() {
		if m.Histogram == nil || !hasLabels(m, want) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) { // the sample count is the +Inf bucket
				merged[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		merged[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
	}
	out := make([]bucket, 0, len(merged))
	for le, c := range merged {
		out = append(out, bucket{le, c})
	}
	slices.SortFunc(out, func(a, b bucket) int {
		if a.le < b.le {
			return -1
		} else if a.le > b.le {
			return 1
		}
		return 0
	})
	return out
}

// quantile estimates the q-quantile of cumulative buckets by linear
// interpolation within the bucket that holds it, as Prometheus's
// histogram_quantile does; NaN without samples. Past the last finite bound it
// returns that bound.
func quantile(q float64, bs []bucket) float64 {
	if len(bs) == 0 || bs[len(bs)-1].count == 0 {
		return math.NaN()
	}
	rank := q * bs[len(bs)-1].count
	prevLe, prevCount := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return prevLe
			}
			if b.count == prevCount {
				return b.le
			}
			return prevLe + (b.le-prevLe)*(rank-prevCount)/(b.count-prevCount)
		}
		prevLe, prevCount = b.le, b.count
	}
	return prevLe
}
