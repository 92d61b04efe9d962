package compare

import (
	"fmt"
	"testing"
	"time"

	"github.com/hotpair/hotpair/canary/compare/comparetest"
	"github.com/hotpair/hotpair/contract"
)

// benchCampaigns is the sampled campaigns of the benchmarks.
const benchCampaigns = 20_000

// benchRecords encodes one update of every campaign's three outputs.
func benchRecords(b *testing.B, at time.Time) [][]comparetest.Output {
	out := make([][]comparetest.Output, benchCampaigns)
	for i := range out {
		out[i] = comparetest.Good().Outputs(b, fmt.Sprintf("c-%06d", i), at)
	}
	return out
}

// BenchmarkObserve is the baseline: reading (decoding and keeping) one
// update of every sampled campaign on the three pipelines.
func BenchmarkObserve(b *testing.B) {
	recs := benchRecords(b, t0)
	e := NewEngine(DefaultRules())
	e.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
	b.ResetTimer()
	for range b.N {
		for i, outs := range recs {
			c := fmt.Sprintf("c-%06d", i)
			for _, src := range []Source{Live(contract.Primary), Live(contract.Standby), Dark("cand")} {
				for _, o := range outs {
					_ = e.ObserveOutput(src, o.Output, c, o.Value, t0)
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchCampaigns), "ns/campaign")
}

// BenchmarkRound is what a round and a report cost once every sampled
// campaign (all of them on the target's budgets topic, so followed for
// missing values too) has a new update on the three pipelines, to compare
// with BenchmarkObserve's ns/campaign.
func BenchmarkRound(b *testing.B) {
	recs := benchRecords(b, t0)
	e := NewEngine(DefaultRules())
	e.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
	for i := range benchCampaigns {
		e.ObserveSampled("cand", fmt.Sprintf("c-%06d", i), []byte("{}"), contract.DarkRowSample, t0)
	}
	now := t0
	feed := func() {
		for i, outs := range recs {
			c := fmt.Sprintf("c-%06d", i)
			for _, src := range []Source{Live(contract.Primary), Live(contract.Standby), Dark("cand")} {
				for _, o := range outs {
					_ = e.ObserveOutput(src, o.Output, c, o.Value, now)
				}
			}
		}
	}
	var elapsed time.Duration
	for range b.N {
		b.StopTimer()
		feed() // every value new, so every row is compared
		now = now.Add(10 * time.Second)
		b.StartTimer()
		start := time.Now()
		e.Round(now)
		_ = e.Report(now)
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*benchCampaigns), "ns/campaign")
}
