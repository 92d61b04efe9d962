package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/monitor/core/history"
	"github.com/hotpair/hotpair/monitor/decisions"
)

const historySynopsis = `history (--brokers B [--standby-brokers B] | --config FILE) [--service S] [--since -12h] [--until T]
       [--kind K,…] [--windows] [--json]

Prints what the monitor decided — every switch with its evidence, degraded,
overrides, stagger — from the decision record (the topic hotpair-decisions)
alone: no monitor or ZooKeeper needed. Give both clusters: each holds a copy,
and the two are merged (each entry once). --json prints the entries as JSON
lines, exactly as on the topic (what 'monitor simulate --source record --file'
reads).`

// historyArgs are the parsed flags of "history".
type historyArgs struct {
	primary, standby                              listFlag
	kafka                                         *kafka.Flags
	auth                                          [2]*contract.KafkaAuth // per side, from --config or the flags
	service, since, until, kinds, prefix, cfgPath string
	windows, json                                 bool
	timeout                                       time.Duration
	filter                                        decisions.Filter
}

// runHistory is "hotpair history".
func runHistory(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "history", historySynopsis)
	ha := &historyArgs{}
	fs.Var(&ha.primary, "brokers", "a cluster holding the record, e.g. the primary's brokers (comma-separated)")
	fs.Var(&ha.standby, "standby-brokers", "the other cluster (its copy is merged in)")
	fs.StringVar(&ha.cfgPath, "config", "", "take both clusters and the topic prefix from this monitor config")
	fs.StringVar(&ha.service, "service", "", "only this service: "+strings.Join(contract.ServiceNames(), ", "))
	fs.StringVar(&ha.since, "since", "-12h", "from this long ago (12h or -12h) or this RFC 3339 time")
	fs.StringVar(&ha.until, "until", "now", "up to this long ago or this RFC 3339 time")
	fs.StringVar(&ha.kinds, "kind", "", "only these kinds (comma-separated): switch, degraded, override, stagger, window")
	fs.BoolVar(&ha.windows, "windows", false, "also every window's verdicts (the kind window)")
	fs.BoolVar(&ha.json, "json", false, "print the entries as JSON lines, as on the topic")
	fs.StringVar(&ha.prefix, "topic-prefix", "", "prefix of the topic names")
	fs.DurationVar(&ha.timeout, "timeout", 30*time.Second, "give up reading after this long")
	ha.kafka = kafka.AddFlags(fs)
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	if err := ha.applyConfig(fs); err != nil {
		fmt.Fprintln(a.stderr, "hotpair history:", err)
		return 1
	}
	if msg := ha.check(time.Now()); msg != "" {
		return usageError(fs, a.stderr, "%s", msg)
	}
	rctx, cancel := context.WithTimeout(ctx, ha.timeout)
	defer cancel()
	sources := []decisions.Source{{Side: contract.Primary.String(), Brokers: ha.primary, KafkaAuth: ha.auth[0]}}
	if len(ha.standby) > 0 {
		sources = append(sources, decisions.Source{Side: contract.Standby.String(), Brokers: ha.standby, KafkaAuth: ha.auth[1]})
	}
	if !checkKafka(rctx, a, "history", kafka.Cluster{Name: "primary", Brokers: ha.primary, Auth: ha.auth[0]},
		kafka.Cluster{Name: "standby", Brokers: ha.standby, Auth: ha.auth[1]}) {
		return 1
	}
	entries, stats, err := decisions.Read(rctx, decisions.ReadOptions{Sources: sources, Topic: ha.prefix + decisions.Topic, Filter: ha.filter})
	for _, st := range stats {
		if st.Err != nil {
			fmt.Fprintf(a.stderr, "hotpair history: %v\n", st.Err)
		}
	}
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair history: no copy of the record could be read")
		return 1
	}
	if ha.json {
		err = history.WriteRecordJSONLines(a.stdout, entries)
	} else {
		err = printHistory(a.stdout, ha.filter, entries, stats)
	}
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair history:", err)
		return 1
	}
	return 0
}

// applyConfig takes the clusters (with their security) and topic prefix
// from --config; flags win.
func (ha *historyArgs) applyConfig(fs *flag.FlagSet) error {
	auth, err := ha.kafka.Load()
	if err != nil {
		return err
	}
	ha.auth = [2]*contract.KafkaAuth{auth, auth}
	if ha.cfgPath == "" {
		return nil
	}
	mc, err := monitor.LoadConfig(ha.cfgPath)
	if err != nil {
		return err
	}
	if len(ha.primary) == 0 && len(ha.standby) == 0 {
		ha.primary, ha.standby = mc.Clusters.Primary.Brokers, mc.Clusters.Standby.Brokers
		if ha.auth, err = monitorClusterAuth(mc); err != nil {
			return err
		}
	}
	if !isSet(fs, "topic-prefix") {
		ha.prefix = mc.TopicPrefix
	}
	return nil
}

// check returns what is wrong with the arguments ("" if nothing) and sets
// the filter.
func (ha *historyArgs) check(now time.Time) string {
	if len(ha.primary) == 0 {
		return "give --brokers (and --standby-brokers for the other copy), or --config"
	}
	if ha.service != "" && contract.ServiceByName(ha.service) == 0 {
		return fmt.Sprintf("--service: %q is not one of %s", ha.service, strings.Join(contract.ServiceNames(), ", "))
	}
	since, err := decisions.ParseTime(ha.since, now)
	if err != nil {
		return "--since: " + err.Error()
	}
	until, err := decisions.ParseTime(ha.until, now)
	if err != nil {
		return "--until: " + err.Error()
	}
	if until.Before(since) {
		return fmt.Sprintf("--until %s is before --since %s", until.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	kinds, err := decisions.ParseKinds(ha.kinds)
	if err != nil {
		return "--kind: " + err.Error()
	}
	if len(kinds) == 0 {
		for _, k := range decisions.Kinds() {
			if k != decisions.KindWindow || ha.windows {
				kinds = append(kinds, k)
			}
		}
	} else if ha.windows && !slices.Contains(kinds, decisions.KindWindow) {
		kinds = append(kinds, decisions.KindWindow)
	}
	if ha.timeout <= 0 {
		return "--timeout must be positive"
	}
	ha.filter = decisions.Filter{Service: contract.ServiceByName(ha.service), Since: since, Until: until, Kinds: kinds}
	return ""
}

// printHistory prints the timeline: every decision with its evidence, a
// window per line, and a summary per service.
func printHistory(w io.Writer, f decisions.Filter, entries []decisions.Entry, stats []decisions.SourceStats) error {
	services := contract.ServiceNames()
	if f.Service != 0 {
		services = []string{f.Service.String()}
	}
	fmt.Fprintf(w, "decisions of %s from %s to %s\n", strings.Join(services, ", "), f.Since.UTC().Format(time.RFC3339), f.Until.UTC().Format(time.RFC3339))
	var read []string
	for _, st := range stats {
		if st.Err != nil {
			read = append(read, st.Side+" copy UNREADABLE")
			continue
		}
		read = append(read, fmt.Sprintf("%s copy %d entries (%d bad, %d of an unknown version: skipped)", st.Side, st.Entries, st.Bad, st.UnknownVersion))
	}
	fmt.Fprintf(w, "read: %s; merged: %d\n\n", strings.Join(read, ", "), len(entries))
	if len(entries) == 0 {
		fmt.Fprintln(w, "nothing recorded")
	}
	for i := range entries {
		printEntry(w, &entries[i])
	}
	fmt.Fprintln(w)
	var sums []string
	for _, svc := range services {
		sums = append(sums, svc+": "+switchSummary(entries, contract.ServiceByName(svc)))
	}
	_, err := fmt.Fprintln(w, strings.Join(sums, "; "))
	return err
}

func printEntry(w io.Writer, e *decisions.Entry) {
	at := e.At.UTC().Format(time.RFC3339)
	switch e.Kind {
	case decisions.KindWindow:
		fmt.Fprintf(w, "%s  %-6s  window  %s\n", at, e.Service, e.Detail)
		return
	case decisions.KindSwitch:
		from := e.From.String()
		if from == "" {
			from = "(none)"
		}
		fmt.Fprintf(w, "%s  %-6s  SWITCH %s → %s  %s  epoch %d  (recorded by %s)\n", at, e.Service, from, e.To, e.Cause, e.Epoch, e.RecordedBy)
	default:
		state := "off"
		if e.On != nil && *e.On {
			state = "ON"
		}
		fmt.Fprintf(w, "%s  %-6s  %s %s  epoch %d  (recorded by %s)\n", at, e.Service, e.Kind, state, e.Epoch, e.RecordedBy)
	}
	fmt.Fprintf(w, "    why:      %s\n", e.Detail)
	if e.Kind != decisions.KindSwitch {
		return
	}
	for _, side := range contract.Sides() {
		s, ok := e.Selection.Sides[side]
		if !ok {
			fmt.Fprintf(w, "    %-8s  no verdict\n", side.String()+":")
			continue
		}
		verdict := "healthy  "
		if !s.Healthy {
			verdict = "UNHEALTHY"
		}
		line := fmt.Sprintf("    %-8s  %s  qps %.1f  lag p99 %d ms", side.String()+":", verdict, s.QPS, s.LagP99Ms)
		if s.Build != "" {
			line += "  build " + s.Build
		}
		if s.HealthySince != nil {
			line += "  healthy since " + s.HealthySince.UTC().Format(time.RFC3339)
		}
		if len(s.Reasons) > 0 {
			line += " — " + strings.Join(s.Reasons, "; ")
		}
		fmt.Fprintln(w, line)
	}
	if o := e.Selection.Override; o != nil {
		fmt.Fprintf(w, "    override: to %s by %s until %s: %s\n", o.Side, o.By, o.Until.UTC().Format(time.RFC3339), o.Reason)
	}
}

// switchSummary counts a service's switches by cause ("none" without).
func switchSummary(entries []decisions.Entry, service contract.Service) string {
	causes := map[string]int{}
	n := 0
	for _, e := range entries {
		if e.Kind == decisions.KindSwitch && e.Service == service && e.Cause != "initial" {
			causes[e.Cause]++
			n++
		}
	}
	if n == 0 {
		return "no switch"
	}
	var parts []string
	for _, c := range []string{"failover", "return", "override"} {
		if causes[c] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", causes[c], c))
		}
	}
	return fmt.Sprintf("%d switch(es) (%s)", n, strings.Join(parts, ", "))
}
