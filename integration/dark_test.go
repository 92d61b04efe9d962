package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/internal/testbin"
)

// TestDarkRegressionChangedRule: a candidate build whose pacer spreads the
// rest of a budget over twice the rest of the day runs dark in `hotpair
// sandbox --dark --dark-binary CANDIDATE` at multiplier 1. `hotpair dark
// report` exits 1 with the verdict regression on the pacing rate alone,
// naming the campaigns with the live and the dark rate (the dark one
// lower), while budget status and bid multipliers stay equal.
func TestDarkRegressionChangedRule(t *testing.T) {
	t.Parallel() // see TestFaultMatrix
	sb, rep, tr, text := darkCandidate(t, testbin.PacingRuleHalved, everyFieldJudged(t))
	if rep.Verdict != compare.Regression || !strings.Contains(text, "REGRESSION") || !strings.Contains(text, "pacing rate: dark differs from live") {
		t.Fatalf("the changed pacing rule is not reported as a regression of the pacing rate")
	}
	for _, f := range tr.Fields {
		switch {
		case f.Output == "pacing" && f.Field == "rate":
			if f.Verdict != compare.Regression || f.RawDiffs == 0 || f.NoiseDiffs != 0 || len(f.Worst) == 0 {
				t.Errorf("pacing rate: %+v", f)
			}
			for _, ex := range f.Worst {
				live, errL := strconv.ParseFloat(ex.Live, 64)
				dark, errD := strconv.ParseFloat(ex.Dark, 64)
				if errL != nil || errD != nil || !(dark < live) || !strings.Contains(text, ex.Campaign) {
					t.Errorf("worst campaign %s: live %s, dark %s; want the dark rate lower, the campaign named in the report", ex.Campaign, ex.Live, ex.Dark)
				}
			}
		case f.Verdict != compare.Pass:
			t.Errorf("%s %s: %s (dark≠live %d/%d), but the candidate changed only the pacing rule", f.Output, f.Field, f.Verdict, f.RawDiffs, f.RawPoints)
		}
	}
	sb.interrupt(t)
}

// TestDarkRegressionResourceCost: a candidate whose aggregator keeps
// memory for every ad event, its outputs unchanged, runs dark at multiplier
// 1 (one dark instance against one live instance, so each carries the same
// input rate and their resources compare). Once every output has enough
// points, `hotpair dark report` exits 1 on the resource comparison — the
// aggregator's resident memory, dark against live with the limit and the
// Mann-Whitney p — while every output field passes.
func TestDarkRegressionResourceCost(t *testing.T) {
	t.Parallel() // see TestFaultMatrix
	// The dark pipeline runs its four stages in one process, so every
	// stage's rss_bytes row carries the same growth, each over the windows
	// of its own samples; which row crosses the significance level first is
	// chance. Wait for the aggregator's, where the candidate keeps the memory.
	aggregatorRSS := func(tr compare.TargetReport) *compare.ResourceRow {
		for i, row := range tr.Resources.Rows {
			if row.Stage == "aggregator" && row.Metric == "rss_bytes" {
				return &tr.Resources.Rows[i]
			}
		}
		return nil
	}
	fieldsJudged := everyFieldJudged(t) // judge the outputs too
	sb, rep, tr, text := darkCandidate(t, testbin.AggregatorMemoryPerEvent, func(rep compare.Report) bool {
		rss := aggregatorRSS(targetOf(t, rep))
		return fieldsJudged(rep) && rep.Verdict == compare.Regression && rss != nil && rss.Verdict == compare.Regression
	})
	if rep.Verdict != compare.Regression || tr.Resources.Verdict != compare.Regression ||
		!strings.Contains(text, "resources: aggregator rss_bytes: dark") {
		t.Fatalf("the candidate's memory per event is not reported as a resource regression")
	}
	for _, f := range tr.Fields {
		if f.Verdict != compare.Pass {
			t.Errorf("%s %s: %s (dark≠live %d/%d), but the candidate's outputs are those of the live build", f.Output, f.Field, f.Verdict, f.RawDiffs, f.RawPoints)
		}
	}
	rss := aggregatorRSS(tr)
	if rss == nil || rss.Verdict != compare.Regression || !(rss.Dark > rss.Limit && rss.Limit > rss.Live) || rss.P >= 0.02 {
		t.Fatalf("the aggregator's memory row: %+v", rss)
	}
	sb.interrupt(t)
}

// TestDarkRegressionMissingCampaigns: a candidate that writes nothing for
// two of the campaigns it is sent, and the live build's outputs for the
// others, runs dark at multiplier 1. The comparator knows the sampled
// campaigns from the target's budgets topic: `hotpair dark report` exits 1,
// budget status regresses, and the report names both campaigns as "dark
// missing", no other.
func TestDarkRegressionMissingCampaigns(t *testing.T) {
	t.Parallel() // see TestFaultMatrix
	sb, rep, tr, text := darkCandidate(t, testbin.OutputsSkipTwoCampaigns, everyFieldJudged(t))
	if rep.Verdict != compare.Regression || !strings.Contains(text, "budget-status status: dark differs from live") {
		t.Fatalf("the campaigns the candidate skips are not reported as a regression of the budget status")
	}
	for _, f := range tr.Fields {
		if f.Output != "budget-status" || f.Field != "status" {
			continue
		}
		var named []string
		for _, ex := range f.Worst {
			if ex.Missing {
				named = append(named, ex.Campaign)
			}
		}
		slices.Sort(named)
		if f.Verdict != compare.Regression || f.RawMissing == 0 || f.NoiseMissing != 0 || !slices.Equal(named, []string{"camp-003", "camp-007"}) {
			t.Errorf("budget-status status: %+v; missing campaigns named %v, want camp-003 and camp-007", f, named)
		}
	}
	for _, c := range []string{"camp-003", "camp-007"} {
		if !regexp.MustCompile(c + ` live \S+ dark missing`).MatchString(text) {
			t.Errorf("the report does not name %s as missing", c)
		}
	}
	// Sampled: every campaign with a budget row goes dark at multiplier 1,
	// that is 11 of the sandbox's 12 (its last has none).
	if tr.Missing["budget-status"] != 2 || tr.Sampled != 11 {
		t.Errorf("missing %v of %d sampled; want 2 budget statuses of 11", tr.Missing, tr.Sampled)
	}
	sb.interrupt(t)
}

// darkVerdict runs `hotpair dark report` against the sandbox's page (the
// leading monitor's comparator) until done holds for its JSON report, and
// returns that report and the text the same command prints then, with its
// exit status checked against the verdict.
// darkCandidate runs the candidate build patch dark, at multiplier 1, in
// a sandbox, and returns the sandbox and the first report done accepts (its
// target and its text, logged) within two minutes.
func darkCandidate(t *testing.T, patch testbin.Patch, done func(compare.Report) bool) (*sandboxProcess, compare.Report, compare.TargetReport, string) {
	t.Helper()
	candidate := testbin.Candidate(t, patch)
	sb := startSandbox(t, testbin.Hotpair(t), "--dark", "--dark-binary", candidate, "--dark-multiplier", "1")
	rep, text := darkVerdict(t, sb, 2*time.Minute, done)
	t.Logf("hotpair dark report:\n%s", text)
	return sb, rep, targetOf(t, rep), text
}

// everyFieldJudged is done once the verdict and every output field of the
// target are judged: one field's regression makes the verdict while the
// others may still lack the points they need, and a test that checks them
// all must wait for them (the budget status, short of one point, once read
// as insufficient data where the test wanted its regression).
func everyFieldJudged(t *testing.T) func(compare.Report) bool {
	return func(rep compare.Report) bool {
		if rep.Verdict == compare.InsufficientData {
			return false
		}
		for _, f := range targetOf(t, rep).Fields {
			if f.Verdict == compare.InsufficientData {
				return false
			}
		}
		return true
	}
}

func darkVerdict(t *testing.T, sb *sandboxProcess, timeout time.Duration, done func(compare.Report) bool) (compare.Report, string) {
	t.Helper()
	bin, url := testbin.Hotpair(t), "http://"+sb.addr.HTTP
	deadline := time.Now().Add(timeout)
	for {
		out, code := darkReport(t, bin, "--json", "--url", url)
		var rep compare.Report
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("hotpair dark report --json: %v\n%s", err, out)
		}
		if code != rep.Verdict.ExitCode() {
			t.Fatalf("hotpair dark report --json exited %d with the verdict %s", code, rep.Verdict)
		}
		if done(rep) {
			text, code := darkReport(t, bin, "--url", url)
			if code != rep.Verdict.ExitCode() || !strings.Contains(string(text), "dark canary: "+strings.ToUpper(rep.Verdict.String())) {
				t.Fatalf("hotpair dark report exited %d after the verdict %s:\n%s", code, rep.Verdict, text)
			}
			return rep, string(text)
		}
		if time.Now().After(deadline) {
			text, _ := darkReport(t, bin, "--url", url)
			t.Fatalf("no verdict of the candidate within %s; the last report:\n%s", timeout, text)
		}
		select {
		case err := <-sb.exited:
			t.Fatalf("the sandbox exited: %v", err)
		case <-time.After(2 * time.Second):
		}
	}
}

// darkReport runs `hotpair dark report` and returns its stdout and exit status.
func darkReport(t *testing.T, bin string, args ...string) ([]byte, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"dark", "report"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), 0
	case errors.As(err, &exit):
		return stdout.Bytes(), exit.ExitCode()
	}
	t.Fatalf("hotpair dark report: %v\n%s", err, stderr.String())
	return nil, 0
}

// targetOf is the sandbox's dark target in rep.
func targetOf(t *testing.T, rep compare.Report) compare.TargetReport {
	t.Helper()
	for _, tr := range rep.Targets {
		if tr.Name == "canary" {
			return tr
		}
	}
	if len(rep.Targets) > 0 {
		t.Fatalf("the report has no target canary: %+v", rep.Targets)
	}
	return compare.TargetReport{}
}
