package monitor

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/humantime"
)

// WriteStatusText prints st for people: a table of every service, then per
// service why its side is active and each side's verdict with its numbers.
func WriteStatusText(w io.Writer, st Status) error {
	now := st.Now
	fmt.Fprintf(w, "hotpair status at %s (root %s)\n", now.Format(time.RFC3339), st.Root)
	switch {
	case st.Leader != nil:
		fmt.Fprintf(w, "monitor leader: %s", st.Leader.ID)
		if st.Leader.HTTP != "" {
			fmt.Fprintf(w, " (http %s)", st.Leader.HTTP)
		}
		fmt.Fprintf(w, ", %d replica(s) in the election\n", st.Candidates)
	case st.Replica == nil:
		fmt.Fprintln(w, "monitor leader: NONE — no monitor replica is running; the selections below are the last ones published")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tACTIVE\tPREFERRED\tEPOCH\tPRIMARY\tSTANDBY\tDEGRADED\tSTAGGER\tOVERRIDE\tDECIDED")
	for _, s := range st.Services {
		sel := s.Selection
		if sel == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t%s\tnever\n", s.Service, overrideCell(s, now))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Service, strings.ToUpper(sel.Active.String()), sel.Preferred,
			sel.Epoch, verdictCell(sel, contract.Primary), verdictCell(sel, contract.Standby),
			yesNo(sel.Degraded), yesNo(sel.StaggerViolation != ""), overrideCell(s, now), ago(sel.DecidedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range st.Services {
		writeServiceDetail(w, s, now)
	}
	if len(st.Instances) > 0 {
		fmt.Fprintln(w, "\nregistered pipeline instances")
		width := 10 // the cluster column, wider for a dark target's dark/<name>
		for _, r := range st.Instances {
			width = max(width, len(r.Cluster))
		}
		for _, r := range st.Instances {
			fmt.Fprintf(w, "  %-*s %-11s %d: %s\n", width, r.Cluster, r.Stage, len(r.Instances), strings.Join(r.Instances, ", "))
		}
	}
	return nil
}

func writeServiceDetail(w io.Writer, s ServiceStatus, now time.Time) {
	fmt.Fprintf(w, "\n%s\n", s.Service)
	sel := s.Selection
	if sel == nil {
		fmt.Fprintln(w, "  no selection published yet")
	} else {
		fmt.Fprintf(w, "  why:      %s\n", sel.Reason)
		fmt.Fprintf(w, "  decided:  %s (%s); last switch %s\n", sel.DecidedAt.Format(time.RFC3339), ago(sel.DecidedAt), switchTime(sel.LastSwitch))
		for _, side := range contract.Sides() {
			fmt.Fprintf(w, "  %-8s  %s\n", side.String()+":", sideDetail(sel, side))
		}
		if sel.Degraded {
			fmt.Fprintln(w, "  DEGRADED: no side can take over (both unhealthy, or both behind); the active side stays")
		}
		if sel.StaggerViolation != "" {
			fmt.Fprintf(w, "  STAGGER:  %s\n", sel.StaggerViolation)
		}
	}
	if o := s.Override; o != nil {
		state := "in force"
		if !o.ActiveAt(now) {
			state = "ended"
		}
		fmt.Fprintf(w, "  override: %s — to %s until %s, by %s: %s\n", state, o.Side, o.Until.Format(time.RFC3339), o.By, o.Reason)
	}
	if l := s.Local; l != nil && (sel == nil || l.Active != sel.Active) {
		fmt.Fprintf(w, "  this replica would choose %s: %s\n", l.Active, l.Reason)
	}
}

func sideDetail(sel *contract.Selection, side contract.Side) string {
	ss, ok := sel.Sides[side]
	if !ok {
		return "no verdict"
	}
	var b strings.Builder
	if ss.Healthy {
		b.WriteString("healthy  ")
	} else {
		b.WriteString("UNHEALTHY")
	}
	fmt.Fprintf(&b, "  qps %.1f  lag p99 %s  aggregator behind %s", ss.QPS, lagText(ss.LagP99Ms), lagText(ss.AggregatorLagP99Ms))
	if ss.Build != "" {
		fmt.Fprintf(&b, "  build %s", ss.Build)
	}
	if ss.HealthySince != nil {
		fmt.Fprintf(&b, "  healthy since %s (%s)", ss.HealthySince.Format(time.RFC3339), ago(*ss.HealthySince))
	}
	if ss.Healthy && ss.CatchingUp != "" {
		fmt.Fprintf(&b, "\n            catching up: %s (the grace clock starts once it keeps up)", ss.CatchingUp)
	}
	if len(ss.Reasons) > 0 {
		fmt.Fprintf(&b, "\n            reasons: %s", strings.Join(ss.Reasons, "; "))
	}
	return b.String()
}

// lagText writes a p99 lag in milliseconds as a rounded duration ("6ms",
// "1m30s"); lags beyond the histogram's last bound read as such.
func lagText(ms int64) string {
	if ms == math.MaxInt64 {
		return fmt.Sprintf("> %s", humantime.String(time.Duration(contract.LagBounds[len(contract.LagBounds)-1])*time.Millisecond))
	}
	return humantime.String(time.Duration(ms) * time.Millisecond)
}

func verdictCell(sel *contract.Selection, side contract.Side) string {
	ss, ok := sel.Sides[side]
	switch {
	case !ok:
		return "?"
	case ss.Healthy && ss.CatchingUp != "":
		return fmt.Sprintf("ok %.0f/s, behind %s", ss.QPS, lagText(max(ss.LagP99Ms, ss.AggregatorLagP99Ms)))
	case ss.Healthy:
		return fmt.Sprintf("ok %.0f/s", ss.QPS)
	}
	rules := make([]string, 0, len(ss.Reasons))
	for _, r := range ss.Reasons {
		name, _, _ := strings.Cut(r, ":")
		rules = append(rules, name)
	}
	return "BAD " + strings.Join(rules, ",")
}

func overrideCell(s ServiceStatus, now time.Time) string {
	if o := s.Override; o != nil && o.ActiveAt(now) {
		return fmt.Sprintf("%s until %s", o.Side, o.Until.Format("01-02 15:04Z07:00"))
	}
	return "-"
}

func switchTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339) + " (" + ago(t) + ")"
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "no"
}
