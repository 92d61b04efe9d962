package outdiff

import (
	"strings"
	"testing"

	"github.com/hotpair/hotpair/contract"
)

func TestCompareFieldByField(t *testing.T) {
	tol := Tolerances{PacingRateAbs: 0.05, BidMultiplierRel: 0.05}
	a := NewOutputs()
	b := NewOutputs()
	a.Status["c1"] = contract.BudgetStatus{Campaign: "c1", Status: "active", Day: "2026-12-01", SpentTodayMicros: 10, SpentLifetimeMicros: 10}
	b.Status["c1"] = contract.BudgetStatus{Campaign: "c1", Status: "daily_capped", Day: "2026-12-01", SpentTodayMicros: 13, SpentLifetimeMicros: 10}
	a.Pacing["c1"], b.Pacing["c1"] = contract.Pacing{Campaign: "c1", Rate: 0.5}, contract.Pacing{Campaign: "c1", Rate: 0.6}
	a.Bid["c1"], b.Bid["c1"] = contract.BidMultiplier{Campaign: "c1", Multiplier: 1}, contract.BidMultiplier{Campaign: "c1", Multiplier: 1.04}
	var got []string
	for _, d := range Compare(a, b, tol) {
		got = append(got, d.Output+"/"+d.Key+"/"+d.Field+"="+FormatFloat(d.Size))
	}
	want := "budget-status/c1/status=1 budget-status/c1/spent_today_micros=3 pacing/c1/rate=0.1"
	if strings.Join(got, " ") != want {
		t.Fatalf("diffs %v, want %s", got, want)
	}
	if err := a.Add(Pacing, "c2", []byte(`{"v":1,"campaign":"c2","rate":"x"}`)); err == nil {
		t.Fatal("a bad record was accepted")
	}
	if _, ok := a.Pacing["c2"]; ok {
		t.Fatal("a bad record was kept")
	}
}
