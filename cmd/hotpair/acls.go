package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hotpair/hotpair/canary/compare"
	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor"
	"github.com/hotpair/hotpair/pipeline"
)

// aclSet is what a daemon's Kafka principal needs on one cluster.
type aclSet struct {
	// cluster names the cluster as the config does ("the primary
	// cluster", "each side's cluster", "dark target dark-a").
	cluster string
	acls    []contract.KafkaACL
}

// pipelineACLs are the ACLs of the pipeline a config file runs.
func pipelineACLs(path string, _ []string) ([]aclSet, error) {
	c, err := pipeline.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	acls, err := c.KafkaACLs()
	if err != nil {
		return nil, err
	}
	return []aclSet{{cluster: "the " + c.Side + " cluster (" + strings.Join(c.Brokers, ",") + ")", acls: acls}}, nil
}

// monitorACLs are the ACLs of a monitor replica, the same on both clusters.
// With dark.enabled, its comparator also reads each dark target named, as
// the dark_kafka user.
func monitorACLs(path string, targets []string) ([]aclSet, error) {
	c, err := monitor.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	sets := []aclSet{{cluster: "each side's cluster (the same on both)", acls: c.KafkaACLs()}}
	if c.Dark.Enabled {
		sets = append(sets, compareTargetSets(c.Dark.Targets, targets, ", as the dark_kafka user")...)
	}
	return sets, nil
}

// compareTargetSets are the comparator's ACLs on each dark target's
// cluster: the config's targets, then those named that it lacks.
func compareTargetSets(static []compare.TargetConfig, named []string, as string) []aclSet {
	var sets []aclSet
	for _, t := range static {
		sets = append(sets, aclSet{cluster: "dark target " + t.Name + "'s cluster (" + strings.Join(t.Brokers, ",") + ")" + as,
			acls: compare.TargetKafkaACLs(t.Name)})
	}
	for _, name := range named {
		if !slices.ContainsFunc(static, func(t compare.TargetConfig) bool { return t.Name == name }) {
			sets = append(sets, aclSet{cluster: "dark target " + name + "'s cluster" + as, acls: compare.TargetKafkaACLs(name)})
		}
	}
	return sets
}

// dispatchACLs are the ACLs of a dark dispatcher: on the live cluster, and
// on the cluster of each dark target named (targets come and go at run
// time: grant a target's when it is added).
func dispatchACLs(path string, targets []string) ([]aclSet, error) {
	c, err := dispatch.LoadFileConfig(path)
	if err != nil {
		return nil, err
	}
	live, err := c.KafkaACLs()
	if err != nil {
		return nil, err
	}
	sets := []aclSet{{cluster: "the live " + c.Side + " cluster (" + strings.Join(c.Live.Brokers, ",") + ")", acls: live}}
	for _, name := range targets {
		sets = append(sets, aclSet{cluster: "dark target " + name + "'s cluster", acls: dispatch.TargetKafkaACLs(contract.DarkPrefix(name))})
	}
	return sets, nil
}

// compareACLs are the ACLs of a dark comparator: the same on both live
// clusters, and on the cluster of each target its config lists and of each
// dark target named (targets in ZooKeeper come and go at run time: grant a
// target's when it is added).
func compareACLs(path string, targets []string) ([]aclSet, error) {
	c, err := compare.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	sets := []aclSet{{cluster: "each side's cluster (the same on both)", acls: c.LiveKafkaACLs()}}
	return append(sets, compareTargetSets(c.Targets, targets, "")...), nil
}

// configACLs is "hotpair config acls": the Kafka ACLs the daemon that each
// file configures needs, as kafka-acls.sh commands. Exit 0: printed; 1: a
// file is bad; 2: usage.
func configACLs(a *app, args []string) int {
	kinds := kindNames()
	fs := newFlags(a, "config acls", "config acls [--kind "+strings.Join(kinds, "|")+"] [--principal User:NAME] [--format kafka-acls|strimzi] [--dark-target NAME]... FILE...\n\n"+
		"Prints the Kafka ACLs the daemon each FILE configures needs on each cluster it uses, as kafka-acls.sh\n"+
		"commands for its principal (docs/security.md):\n"+
		"  hotpair config acls --principal User:hotpair-pipeline primary.yml\n"+
		"  hotpair config acls dispatch.yml --dark-target candidate   # and on a dark target's cluster\n"+
		"  hotpair config acls dark-compare.yml --dark-target candidate\n"+
		"  hotpair config acls --format strimzi primary.yml         # a KafkaUser's spec.authorization.acls")
	kind := fs.String("kind", "", "the kind of every FILE: "+strings.Join(kinds, ", ")+" (default: told from its keys)")
	principal := fs.String("principal", "", "the principal the daemon authenticates as (default User:hotpair-KIND)")
	format := fs.String("format", "kafka-acls", "kafka-acls: kafka-acls.sh commands; strimzi: the acls list of a Strimzi KafkaUser's spec.authorization")
	var targets listFlag
	fs.Var(&targets, "dark-target", "a dark target's name, for a dark-dispatch or dark-compare config, or a monitor with dark.enabled: its cluster's ACLs too (repeatable)")
	files, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	if len(files) == 0 {
		return usageError(fs, a.stderr, "name at least one FILE")
	}
	if *kind != "" && !slices.Contains(kinds, *kind) {
		return usageError(fs, a.stderr, "--kind %q is not one of %s", *kind, strings.Join(kinds, ", "))
	}
	for _, name := range targets {
		if !contract.ValidDarkName(name) {
			return usageError(fs, a.stderr, "--dark-target %q: want lower-case letters, digits and dashes, at most 40", name)
		}
	}
	if *format != "kafka-acls" && *format != "strimzi" {
		return usageError(fs, a.stderr, "--format %q: want kafka-acls or strimzi", *format)
	}
	if *principal != "" && !strings.Contains(*principal, ":") {
		return usageError(fs, a.stderr, "--principal %q: want TYPE:NAME, e.g. User:hotpair-pipeline", *principal)
	}
	bad := 0
	for _, f := range files {
		k, err := kindOf(f, *kind)
		var sets []aclSet
		if err == nil {
			sets, err = k.acls(f, targets)
		}
		if err != nil {
			bad += report(a, "?", f, err)
			continue
		}
		p := *principal
		if p == "" {
			p = "User:hotpair-" + k.name
		}
		for _, s := range sets {
			fmt.Fprintf(a.stdout, "# %s %s: on %s\n", k.name, f, s.cluster)
			if *format == "strimzi" {
				writeStrimziACLs(a.stdout, s.acls)
				continue
			}
			for _, line := range kafkaACLsLines(s.acls) {
				fmt.Fprintf(a.stdout, "kafka-acls.sh --bootstrap-server \"$BOOTSTRAP\" --add --allow-principal %s %s\n", p, line)
			}
		}
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// byResource splits acls (sorted) into runs on the same resource.
func byResource(acls []contract.KafkaACL) [][]contract.KafkaACL {
	var runs [][]contract.KafkaACL
	for i := 0; i < len(acls); {
		j := i + 1
		for j < len(acls) && acls[j].Resource == acls[i].Resource && acls[j].Pattern == acls[i].Pattern && acls[j].Name == acls[i].Name {
			j++
		}
		runs = append(runs, acls[i:j])
		i = j
	}
	return runs
}

// kafkaACLsLines are acls (sorted) as kafka-acls.sh options, one line per
// resource with all of its operations.
func kafkaACLsLines(acls []contract.KafkaACL) []string {
	var out []string
	for _, run := range byResource(acls) {
		line := run[0].String()
		for _, a := range run[1:] {
			line += " --operation " + a.Operation
		}
		out = append(out, line)
	}
	return out
}

// writeStrimziACLs writes acls (sorted) as the acls list of a Strimzi
// KafkaUser's spec.authorization (type simple), one rule per resource with
// all of its operations.
func writeStrimziACLs(w io.Writer, acls []contract.KafkaACL) {
	for _, run := range byResource(acls) {
		a, ops := run[0], make([]string, len(run))
		for i, r := range run {
			ops[i] = r.Operation
		}
		pattern := "literal"
		if a.Pattern == contract.PatternPrefixed {
			pattern = "prefix"
		}
		if a.Resource == contract.ResourceCluster {
			fmt.Fprintf(w, "- resource: {type: cluster}\n")
		} else {
			fmt.Fprintf(w, "- resource: {type: %s, name: %s, patternType: %s}\n", strings.ToLower(a.Resource), a.Name, pattern)
		}
		fmt.Fprintf(w, "  operations: [%s]\n", strings.Join(ops, ", "))
	}
}
