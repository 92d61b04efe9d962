package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/metricvalue"
)

// darkCanaryCampaigns is the dark-canary scenario's number of campaigns:
// at multiplier 0.25 the hash chooses 13 of camp-000…camp-047, above the
// comparator's minimum of 10 compared campaigns.
const darkCanaryCampaigns = 48

// darkCanary: the same build runs dark at multiplier 0.25. The comparator
// (in the monitors, GET /api/v1/dark) passes it with its raw differences
// within the noise; the dark cluster holds exactly the campaigns the hash
// chose; nothing of the dark pipeline reaches a live cluster or the
// selection. Then the dark target's cluster dies: live goes on untouched,
// the dispatcher counts the copies it cannot deliver, and the comparator
// says insufficient data instead of pass. Spend stays exact on both sides
// (the scenario's end).
func darkCanary(r *run) {
	r.steady("both sides healthy, a dark target running")
	epochs := r.epochs()
	start := time.Now()

	var rep compare.Report
	took, ok := r.waitFor(time.Minute, func() bool { rep = r.darkReport(); return rep.Verdict == compare.Pass })
	tr := darkTarget(rep)
	r.check("the comparator's verdict is pass", ok && tr != nil, "after %s at GET /api/v1/dark: %s", took.Round(100*time.Millisecond), darkSummary(rep))
	if tr != nil {
		r.check("raw differences within the noise", rawWithinNoise(*tr, rep.Rules), "%s", fieldFigures(*tr))
	}
	r.darkSampleIsTheHash()
	r.liveUntouched()
	// By now the good build has been compared for longer than the grace
	// after which a value it lacks would count as missing.
	rep = r.darkReport()
	if tr = darkTarget(rep); tr != nil {
		n := tr.Missing["budget-status"] + tr.Missing["pacing"] + tr.Missing["bid-multipliers"]
		r.check("no sampled campaign missing on the dark target", tr.Sampled > 0 && n == 0, "%s", darkSummary(rep))
	}

	// The dark target dies.
	acked := r.darkAcked()
	f := r.inject(FaultSpec{Kind: FaultStopDark})
	stopped := time.Now()
	limit := darkDeliveryTimeout(r.t) + 10*time.Second
	var dropped float64
	took, ok = r.waitFor(limit, func() bool {
		dropped = metricvalue.Sum(r.s.regs, "hotpair_dark_dispatch_dropped_total", "target", DarkName)
		return dropped > 0
	})
	buffered, _ := metricvalue.Get(r.s.regs, "hotpair_dark_dispatch_buffered", "target", DarkName)
	expected, _ := metricvalue.Get(r.s.regs, "hotpair_dark_dispatch_expected_rate", "target", DarkName)
	// franz-go fails a buffered copy at its delivery timeout only when it
	// next tries the dead broker, which its reconnect back-off can put off:
	// copies held and none acknowledged since the stop, with an expected
	// rate above zero, is what HotpairDarkDispatchSendsNothing alerts on.
	held := buffered > 0 && r.darkAcked() == acked
	r.check("the dispatcher reports the dead target", (ok || held) && expected > 0, "%s after the stop: %.0f copies dropped, %.0f waiting, %.0f acknowledged before and %.0f since; expected %.1f ad events/s (limit %s: the delivery timeout %s)",
		took.Round(100*time.Millisecond), dropped, buffered, acked, r.darkAcked()-acked, expected, limit, darkDeliveryTimeout(r.t))
	limit = r.stale() + 10*time.Second
	_, ok = r.waitFor(time.Until(stopped.Add(limit)), func() bool { rep = r.darkReport(); return rep.Verdict == compare.InsufficientData })
	r.check("the comparator says insufficient data instead of pass", ok, "%s after the stop (limit %s: stale after %s): %s",
		time.Since(stopped).Round(100*time.Millisecond), limit, r.stale(), darkSummary(rep))
	_, ok = r.holds(r.window(2), func() bool { return r.allOn(primary)() && !r.anyDegraded() && r.darkReport().Verdict != compare.Pass })
	r.check("live goes on while the dark target is down", ok, "every service on primary, none degraded, the verdict never pass for %s", r.window(2))
	r.heal(f)

	n := 0
	for _, svc := range contract.Services() {
		n += r.switches(svc.String(), start)
	}
	now := r.epochs()
	r.check("the selection is untouched", n == 0 && maps.Equal(epochs, now), "%d switches; epochs before %v, after %v", n, epochs, now)
}

// darkPause: the good build passes dark; the operator disables the target
// (hotpair dark set --disable) for longer than the comparator's stale, then
// enables it again. The dark copy lacks what live spent meanwhile: the
// verdict must never be a regression — before the comparator took the gap
// into account, the update spanning it read as spend differences on most
// campaigns — and spend must be compared again once the copy is fed.
func darkPause(r *run) {
	r.steady("both sides healthy, a dark target running")
	var rep compare.Report
	took, ok := r.waitFor(time.Minute, func() bool { rep = r.darkReport(); return rep.Verdict == compare.Pass })
	r.check("the comparator's verdict is pass", ok, "after %s: %s", took.Round(100*time.Millisecond), darkSummary(rep))
	notRegression := func() bool { rep = r.darkReport(); return rep.Verdict != compare.Regression }

	if err := r.s.setDarkTarget(false); err != nil {
		r.check("disable the dark target", false, "%v", err)
		return
	}
	r.event(EventInfo, "", "", "the operator disables the dark target")
	pause := r.stale() + r.window(1)
	_, ok = r.holds(pause, notRegression)
	r.check("no regression while the copy is paused", ok, "for %s: %s", pause, darkSummary(rep))
	if err := r.s.setDarkTarget(true); err != nil {
		r.check("enable the dark target again", false, "%v", err)
		return
	}
	r.event(EventInfo, "", "", "the operator enables the dark target again")
	resumed := time.Now()
	spendPoints := func() int {
		if tr := darkTarget(r.darkReport()); tr != nil {
			for _, f := range tr.Fields {
				if f.Output == "budget-status" && f.Field == "spent_today_micros" {
					return f.RawPoints
				}
			}
		}
		return 0
	}
	_, ok = r.waitFor(r.window(3), func() bool { return spendPoints() > 0 })
	first := spendPoints()
	r.check("spend is compared again after the gap", ok, "%d spend points %s after the copy resumed", first, time.Since(resumed).Round(100*time.Millisecond))
	hold := r.window(5)
	_, ok = r.holds(hold, notRegression)
	r.check("no regression after the copy resumed", ok, "for %s after it resumed (%d spend points compared then %d): %s",
		hold, first, spendPoints(), darkSummary(rep))
	r.liveUntouched()
}

// darkDispatcherCrash: the good build passes dark; the dispatcher crashes
// with what it read in its last seconds uncommitted, and starts again only
// after longer than the comparator's hold (crash-dispatcher --for, as a
// restarted pod takes a while). Copied again, the uncommitted records would count twice
// in the dark pipeline wherever their window was still open: those
// campaigns would spend more on dark than on live for the rest of their
// day, their status no longer comparable. The new dispatcher reads back
// what the target has and sends none of it again; it copies the backlog,
// older than its delivery timeout, all of it; and the windows the dark
// aggregator closed on the idle timeout while it was down, short of
// copies, are withdrawn by its gap rows (the target was stalled meanwhile).
// So spend and status go on being compared, equal. Pacing and bids wait for
// the campaigns' next day: the verdict becomes insufficient data, with that
// reason, never a regression.
func darkDispatcherCrash(r *run) {
	r.steady("both sides healthy, a dark target running")
	var rep compare.Report
	took, ok := r.waitFor(time.Minute, func() bool { rep = r.darkReport(); return rep.Verdict == compare.Pass })
	r.check("the comparator's verdict is pass", ok, "after %s: %s", took.Round(100*time.Millisecond), darkSummary(rep))
	if !ok {
		return
	}
	r.sleep(crashUncommitted) // copies on the target for the read-back to find
	before := darkFieldPoints(r.darkReport())
	// Down for longer than the hold and the windows' close after the stop,
	// shorter than stale: the differences of the windows closed short wait
	// because the target is stalled, not because of the hold alone.
	down := r.s.monitorConfig(0).Dark.Hold + 3*r.t.AggWindow
	r.inject(FaultSpec{Kind: FaultCrashDispatch, For: down.String()})
	crashed := time.Now()
	var skipped float64
	took, ok = r.waitFor(down+r.window(4), func() bool {
		skipped, _ = metricvalue.Get(r.s.regs, "hotpair_dark_dispatch_resume_skipped_total", "target", DarkName)
		return skipped > 0
	})
	failed, _ := metricvalue.Get(r.s.regs, "hotpair_dark_dispatch_resume_failures_total", "target", DarkName)
	r.check("the new dispatcher finds its copies on the target and sends none twice", ok && failed == 0,
		"%.0f copies found and not sent again, %.0f read-backs failed, %s after the crash (down %s)", skipped, failed, took.Round(100*time.Millisecond), down)
	lost, _ := metricvalue.Get(r.s.regs, "hotpair_dark_dispatch_dropped_total", "target", DarkName, "reason", "delivery_failed")
	r.check("the copies of the backlog, older than the delivery timeout, are delivered", lost == 0,
		"%.0f copies dropped as delivery failures (delivery timeout %s)", lost, darkDeliveryTimeout(r.t))
	rep, after, stopped := r.neverARegressionAfterCrash(before)
	tr := darkTarget(rep)
	reason := func(text string) bool {
		return tr != nil && slices.ContainsFunc(tr.Reasons, func(s string) bool { return strings.Contains(s, text) })
	}
	// Copied twice, a record whose window is still open makes its
	// campaign spend more on dark than on live: out of sync for the day.
	r.check("spend stays equal to live's, and spend and status are still compared",
		len(stopped) == 0 && fieldVerdict(rep, "budget-status", "status") == compare.Pass && !reason("not in sync"),
		"points before the crash %v, %s after %v; not compared since: %v; %s", before, time.Since(crashed).Round(100*time.Millisecond), after, stopped, darkSummary(rep))
	said := reason("copies resumed after a gap")
	r.check("pacing and bids wait for the next day, and the report says why", rep.Verdict == compare.InsufficientData && said,
		"%s", darkSummary(rep))
	r.liveUntouched()
}

// darkReplicaCrash: the good build passes dark, copied by two dispatcher
// replicas (each sent every sampled campaign's budget row when it started:
// no gap, so pacing and bids are compared). One crashes without leaving the
// group (crash-dispatcher-replica): its partitions' campaigns get no copy
// until the session timeout moves them to the other replica, while the
// other campaigns' copies go on, so the dark pipeline writes nothing for
// the first ones meanwhile. Judged as missing, that would be a regression
// of a good build. The replica that takes them over sends their rows again
// with reason gap: the comparator compares them afresh from then on, their
// pacing and bids from their next day, and the others as before.
func darkReplicaCrash(r *run) {
	r.steady("both sides healthy, a dark target running")
	var rep compare.Report
	took, ok := r.waitFor(time.Minute, func() bool {
		rep = r.darkReport()
		return rep.Verdict == compare.Pass && fieldVerdict(rep, "pacing", "rate") == compare.Pass
	})
	r.check("the comparator's verdict is pass, pacing compared (two replicas' start-up rows are no gap)", ok,
		"after %s: %s", took.Round(100*time.Millisecond), darkSummary(rep))
	if !ok {
		return
	}
	before := darkFieldPoints(rep)
	r.inject(FaultSpec{Kind: FaultCrashReplica})
	survivor := replicaID(1, r.s.opts.DarkDispatchers)
	var gaps float64
	took, ok = r.waitFor(dispatcherSessionTimeout(r.t)+r.window(2), func() bool {
		gaps, _ = metricvalue.Get(r.s.regs, "hotpair_dark_dispatch_gap_partitions_total", "replica", survivor)
		return gaps > 0
	})
	r.check("the other replica takes the crashed one's partitions over and sends their rows again", ok,
		"%s resumed %.0f partitions after a gap, %s after the crash", survivor, gaps, took.Round(100*time.Millisecond))
	rep, after, stopped := r.neverARegressionAfterCrash(before)
	r.check("spend and status are still compared, equal", len(stopped) == 0 && fieldVerdict(rep, "budget-status", "status") == compare.Pass,
		"points before the crash %v, after %v; not compared since: %v; %s", before, after, stopped, darkSummary(rep))
	// Only the crashed replica's campaigns had a gap: the others' pacing
	// and bids go on being compared.
	r.check("pacing and bids still compared for the campaigns whose copy had no gap",
		after["pacing rate"] > before["pacing rate"] && after["bid-multipliers multiplier"] > before["bid-multipliers multiplier"],
		"points before the crash %v, after %v: %s", before, after, darkSummary(rep))
	r.liveUntouched()
}

// neverARegressionAfterCrash checks that the dark verdict is never a
// regression for stale and three windows after a crash, and returns the
// last report, its points per field, and which of status and spend were
// not compared since before (their points before the crash).
func (r *run) neverARegressionAfterCrash(before map[string]int) (rep compare.Report, after map[string]int, stopped []string) {
	hold := r.stale() + r.window(3)
	_, ok := r.holds(hold, func() bool { rep = r.darkReport(); return rep.Verdict != compare.Regression })
	r.check("never a regression", ok, "for %s after the crash: %s", hold, darkSummary(rep))
	after = darkFieldPoints(rep)
	for _, f := range []string{"budget-status status", "budget-status spent_today_micros"} {
		if after[f] <= before[f] {
			stopped = append(stopped, fmt.Sprintf("%s %d → %d", f, before[f], after[f]))
		}
	}
	return rep, after, stopped
}

// darkFieldPoints is each field's dark-vs-live points in rep ("output field").
func darkFieldPoints(rep compare.Report) map[string]int {
	out := map[string]int{}
	if tr := darkTarget(rep); tr != nil {
		for _, f := range tr.Fields {
			out[f.Output+" "+f.Field] = f.RawPoints
		}
	}
	return out
}

// fieldVerdict is one field's verdict in rep (zero when absent).
func fieldVerdict(rep compare.Report, output, field string) compare.Verdict {
	if tr := darkTarget(rep); tr != nil {
		for _, f := range tr.Fields {
			if f.Output == output && f.Field == field {
				return f.Verdict
			}
		}
	}
	return 0
}

// stale is the comparator's stale setting in the sandbox's monitors.
func (r *run) stale() time.Duration { return r.s.monitorConfig(0).Dark.Stale }

// epochs are the published selections' epochs, by service.
func (r *run) epochs() map[string]int64 {
	out := map[string]int64{}
	snap := r.s.sel.Snapshot()
	for _, svc := range contract.Services() {
		if sel := snap.Selection(svc); sel != nil {
			out[svc.String()] = sel.Epoch
		}
	}
	return out
}

// darkReport is the comparator's report as a user reads it: GET
// /api/v1/dark on the sandbox's address (the leading monitor's).
func (r *run) darkReport() compare.Report {
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	var rep compare.Report
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.s.httpAddr+"/api/v1/dark", nil)
	if err != nil {
		return rep
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rep
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&rep)
	}
	return rep
}

// darkTarget is the sandbox's target in rep, nil if absent.
func darkTarget(rep compare.Report) *compare.TargetReport {
	for i := range rep.Targets {
		if rep.Targets[i].Name == DarkName {
			return &rep.Targets[i]
		}
	}
	return nil
}

// darkSummary is the report in one line: verdict, campaigns, points, reasons.
func darkSummary(rep compare.Report) string {
	tr := darkTarget(rep)
	if tr == nil {
		return fmt.Sprintf("verdict %s, no target %s", rep.Verdict, DarkName)
	}
	s := fmt.Sprintf("verdict %s, %d campaigns compared of %d sampled, points budget-status %d pacing %d bid-multipliers %d, missing %d %d %d",
		tr.Verdict, tr.Campaigns, tr.Sampled, tr.Points["budget-status"], tr.Points["pacing"], tr.Points["bid-multipliers"],
		tr.Missing["budget-status"], tr.Missing["pacing"], tr.Missing["bid-multipliers"])
	if tr.Held > 0 || tr.Withdrawn > 0 {
		s += fmt.Sprintf(", differences held %d withdrawn %d", tr.Held, tr.Withdrawn)
		for _, f := range tr.Fields {
			if f.Withdrawn > 0 {
				s += fmt.Sprintf(" (%s %s %d)", f.Output, f.Field, f.Withdrawn)
			}
		}
	}
	if len(tr.Reasons) > 0 {
		s += "; " + strings.Join(tr.Reasons, "; ")
	}
	s += "; resources " + tr.Resources.Verdict.String()
	if len(tr.Resources.Reasons) > 0 {
		s += ": " + tr.Resources.Reasons[0]
	}
	return s
}

// rawWithinNoise: no numeric field differs from live more often than the
// noise plus the absolute threshold, and no exact field has a difference
// the noise does not explain.
func rawWithinNoise(tr compare.TargetReport, rules compare.Rules) bool {
	for _, f := range tr.Fields {
		if f.RawPoints == 0 || f.Unexplained > 0 || f.RawRate-f.NoiseRate > rules.Absolute {
			return false
		}
	}
	return len(tr.Fields) > 0
}

// fieldFigures are every field's raw and noise counts.
func fieldFigures(tr compare.TargetReport) string {
	var parts []string
	for _, f := range tr.Fields {
		parts = append(parts, fmt.Sprintf("%s %s dark≠live %d/%d, primary≠standby %d/%d", f.Output, f.Field, f.RawDiffs, f.RawPoints, f.NoiseDiffs, f.NoisePoints))
	}
	return strings.Join(parts, "; ")
}

// darkAcked is how many copies the dark target acknowledged.
func (r *run) darkAcked() float64 {
	return metricvalue.Sum(r.s.regs, "hotpair_dark_dispatch_records_total", "target", DarkName)
}

// darkSampleIsTheHash: the campaigns on the dark cluster's input and
// outputs are exactly those contract.DarkCopies chose at the multiplier:
// none other, and every chosen one with a budget row has a dark status.
func (r *run) darkSampleIsTheHash() {
	m := r.s.opts.DarkMultiplier
	chosen := map[string]bool{} // campaign -> has a budget row
	for _, c := range r.s.loadGen().campaigns {
		if contract.DarkCopies(c.ID, m) > 0 {
			chosen[c.ID] = c.Budget != nil
		}
	}
	topics := contract.TopicsWithPrefix(contract.DarkPrefix(DarkName))
	var found, extra, missing []string
	var statuses map[string]bool
	for _, topic := range []string{topics.AdEvents, topics.Budgets, topics.BudgetStatus, topics.Pacing, topics.BidMultipliers} {
		keys, err := r.topicKeys(darkCluster, topic)
		if err != nil {
			r.check("the dark sample is the hash's", false, "%v", err)
			return
		}
		for k := range keys {
			if _, ok := chosen[k]; !ok && !slices.Contains(extra, k) {
				extra = append(extra, k)
			}
		}
		if topic == topics.BudgetStatus {
			statuses = keys
		}
		found = append(found, fmt.Sprintf("%s %d", strings.TrimPrefix(topic, contract.DarkPrefix(DarkName)), len(keys)))
	}
	for c, budgeted := range chosen {
		if budgeted && !statuses[c] {
			missing = append(missing, c)
		}
	}
	ids := make([]string, 0, len(chosen))
	for c := range chosen {
		ids = append(ids, c)
	}
	slices.Sort(ids)
	slices.Sort(extra)
	slices.Sort(missing)
	r.check("the dark sample is exactly the campaigns the hash chose", len(chosen) > 0 && len(extra) == 0 && len(missing) == 0,
		"the hash chose %d of %d campaigns at %g (%s); campaigns on the dark cluster: %s; not chosen but dark: %v; chosen without a dark status: %v",
		len(chosen), len(r.s.loadGen().campaigns), m, strings.Join(ids, " "), strings.Join(found, ", "), extra, missing)
}

// topicKeys reads a topic of a cluster to its end and returns its keys.
func (r *run) topicKeys(cluster, topic string) (map[string]bool, error) {
	keys := map[string]bool{}
	err := r.s.readTopic(r.ctx, cluster, topic, func(rec *kgo.Record) { keys[string(rec.Key)] = true })
	return keys, err
}

// liveUntouched: nothing of the dark pipeline is on either live cluster.
// It reports on the live health topics (the one topic whose records name
// their producer): zero samples of role dark or of the dark instance; no
// topic and no consumer group under the dark prefix; and no copy the
// dispatcher's guard refused (a copy to a live topic).
func (r *run) liveUntouched() {
	var figures []string
	bad := 0
	for _, side := range contract.Sides() {
		n, dark := 0, 0
		err := r.s.readTopic(r.ctx, side.String(), r.s.topics.Health, func(rec *kgo.Record) {
			n++
			if s, err := contract.DecodeHealthSample(rec.Value); err == nil && (s.Role == contract.RoleDark || strings.Contains(s.Instance, "dark")) {
				dark++
			}
		})
		if err != nil {
			r.check("live topics untouched by the dark pipeline", false, "%v", err)
			return
		}
		topics, groups, err := r.darkNames(side.String())
		if err != nil {
			r.check("live topics untouched by the dark pipeline", false, "%v", err)
			return
		}
		bad += dark + len(topics) + len(groups)
		figures = append(figures, fmt.Sprintf("%s: %d of %d health samples from a dark pipeline, dark topics %v, dark groups %v", side, dark, n, topics, groups))
	}
	refused := metricvalue.Sum(r.s.regs, "hotpair_dark_dispatch_dropped_total", "target", DarkName, "reason", "topic_refused")
	r.check("live topics untouched by the dark pipeline", bad == 0 && refused == 0, "%s; copies refused by the dispatcher's guard: %.0f",
		strings.Join(figures, "; "), refused)
}

// darkNames are the topics and consumer groups of a cluster under the
// dark prefix.
func (r *run) darkNames(cluster string) (topics, groups []string, err error) {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	cl, err := kafka.NewClient(r.s.kafkaCluster(cluster), "hotpair-sandbox-scenario")
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ts, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the %s cluster's topics: %w", cluster, err)
	}
	gs, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the %s cluster's groups: %w", cluster, err)
	}
	for _, t := range ts.Names() {
		if contract.IsDarkTopic(t) {
			topics = append(topics, t)
		}
	}
	for _, g := range gs.Groups() {
		if contract.IsDarkTopic(g) {
			groups = append(groups, g)
		}
	}
	return topics, groups, nil
}
