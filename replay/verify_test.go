package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/testbin"
)

// verifyCampaign is one campaign of the verify test data: its daily budget
// (0: no budget row) and how many ad events of 1000 micros it gets.
type verifyCampaign struct {
	name   string
	daily  int64
	events int
}

// The budget rule under test caps a campaign once it spent its daily
// budget. The patched candidate caps at half of it: campaigns between 50%
// and 100% of their budget differ, and only those.
var verifyCampaigns = []verifyCampaign{
	{"camp-a", 10_000, 3},  // 30%: active in both
	{"camp-b", 10_000, 7},  // 70%: differs
	{"camp-c", 10_000, 12}, // 120%: capped in both
	{"camp-d", 10_000, 6},  // 60%: differs
	{"camp-e", 20_000, 2},  // 10%: active in both
	{"camp-f", 0, 5},       // no budget row
}

// writeVerifyData writes the recording, the budgets and a pipeline config
// with short windows, and returns their paths.
func writeVerifyData(t *testing.T) (recording, budgets, pipeCfg string) {
	t.Helper()
	dir := t.TempDir()
	recording, budgets, pipeCfg = filepath.Join(dir, "ads.hpr"), filepath.Join(dir, "budgets.jsonl"), filepath.Join(dir, "pipeline.yml")
	w, err := Create(recording, Meta{Topic: "ad-events", Partitions: 4, RecordedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	ts := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC) // a recording of any age: verify sets ts to the send time
	n := 0
	for round := 0; round < 12; round++ {
		for _, c := range verifyCampaigns {
			if round >= c.events {
				continue
			}
			n++
			v := fmt.Sprintf(`{"v":1,"id":"ev-%d","type":"impression","campaign":%q,"advertiser":"adv-1","price_micros":1000,"ts":%q}`,
				n, c.name, ts.Format(time.RFC3339Nano))
			if err := w.Write(&Record{Timestamp: ts, Key: []byte(c.name), Value: []byte(v), Offset: int64(n)}); err != nil {
				t.Fatal(err)
			}
			ts = ts.Add(10 * time.Millisecond)
		}
	}
	if err := w.Close(""); err != nil {
		t.Fatal(err)
	}
	for _, c := range verifyCampaigns {
		if c.daily > 0 {
			lines = append(lines, fmt.Sprintf(`{"v":1,"campaign":%q,"advertiser":"adv-1","daily_micros":%d,"lifetime_micros":0,"timezone":"UTC"}`, c.name, c.daily))
		}
	}
	os.WriteFile(budgets, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(pipeCfg, []byte("aggregator:\n  window: 1s\n  lateness: 500ms\n  idle_close: 500ms\nhealth:\n  sample_interval: 1s\n"), 0o644)
	return recording, budgets, pipeCfg
}

// A candidate build with a deliberately changed budget rule makes verify
// fail and name exactly the campaigns whose status differs.
func TestVerifyFailsOnAChangedBudgetRuleAndNamesTheKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a candidate binary and runs two pipelines")
	}
	baseline := testbin.Hotpair(t)
	candidate := testbin.Candidate(t, testbin.BudgetRuleHalved)
	recording, budgets, pipeCfg := writeVerifyData(t)
	th := DefaultThresholds()
	// Performance is not what this test is about: on a shared CI machine a
	// short run's CPU and lag vary more than any sane threshold.
	th.ThroughputDrop, th.LagP99Increase, th.LagP99Slack, th.CPUIncrease, th.CPUSlackSeconds, th.MemoryIncrease = 1, 100, 0, 100, 100, 100
	v, err := NewVerifier(VerifyOptions{Recording: recording, Budgets: budgets, Baseline: baseline, Candidate: candidate,
		PipelineConfig: pipeCfg, QPS: 50, Thresholds: th, Timeout: 3 * time.Minute, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	err = v.Run(ctx)
	rep := v.Report()
	if !errors.Is(err, ErrRegression) || rep.Passed {
		t.Fatalf("verify returned %v (passed %v), want ErrRegression\n%s", err, rep.Passed, verifyText(rep))
	}
	if fmt.Sprint(rep.DifferingKeys) != "[camp-b camp-d]" {
		t.Fatalf("differing keys %v, want [camp-b camp-d]\n%s", rep.DifferingKeys, verifyText(rep))
	}
	for _, d := range rep.Diffs {
		if d.Output == "budget-status" && d.Field == "status" && (d.Baseline != contract.StatusActive || d.Candidate != contract.StatusDailyCapped) {
			t.Fatalf("diff %+v: want active in the baseline, daily_capped in the candidate", d)
		}
	}
	if !slices.ContainsFunc(rep.Diffs, func(d OutputDiff) bool { return d.Key == "camp-b" && d.Field == "status" }) {
		t.Fatalf("no status difference for camp-b in %+v", rep.Diffs)
	}
	if rep.BaselineKeys["budget-status"] != len(verifyCampaigns) || rep.CandidateKeys["budget-status"] != len(verifyCampaigns) {
		t.Fatalf("budget-status keys: baseline %d, candidate %d, want %d", rep.BaselineKeys["budget-status"], rep.CandidateKeys["budget-status"], len(verifyCampaigns))
	}
	if rep.Play.Released != 35 || rep.BaselinePerf.Events != 35 || rep.BaselinePerf.Throughput <= 0 || rep.CandidatePerf.PeakRSS <= 0 ||
		len(rep.BaselinePerf.LagP99) != 4 || rep.BaselinePerf.CPUSeconds <= 0 || rep.BaselinePerf.SpendEvents < int64(len(verifyCampaigns)) ||
		rep.BaselinePerf.DeadLetters != 0 {
		t.Fatalf("performance not measured: %+v / %+v", rep.BaselinePerf, rep.CandidatePerf)
	}
	t.Log("\n" + verifyText(rep))
}

func verifyText(r VerifyReport) string {
	var b strings.Builder
	r.WriteText(&b)
	return b.String()
}
