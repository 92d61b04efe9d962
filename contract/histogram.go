package contract

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// LagBounds are the upper bounds, in milliseconds, of the fixed buckets of a
// LagHistogram; the last bucket is unbounded. They are part of the schema:
// samples of every instance and both sides use them, so histograms merge by
// adding counts.
var LagBounds = [...]int64{
	1, 2, 5, 10, 20, 50, 100, 200, 500,
	1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 60_000,
	120_000, 300_000, 600_000, 1_800_000,
}

// NumLagBuckets is the number of buckets: one per bound and one unbounded.
const NumLagBuckets = len(LagBounds) + 1

// LagHistogram counts event lags in the fixed buckets of LagBounds. Bucket i
// counts lags <= LagBounds[i] (and > LagBounds[i-1]); the last counts the rest.
// It is JSON-encoded as {"le":[bounds...],"counts":[...]}, and merges by adding.
type LagHistogram struct {
	Counts [NumLagBuckets]int64
}

// Observe adds one lag. Negative lags (clock skew) count as zero.
func (h *LagHistogram) Observe(lagMs int64) {
	i, _ := slices.BinarySearch(LagBounds[:], max(lagMs, 0))
	h.Counts[i]++
}

// Merge adds the counts of o.
func (h *LagHistogram) Merge(o *LagHistogram) {
	for i := range h.Counts {
		h.Counts[i] += o.Counts[i]
	}
}

// Total is the number of observed lags.
func (h *LagHistogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket holding quantile q (0<q<=1),
// a conservative estimate: the true value is at most this. It returns 0 for
// an empty histogram and math.MaxInt64 when q falls in the unbounded bucket.
func (h *LagHistogram) Quantile(q float64) int64 {
	total := h.Total()
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			if i < len(LagBounds) {
				return LagBounds[i]
			}
			return math.MaxInt64
		}
	}
	return math.MaxInt64
}

type lagHistogramJSON struct {
	LE     []int64 `json:"le"`
	Counts []int64 `json:"counts"`
}

// MarshalJSON writes the bounds along with the counts, so a reader in any
// language can interpret a sample without this package.
func (h LagHistogram) MarshalJSON() ([]byte, error) {
	return json.Marshal(lagHistogramJSON{LE: LagBounds[:], Counts: h.Counts[:]})
}

// UnmarshalJSON accepts only histograms with this schema's bounds.
func (h *LagHistogram) UnmarshalJSON(b []byte) error {
	var w lagHistogramJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if !slices.Equal(w.LE, LagBounds[:]) {
		return fmt.Errorf("lag_ms.le: bucket bounds differ from this schema's")
	}
	if len(w.Counts) != NumLagBuckets {
		return fmt.Errorf("lag_ms.counts: want %d buckets, got %d", NumLagBuckets, len(w.Counts))
	}
	for i, c := range w.Counts {
		if c < 0 {
			return fmt.Errorf("lag_ms.counts[%d]: negative count", i)
		}
	}
	copy(h.Counts[:], w.Counts)
	return nil
}
