package compare

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/canary/compare/comparetest"
	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// outRow is one campaign's outputs as one pipeline writes them.
type outRow = comparetest.Row

func goodRow() outRow { return comparetest.Good() }

// write feeds one campaign's three outputs of src, written and received at at.
func write(t *testing.T, e *Engine, src Source, campaign string, r outRow, at time.Time) {
	t.Helper()
	for _, o := range r.Outputs(t, campaign, at) {
		if err := e.ObserveOutput(src, o.Output, campaign, o.Value, at); err != nil {
			t.Fatal(err)
		}
	}
}

// scenario writes n campaigns on all three pipelines, then runs a round
// after they settled, for updates rounds, and one more once the last
// differences were held (Rules.Hold); change gives each pipeline's row.
func scenario(t *testing.T, n, updates int, change func(src Source, i int, r outRow) outRow) (*Engine, time.Time) {
	t.Helper()
	e := NewEngine(DefaultRules())
	e.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
	sampleCampaigns(e, n, t0)
	at := t0
	for u := 0; u < updates; u++ {
		for i := 0; i < n; i++ {
			for _, src := range []Source{Live(contract.Primary), Live(contract.Standby), Dark("cand")} {
				r := goodRow()
				r.Spent += int64(u * 100)
				write(t, e, src, fmt.Sprintf("c-%03d", i), change(src, i, r), at)
			}
		}
		at = at.Add(10 * time.Second)
		e.Round(at)
	}
	at = at.Add(e.rules.Hold)
	e.Round(at)
	return e, at
}

// sampleCampaigns tells e that campaigns c-000… c-(n-1) went dark on cand at at, as
// the rows of its budgets topic do.
func sampleCampaigns(e *Engine, n int, at time.Time) {
	for i := 0; i < n; i++ {
		e.ObserveSampled("cand", fmt.Sprintf("c-%03d", i), []byte("{}"), contract.DarkRowSample, at)
	}
}

func same(_ Source, _ int, r outRow) outRow { return r }

func TestEqualOutputsPass(t *testing.T) {
	e, at := scenario(t, 30, 2, same)
	rep := e.Report(at)
	if rep.Verdict != Pass {
		t.Fatalf("verdict %s, reasons %v", rep.Verdict, rep.Targets[0].Reasons)
	}
	tr := rep.Targets[0]
	if tr.Campaigns != 30 || tr.Points[outdiff.Pacing] != 60 {
		t.Fatalf("campaigns %d, pacing points %d; want 30 and 60 (two updates each)", tr.Campaigns, tr.Points[outdiff.Pacing])
	}
}

func TestChangedRuleOnSomeCampaignsRegresses(t *testing.T) {
	e, at := scenario(t, 30, 2, func(src Source, i int, r outRow) outRow {
		if src.Target != "" && i%5 == 0 { // 6 of 30 campaigns: 20% of points
			r.Mult = 1.5
		}
		return r
	})
	rep := e.Report(at)
	if rep.Verdict != Regression || rep.Verdict.ExitCode() != 1 {
		t.Fatalf("verdict %s, want regression", rep.Verdict)
	}
	reasons := strings.Join(rep.Targets[0].Reasons, "\n")
	for _, want := range []string{"bid-multipliers multiplier", "12 of 60 points (20.0%)", "c-000 live 1 dark 1.5", "c-020 live 1 dark 1.5"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("reasons do not say %q:\n%s", want, reasons)
		}
	}
	for _, f := range rep.Targets[0].Fields {
		if want := map[bool]Verdict{true: Regression, false: Pass}[f.Field == "multiplier"]; f.Verdict != want {
			t.Errorf("%s %s: %s, want %s", f.Output, f.Field, f.Verdict, want)
		}
	}
}

func TestNoiseIsSubtracted(t *testing.T) {
	// The rate is not deterministic on a fifth of the campaigns: primary and
	// standby differ there as much as dark differs from primary.
	flaky := func(src Source, i int, r outRow) outRow {
		if i%5 == 0 && src != Live(contract.Primary) {
			r.Rate += 0.2
		}
		return r
	}
	e, at := scenario(t, 30, 2, flaky)
	if rep := e.Report(at); rep.Verdict != Pass {
		t.Fatalf("noise as large as raw: verdict %s, reasons %v", rep.Verdict, rep.Targets[0].Reasons)
	}
	f := fieldOf(t, e.Report(at), outdiff.Pacing, "rate")
	if f.RawRate != 0.2 || f.NoiseRate != 0.2 || math.Abs(f.RawMeanSize-0.2) > 1e-9 {
		t.Fatalf("raw %v (size %v), noise %v; want 0.2 each", f.RawRate, f.RawMeanSize, f.NoiseRate)
	}
}

func TestThresholds(t *testing.T) {
	tests := []struct {
		name        string
		darkEvery   int // dark differs on every n-th campaign (0: none)
		noiseEvery  int
		want        Verdict
		description string
	}{
		{"a little more than the noise", 25, 50, Pass, "raw 4%, noise 2%: 2 points above, under the absolute 3"},
		{"well above the noise", 10, 50, Regression, "raw 10%, noise 2%: 8 points and 80% above"},
		{"above by the absolute but not the relative", 2, 3, Pass, "raw 50%, noise 34%: 16 points but 32% of raw... passes only when relative > 0.32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEngine(DefaultRules())
			if tt.name == "above by the absolute but not the relative" {
				e.rules.Relative = 0.4
			}
			e.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
			sampleCampaigns(e, 100, t0)
			for i := 0; i < 100; i++ {
				c := fmt.Sprintf("c-%03d", i)
				dark, stby := goodRow(), goodRow()
				if tt.darkEvery > 0 && i%tt.darkEvery == 0 {
					dark.Rate = 0.9
				}
				if i%tt.noiseEvery == 0 {
					stby.Rate = 0.9
				}
				write(t, e, Live(contract.Primary), c, goodRow(), t0)
				write(t, e, Live(contract.Standby), c, stby, t0)
				write(t, e, Dark("cand"), c, dark, t0)
			}
			e.Round(t0.Add(5 * time.Second))
			at := t0.Add(5*time.Second + e.rules.Hold) // the differences found count now
			e.Round(at)
			if f := fieldOf(t, e.Report(at), outdiff.Pacing, "rate"); f.Verdict != tt.want {
				t.Fatalf("%s: raw %.2f noise %.2f → %s, want %s", tt.description, f.RawRate, f.NoiseRate, f.Verdict, tt.want)
			}
		})
	}
}

func TestBudgetStatusIsExact(t *testing.T) {
	// One campaign's spend grows by another amount on dark: a regression,
	// even at 1 in 30.
	e, at := scenario(t, 30, 2, func(src Source, i int, r outRow) outRow {
		if src.Target != "" && i == 7 {
			r.Spent += (r.Spent - 5000) / 10
		}
		return r
	})
	rep := e.Report(at)
	if rep.Verdict != Regression || !strings.Contains(strings.Join(rep.Targets[0].Reasons, "\n"), "c-007 live +100 dark +110") {
		t.Fatalf("verdict %s, reasons %v; want a regression naming c-007 with both values", rep.Verdict, rep.Targets[0].Reasons)
	}
	// The same difference between primary and standby on that campaign is
	// noise: status differences the noise has are not the candidate's.
	e, at = scenario(t, 30, 2, func(src Source, i int, r outRow) outRow {
		if src != Live(contract.Primary) && i == 7 {
			r.Status = "daily_capped"
		}
		return r
	})
	if rep := e.Report(at); rep.Verdict != Pass {
		t.Fatalf("noise-explained status: %s %v", rep.Verdict, rep.Targets[0].Reasons)
	}
}

func TestInsufficientData(t *testing.T) {
	e, at := scenario(t, 8, 10, same) // 80 points but only 8 campaigns
	rep := e.Report(at)
	if rep.Verdict != InsufficientData || rep.Verdict.ExitCode() != 3 || !strings.Contains(rep.Targets[0].Reasons[0], "8 sampled campaigns compared, need 10") {
		t.Fatalf("few campaigns: %s %v", rep.Verdict, rep.Targets[0].Reasons)
	}
	e, at = scenario(t, 20, 2, same) // 20 campaigns, 40 points each
	if rep := e.Report(at); rep.Verdict != InsufficientData || !strings.Contains(strings.Join(rep.Targets[0].Reasons, "\n"), "pacing: 40 points compared, need 50") {
		t.Fatalf("few points: %s %v", rep.Verdict, rep.Targets[0].Reasons)
	}
	// Even a difference does not make a verdict without the minimum.
	e, at = scenario(t, 20, 2, func(src Source, _ int, r outRow) outRow {
		if src.Target != "" {
			r.Rate = 0
		}
		return r
	})
	if rep := e.Report(at); rep.Verdict != InsufficientData {
		t.Fatalf("few points with differences: %s", rep.Verdict)
	}
	if rep := NewEngine(DefaultRules()).Report(t0); rep.Verdict != InsufficientData {
		t.Fatalf("no target: %s", rep.Verdict)
	}
}

func TestDeadTargetIsInsufficientNotPass(t *testing.T) {
	e, at := scenario(t, 30, 2, same)
	// Live goes on, the dark target writes nothing more.
	for i := 0; i < 30; i++ {
		for _, side := range contract.Sides() {
			write(t, e, Live(side), fmt.Sprintf("c-%03d", i), goodRow(), at)
		}
	}
	later := at.Add(DefaultRules().Stale + time.Second)
	e.Round(later)
	rep := e.Report(later)
	if rep.Verdict != InsufficientData || !strings.Contains(strings.Join(rep.Targets[0].Reasons, "\n"), "no new comparison") {
		t.Fatalf("verdict %s %v, want insufficient data", rep.Verdict, rep.Targets[0].Reasons)
	}
	// Past the horizon, nothing of the old points is left.
	e.Round(later.Add(DefaultRules().Horizon))
	if tr := e.Report(later.Add(DefaultRules().Horizon)).Targets[0]; tr.Campaigns != 0 || tr.Points[outdiff.Pacing] != 0 {
		t.Fatalf("after the horizon: %d campaigns, %d points", tr.Campaigns, tr.Points[outdiff.Pacing])
	}
}

func TestAlignment(t *testing.T) {
	e := NewEngine(DefaultRules())
	e.SetTargets([]Target{{Name: "cand", Source: contract.Standby}})
	write(t, e, Live(contract.Standby), "a", goodRow(), t0)
	write(t, e, Dark("cand"), "a", goodRow(), t0.Add(time.Second))
	// A clone has no live counterpart: not compared, not counted.
	write(t, e, Dark("cand"), contract.DarkCloneID("a", 1), goodRow(), t0)
	e.Round(t0.Add(2 * time.Second)) // the dark value is 1s old: not settled
	if n := e.Report(t0).Targets[0].Points[outdiff.Pacing]; n != 0 {
		t.Fatalf("compared before settling: %d points", n)
	}
	e.Round(t0.Add(3 * time.Second))
	e.Round(t0.Add(8 * time.Second)) // unchanged since: not a new point
	if tr := e.Report(t0).Targets[0]; tr.Points[outdiff.Pacing] != 1 || tr.Campaigns != 1 {
		t.Fatalf("points %v campaigns %d, want one point of one campaign", tr.Points, tr.Campaigns)
	}
	// Written 6s apart (beyond max_skew): not the same update, not compared.
	write(t, e, Dark("cand"), "a", goodRow(), t0.Add(10*time.Second))
	write(t, e, Live(contract.Standby), "a", goodRow(), t0.Add(16*time.Second))
	e.Round(t0.Add(20 * time.Second))
	if n := e.Report(t0).Targets[0].Points[outdiff.Pacing]; n != 1 {
		t.Fatalf("compared values written 6s apart: %d points", n)
	}
}

// The live tables keep only the campaigns a target samples, once a dark
// value of the same update could no longer come.
func TestLiveTablesHoldSampledCampaigns(t *testing.T) {
	e := NewEngine(DefaultRules())
	e.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
	for i := range 10 {
		write(t, e, Live(contract.Primary), fmt.Sprintf("c-%03d", i), goodRow(), t0)
	}
	write(t, e, Dark("cand"), "c-003", goodRow(), t0.Add(time.Second))
	e.Round(t0.Add(5 * time.Second))
	if n := len(e.live[0].ver); n != 30 {
		t.Fatalf("rows dropped before a dark value could come: %d, want 30", n)
	}
	e.Round(t0.Add(13 * time.Second)) // settle 2s + max_skew 5s + interval 5s later
	if n, ok := len(e.live[0].ver), e.live[0].out.Pacing["c-003"]; n != 3 || ok.Campaign != "c-003" {
		t.Fatalf("live rows %d (want the sampled campaign's 3), c-003 kept: %v", n, ok.Campaign)
	}
}

func fieldOf(t *testing.T, rep Report, output, field string) FieldReport {
	t.Helper()
	for _, f := range rep.Targets[0].Fields {
		if f.Output == output && f.Field == field {
			return f
		}
	}
	t.Fatalf("no field %s %s", output, field)
	return FieldReport{}
}

// A campaign whose copy resumed after a gap waits for its next day: it
// counts (and the report says so) while its live status is of the day it
// resumed on, and no longer once a status of a later day was compared.
func TestResumedCampaignsCountUntilTheirNextDay(t *testing.T) {
	ps := newPairState()
	ps.resumed["c-1"], ps.resumed["c-2"] = "2026-12-01", "2026-12-01"
	ps.spend["c-1"] = spendMark{dayA: "2026-12-01"}
	ps.spend["c-2"] = spendMark{dayA: "2026-12-02"}
	if n := ps.resumedNow(); n != 1 {
		t.Fatalf("%d campaigns waiting, want 1 (c-1: same day; c-2: its next day began)", n)
	}
	if !ps.resumedToday("c-1") || ps.resumedToday("c-2") {
		t.Fatalf("c-1 must wait, c-2 not: %v", ps.resumed)
	}
}
