package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor"
)

// The sides by name, as the scenarios, the timeline and the reports use them.
var (
	primary = contract.Primary.String()
	standby = contract.Standby.String()
)

func scenarios() []scenario {
	return []scenario{
		{name: "failover", summary: "the primary budget enforcer stalls: budget moves to standby within a window or two, and returns only after the grace period once healed", run: failover},
		{name: "cluster-outage", summary: "the primary Kafka cluster goes away: every service moves to standby; when it is back and has caught up, traffic returns after the grace period, and no money is lost on either side", run: clusterOutage},
		{name: "flap", summary: "the primary pacer alternates stalled and healthy: exactly one switch away, no switch back while it flaps, a return after the grace period once steady", run: flapScenario},
		{name: "upstream-loss", summary: "traffic stops upstream of both sides (no switch); then the link to primary is cut for longer than its ingest buffer holds (failover, and primary's shortfall equals exactly what was not delivered)",
			options: func(o *Options) { o.IngestBuffer = 300 }, run: upstreamLoss},
		{name: "zk-outage", summary: "ZooKeeper goes away: the read side keeps its last snapshot, the monitors keep deciding; a stall during the outage is published once ZooKeeper is back", run: zkOutage},
		{name: "zk-wiped", summary: "ZooKeeper loses its data during a failover (it restarts empty, as an ensemble rebuilt after losing its disks): the read side keeps its snapshot; within twice the session timeout every daemon has a new session, the monitors lead and publish the same decision again, every pipeline instance is registered again and the read side follows; the return after the heal is the usual one", run: zkWiped},
		{name: "monitor-failover", summary: "the leading monitor crashes during a grace period: the other replica takes over within the session timeout and continues the grace clock, neither losing nor reversing the decision",
			timing: func(t *Timing) { t.Grace = 24 * time.Second }, run: monitorFailover},
		{name: "staggered-deploy", summary: "the primary's pipelines restart on a new build: the rollout gate holds the standby back until the primary has run it healthily for the hold, then lets it follow and holds the primary back in turn; no stagger violation is flagged", run: staggeredDeploy},
		{name: "crash-restart", summary: "pipeline instances die abruptly and restart (the primary aggregator, then the standby budget enforcer): state comes back from the changelogs and every campaign's spend stays exact", run: crashRestart},
		{name: "slow-side", summary: "primary's records arrive " + slowSideLag.String() + " late: every service moves to standby, stays there for as long as the lag lasts (its input rate is normal, its output late end to end), and returns a grace period after the heal; spend exact on both sides", run: slowSide},
		{name: "overload", summary: "both aggregators can process only 1.5 times the usual input, then traffic rises four times: both sides fall behind together, no switch, every service degraded within two windows; once traffic drops the backlogs drain and degraded clears",
			options: func(o *Options) { o.Day = time.Hour }, run: overload},
		{name: "dark-pause", summary: "the same build runs dark and passes; the operator disables the target for a while and enables it again: the copy has a gap, the verdict is never a regression (insufficient data until the campaigns' next day, as for a copy that began mid-day) and the spend is compared again after the gap",
			options: func(o *Options) { o.Dark, o.DarkMultiplier, o.Campaigns = true, 0.25, darkCanaryCampaigns }, run: darkPause},
		{name: "dark-dispatcher-crash", summary: "the same build runs dark and passes; the dispatcher crashes, what it read in its last " + crashUncommitted.String() + " uncommitted, and starts again after the comparator's hold: it reads back what the target has and copies none of it twice, and all of its backlog; the windows closed short while it was down are withdrawn; so spend and status stay equal to live's and are still compared, never a regression; pacing and bids wait for the campaigns' next day (the copy had a gap), and the report says so",
			options: func(o *Options) { o.Dark, o.DarkMultiplier, o.Campaigns = true, 0.25, darkCanaryCampaigns }, run: darkDispatcherCrash},
		{name: "dark-replica-crash", summary: "the same build runs dark, copied by two dispatcher replicas, and passes (the second replica's start-up rows are no gap); one replica crashes: its partitions are not copied until the group's session timeout moves them to the other, which sends their sampled campaigns' budget rows again with reason gap: never a regression (a window the crash cut is withdrawn), spend and status still compared, pacing and bids still compared for the other campaigns",
			timing: func(t *Timing) { t.AggWindow, t.Window = 1500*time.Millisecond, 6*time.Second },
			options: func(o *Options) {
				o.Dark, o.DarkMultiplier, o.Campaigns, o.DarkDispatchers = true, 0.25, darkCanaryCampaigns, 2
			}, run: darkReplicaCrash},
		{name: "dark-canary", summary: "the same build runs dark at multiplier 0.25: the comparator passes it (raw differences within the noise), the dark cluster holds exactly the campaigns the hash chose, nothing of it reaches a live topic or the selection; then the dark target dies: live goes on, the dispatcher counts what it cannot deliver, the verdict turns to insufficient data",
			options: func(o *Options) { o.Dark, o.DarkMultiplier, o.Campaigns = true, 0.25, darkCanaryCampaigns }, run: darkCanary},
	}
}

func failover(r *run) {
	r.steady("both sides healthy before the fault")
	f := r.inject(FaultSpec{Kind: FaultStall, Service: contract.StageBudget.String(), Side: primary})
	start := time.Now()
	took, ok := r.waitFor(r.switchWithin(), r.allOn(standby, contract.StageBudget.String()))
	r.check("budget switches to standby", ok, "after %s (limit %s: the window catching the stall, then publication)", took.Round(100*time.Millisecond), r.switchWithin())
	if sel := r.s.sel.Snapshot().Selection(svcOf(contract.StageBudget.String())); sel != nil {
		r.check("the switch says why", strings.Contains(sel.Reason, "input_rate_low") || strings.Contains(sel.Reason, "input rate"), "reason: %s", sel.Reason)
	}
	_, ok = r.holds(r.window(2), r.allOn(primary, contract.StagePacer.String(), contract.StageBidder.String()))
	r.check("pacer and bidder stay on primary", ok, "only the stalled service moves")
	r.sleep(r.window(1))
	healed := time.Now()
	r.heal(f)
	r.returnsAfterGrace(contract.StageBudget.String(), healed)
	r.check("exactly two switches", r.switches(contract.StageBudget.String(), start) == 2, "budget switched %d times (away and back)", r.switches(contract.StageBudget.String(), start))
}

// returnsAfterGrace checks that service returns to primary, and that it
// waited the grace period after the primary's last unhealthy window (the
// monitor's verdict, which the timeline records within a third of a window).
func (r *run) returnsAfterGrace(service string, healed time.Time) {
	r.returnsAfterGraceWithin(service, healed, r.t.Grace+r.window(3)+5*time.Second)
}

// returnsAfterGraceWithin is returnsAfterGrace with the limit, counted from
// the heal, given.
func (r *run) returnsAfterGraceWithin(service string, healed time.Time, limit time.Duration) {
	_, ok := r.waitFor(time.Until(healed.Add(limit)), r.allOn(primary, service))
	back := time.Now()
	r.check(service+" returns to primary", ok, "%s after the heal (limit %s)", back.Sub(healed).Round(100*time.Millisecond), limit)
	if !ok {
		return
	}
	lastBad := healed
	for _, e := range r.s.events.since(healed.Add(-r.t.Grace)) {
		if e.Kind == EventVerdict && e.Service == service && e.Side == primary && strings.HasPrefix(e.Detail, "unhealthy") && e.At.Before(back) {
			lastBad = e.At
		}
	}
	waited := back.Sub(lastBad)
	r.check(service+" waited for the grace period", waited >= r.t.Grace-r.window(0.5),
		"returned %s after the primary's last unhealthy window (grace %s)", waited.Round(100*time.Millisecond), r.t.Grace)
}

func clusterOutage(r *run) {
	r.steady("both sides healthy before the fault")
	f := r.inject(FaultSpec{Kind: FaultStopCluster, Side: primary})
	limit := r.switchWithin() + r.t.SampleInterval*3
	took, ok := r.waitFor(limit, r.allOn(standby))
	r.check("every service switches to standby", ok, "after %s (limit %s: no heartbeat for 3 sample intervals, then a window)", took.Round(100*time.Millisecond), limit)
	_, ok = r.holds(r.window(3), r.allOn(standby))
	r.check("the read side stays on standby during the outage", ok, "for %s", r.window(3))
	healed := time.Now()
	r.heal(f)
	for _, svc := range contract.Services() {
		r.returnsAfterGraceWithin(svc.String(), healed, r.t.Grace+time.Minute)
	}
}

func flapScenario(r *run) {
	r.steady("both sides healthy before the fault")
	period := r.window(2)
	f := r.inject(FaultSpec{Kind: FaultFlap, Service: contract.StagePacer.String(), Side: primary, Period: period.String()})
	start := time.Now()
	took, ok := r.waitFor(period+r.switchWithin(), r.allOn(standby, contract.StagePacer.String()))
	r.check("pacer switches to standby", ok, "after %s", took.Round(100*time.Millisecond))
	flapFor := 8 * period
	_, ok = r.holds(flapFor, r.allOn(standby, contract.StagePacer.String()))
	r.check("no switch back while the primary flaps", ok && r.switches(contract.StagePacer.String(), start) == 1,
		"%d switch(es) in %s of flapping (stalled %s, healthy %s, over and over)", r.switches(contract.StagePacer.String(), start), flapFor+took, period, period)
	healed := time.Now()
	r.heal(f)
	r.returnsAfterGrace(contract.StagePacer.String(), healed)
}

func upstreamLoss(r *run) {
	r.steady("both sides healthy before the fault")
	// Upstream traffic stops on both sides: an upstream change, not a
	// pipeline fault.
	start := time.Now()
	r.event(EventInfo, "", "", "upstream traffic stops on both sides")
	r.s.loadGen().setPaused(true)
	_, ok := r.holds(r.window(4), r.allOn(primary))
	r.s.loadGen().setPaused(false)
	r.event(EventInfo, "", "", "upstream traffic resumes")
	n := 0
	for _, svc := range contract.Services() {
		n += r.switches(svc.String(), start)
	}
	r.check("no switch when both sides lose input together", ok && n == 0, "%d switches in %s without traffic", n, r.window(4))
	r.steady("both sides healthy again")

	// The link to primary is cut for longer than its buffer holds.
	f := r.inject(FaultSpec{Kind: FaultCutIngest, Side: primary})
	took, ok := r.waitFor(r.switchWithin(), r.allOn(standby))
	r.check("every service switches to standby", ok, "after %s: primary's input stopped, standby's did not", took.Round(100*time.Millisecond))
	r.sleep(r.window(2))
	healed := time.Now()
	r.heal(f)
	lost := r.s.ingest.Stats()[contract.Primary].Lost
	r.check("the cut outlasted primary's ingest buffer", lost > 0, "%d records lost for primary (buffer %d)", lost, r.s.opts.IngestBuffer)
	for _, svc := range contract.Services() {
		r.returnsAfterGrace(svc.String(), healed)
	}
}

func zkOutage(r *run) {
	r.steady("both sides healthy before the fault")
	zk := r.inject(FaultSpec{Kind: FaultStopZK})
	stall := r.inject(FaultSpec{Kind: FaultStall, Service: contract.StageBudget.String(), Side: primary})
	_, ok := r.holds(r.window(4), r.allOn(primary))
	r.check("the read side keeps its last snapshot", ok, "budget still reads from primary %s into the outage", r.window(4))
	age := r.s.sel.Snapshot().ReadAt(svcOf(contract.StageBudget.String()))
	r.check("the snapshot ages", time.Since(age) >= r.window(4), "last read from ZooKeeper %s ago", time.Since(age).Round(100*time.Millisecond))
	local := ""
	if m := r.s.monitors.any(); m != nil {
		for _, s := range m.Status().Services {
			if s.Service == contract.ServiceBudget && s.Local != nil {
				local = s.Local.Active.String()
			}
		}
	}
	r.check("the monitors keep deciding without ZooKeeper", local == standby, "a replica's own decision for budget: %q", local)
	back := time.Now()
	r.heal(zk)
	limit := r.t.ZKSession + r.window(2) + 5*time.Second
	_, ok = r.waitFor(limit, r.allOn(standby, contract.StageBudget.String()))
	r.check("the decision is published once ZooKeeper is back", ok, "budget reads from standby %s after ZooKeeper returned (limit %s)",
		time.Since(back).Round(100*time.Millisecond), limit)
	healed := time.Now()
	r.heal(stall)
	r.returnsAfterGrace(contract.StageBudget.String(), healed)
}

func zkWiped(r *run) {
	budget := contract.StageBudget.String()
	r.steady("both sides healthy before the fault")
	start := time.Now()
	stall := r.inject(FaultSpec{Kind: FaultStall, Service: budget, Side: primary})
	_, ok := r.waitFor(r.switchWithin(), r.allOn(standby, budget))
	r.check("budget switches to standby", ok, "before ZooKeeper loses its data")
	before, _ := r.s.sel.Snapshot().Epoch(contract.ServiceBudget)
	regs := r.registrations()
	wiped := time.Now()
	r.inject(FaultSpec{Kind: FaultWipeZK})
	if st, err := r.zkStatus(); err == nil && (st.Leader != nil || len(st.Instances) > 0) {
		r.check("ZooKeeper is empty", false, "leader %v and %d registered stages right after the wipe", st.Leader, len(st.Instances))
	}
	// What a user sees, as `hotpair status` shows it: a fresh session
	// reads the rebuilt ensemble.
	limit := 2*r.t.ZKSession + r.window(2) + 5*time.Second
	var got string
	took, ok := r.waitFor(limit, func() bool {
		st, err := r.zkStatus()
		if err != nil || st.Leader == nil {
			got = fmt.Sprintf("no leader (err %v)", err)
			return false
		}
		for _, ss := range st.Services {
			if ss.Service == contract.ServiceBudget {
				if ss.Selection == nil {
					got = "no budget selection"
					return false
				}
				got = fmt.Sprintf("budget on %s at epoch %d", ss.Selection.Active, ss.Selection.Epoch)
				return ss.Selection.Active == contract.Standby && ss.Selection.Epoch == before
			}
		}
		return false
	})
	r.check("the monitors lead and publish the same decision again", ok, "%s, %s after the wipe (limit %s; epoch before %d)",
		got, took.Round(100*time.Millisecond), limit, before)
	var now int
	_, ok = r.waitFor(r.window(2), func() bool { now = r.registrations(); return now == regs })
	r.check("every pipeline instance registers again", ok && regs > 0, "%d of %d stage instances registered %s after the wipe",
		now, regs, time.Since(wiped).Round(100*time.Millisecond))
	_, ok = r.waitFor(r.window(2), func() bool {
		st, _ := r.s.sel.Status(time.Now())
		for _, ss := range st.Services {
			if !ss.Fresh {
				return false
			}
		}
		return st.ZKConnected && r.allOn(standby, budget)()
	})
	r.check("the read side follows the rebuilt ensemble", ok, "budget reads from %s, snapshot fresh", r.active(budget))
	healed := time.Now()
	r.heal(stall)
	r.returnsAfterGrace(budget, healed)
	r.check("no decision lost or reversed", r.switches(budget, start) == 2, "budget switched %d times (away and back)", r.switches(budget, start))
}

// zkStatus reads the status from ZooKeeper on a session of its own, as
// `hotpair status` does.
func (r *run) zkStatus() (monitor.Status, error) {
	sess, err := zkutil.Open(zkutil.Options{Servers: []string{r.s.zkAddr}, SessionTimeout: r.t.ZKSession})
	if err != nil {
		return monitor.Status{}, err
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
	defer cancel()
	if err := sess.WaitUsable(ctx); err != nil {
		return monitor.Status{}, err
	}
	return monitor.ReadStatus(sess.Conn(), contract.NewPaths(r.s.opts.ZKRoot), contract.Services(), time.Now())
}

// registrations counts the stage instances registered in ZooKeeper (0 when
// it cannot be read).
func (r *run) registrations() int {
	st, err := r.zkStatus()
	if err != nil {
		return 0
	}
	n := 0
	for _, in := range st.Instances {
		n += len(in.Instances)
	}
	return n
}

func monitorFailover(r *run) {
	r.steady("both sides healthy before the fault")
	stall := r.inject(FaultSpec{Kind: FaultStall, Service: contract.StageBudget.String(), Side: primary})
	start := time.Now()
	_, ok := r.waitFor(r.switchWithin(), r.allOn(standby, contract.StageBudget.String()))
	r.check("budget switches to standby", ok, "before the leader is killed")
	healed := time.Now()
	r.heal(stall)
	r.sleep(r.t.Grace / 2)
	first, _ := r.s.monitors.leader()
	kill := r.inject(FaultSpec{Kind: FaultKillLeader})
	limit := r.t.ZKSession + r.window(1) + 3*time.Second
	took, ok := r.waitFor(limit, func() bool { i, _ := r.s.monitors.leader(); return i >= 0 && i != first })
	takeover := time.Now()
	r.check("the other replica takes over", ok, "after %s (limit: session timeout %s + a window)", took.Round(100*time.Millisecond), r.t.ZKSession)
	_, ok = r.holds(r.window(1), r.allOn(standby, contract.StageBudget.String()))
	r.check("the new leader does not reverse the decision at once", ok, "budget stays on standby after the takeover")
	// The new leader continues the grace clock persisted with the selection:
	// the return comes a grace period after the heal, not after the takeover.
	// The window that first judges the primary healthy may have started a
	// little before the heal, so the grace is counted, as in
	// returnsAfterGrace, from the primary's last unhealthy verdict.
	r.returnsAfterGraceWithin(contract.StageBudget.String(), healed, r.t.Grace+r.window(3)+2*time.Second)
	after := time.Since(healed).Round(100 * time.Millisecond)
	restarted := takeover.Sub(healed) + r.t.Grace
	r.check("the grace clock survives the takeover", after < restarted, "budget returned %s after the heal (grace %s; a restarted clock would need %s)",
		after, r.t.Grace, restarted.Round(100*time.Millisecond))
	r.heal(kill)
	r.check("no decision lost or reversed", r.switches(contract.StageBudget.String(), start) == 2, "budget switched %d times (away and back)", r.switches(contract.StageBudget.String(), start))
}

func crashRestart(r *run) {
	r.steady("both sides healthy before the fault")
	for _, k := range []struct{ stage, side string }{{contract.StageAggregator.String(), primary}, {contract.StageBudget.String(), standby}} {
		before := r.s.stageEvents(k.side, k.stage)
		r.inject(FaultSpec{Kind: FaultKillInstance, Service: k.stage, Side: k.side})
		took, ok := r.waitFor(time.Minute, func() bool { return r.s.stageEvents(k.side, k.stage) > before+50 })
		r.check(k.side+" "+k.stage+" restarts and consumes again", ok, "after %s", took.Round(100*time.Millisecond))
		r.sleep(r.window(2))
	}
	// A restart may cost a window or two of input on that side; whatever the
	// monitor decided meanwhile, the read side ends back on primary.
	_, ok := r.waitFor(r.t.Grace+time.Minute, r.allOn(primary))
	r.check("the read side ends on primary", ok, "every service reads from primary")
}
